//! Replay: a measurements file recorded into a database through the one tuning loop
//! ([`run_plans`]), with a runner that hands back the recorded rows instead of timing
//! anything. Resuming, the order of the rows, the done marks and the best-entry rule are the
//! GPU run's. A file may hold rows of several template checksums (a database kept across a
//! template change): the loop runs once per checksum, oldest first, each under its own
//! checksum, so that a problem is done per checksum as on the GPU.

use super::run::{run_plans, DbRecorder};
use super::runner::{Runner, Session, Trial};
use super::TuneError;
use crate::codegen::KernelConfig;
use crate::db::{Database, Measurement, Source};
use crate::gpu_profile::GpuProfile;
use crate::problem::Problem;
use crate::replay::check::{check_export, compare_best, BestDiff, CheckReport, ScratchDir};
use crate::replay::{BestMismatch, MeasurementLog, ReplayError, REPLAY_STRATEGY};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::time::Instant;

/// Whether every difference is a committed best entry that this build no longer counts as
/// current: the database was tuned by an older nmtune, whose best-entry rule saw those
/// timings as current, while this build's rule ranks a current timing of the same problem
/// above them ([`crate::db::compare`], rule 3). The file still reproduces the rows.
fn chosen_by_older_build(committed: &[Measurement], diffs: &[BestDiff]) -> bool {
    let stale: HashSet<(&str, Problem)> = committed
        .iter()
        .filter(|m| !crate::db::is_current(m))
        .map(|m| (m.gpu.as_str(), m.problem))
        .collect();
    diffs.iter().all(|d| {
        d.committed.is_some()
            && d.replayed.is_some()
            && stale.contains(&(d.gpu.as_str(), d.problem))
    })
}

/// What a replay did.
#[derive(Debug, Clone, Default)]
pub struct ReplaySummary {
    pub problems_total: usize,
    pub problems_replayed: usize,
    /// Already replayed into this database by an earlier run.
    pub problems_skipped: usize,
    /// Asked for, but the file has no timed row of them.
    pub missing: Vec<Problem>,
    pub rows_recorded: usize,
    /// Rows of the file with source = model: predictions are not replayed as timings.
    pub model_rows_ignored: usize,
    pub elapsed_s: f64,
}

/// Record `problems`' rows of `gpu` from `log` into `db` as `source = replay`.
pub fn replay(
    log: &MeasurementLog,
    gpu: &str,
    profile: Option<&GpuProfile>,
    problems: &[Problem],
    db: &Database,
) -> Result<ReplaySummary, TuneError> {
    let started = Instant::now();
    let by_problem = log.timed_rows(gpu)?;
    if let Some(profile) = profile {
        db.upsert_gpu(profile)?;
    }
    let mut summary = ReplaySummary {
        problems_total: problems.len(),
        model_rows_ignored: log
            .rows
            .iter()
            .filter(|r| r.gpu == gpu && r.source == Source::Model)
            .count(),
        ..Default::default()
    };
    let mut recorded: Vec<Problem> = Vec::new();
    for problem in problems {
        match by_problem.get(problem) {
            None => summary.missing.push(*problem),
            Some(_) => recorded.push(*problem),
        }
    }
    let mut replayed = HashSet::new();
    for (checksum, rows) in by_checksum(&by_problem, &recorded) {
        let mut plans = Vec::new();
        for (problem, rows) in &rows {
            if !db.is_problem_done(gpu, problem, checksum, Source::Replay)? {
                plans.push((*problem, rows.iter().map(|r| r.config).collect()));
                replayed.insert(*problem);
            }
        }
        let mut recorder = DbRecorder {
            db,
            gpu_name: gpu.to_string(),
            recorded_checksum: Some(checksum),
            strategy: REPLAY_STRATEGY,
            source: Source::Replay,
        };
        let runner = ReplayRunner { rows };
        let done = run_plans(runner, gpu, &plans, &mut recorder, true)?;
        summary.rows_recorded += done.candidates_timed
            + done.candidates_abandoned
            + done.candidates_rejected
            + done.candidates_failed;
    }
    summary.problems_replayed = replayed.len();
    summary.problems_skipped = recorded.len() - replayed.len();
    summary.elapsed_s = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// The rows of one template checksum, per problem, in the order a GPU run recorded them.
type ChecksumRows = HashMap<Problem, Vec<Measurement>>;

/// `problems`' rows grouped by template checksum, the checksum recorded first (by its
/// earliest row) first; within a problem, rows in the order they were recorded.
fn by_checksum<'a>(
    by_problem: &HashMap<Problem, Vec<&'a Measurement>>,
    problems: &[Problem],
) -> Vec<(&'a str, ChecksumRows)> {
    let mut groups: BTreeMap<&'a str, ChecksumRows> = BTreeMap::new();
    let mut first_seen: HashMap<&'a str, (&'a str, String)> = HashMap::new();
    for problem in problems {
        for row in &by_problem[problem] {
            let checksum = row.template_checksum.as_str();
            let key = (row.created_at.as_str(), row.kernel_name());
            let first = first_seen.entry(checksum).or_insert_with(|| key.clone());
            if key < *first {
                *first = key;
            }
            groups
                .entry(checksum)
                .or_default()
                .entry(*problem)
                .or_default()
                .push(Measurement {
                    source: Source::Replay,
                    ..(*row).clone()
                });
        }
    }
    for rows in groups.values_mut().flat_map(|g| g.values_mut()) {
        rows.sort_by(|a, b| {
            (a.created_at.as_str(), a.kernel_name()).cmp(&(b.created_at.as_str(), b.kernel_name()))
        });
    }
    let mut ordered: Vec<_> = groups.into_iter().collect();
    ordered.sort_by(|(a, _), (b, _)| first_seen[a].cmp(&first_seen[b]).then(a.cmp(b)));
    ordered
}

/// The replay runner: each candidate's "run" is its recorded row, stored as it is.
struct ReplayRunner {
    rows: HashMap<Problem, Vec<Measurement>>,
}

impl Runner for ReplayRunner {
    type Session<'a> = ReplaySession;

    fn source(&self) -> Source {
        Source::Replay
    }

    fn begin(
        &mut self,
        problem: &Problem,
        _configs: &[KernelConfig],
    ) -> Result<ReplaySession, TuneError> {
        let mut queues: HashMap<KernelConfig, VecDeque<Measurement>> = HashMap::new();
        for row in self.rows.remove(problem).unwrap_or_default() {
            queues.entry(row.config).or_default().push_back(row);
        }
        Ok(ReplaySession { queues })
    }
}

/// One problem's recorded rows, by configuration, in their order.
struct ReplaySession {
    queues: HashMap<KernelConfig, VecDeque<Measurement>>,
}

impl Session for ReplaySession {
    /// Each row carries the baseline it was measured beside.
    fn baseline_us(&self) -> Option<f64> {
        None
    }

    /// The order they were recorded in (the plan's).
    fn order(&self, configs: &[KernelConfig]) -> Vec<KernelConfig> {
        configs.to_vec()
    }

    fn run(&mut self, config: &KernelConfig, _best_us: Option<f64>) -> Trial {
        let mut trial = Trial::new();
        trial.recorded = self.queues.get_mut(config).and_then(VecDeque::pop_front);
        trial
    }
}

/// Check `db_path` against its measurements file; `Ok` only when the file is the database's
/// exact export and replaying it into a scratch database chooses the same best entry (kernel
/// and median) for every problem. The differences, when there are any, are also returned
/// through `on_diff` one by one.
pub fn check(
    db_path: &Path,
    log: &MeasurementLog,
    mut on_diff: impl FnMut(&BestDiff),
) -> Result<CheckReport, TuneError> {
    let committed = Database::open_read_only(db_path)?;
    check_export(&committed, log)?;
    let scratch = ScratchDir::new()?;
    let replayed = Database::open(&scratch.path.join("replay.sqlite"))?;
    for gpu in log.gpus() {
        let profile = committed.gpu_profile(&gpu)?;
        replay(log, &gpu, profile.as_ref(), &log.problems(&gpu), &replayed)?;
    }
    let expected = committed.best_entries(None)?;
    let diffs = compare_best(&expected, &replayed.best_entries(None)?);
    diffs.iter().for_each(&mut on_diff);
    if let Some(first) = diffs.first() {
        let mismatch = BestMismatch {
            file: log.path.clone(),
            db: db_path.to_path_buf(),
            differ: diffs.len(),
            total: expected.len(),
            first: first.to_string(),
        };
        return Err(if chosen_by_older_build(&expected, &diffs) {
            ReplayError::OlderBuild(mismatch)
        } else {
            ReplayError::Mismatch(mismatch)
        }
        .into());
    }
    Ok(CheckReport {
        gpus: log.gpus(),
        rows: log.rows.len(),
        best_entries: expected.len(),
    })
}
