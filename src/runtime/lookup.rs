//! Which kernel to launch for a problem: the tuning database, loaded once into memory.
//!
//! [`Lookup::open`] reads every measurement of one GPU from the database, keeps the best
//! usable entry per problem, and files them under their weight key (n, k, N, M, L, layout),
//! sorted by m. [`Lookup::lookup`] then answers from that table alone — one hash probe and a
//! binary search — so the hot path never touches SQLite. The rules, in order:
//!
//! 1. **Exact**: an entry for this very problem.
//! 2. **Nearest m**: an entry for the same (n, k, N:M, L) whose m is nearest on a log scale
//!    (ratio, not difference: 300 is nearer 256 than 512) and whose kernel is valid for the
//!    requested m ([`validate_for_problem`]); ties go to the larger m.
//! 3. **Default**: the paper's Table I configuration for the problem's size class
//!    ([`crate::kernels::table_one::default_config`]), then the other classes, then the performance model's
//!    best; only a problem the template family cannot run at all is an error.
//!
//! Which entry is best per problem is the database's one rule ([`crate::db::better`]: a more
//! trusted source first, measured > replay > model, then this build's templates, then the
//! smaller median): [`Lookup::open`] reads the database's `best` table, which that rule keeps,
//! so `nmtune report` and the runtime always name the same entry; [`Lookup::from_measurements`]
//! applies the same rule in memory. A best entry tuned with other kernel templates (its
//! checksum is not [`template_checksum`]) describes code this build does not generate: it is
//! never launched (the problem falls through to rules 2 and 3), with one warning for the table.

use super::RuntimeError;
use crate::codegen::{template_checksum, validate, validate_for_problem, KernelConfig};
use crate::db::{best_per_problem, Database, DbError, Measurement, Source};
use crate::gpu_profile::GpuProfile;
use crate::kernels::table_one;
use crate::problem::{ALayout, NmPattern, Problem};
use std::collections::HashMap;
use std::path::Path;

/// Which rule produced a [`Choice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The database holds this very problem.
    Exact,
    /// Borrowed from the entry of the same weight at `from_m` rows.
    NearestM { from_m: usize },
    /// Nothing usable in the database: a built-in configuration.
    Default,
}

impl Rule {
    /// Short machine-readable name: `exact`, `nearest_m` or `default`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Rule::Exact => "exact",
            Rule::NearestM { .. } => "nearest_m",
            Rule::Default => "default",
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rule::NearestM { from_m } => write!(f, "nearest m (entry tuned at m={from_m})"),
            Rule::Default => f.write_str("default (Table I, nothing usable in the database)"),
            Rule::Exact => f.write_str("exact"),
        }
    }
}

/// The kernel chosen for a problem, and why.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    pub config: KernelConfig,
    pub rule: Rule,
    /// Where the entry's time came from; `None` for a built-in default.
    pub source: Option<Source>,
    /// Stored median kernel time of the entry, µs (measured at `from_m` rows for
    /// [`Rule::NearestM`]).
    pub median_us: Option<f64>,
    /// cuBLAS SGEMM time stored beside it, µs.
    pub cublas_us: Option<f64>,
}

/// What loading the table kept and dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LookupStats {
    /// Problems with a usable entry.
    pub problems: usize,
    /// Problems whose best entry other templates produced: never launched.
    pub stale_ignored: usize,
    /// Problems whose best entry's configuration fails validation on this GPU.
    pub invalid_ignored: usize,
}

/// The problem key without m: every entry of one weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct WeightKey {
    n: usize,
    k: usize,
    nm: NmPattern,
    l: usize,
    a_layout: ALayout,
}

impl WeightKey {
    fn of(p: &Problem) -> Self {
        Self {
            n: p.n,
            k: p.k,
            nm: p.nm,
            l: p.l,
            a_layout: p.a_layout,
        }
    }
}

/// One problem's best entry, as much as a launch decision needs.
#[derive(Debug, Clone, Copy)]
struct Entry {
    m: usize,
    config: KernelConfig,
    source: Source,
    median_us: f64,
    cublas_us: Option<f64>,
}

impl Entry {
    fn choice(&self, rule: Rule) -> Choice {
        Choice {
            config: self.config,
            rule,
            source: Some(self.source),
            median_us: Some(self.median_us),
            cublas_us: self.cublas_us,
        }
    }
}

/// The in-memory lookup table of one GPU.
#[derive(Debug, Clone)]
pub struct Lookup {
    gpu: GpuProfile,
    table: HashMap<WeightKey, Vec<Entry>>,
    stats: LookupStats,
}

impl Lookup {
    /// Load `gpu`'s entries from the database at `path` (read-only). A missing or empty
    /// database, or one without usable entries for `gpu`, gives a table of defaults and one
    /// warning; a file that is not a readable nmtune database is an error. The GPU's profile
    /// (needed to validate defaults) is the one stored in the database, else the built-in one.
    pub fn open(path: &Path, gpu: &str) -> Result<Self, RuntimeError> {
        let name = canonical_gpu_name(gpu);
        let Some(db) = open_if_present(path)? else {
            let profile = builtin_or_unknown(&name, path)?;
            log::warn!(
                "no tuning database at {} (missing or empty): every problem gets a built-in default kernel",
                path.display()
            );
            return Ok(Self::defaults_only(profile));
        };
        let profile = match db.gpu_profile(&name)? {
            Some(stored) => stored,
            None => builtin_or_unknown(&name, path)?,
        };
        let lookup = Self::load(profile, db.best_entries(Some(&name))?, &path.display());
        Ok(lookup)
    }

    /// A table built from measurements already in memory (tests, benches, other stores), with
    /// the database's rule picking each problem's best. Measurements of other GPUs are skipped.
    pub fn from_measurements(
        gpu: GpuProfile,
        measurements: impl IntoIterator<Item = Measurement>,
    ) -> Self {
        let mine = measurements.into_iter().filter(|m| m.gpu == gpu.name);
        let best = best_per_problem(mine).into_values();
        Self::load(gpu, best, &"the given measurements")
    }

    /// No entries at all: every problem gets a default.
    pub fn defaults_only(gpu: GpuProfile) -> Self {
        Self {
            gpu,
            table: HashMap::new(),
            stats: LookupStats::default(),
        }
    }

    /// The table of `best`, one best entry per problem (as the `best` table holds them).
    fn load(
        gpu: GpuProfile,
        best: impl IntoIterator<Item = Measurement>,
        origin: &dyn std::fmt::Display,
    ) -> Self {
        let (best, stats) = launchable(&gpu, best);
        let mut table: HashMap<WeightKey, Vec<Entry>> = HashMap::new();
        for (problem, entry) in best {
            table
                .entry(WeightKey::of(&problem))
                .or_default()
                .push(entry);
        }
        for entries in table.values_mut() {
            entries.sort_by_key(|e| e.m);
        }
        let lookup = Self { gpu, table, stats };
        lookup.warn_once(origin);
        lookup
    }

    /// One warning for the whole table: what was ignored, or that nothing is usable.
    fn warn_once(&self, origin: &dyn std::fmt::Display) {
        let (gpu, stats) = (&self.gpu.name, &self.stats);
        let mut ignored = Vec::new();
        if stats.stale_ignored > 0 {
            ignored.push(format!(
                "{} tuned with other kernel templates (this build's checksum is {})",
                stats.stale_ignored,
                &template_checksum()[..12]
            ));
        }
        if stats.invalid_ignored > 0 {
            ignored.push(format!(
                "{} whose configuration is not valid on {gpu}",
                stats.invalid_ignored
            ));
        }
        if !ignored.is_empty() {
            log::warn!(
                "{origin}: ignored {gpu} entries: {}; {} problems keep a usable entry, the rest get defaults — re-tune to refresh them",
                ignored.join(", "),
                stats.problems
            );
        } else if stats.problems == 0 {
            log::warn!(
                "{origin}: no usable entries for GPU {gpu}: every problem gets a built-in default kernel"
            );
        }
    }

    /// The GPU this table is for.
    pub fn gpu(&self) -> &GpuProfile {
        &self.gpu
    }

    pub fn stats(&self) -> LookupStats {
        self.stats
    }

    /// The kernel for `problem` by the rules of this module; an error only when no
    /// configuration of the template family can run the problem at all.
    pub fn lookup(&self, problem: &Problem) -> Result<Choice, RuntimeError> {
        if let Some(entries) = self.table.get(&WeightKey::of(problem)) {
            if let Some(choice) = from_entries(entries, problem) {
                return Ok(choice);
            }
        }
        self.default_choice(problem)
    }

    /// Rule 3: Table I for the size class, the other classes, then the model's best.
    fn default_choice(&self, problem: &Problem) -> Result<Choice, RuntimeError> {
        let config =
            table_one::default_config(problem, &self.gpu).ok_or_else(|| unsupported(problem))?;
        Ok(Choice {
            config,
            rule: Rule::Default,
            source: None,
            median_us: None,
            cublas_us: None,
        })
    }
}

/// Rules 1 and 2 over one weight's entries (sorted by m).
fn from_entries(entries: &[Entry], problem: &Problem) -> Option<Choice> {
    let fits = |e: &&Entry| validate_for_problem(&e.config, problem).is_ok();
    let at = entries.partition_point(|e| e.m < problem.m);
    if let Some(exact) = entries.get(at).filter(|e| e.m == problem.m).filter(fits) {
        return Some(exact.choice(Rule::Exact));
    }
    let below = entries[..at].iter().rev().find(fits);
    let above = entries[at..].iter().filter(|e| e.m != problem.m).find(fits);
    let nearest = match (below, above) {
        (Some(b), Some(a)) => Some(if nearer_below(problem.m, b.m, a.m) {
            b
        } else {
            a
        }),
        (b, a) => b.or(a),
    }?;
    Some(nearest.choice(Rule::NearestM { from_m: nearest.m }))
}

/// Whether `below` (< m) is strictly nearer `m` than `above` (> m) on a log scale:
/// m/below < above/m, compared exactly as m² < below·above.
fn nearer_below(m: usize, below: usize, above: usize) -> bool {
    (m as u128) * (m as u128) < (below as u128) * (above as u128)
}

/// The entries of `best` (one per problem) that this build may launch on `gpu`, and what was
/// dropped: entries of other templates and entries whose configuration is not valid here.
fn launchable(
    gpu: &GpuProfile,
    best: impl IntoIterator<Item = Measurement>,
) -> (HashMap<Problem, Entry>, LookupStats) {
    let mut stats = LookupStats::default();
    let mut table: HashMap<Problem, Entry> = HashMap::new();
    for m in best {
        if m.gpu != gpu.name {
            continue;
        }
        if m.template_checksum != template_checksum() {
            stats.stale_ignored += 1;
            continue;
        }
        let valid =
            validate(&m.config, gpu).is_ok() && validate_for_problem(&m.config, &m.problem).is_ok();
        if !valid {
            stats.invalid_ignored += 1;
            continue;
        }
        let entry = Entry {
            m: m.problem.m,
            config: m.config,
            source: m.source,
            median_us: m.median_us.unwrap_or(f64::INFINITY),
            cublas_us: m.cublas_us,
        };
        table.insert(m.problem, entry);
    }
    stats.problems = table.len();
    (table, stats)
}

fn unsupported(problem: &Problem) -> RuntimeError {
    RuntimeError::Unsupported {
        problem: problem.to_string(),
        reason: table_one::why_unsupported(problem),
    }
}

/// "H200 " → "h200"; aliases of built-in profiles map to their name.
fn canonical_gpu_name(gpu: &str) -> String {
    GpuProfile::builtin(gpu)
        .map(|p| p.name)
        .unwrap_or_else(|| gpu.trim().to_ascii_lowercase())
}

fn builtin_or_unknown(name: &str, path: &Path) -> Result<GpuProfile, RuntimeError> {
    GpuProfile::builtin(name).ok_or_else(|| RuntimeError::UnknownGpu {
        name: name.to_string(),
        path: path.to_path_buf(),
    })
}

/// The database at `path`, or `None` when there is no file or an empty one.
fn open_if_present(path: &Path) -> Result<Option<Database>, RuntimeError> {
    if std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.len() == 0) {
        return Ok(None);
    }
    match Database::open_read_only(path) {
        Ok(db) => Ok(Some(db)),
        Err(DbError::Missing { .. }) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::{ACopy, WarpLayout};

    fn config(m_s: u32, split_k: u32) -> KernelConfig {
        KernelConfig {
            a_copy: ACopy::Row4,
            m_s,
            n_s: 64,
            k_s: 64,
            m_t: 8,
            n_t: 4,
            warp: WarpLayout::new(4, 8),
            nm: NmPattern { n: 8, m: 32 },
            l: 32,
            packing: false,
            stages: 2,
            min_blocks: 1,
            split_k,
        }
    }

    fn entry(m: usize, split_k: u32, source: Source, median_us: f64) -> Entry {
        Entry {
            m,
            config: config(32, split_k),
            source,
            median_us,
            cublas_us: None,
        }
    }

    fn problem(m: usize, k: usize) -> Problem {
        Problem::new(m, 1024, k, NmPattern { n: 8, m: 32 }, 32).unwrap()
    }

    #[test]
    fn log_scale_nearness_is_exact_and_ties_go_up() {
        assert!(nearer_below(300, 256, 512));
        assert!(!nearer_below(400, 256, 512));
        assert!(!nearer_below(512, 256, 1024), "a tie goes to the larger m");
        assert!(nearer_below(usize::MAX / 2, usize::MAX / 2 - 1, usize::MAX));
    }

    #[test]
    fn exact_then_nearest_valid_m() {
        let entries = [
            entry(256, 1, Source::Measured, 10.0),
            entry(1024, 1, Source::Measured, 30.0),
            entry(4096, 1, Source::Measured, 90.0),
        ];
        let at = |m| from_entries(&entries, &problem(m, 4096)).unwrap().rule;
        assert_eq!(at(1024), Rule::Exact);
        assert_eq!(at(300), Rule::NearestM { from_m: 256 });
        assert_eq!(at(600), Rule::NearestM { from_m: 1024 });
        assert_eq!(at(1), Rule::NearestM { from_m: 256 });
        assert_eq!(at(100_000), Rule::NearestM { from_m: 4096 });
    }

    #[test]
    fn nearest_skips_kernels_invalid_for_the_requested_problem() {
        // split_k = 8 needs 8 k-tiles of 64: k = 256 has 4, so only the split-free entry fits.
        let entries = [
            entry(256, 8, Source::Measured, 10.0),
            entry(4096, 1, Source::Measured, 90.0),
        ];
        let choice = from_entries(&entries, &problem(256, 256)).unwrap();
        assert_eq!(choice.rule, Rule::NearestM { from_m: 4096 });
        assert_eq!(choice.config.split_k, 1);
        assert!(from_entries(&entries[..1], &problem(256, 256)).is_none());
    }
}
