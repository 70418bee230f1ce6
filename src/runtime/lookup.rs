//! Which kernel to launch for a problem: the tuning database, loaded once into memory.
//!
//! [`Lookup::open`] reads every measurement of one GPU from the database (or several,
//! [`Lookup::open_all`], such as a GPU's prefill and decode databases), keeps the best
//! usable entry per problem, and files them under their weight key (n, k, N, M, L, layout),
//! sorted by m. [`Lookup::lookup`] then answers from that table alone — one hash probe and a
//! binary search — so the hot path never touches SQLite. The rules, in order:
//!
//! 1. **Exact**: an entry for this very problem.
//! 2. **Nearest m**: the entries for the same (n, k, N:M, L) at the nearest tuned m below and
//!    above the requested one, each kernel with every split-K factor valid for the requested
//!    m ([`validate_for_problem`]; split-K is a launch parameter, not a compiled one) where
//!    the requested m has another number of rows of tiles than the tuned one, else with its
//!    tuned split (a stream-K kernel keeps split 1, and runs as its data-parallel twin where
//!    the problem has partial columns of tiles; `resplit`): the
//!    one with the lowest estimate wins, the entry's measured time (or, for another split, the
//!    tuner's timing of that split at the tuned m where it took one) scaled by the performance
//!    model's ratio between the requested problem and the tuned one (waves and split-K move
//!    with m; the measurement anchors the kernel's own speed). Ties go to the larger m. The
//!    answer is cached per problem, so the model runs once per m. A tuned problem whose best
//!    kernel needs m to be a multiple of 4 (`atrans`, row-major A transposed first) also
//!    lends its best kernel among those that run every m, for the m its best cannot run.
//!    A decode problem (m ≤ 16) borrows only from entries tuned at m ≤ 16.
//! 3. **Default**: for a decode problem the decode family's default; else the paper's Table I
//!    configuration for the problem's size class
//!    ([`crate::kernels::table_one::default_config`]), then the other classes, then the performance model's
//!    best; only a problem the template family cannot run at all is an error.
//!
//! Which entry is best per problem is the database's one rule ([`crate::db::better`]: a more
//! trusted source first, measured > replay > model, then this build's templates, then the
//! smaller median): [`Lookup::open`] reads the database's `best` table, which that rule keeps,
//! as this build serves it (the rule of [`Database::serving_entries`], which `nmtune report`
//! reads, so both always name the same entry); [`Lookup::from_measurements`] applies the same rule in
//! memory. A best entry that is not current ([`is_current`]: tuned with other templates than
//! those serving its problem now, and its own family's templates changed or not recorded)
//! describes code this build does not generate: the problem's best current timing of a source
//! as trusted stands in for it ([`crate::db::serving_bests`]); where there is none, it is
//! never launched (the problem falls through to rules 2 and 3), with one warning for the
//! table.

use super::RuntimeError;
use crate::codegen::validate::m_multiple;
use crate::codegen::validate::SPLIT_K_VALUES;
use crate::codegen::{validate, validate_for_problem, KernelConfig};
use crate::db::{
    best_per_problem, can_be_best, is_current, serving_bests, Database, DbError, Measurement,
    Source,
};
use crate::gpu_profile::GpuProfile;
use crate::kernels::table_one;
use crate::model::predict_with_registers;
use crate::problem::{ALayout, Dtype, NmPattern, Problem, DECODE_MAX_M};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

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
    dtype: Dtype,
}

impl WeightKey {
    fn of(p: &Problem) -> Self {
        Self {
            n: p.n,
            k: p.k,
            nm: p.nm,
            l: p.l,
            a_layout: p.a_layout,
            dtype: p.dtype,
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
    /// ptxas's count, when the entry recorded it: the model's occupancy then is the real one.
    registers: Option<u32>,
    /// Not the problem's best entry but its best among kernels that run every m, kept beside
    /// a best entry whose kernel needs m to be a multiple of 4 (`atrans`), so that rule 2 has
    /// a tuned kernel for the other m too.
    any_m: bool,
    /// The same kernel's measured medians at this problem with each factor of
    /// [`SPLIT_K_VALUES`] (µs, infinite where not timed): rule 2 scales a re-split kernel from
    /// the timing of that very split where there is one.
    split_us: [f64; SPLIT_K_VALUES.len()],
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
    /// Rule 2's answers, computed once per problem (shared by clones of the table).
    borrowed: Arc<Mutex<HashMap<Problem, Choice>>>,
}

impl Lookup {
    /// Load `gpu`'s entries from the database at `path` (read-only). A missing or empty
    /// database, or one without usable entries for `gpu`, gives a table of defaults and one
    /// warning; a file that is not a readable nmtune database is an error. The GPU's profile
    /// (needed to validate defaults) is the one stored in the database, else the built-in one.
    pub fn open(path: &Path, gpu: &str) -> Result<Self, RuntimeError> {
        Self::open_all(&[path], gpu)
    }

    /// [`Lookup::open`] over several databases read as one, e.g. a GPU's prefill and decode
    /// databases: a problem stored in more than one keeps the entry the database's rule
    /// prefers ([`crate::db::better`]), so the order of `paths` does not matter. Missing or
    /// empty files are skipped with a warning; the GPU's profile is the first one stored.
    pub fn open_all<P: AsRef<Path>>(paths: &[P], gpu: &str) -> Result<Self, RuntimeError> {
        let name = canonical_gpu_name(gpu);
        let mut stored_profile = None;
        let (mut best, mut measurements, mut opened) = (Vec::new(), Vec::new(), Vec::new());
        for path in paths.iter().map(AsRef::as_ref) {
            let Some(db) = open_if_present(path)? else {
                log::warn!(
                    "no tuning database at {} (missing or empty)",
                    path.display()
                );
                continue;
            };
            if stored_profile.is_none() {
                stored_profile = db.gpu_profile(&name)?;
            }
            // The rows are read once: they serve stale best entries and every-m choices both.
            let rows = db.measurements(Some(&name))?;
            best.extend(serving_bests(
                db.best_entries(Some(&name))?,
                rows.iter().cloned(),
            ));
            measurements.extend(rows);
            opened.push(path.display().to_string());
        }
        let profile = match stored_profile {
            Some(stored) => stored,
            None => builtin_or_unknown(&name, paths)?,
        };
        if opened.is_empty() {
            log::warn!("every problem gets a built-in default kernel");
            return Ok(Self::defaults_only(profile));
        }
        let best = best_per_problem(best).into_values();
        let splits = SplitTimes::of(&measurements);
        let any_m = best_for_every_m(measurements);
        Ok(Self::load(
            profile,
            best,
            any_m,
            &splits,
            &opened.join(", "),
        ))
    }

    /// [`Lookup::open_all`] for callers that name their databases on purpose (`nmtune lookup
    /// --db`, the Python package): every path must exist, so that a typo is an error rather
    /// than a quiet table of defaults; an empty list is an error too.
    pub fn open_existing<P: AsRef<Path>>(paths: &[P], gpu: &str) -> Result<Self, RuntimeError> {
        if paths.is_empty() {
            return Err(RuntimeError::NoDatabase);
        }
        if let Some(missing) = paths.iter().map(AsRef::as_ref).find(|p| !p.exists()) {
            return Err(RuntimeError::MissingDatabase {
                path: missing.to_path_buf(),
            });
        }
        Self::open_all(paths, gpu)
    }

    /// A table built from measurements already in memory (tests, benches, other stores), with
    /// the database's rule picking each problem's best. Measurements of other GPUs are skipped.
    pub fn from_measurements(
        gpu: GpuProfile,
        measurements: impl IntoIterator<Item = Measurement>,
    ) -> Self {
        let mine: Vec<Measurement> = measurements
            .into_iter()
            .filter(|m| m.gpu == gpu.name)
            .collect();
        let splits = SplitTimes::of(&mine);
        let any_m = best_for_every_m(mine.clone());
        let best = best_per_problem(mine).into_values();
        Self::load(gpu, best, any_m, &splits, &"the given measurements")
    }

    /// No entries at all: every problem gets a default.
    pub fn defaults_only(gpu: GpuProfile) -> Self {
        Self {
            gpu,
            table: HashMap::new(),
            stats: LookupStats::default(),
            borrowed: Arc::default(),
        }
    }

    /// The table of `best`, one best entry per problem (as the `best` table holds them), with
    /// the problem's entry of `any_m` beside a best entry that does not run every m.
    fn load(
        gpu: GpuProfile,
        best: impl IntoIterator<Item = Measurement>,
        any_m: Vec<Measurement>,
        splits: &SplitTimes,
        origin: &dyn std::fmt::Display,
    ) -> Self {
        let (best, stats) = launchable(&gpu, best, splits);
        let (any_m, _) = launchable(&gpu, any_m, splits);
        let mut table: HashMap<WeightKey, Vec<Entry>> = HashMap::new();
        for (problem, entry) in &best {
            let entries = table.entry(WeightKey::of(problem)).or_default();
            entries.push(*entry);
            if m_multiple(&entry.config) > 1 {
                if let Some(other) = any_m.get(problem) {
                    entries.push(Entry {
                        any_m: true,
                        ..*other
                    });
                }
            }
        }
        // By m, each problem's best entry before its every-m one (rule 1 takes the first).
        for entries in table.values_mut() {
            entries.sort_by_key(|e| (e.m, e.any_m));
        }
        let lookup = Self {
            gpu,
            table,
            stats,
            borrowed: Arc::default(),
        };
        lookup.warn_once(origin);
        lookup
    }

    /// One warning for the whole table: what was ignored, or that nothing is usable.
    fn warn_once(&self, origin: &dyn std::fmt::Display) {
        let (gpu, stats) = (&self.gpu.name, &self.stats);
        let mut ignored = Vec::new();
        if stats.stale_ignored > 0 {
            ignored.push(format!(
                "{} tuned with other kernel templates",
                stats.stale_ignored
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
                "{origin}: ignored {gpu} entries: {}; {} problems keep a usable entry, the rest get defaults — re-tune (`--strategy warm`) to refresh them",
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
            if let Some(exact) = exact_entry(entries, problem) {
                return Ok(exact.choice(Rule::Exact));
            }
            if let Some(choice) = self.borrowed_choice(entries, problem) {
                return Ok(choice);
            }
        }
        self.default_choice(problem)
    }

    /// Rule 2, from the cache or computed once.
    fn borrowed_choice(&self, entries: &[Entry], problem: &Problem) -> Option<Choice> {
        let mut cache = self.borrowed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(choice) = cache.get(problem) {
            return Some(*choice);
        }
        let choice = from_neighbours(entries, problem, &self.gpu)?;
        cache.insert(*problem, choice);
        Some(choice)
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

/// Rule 1: the entry of this very problem, when its kernel is valid for it.
fn exact_entry<'a>(entries: &'a [Entry], problem: &Problem) -> Option<&'a Entry> {
    let at = entries.partition_point(|e| e.m < problem.m);
    entries
        .get(at)
        .filter(|e| e.m == problem.m)
        .filter(|e| validate_for_problem(&e.config, problem).is_ok())
}

/// Rule 2 over one weight's entries (sorted by m): the nearest usable entry below and above
/// `problem.m`, each with every split-K factor valid for the problem; the lowest estimate.
fn from_neighbours(entries: &[Entry], problem: &Problem, gpu: &GpuProfile) -> Option<Choice> {
    let at = entries.partition_point(|e| e.m < problem.m);
    // A decode problem borrows only from decode-sized entries: a kernel tuned at m = 256
    // wastes most of its block at m = 1, where the decode default streams the weight.
    let usable = |e: &&Entry| {
        e.m != problem.m
            && (!problem.is_decode() || e.m <= DECODE_MAX_M)
            && !resplit(e, problem, gpu).is_empty()
    };
    let below = entries[..at].iter().rev().find(usable).map(|e| e.m);
    let above = entries[at..].iter().find(usable).map(|e| e.m);
    // Every entry of the two nearest tuned m (a problem's best and its every-m entry),
    // above first: an exact tie keeps the larger m.
    let nearest = [above, below]
        .into_iter()
        .flatten()
        .flat_map(|m| entries.iter().filter(move |e| e.m == m));
    let mut best: Option<(f64, &Entry, KernelConfig)> = None;
    for entry in nearest {
        for config in resplit(entry, problem, gpu) {
            let estimate = estimated_us(entry, config, problem, gpu);
            if best.as_ref().map_or(true, |(b, _, _)| estimate < *b) {
                best = Some((estimate, entry, config));
            }
        }
    }
    let (_, entry, config) = best?;
    Some(Choice {
        config,
        ..entry.choice(Rule::NearestM { from_m: entry.m })
    })
}

/// The entry's kernel with each split-K factor that is valid for `problem` on `gpu` (a
/// stream-K kernel takes none but its own: its schedule already shares out k). Where
/// `problem` has as many rows of tiles as the tuned problem, the grid is the one the tuner
/// timed, and its split stands: the model's preference for another factor is unmeasured
/// there (on the H100, m = 7 launched the m = 6 entry's 8-row decode kernel split 2 in
/// 45.1 µs, where the tuner's unsplit choice took 39.9 µs at m = 6; docs/perf-log.md,
/// session 29).
///
/// A split summed in a cluster is borrowed for another grid as its workspace twin (the same
/// main loop and the same sums): a cluster's blocks must be resident together, which suits the
/// grid it was timed on and may cost another one a wave. On the H200, Attn 8:32 at m = 700
/// took the m = 512 entry's cluster-summed kernel re-split four ways and ran in 209.2 µs,
/// 2.60× cuBLAS, where its tuned neighbours ran 3.69× and 3.62× (docs/perf-log.md, session
/// 59).
///
/// A stream-K kernel borrowed for a problem whose edge tiles run the predicated copies is
/// replaced by its data-parallel twin: the schedule gives every worker an equal share of
/// k-tiles, and predicated tiles make their workers late (1 × 4096 × 11008 12:32 at
/// m = 3000 took 1.38× its m = 3072 time on the H100, session 27). Only partial columns,
/// or fewer rows than one tile, do that: a partial last row of tiles slides back inside A
/// and copies as an inside tile (docs/design.md "Edge tiles").
fn resplit(entry: &Entry, problem: &Problem, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let cfg = &entry.config;
    let unpredicated = problem.m >= cfg.m_s as usize && problem.n % cfg.n_s.max(1) as usize == 0;
    let tile_rows = |m: usize| m.div_ceil(cfg.m_s.max(1) as usize);
    let same_grid = tile_rows(entry.m) == tile_rows(problem.m);
    let kernel = KernelConfig {
        stream_k: cfg.stream_k && unpredicated,
        cluster_sum: cfg.cluster_sum && same_grid,
        ..*cfg
    };
    SPLIT_K_VALUES
        .iter()
        .filter(|&&split_k| !same_grid || split_k == cfg.split_k)
        .map(|&split_k| kernel.with_split(split_k))
        .filter(|c| validate(c, gpu).is_ok() && validate_for_problem(c, problem).is_ok())
        .collect()
}

/// A measured time scaled to `config` on `problem` by the model's ratio (µs): the tuned
/// problem's timing of `config`'s own split where the tuner took one, else the entry's. An
/// entry without a finite time ranks by the model alone.
///
/// Why the split's own timing: the model's ratio between two splits of one kernel is the
/// least reliable part of the estimate. On the H200, 300 × 4096 × 4096 at 4:32 borrowed the
/// m = 256 entry's 32-row kernel (tuned split 2, 49.5 µs) unsplit, estimated 50.2 µs, and ran
/// 60.5 µs; the tuner had timed it unsplit at m = 256 too, in 56.2 µs (docs/perf-log.md,
/// session 30).
fn estimated_us(entry: &Entry, config: KernelConfig, problem: &Problem, gpu: &GpuProfile) -> f64 {
    let predict = |cfg: &KernelConfig, p: &Problem| {
        predict_with_registers(cfg, p, gpu, entry.registers).time_s * 1e6
    };
    let wanted = predict(&config, problem);
    let split_time = SplitTimes::slot(config.split_k).map(|i| entry.split_us[i]);
    let (anchor_us, anchor) = match split_time {
        Some(us) if us.is_finite() => (us, config),
        _ => (entry.median_us, entry.config),
    };
    match problem.with_m(entry.m) {
        Ok(tuned) if anchor_us.is_finite() => anchor_us * wanted / predict(&anchor, &tuned),
        _ => wanted,
    }
}

/// Every kernel's measured medians per split-K factor, per problem: what [`estimated_us`]
/// anchors a re-split kernel on. Only timings this build may launch count (current
/// templates, verified, not predictions).
#[derive(Default)]
struct SplitTimes(HashMap<(Problem, KernelConfig), [f64; SPLIT_K_VALUES.len()]>);

impl SplitTimes {
    fn of(measurements: &[Measurement]) -> Self {
        let mut times = Self::default();
        let usable =
            |m: &&Measurement| can_be_best(m) && m.source != Source::Model && is_current(m);
        for m in measurements.iter().filter(usable) {
            let (Some(slot), Some(us)) = (Self::slot(m.config.split_k), m.median_us) else {
                continue;
            };
            let row = times
                .0
                .entry((m.problem, Self::unsplit(&m.config)))
                .or_insert([f64::INFINITY; SPLIT_K_VALUES.len()]);
            row[slot] = row[slot].min(us);
        }
        times
    }

    /// The medians of `config`'s kernel on `problem`, one per split factor.
    fn of_kernel(&self, problem: &Problem, config: &KernelConfig) -> [f64; SPLIT_K_VALUES.len()] {
        let none = [f64::INFINITY; SPLIT_K_VALUES.len()];
        *self
            .0
            .get(&(*problem, Self::unsplit(config)))
            .unwrap_or(&none)
    }

    fn slot(split_k: u32) -> Option<usize> {
        SPLIT_K_VALUES.iter().position(|&s| s == split_k)
    }

    /// The key of `config`'s timings: its kernel without the split, summed in a cluster or
    /// not (a cluster-summed split and a workspace split of one kernel time differently).
    fn unsplit(config: &KernelConfig) -> KernelConfig {
        KernelConfig {
            split_k: 1,
            ..*config
        }
    }
}

/// The entries of `best` (one per problem) that this build may launch on `gpu`, and what was
/// dropped: entries of other templates and entries whose configuration is not valid here.
fn launchable(
    gpu: &GpuProfile,
    best: impl IntoIterator<Item = Measurement>,
    splits: &SplitTimes,
) -> (HashMap<Problem, Entry>, LookupStats) {
    let mut stats = LookupStats::default();
    let mut table: HashMap<Problem, Entry> = HashMap::new();
    for m in best {
        if m.gpu != gpu.name {
            continue;
        }
        if !is_current(&m) {
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
            registers: m.registers,
            any_m: false,
            split_us: splits.of_kernel(&m.problem, &m.config),
        };
        table.insert(m.problem, entry);
    }
    stats.problems = table.len();
    (table, stats)
}

/// Each problem's best measurement among kernels that run every m (by the database's one
/// rule): what rule 2 borrows for an m that its best kernel cannot run.
fn best_for_every_m(rows: Vec<Measurement>) -> Vec<Measurement> {
    let general = rows.into_iter().filter(|r| m_multiple(&r.config) == 1);
    best_per_problem(general).into_values().collect()
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

fn builtin_or_unknown<P: AsRef<Path>>(name: &str, paths: &[P]) -> Result<GpuProfile, RuntimeError> {
    GpuProfile::builtin(name).ok_or_else(|| RuntimeError::UnknownGpu {
        name: name.to_string(),
        databases: match paths {
            [] => "no database was given, so nothing".to_string(),
            _ => paths
                .iter()
                .map(|p| p.as_ref().display().to_string())
                .collect::<Vec<_>>()
                .join(" or "),
        },
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
            row_chunk: 0,
            stream_k: false,
            tma: false,
            cluster_sum: false,
            dtype: Dtype::F32,
        }
    }

    fn entry(m: usize, config: KernelConfig, median_us: f64) -> Entry {
        Entry {
            m,
            config,
            source: Source::Measured,
            median_us,
            cublas_us: None,
            registers: Some(96),
            any_m: false,
            split_us: [f64::INFINITY; SPLIT_K_VALUES.len()],
        }
    }

    fn problem(m: usize, n: usize, k: usize) -> Problem {
        Problem::new(m, n, k, NmPattern { n: 8, m: 32 }, 32).unwrap()
    }

    fn h100() -> GpuProfile {
        GpuProfile::builtin("h100").unwrap()
    }

    fn answer(entries: &[Entry], p: &Problem) -> Option<Choice> {
        match exact_entry(entries, p) {
            Some(e) => Some(e.choice(Rule::Exact)),
            None => from_neighbours(entries, p, &h100()),
        }
    }

    #[test]
    fn exact_first_then_the_two_neighbours_only() {
        let entries = [
            entry(256, config(32, 1), 10.0),
            entry(1024, config(64, 1), 30.0),
            entry(4096, config(128, 1), 90.0),
        ];
        let at = |m| answer(&entries, &problem(m, 4096, 4096)).unwrap();
        assert_eq!(at(1024).rule, Rule::Exact);
        assert_eq!(at(1024).config, config(64, 1));
        // Only 256 and 1024 neighbour 300 (never 4096); one side only at the ends.
        assert!(matches!(
            at(300).rule,
            Rule::NearestM { from_m: 256 | 1024 }
        ));
        assert!(at(300).median_us.is_some());
        // A decode problem never borrows a kernel tuned for m = 256: rule 3 answers it.
        assert!(answer(&entries, &problem(1, 4096, 4096)).is_none());
        let decode_entries = [
            entry(16, config(32, 1), 5.0),
            entry(256, config(32, 1), 10.0),
        ];
        let at1 = answer(&decode_entries, &problem(1, 4096, 4096)).unwrap();
        assert_eq!(at1.rule, Rule::NearestM { from_m: 16 });
        assert_eq!(at(100_000).rule, Rule::NearestM { from_m: 4096 });
        assert_eq!(
            at(100_000).median_us,
            Some(90.0),
            "the stored time is reported"
        );
    }

    #[test]
    fn the_lower_estimate_wins_not_the_nearer_m() {
        // The same kernel at both neighbours, but the one tuned at 1024 ran 3x faster than
        // the model's ratio says it should: its estimate at 300 is lower although 300 is
        // nearer 256 on a log scale.
        let fast = config(32, 1);
        let p = problem(300, 4096, 4096);
        let gpu = h100();
        let ratio = |m| {
            let t = |q: &Problem| predict_with_registers(&fast, q, &gpu, Some(96)).time_s;
            t(&p) / t(&p.with_m(m).unwrap())
        };
        let slow_at_256 = entry(256, fast, 10.0);
        let fast_at_1024 = entry(1024, fast, 10.0 * ratio(256) / ratio(1024) / 3.0);
        let choice = answer(&[slow_at_256, fast_at_1024], &p).unwrap();
        assert_eq!(choice.rule, Rule::NearestM { from_m: 1024 });
    }

    #[test]
    fn a_small_m_gets_the_split_the_model_predicts_fastest() {
        // Tuned at m = 4096 without split-K; m = 32 fills 64 blocks of 132 SMs: the entry's
        // kernel is launched split, with the factor whose estimate is lowest.
        let p = problem(32, 2048, 8192);
        let tuned = entry(4096, config(32, 1), 500.0);
        let choice = answer(&[tuned], &p).unwrap();
        assert_eq!(choice.rule, Rule::NearestM { from_m: 4096 });
        assert!(choice.config.split_k > 1, "{}", choice.config.name());
        assert_eq!(
            KernelConfig {
                split_k: 1,
                ..choice.config
            },
            config(32, 1)
        );
        let best = SPLIT_K_VALUES
            .iter()
            .map(|&s| KernelConfig {
                split_k: s,
                ..config(32, 1)
            })
            .min_by(|a, b| {
                let t = |c: &KernelConfig| estimated_us(&tuned, *c, &p, &h100());
                t(a).total_cmp(&t(b))
            })
            .unwrap();
        assert_eq!(choice.config, best);
    }

    #[test]
    fn a_neighbour_with_the_same_rows_of_tiles_keeps_its_split() {
        // m = 20 and m = 32 both fill one row of 32-row tiles: the grid the tuner timed at
        // m = 20, unsplit, though the model would split it.
        let p = problem(32, 2048, 8192);
        let tuned = entry(20, config(32, 1), 50.0);
        let split = |s| KernelConfig {
            split_k: s,
            ..config(32, 1)
        };
        let model = |c| estimated_us(&tuned, c, &p, &h100());
        assert!(
            model(split(4)) < model(split(1)),
            "the model prefers a split here"
        );
        let choice = answer(&[tuned], &p).unwrap();
        assert_eq!(choice.rule, Rule::NearestM { from_m: 20 });
        assert_eq!(choice.config, config(32, 1));
        // One more row of tiles: the split the model predicts fastest again.
        let taller = answer(&[tuned], &problem(40, 2048, 8192)).unwrap();
        assert!(taller.config.split_k > 1, "{}", taller.config.name());
    }

    #[test]
    fn a_borrowed_stream_k_kernel_is_never_split() {
        // Split-K would be the better answer at m = 32 for the entry's kernel (the test
        // above), but a stream-K schedule shares out k itself: its configuration with
        // split_k > 1 is invalid, and launching it failed (session 27).
        let p = problem(32, 2048, 8192);
        let streamed = KernelConfig {
            stream_k: true,
            tma: false,
            dtype: Dtype::F32,
            ..config(32, 1)
        };
        assert!(validate(&streamed, &h100()).is_ok());
        let choice = answer(&[entry(4096, streamed, 500.0)], &p).unwrap();
        assert_eq!(choice.rule, Rule::NearestM { from_m: 4096 });
        assert_eq!(choice.config, streamed);
    }

    #[test]
    fn a_borrowed_stream_k_kernel_with_partial_rows_keeps_its_schedule() {
        // m = 40 leaves a partial row of 32-row tiles, which slides back inside A and
        // copies unpredicated: the stream-K kernel as it is.
        let p = problem(40, 2048, 8192);
        let streamed = KernelConfig {
            stream_k: true,
            tma: false,
            dtype: Dtype::F32,
            ..config(32, 1)
        };
        let choice = answer(&[entry(4096, streamed, 500.0)], &p).unwrap();
        assert_eq!(choice.config, streamed);
    }

    #[test]
    fn a_borrowed_stream_k_kernel_with_partial_columns_runs_data_parallel() {
        // n = 2080 leaves a partial column of 64-wide tiles (which does not slide): the
        // data-parallel twin, split as the model prefers.
        let p = problem(64, 2080, 8192);
        let streamed = KernelConfig {
            stream_k: true,
            tma: false,
            dtype: Dtype::F32,
            ..config(32, 1)
        };
        let choice = answer(&[entry(4096, streamed, 500.0)], &p).unwrap();
        assert!(!choice.config.stream_k, "{}", choice.config.name());
        assert_eq!(
            KernelConfig {
                split_k: 1,
                ..choice.config
            },
            config(32, 1)
        );
    }

    #[test]
    fn splits_invalid_for_the_requested_k_are_never_chosen() {
        // k = 256 has 4 k-tiles of 64: split-K 6 and 8 cannot run it.
        let p = problem(32, 1024, 256);
        let choice = answer(&[entry(4096, config(32, 8), 90.0)], &p).unwrap();
        assert!(choice.config.split_k <= 4, "{}", choice.config.name());
        assert!(validate_for_problem(&choice.config, &p).is_ok());
    }

    #[test]
    fn named_databases_must_exist() {
        let missing = Path::new("tuning-db/no-such-gpu.sqlite");
        let err = Lookup::open_existing(&[missing], "h100").unwrap_err();
        assert_eq!(
            err.to_string(),
            "tuning-db/no-such-gpu.sqlite does not exist"
        );
        let none: [&Path; 0] = [];
        assert!(matches!(
            Lookup::open_existing(&none, "h100"),
            Err(RuntimeError::NoDatabase)
        ));
        // open_all, for callers that accept defaults, still takes a missing file.
        assert!(Lookup::open_all(&[missing], "h100").is_ok());
    }

    #[test]
    fn rule_two_is_computed_once_per_problem() {
        let gpu = h100();
        let mut lookup = Lookup::defaults_only(gpu);
        let p = problem(4096, 4096, 4096);
        lookup
            .table
            .insert(WeightKey::of(&p), vec![entry(4096, config(32, 1), 90.0)]);
        let asked = p.with_m(300).unwrap();
        let first = lookup.lookup(&asked).unwrap();
        assert_eq!(lookup.borrowed.lock().unwrap().len(), 1);
        let copy = lookup.clone();
        assert_eq!(copy.lookup(&asked).unwrap(), first);
        assert_eq!(lookup.borrowed.lock().unwrap().len(), 1, "shared by clones");
        assert_eq!(lookup.lookup(&p).unwrap().rule, Rule::Exact);
    }

    #[test]
    fn an_m_the_best_kernel_cannot_run_borrows_the_every_m_entry() {
        // Row-major A at m = 256: the best kernel transposes A first (m a multiple of 4);
        // the problem's best every-m kernel is kept beside it.
        let rows = |copy: ACopy| KernelConfig {
            a_copy: copy,
            ..config(64, 1)
        };
        let best = entry(256, rows(ACopy::Transposed), 10.0);
        let general = Entry {
            any_m: true,
            ..entry(256, rows(ACopy::RowK), 12.0)
        };
        let entries = [best, general];
        let at = |m| {
            let p = problem(m, 4096, 4096)
                .with_layout(ALayout::RowMajor)
                .unwrap();
            answer(&entries, &p).unwrap()
        };
        assert_eq!(at(256).config.a_copy, ACopy::Transposed);
        assert_eq!(at(256).rule, Rule::Exact);
        // m = 301 is not a multiple of 4: only the every-m kernel can run it.
        assert_eq!(at(301).config.a_copy, ACopy::RowK);
        assert_eq!(at(301).rule, Rule::NearestM { from_m: 256 });
        // m = 300 weighs both kernels of m = 256: the faster measurement wins here.
        assert_eq!(at(300).config.a_copy, ACopy::Transposed);
    }
    #[test]
    fn a_cluster_summed_kernel_keeps_its_clusters_on_its_own_grid_only() {
        let gpu = h100();
        let summed = KernelConfig {
            cluster_sum: true,
            ..config(32, 2)
        };
        let lent = entry(512, summed, 101.6);
        // 500 rows: the same 16 rows of 32-row tiles, the grid the tuner timed.
        let same = resplit(&lent, &problem(500, 4096, 4096), &gpu);
        assert_eq!(same, [summed]);
        // 700 rows: another grid, every split through the workspace.
        let other = resplit(&lent, &problem(700, 4096, 4096), &gpu);
        assert!(other.len() > 1 && other.iter().all(|c| !c.cluster_sum));
        assert!(other.contains(&config(32, 2)) && other.contains(&config(32, 1)));
    }

    #[test]
    fn a_re_split_kernel_is_scaled_from_the_timing_of_its_own_split() {
        let (gpu, tuned, wanted) = (h100(), problem(256, 4096, 4096), problem(300, 4096, 4096));
        let mut lent = entry(256, config(32, 2), 49.5);
        let unsplit = config(32, 1);
        let model = |cfg: &KernelConfig, p: &Problem| {
            predict_with_registers(cfg, p, &gpu, lent.registers).time_s
        };
        // Not timed unsplit at m = 256: the model's ratio from the tuned split.
        let from_tuned_split = 49.5 * model(&unsplit, &wanted) / model(&config(32, 2), &tuned);
        let estimate = estimated_us(&lent, unsplit, &wanted, &gpu);
        assert!((estimate - from_tuned_split).abs() < 1e-9 * estimate);
        // Timed unsplit at m = 256 too: that timing anchors the unsplit kernel.
        lent.split_us[0] = 56.2;
        let from_own_split = 56.2 * model(&unsplit, &wanted) / model(&unsplit, &tuned);
        let estimate = estimated_us(&lent, unsplit, &wanted, &gpu);
        assert!((estimate - from_own_split).abs() < 1e-9 * estimate);
    }
}
