//! The tuning loop: problems grouped by weight, candidates built once, each result stored as
//! soon as it is measured.

use super::gpu_runner::GpuRunner;
use super::measure::TimingPlan;
use super::model_runner::ModelRunner;
use super::progress::Progress;
use super::runner::{Runner, Session};
use super::search::Strategy;
use super::warm::warm_candidates;
use super::TuneError;
use crate::codegen::{kernel_checksum, templates_checksum, KernelConfig};
use crate::db::{can_be_best, is_current_against, Database, Measurement, Source, Status};
use crate::gpu::{Gpu, GpuProfile};
use crate::kernels::table_one;
use crate::problem::Problem;
use chrono::{DateTime, Utc};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

/// Settings of one tuning run.
#[derive(Debug, Clone)]
pub struct TuneOptions {
    pub strategy: Strategy,
    pub plan: TimingPlan,
    pub quiet: bool,
    /// NVRTC output cache.
    pub cache_dir: PathBuf,
    /// Seed of the random inputs.
    pub seed: u64,
    /// `nmtune --retune`: search again the problems whose last search with this build's
    /// templates finished before this instant, so that a change of the search (new candidates,
    /// a wider strategy) reaches problems already done. Kernels already recorded are not run
    /// again; a problem with nothing new to run costs no GPU time. A run resumed in a fresh
    /// process passes the same instant, so it does not start over.
    pub retune_since: Option<DateTime<Utc>>,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct TuneSummary {
    pub problems_total: usize,
    /// Done before, or (a re-tune) with nothing new to run.
    pub problems_skipped: usize,
    /// With at least one candidate run.
    pub problems_tuned: usize,
    pub candidates_timed: usize,
    /// Verified, then dropped after the probe runs as clearly slower than the best so far.
    pub candidates_abandoned: usize,
    /// Refused before timing for breaking a resource limit (ptxas spills): not a failure.
    pub candidates_rejected: usize,
    /// Did not compile, launch or verify.
    pub candidates_failed: usize,
    pub elapsed_s: f64,
}

/// Everything a measurement row shares within one run.
struct RunContext {
    gpu_name: String,
    source: Source,
}

impl RunContext {
    fn row(&self, problem: &Problem, config: &KernelConfig, status: Status) -> Measurement {
        Measurement {
            gpu: self.gpu_name.clone(),
            problem: *problem,
            config: *config,
            status,
            error: None,
            median_us: None,
            min_us: None,
            runs: 0,
            verified: false,
            max_rel_error: None,
            cublas_us: None,
            copy_gbps: None,
            registers: None,
            spill_bytes: None,
            template_checksum: templates_checksum(problem).to_string(),
            kernel_checksum: Some(kernel_checksum(config).to_string()),
            source: self.source,
            tool_version: crate::TOOL_VERSION.to_string(),
            created_at: chrono::Utc::now().to_rfc3339(),
        }
    }
}

/// What earlier runs recorded of one problem (with this build's templates and the runner's
/// source).
#[derive(Debug, Clone, Default)]
pub struct Stored {
    /// Kernels with a row of any status: the loop does not run them again.
    pub kernels: HashSet<String>,
    /// The fastest of those rows that can be the best: the bar a new candidate must beat.
    pub best_us: Option<f64>,
    /// Rows of earlier template checksums whose kernels this build still generates unchanged
    /// (their kernel checksum is this build's), as rows of this build's checksum: recorded
    /// again instead of timed again, so that a template change re-times only the kernels it
    /// changed. Among `kernels` and `best_us` already.
    pub carried: Vec<Measurement>,
}

/// The rows of `others` (earlier template checksums) that time code this build generates
/// unchanged and whose kernel `now` (rows of `checksum`) lacks, the latest of each kernel,
/// as rows of `checksum`.
fn carried_over(others: Vec<Measurement>, now: &[Measurement], checksum: &str) -> Vec<Measurement> {
    let timed_now: HashSet<String> = now.iter().map(Measurement::kernel_name).collect();
    let mut latest: BTreeMap<String, Measurement> = BTreeMap::new();
    for row in others {
        let name = row.kernel_name();
        // Of another checksum, yet current: its kernel's own checksum is this build's.
        let same_code = row.template_checksum != checksum && is_current_against(&row, checksum);
        if !same_code || timed_now.contains(&name) {
            continue;
        }
        if latest
            .get(&name)
            .map_or(true, |kept| kept.created_at < row.created_at)
        {
            latest.insert(name, row);
        }
    }
    latest
        .into_values()
        .map(|row| Measurement {
            template_checksum: checksum.to_string(),
            ..row
        })
        .collect()
}

/// Where the loop's rows go: the tuning database (a tuning run: resumes, stores every row as
/// it comes) or, for `nmtune bench`, the caller (nothing stored, every candidate run to the end).
pub trait Recorder {
    /// What an earlier run stored of `problem` already.
    fn stored(&self, problem: &Problem) -> Result<Stored, TuneError>;
    /// One row of `problem`, as soon as it is known (all but the problem's last).
    fn record(&mut self, row: &Measurement) -> Result<(), TuneError>;
    /// The end of `problem`, with its last row when it had one.
    fn finish(&mut self, problem: &Problem, last: Option<&Measurement>) -> Result<(), TuneError>;
    /// Whether candidates clearly slower than the best so far are abandoned (tuning) or every
    /// one is timed to the end (a benchmark).
    fn abandons(&self) -> bool {
        true
    }
}

/// A [`Recorder`] for benchmarks (`nmtune bench`): nothing stored, resumed or abandoned; each
/// problem's rows, in the order they ran, go to `on_problem` when the problem ends.
pub struct Benchmark<F> {
    rows: Vec<Measurement>,
    on_problem: F,
}

impl<F> Benchmark<F>
where
    F: FnMut(&Problem, Vec<Measurement>) -> Result<(), TuneError>,
{
    pub fn new(on_problem: F) -> Self {
        Self {
            rows: Vec::new(),
            on_problem,
        }
    }
}

impl<F> Recorder for Benchmark<F>
where
    F: FnMut(&Problem, Vec<Measurement>) -> Result<(), TuneError>,
{
    fn stored(&self, _problem: &Problem) -> Result<Stored, TuneError> {
        Ok(Stored::default())
    }

    fn record(&mut self, row: &Measurement) -> Result<(), TuneError> {
        self.rows.push(row.clone());
        Ok(())
    }

    fn finish(&mut self, problem: &Problem, last: Option<&Measurement>) -> Result<(), TuneError> {
        let mut rows = std::mem::take(&mut self.rows);
        rows.extend(last.cloned());
        (self.on_problem)(problem, rows)
    }

    fn abandons(&self) -> bool {
        false
    }
}

/// The tuning database as the loop's [`Recorder`]: rows of one GPU, template checksum
/// (this build's for each problem, or a replayed file's) and source.
pub(super) struct DbRecorder<'a> {
    pub db: &'a Database,
    pub gpu_name: String,
    /// The replayed rows' checksum; `None`: this build's ([`templates_checksum`]).
    pub recorded_checksum: Option<&'a str>,
    pub strategy: &'static str,
    pub source: Source,
}

impl DbRecorder<'_> {
    fn checksum(&self, problem: &Problem) -> &str {
        self.recorded_checksum
            .unwrap_or_else(|| templates_checksum(problem))
    }
}

impl Recorder for DbRecorder<'_> {
    fn stored(&self, problem: &Problem) -> Result<Stored, TuneError> {
        let checksum = self.checksum(problem);
        let rows = self
            .db
            .recorded(&self.gpu_name, problem, checksum, self.source)?;
        // A replay records the file's rows as they are; a tuning run carries the unchanged.
        let carried = match self.recorded_checksum {
            Some(_) => Vec::new(),
            None => {
                let all = self
                    .db
                    .recorded_any_checksum(&self.gpu_name, problem, self.source)?;
                carried_over(all, &rows, checksum)
            }
        };
        let known = rows.iter().chain(&carried);
        let best_us = known
            .clone()
            .filter(|m| can_be_best(m))
            .filter_map(|m| m.median_us)
            .reduce(f64::min);
        Ok(Stored {
            kernels: known.map(Measurement::kernel_name).collect(),
            best_us,
            carried,
        })
    }

    fn record(&mut self, row: &Measurement) -> Result<(), TuneError> {
        Ok(self.db.record(row)?)
    }

    fn finish(&mut self, problem: &Problem, last: Option<&Measurement>) -> Result<(), TuneError> {
        // The last result and the done mark in one transaction: a run killed at any point
        // leaves no result of an unfinished problem behind a finished one, and a model run
        // (one result per problem) never a result without its done mark.
        self.db.record_and_mark_done(
            last.map_or(&[], std::slice::from_ref),
            (&self.gpu_name, problem),
            self.checksum(problem),
            self.strategy,
            self.source,
        )?;
        Ok(())
    }
}

/// Problems not yet finished on this GPU with this template checksum, or (a re-tune) last
/// finished before `retune_since`.
fn pending(
    db: &Database,
    gpu: &str,
    problems: &[Problem],
    source: Source,
    retune_since: Option<DateTime<Utc>>,
) -> Result<Vec<Problem>, TuneError> {
    let mut left = Vec::new();
    for p in problems {
        let done_at = db.done_at(gpu, p, templates_checksum(p), source)?;
        let again = match (done_at, retune_since) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(at), Some(since)) => finished_before(&at, since),
        };
        if again {
            left.push(*p);
        }
    }
    Ok(left)
}

/// Whether a done mark's time (RFC 3339) is before `since`; one that does not parse is.
fn finished_before(done_at: &str, since: DateTime<Utc>) -> bool {
    DateTime::parse_from_rfc3339(done_at).map_or(true, |at| at < since)
}

/// An error, before anything is tuned or stored, when no configuration of the template family
/// can run some of `problems` on `profile` (an L that is not a multiple of 4, say): the
/// default configuration ([`table_one::default_config`], the runtime's rule 3) exists exactly
/// when the search space holds a configuration for the problem.
pub fn check_supported(problems: &[Problem], profile: &GpuProfile) -> Result<(), TuneError> {
    let mut seen = std::collections::HashSet::new();
    let unsupported: Vec<&Problem> = problems
        .iter()
        .filter(|p| seen.insert(**p))
        .filter(|p| table_one::default_config(p, profile).is_none())
        .collect();
    match unsupported.first() {
        None => Ok(()),
        Some(first) => Err(TuneError::Unsupported {
            count: unsupported.len(),
            first: format!("{first}: {}", table_one::why_unsupported(first)),
        }),
    }
}

/// Fill the database from the performance model alone: no GPU needed. The same loop as on
/// the GPU, with the model's best configuration of each problem as its one candidate.
pub fn tune_with_model(
    profile: &GpuProfile,
    problems: &[Problem],
    db: &Database,
    quiet: bool,
    retune_since: Option<DateTime<Utc>>,
) -> Result<TuneSummary, TuneError> {
    let opts = TuneOptions {
        strategy: Strategy::Model,
        plan: TimingPlan::default(),
        quiet,
        cache_dir: PathBuf::new(),
        seed: 0,
        retune_since,
    };
    tune_with_runner(ModelRunner::new(profile), profile, problems, db, &opts)
}

/// Tune every problem on the GPU, resuming where an earlier run stopped.
///
/// Takes the GPU by value: when a candidate kills the context (a fault is sticky: the
/// context cannot run anything after it) or outlives the time limit, the candidate is
/// recorded as `launch_failed` and the run ends with an error for which
/// [`TuneError::is_restartable`] holds; the GPU's handles are leaked, not freed. A fresh
/// process resumes without that kernel (`nmtune` does this itself, see `cli::supervise`).
pub fn tune_on_gpu(
    gpu: Gpu,
    problems: &[Problem],
    db: &Database,
    opts: &TuneOptions,
) -> Result<TuneSummary, TuneError> {
    let profile = gpu.profile().clone();
    let runner = GpuRunner::new(gpu, opts.plan, opts.cache_dir.clone(), opts.seed);
    tune_with_runner(runner, &profile, problems, db, opts)
}

/// The tuning loop, for any [`Runner`]: the problems not done yet on `profile`'s GPU with this
/// build's templates, each with the runner's plan of candidates, through [`run_plans`] into
/// the database.
pub fn tune_with_runner<R: Runner>(
    runner: R,
    profile: &GpuProfile,
    problems: &[Problem],
    db: &Database,
    opts: &TuneOptions,
) -> Result<TuneSummary, TuneError> {
    let started = Instant::now();
    check_supported(problems, profile)?;
    db.upsert_gpu(profile)?;
    let source = runner.source();
    let todo = pending(db, &profile.name, problems, source, opts.retune_since)?;
    let retune = opts.retune_since.is_some();
    let plans = plan(&runner, db, profile, &todo, opts.strategy, retune)?;
    if !opts.quiet && runner.compiles() {
        eprintln!(
            "nmtune: {} problems to tune ({} already done), {} candidates, compiling for {}",
            todo.len(),
            problems.len() - todo.len(),
            plans.iter().map(|(_, c)| c.len()).sum::<usize>(),
            profile.arch()
        );
    }
    let mut recorder = DbRecorder {
        db,
        gpu_name: profile.name.clone(),
        recorded_checksum: None,
        strategy: opts.strategy.as_str(),
        source,
    };
    let mut summary = run_plans(runner, &profile.name, &plans, &mut recorder, opts.quiet)?;
    summary.problems_total = problems.len();
    summary.problems_skipped = problems.len() - summary.problems_tuned;
    summary.elapsed_s = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// Each problem of `todo` with its candidates: the runner's plan for the strategy; for the warm
/// and local strategies, the earlier winners stored in `db` where it has them (on a re-tune,
/// this build's own timings among them; with local, their neighbours), and the runner's pruned
/// plan for the rest.
fn plan<R: Runner>(
    runner: &R,
    db: &Database,
    profile: &GpuProfile,
    todo: &[Problem],
    strategy: Strategy,
    retune: bool,
) -> Result<Vec<(Problem, Vec<KernelConfig>)>, TuneError> {
    if !matches!(strategy, Strategy::Warm | Strategy::Local) {
        let plans = runner.plan(todo, profile, strategy);
        return Ok(todo.iter().copied().zip(plans).collect());
    }
    let local = strategy == Strategy::Local;
    let warm = warm_candidates(db, profile, todo, retune, local)?;
    let cold: Vec<Problem> = todo
        .iter()
        .zip(&warm)
        .filter(|(_, w)| w.is_none())
        .map(|(p, _)| *p)
        .collect();
    let mut cold_plans = runner.plan(&cold, profile, Strategy::Pruned).into_iter();
    Ok(todo
        .iter()
        .zip(warm)
        .map(|(p, w)| {
            (
                *p,
                w.unwrap_or_else(|| cold_plans.next().unwrap_or_default()),
            )
        })
        .collect())
}

/// The one loop every backend runs (tuning on the GPU, the model, `nmtune bench`): build
/// every candidate of `plans` the recorder has not stored yet once, then problem by problem
/// (grouped by weight, smallest m first) those candidates in the runner's order, each result
/// handed to the recorder as soon as it is known, the problem's last with its end.
pub fn run_plans<R: Runner, S: Recorder>(
    mut runner: R,
    gpu_name: &str,
    plans: &[(Problem, Vec<KernelConfig>)],
    recorder: &mut S,
    quiet: bool,
) -> Result<TuneSummary, TuneError> {
    let ctx = RunContext {
        gpu_name: gpu_name.to_string(),
        source: runner.source(),
    };
    let planned: usize = plans.iter().map(|(_, c)| c.len()).sum();
    let (fresh, bars) = unrecorded(plans, recorder)?;
    let all_configs: Vec<KernelConfig> =
        fresh.iter().flat_map(|(_, c)| c.iter().copied()).collect();
    runner.prepare(&all_configs);
    let mut summary = TuneSummary::default();
    // The unit of work is a candidate: problems differ a hundredfold in their number.
    let mut bar = Progress::new(planned, "candidates", quiet);
    bar.skip((planned - all_configs.len()) as u64);
    for group in group_by_weight(&fresh) {
        for (problem, configs) in group {
            let result = run_problem(
                &mut runner,
                &ctx,
                (problem, configs, bars[problem]),
                recorder,
                &mut summary,
                &mut bar,
            );
            let last = match result {
                Ok(last) => last,
                Err(err) => {
                    if err.is_restartable() {
                        // The runner's context is beyond use (a fault is sticky; resetting
                        // the primary context was seen to leave it broken on the H100's
                        // driver 580), and a kernel still running may make freeing anything
                        // on it wait forever: leave it all to the end of the process.
                        bar.clear();
                        std::mem::forget(runner);
                    }
                    return Err(err);
                }
            };
            recorder.finish(problem, last.as_ref())?;
            summary.problems_tuned += usize::from(!configs.is_empty());
        }
    }
    bar.clear();
    Ok(summary)
}

/// A problem and the candidates to time for it.
type Plan<'a> = (&'a Problem, &'a Vec<KernelConfig>);

/// `plans` without the candidates the recorder stored already (a run resumed, or a re-tune)
/// or carries over from earlier templates ([`Stored::carried`], recorded here), and each
/// problem's stored best time: the bar its first new candidate must beat.
#[allow(clippy::type_complexity)]
fn unrecorded<S: Recorder>(
    plans: &[(Problem, Vec<KernelConfig>)],
    recorder: &mut S,
) -> Result<
    (
        Vec<(Problem, Vec<KernelConfig>)>,
        HashMap<Problem, Option<f64>>,
    ),
    TuneError,
> {
    let mut fresh = Vec::with_capacity(plans.len());
    let mut bars = HashMap::with_capacity(plans.len());
    for (problem, configs) in plans {
        let stored = recorder.stored(problem)?;
        for row in &stored.carried {
            recorder.record(row)?;
        }
        let todo = configs
            .iter()
            .filter(|c| !stored.kernels.contains(&c.name()))
            .copied()
            .collect();
        fresh.push((*problem, todo));
        bars.insert(*problem, stored.best_us);
    }
    Ok((fresh, bars))
}

/// Problems sharing (n, k, N:M, L) share one random weight; smallest m first.
fn group_by_weight(plans: &[(Problem, Vec<KernelConfig>)]) -> Vec<Vec<Plan<'_>>> {
    let mut groups: BTreeMap<(usize, usize, u32, u32, usize), Vec<Plan<'_>>> = BTreeMap::new();
    for (p, configs) in plans {
        groups
            .entry((p.n, p.k, p.nm.n, p.nm.m, p.l))
            .or_default()
            .push((p, configs));
    }
    let mut groups: Vec<_> = groups.into_values().collect();
    for group in &mut groups {
        group.sort_by_key(|(p, _)| p.m);
    }
    groups
}

/// One problem's new candidates through the runner, each handed to the recorder as soon as it
/// is known but the last, which is returned for the caller to hand over with the problem's
/// end. `best_us` is the problem's stored best time; with no candidates the runner is not
/// started at all (no baseline to time).
fn run_problem<R: Runner, S: Recorder>(
    runner: &mut R,
    ctx: &RunContext,
    (problem, configs, mut best_us): (&Problem, &Vec<KernelConfig>, Option<f64>),
    recorder: &mut S,
    summary: &mut TuneSummary,
    bar: &mut Progress,
) -> Result<Option<Measurement>, TuneError> {
    if configs.is_empty() {
        return Ok(None);
    }
    bar.begin();
    let mut session = runner.begin(problem, configs)?;
    let baseline_us = session.baseline_us();
    let copy_gbps = session.copy_gbps();
    let todo = session.order(configs);
    let mut last = None;
    for (i, config) in todo.iter().enumerate() {
        let abandon_above = if recorder.abandons() { best_us } else { None };
        let mut trial = session.run(config, abandon_above);
        let mut row = ctx.row(problem, config, Status::Ok);
        row.cublas_us = baseline_us;
        row.copy_gbps = copy_gbps;
        trial.fill(&mut row);
        match row.status {
            // A prediction: nothing was timed, and it sets no bar.
            Status::Ok if !row.verified => {}
            Status::Ok => {
                summary.candidates_timed += 1;
                best_us = best_us.min_or(row.median_us);
                bar.set_message(format!(
                    "{problem}: best {:.1} µs, cuBLAS {:.1} µs",
                    best_us.unwrap_or(f64::NAN),
                    baseline_us.unwrap_or(f64::NAN)
                ));
            }
            Status::Abandoned => summary.candidates_abandoned += 1,
            Status::Rejected => summary.candidates_rejected += 1,
            Status::CompileFailed | Status::LaunchFailed | Status::WrongResult => {
                summary.candidates_failed += 1
            }
        }
        if let Some(err) = trial.fatal.take() {
            recorder.record(&row)?;
            // A kernel may still be using the session's memory (see Trial::fatal).
            std::mem::forget(session);
            return Err(err);
        }
        if i + 1 == todo.len() {
            last = Some(row); // handed over with the problem's end, by the caller
        } else {
            recorder.record(&row)?;
        }
        bar.finish(1);
    }
    Ok(last)
}

trait MinOr {
    fn min_or(self, other: Option<f64>) -> Option<f64>;
}
impl MinOr for Option<f64> {
    fn min_or(self, other: Option<f64>) -> Option<f64> {
        match (self, other) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
