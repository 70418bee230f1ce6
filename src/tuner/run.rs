//! The tuning loop: problems grouped by weight, candidates built once, each result stored as
//! soon as it is measured.

use super::gpu_runner::GpuRunner;
use super::measure::TimingPlan;
use super::progress::Progress;
use super::runner::{Runner, Session};
use super::search::{candidates, Strategy};
use super::TuneError;
use crate::codegen::{render::template_checksum, search_space, KernelConfig};
use crate::db::{Database, Measurement, Source, Status};
use crate::gpu::{Gpu, GpuProfile};
use crate::kernels::table_one;
use crate::model;
use crate::problem::{ALayout, NmPattern, Problem};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap};
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
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct TuneSummary {
    pub problems_total: usize,
    pub problems_skipped: usize,
    pub problems_tuned: usize,
    pub candidates_timed: usize,
    /// Verified, then dropped after the probe runs as clearly slower than the best so far.
    pub candidates_abandoned: usize,
    pub candidates_failed: usize,
    pub elapsed_s: f64,
}

/// Everything a measurement row shares within one run.
struct RunContext<'a> {
    gpu_name: String,
    checksum: &'static str,
    source: Source,
    db: &'a Database,
}

impl RunContext<'_> {
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
            registers: None,
            spill_bytes: None,
            template_checksum: self.checksum.to_string(),
            source: self.source,
            tool_version: crate::TOOL_VERSION.to_string(),
            created_at: chrono::Utc::now().to_rfc3339(),
        }
    }
}

/// Problems not yet finished on this GPU with this template checksum.
fn pending(
    db: &Database,
    gpu: &str,
    problems: &[Problem],
    source: Source,
) -> Result<Vec<Problem>, TuneError> {
    let mut left = Vec::new();
    for p in problems {
        if !db.is_problem_done(gpu, p, template_checksum(), source)? {
            left.push(*p);
        }
    }
    Ok(left)
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

/// Fill the database from the performance model alone: no GPU needed.
pub fn tune_with_model(
    profile: &GpuProfile,
    problems: &[Problem],
    db: &Database,
    quiet: bool,
) -> Result<TuneSummary, TuneError> {
    let started = Instant::now();
    check_supported(problems, profile)?;
    db.upsert_gpu(profile)?;
    let ctx = RunContext {
        gpu_name: profile.name.clone(),
        checksum: template_checksum(),
        source: Source::Model,
        db,
    };
    let todo = pending(db, &profile.name, problems, Source::Model)?;
    let spaces = search_spaces(&todo, profile);
    // Predicted in parallel and stored a chunk at a time, so that the progress line's rate is
    // that of both steps together.
    let mut bar = Progress::new(todo.len(), "problems", quiet);
    for chunk in todo.chunks(4 * rayon::current_num_threads()) {
        bar.begin();
        let rows: Vec<(Problem, Vec<Measurement>)> = chunk
            .par_iter()
            .map(|problem| {
                let best = crate::model::best(
                    &spaces[&(problem.nm, problem.l, problem.a_layout)],
                    problem,
                    profile,
                );
                let row = best.map(|cfg| model_row(&ctx, problem, &cfg, profile));
                (*problem, row.into_iter().collect())
            })
            .collect();
        for (problem, rows) in &rows {
            // One transaction per problem: a run killed at any point keeps every problem it
            // finished, and no reader ever sees a problem marked done without its entry.
            ctx.db.record_and_mark_done(
                rows,
                (&ctx.gpu_name, problem),
                ctx.checksum,
                Strategy::Model.as_str(),
                Source::Model,
            )?;
        }
        bar.finish(chunk.len() as u64);
    }
    bar.clear();
    Ok(TuneSummary {
        problems_total: problems.len(),
        problems_skipped: problems.len() - todo.len(),
        problems_tuned: todo.len(),
        candidates_timed: 0,
        candidates_abandoned: 0,
        candidates_failed: 0,
        elapsed_s: started.elapsed().as_secs_f64(),
    })
}

/// The search space of every (N:M, L) among `problems`, enumerated once each.
fn search_spaces(
    problems: &[Problem],
    profile: &GpuProfile,
) -> HashMap<(NmPattern, usize, ALayout), Vec<KernelConfig>> {
    let keys: BTreeSet<(NmPattern, usize, ALayout)> =
        problems.iter().map(|p| (p.nm, p.l, p.a_layout)).collect();
    keys.into_par_iter()
        .map(|(nm, l, a)| ((nm, l, a), search_space(nm, l as u32, a, profile)))
        .collect()
}

/// The model's prediction for `cfg` as a database row.
fn model_row(
    ctx: &RunContext<'_>,
    problem: &Problem,
    cfg: &KernelConfig,
    profile: &GpuProfile,
) -> Measurement {
    let predicted_us = model::predict(cfg, problem, profile).time_s * 1e6;
    let mut row = ctx.row(problem, cfg, Status::Ok);
    row.median_us = Some(predicted_us);
    row.min_us = Some(predicted_us);
    row
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
/// build's templates, grouped by weight (smallest m first); per problem the strategy's
/// candidates, minus those a killed run already stored, in the runner's order; every result
/// stored as soon as it is known, the problem marked done after its last.
pub fn tune_with_runner<R: Runner>(
    mut runner: R,
    profile: &GpuProfile,
    problems: &[Problem],
    db: &Database,
    opts: &TuneOptions,
) -> Result<TuneSummary, TuneError> {
    let started = Instant::now();
    check_supported(problems, profile)?;
    db.upsert_gpu(profile)?;
    let ctx = RunContext {
        gpu_name: profile.name.clone(),
        checksum: template_checksum(),
        source: runner.source(),
        db,
    };
    let todo = pending(db, &profile.name, problems, ctx.source)?;
    let plans: Vec<(Problem, Vec<KernelConfig>)> = todo
        .iter()
        .map(|p| (*p, candidates(p, profile, opts.strategy)))
        .collect();
    let all_configs: Vec<KernelConfig> =
        plans.iter().flat_map(|(_, c)| c.iter().copied()).collect();
    if !opts.quiet {
        eprintln!(
            "nmtune: {} problems to tune ({} already done), {} candidates, compiling for {}",
            todo.len(),
            problems.len() - todo.len(),
            all_configs.len(),
            profile.arch()
        );
    }
    runner.prepare(&all_configs);

    let mut summary = TuneSummary {
        problems_total: problems.len(),
        problems_skipped: problems.len() - todo.len(),
        ..Default::default()
    };
    // The unit of work is a candidate: problems differ a hundredfold in their number.
    let mut bar = Progress::new(all_configs.len(), "candidates", opts.quiet);
    for group in group_by_weight(&plans) {
        for (problem, configs) in group {
            let result = tune_problem(&mut runner, &ctx, problem, configs, &mut summary, &mut bar);
            if let Err(err) = result {
                if err.is_restartable() {
                    // The runner's context is beyond use (a fault is sticky; resetting the
                    // primary context was seen to leave it broken on the H100's driver 580),
                    // and a kernel still running may make freeing anything on it wait
                    // forever: leave it all to the end of the process.
                    bar.clear();
                    std::mem::forget(runner);
                }
                return Err(err);
            }
            db.mark_problem_done(
                &ctx.gpu_name,
                problem,
                ctx.checksum,
                opts.strategy.as_str(),
                ctx.source,
            )?;
            summary.problems_tuned += 1;
        }
    }
    bar.clear();
    summary.elapsed_s = started.elapsed().as_secs_f64();
    Ok(summary)
}

/// A problem and the candidates to time for it.
type Plan<'a> = (&'a Problem, &'a Vec<KernelConfig>);

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

/// One problem's candidates through the runner, each stored as soon as it is known.
fn tune_problem<R: Runner>(
    runner: &mut R,
    ctx: &RunContext<'_>,
    problem: &Problem,
    configs: &[KernelConfig],
    summary: &mut TuneSummary,
    bar: &mut Progress,
) -> Result<(), TuneError> {
    let already = ctx
        .db
        .measured_kernels(&ctx.gpu_name, problem, ctx.checksum, ctx.source)?;
    let skipped = configs
        .iter()
        .filter(|c| already.contains(&c.name()))
        .count();
    bar.skip(skipped as u64);
    bar.begin();
    let mut session = runner.begin(problem, configs)?;
    let baseline_us = session.baseline_us();
    let mut best_us: Option<f64> = None;
    for config in session
        .order(configs)
        .iter()
        .filter(|c| !already.contains(&c.name()))
    {
        let mut trial = session.run(config, best_us);
        let mut row = ctx.row(problem, config, Status::Ok);
        row.cublas_us = baseline_us;
        trial.fill(&mut row);
        match row.status {
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
            _ => summary.candidates_failed += 1,
        }
        ctx.db.record(&row)?;
        if let Some(err) = trial.fatal.take() {
            // A kernel may still be using the session's memory (see Trial::fatal).
            std::mem::forget(session);
            return Err(err);
        }
        bar.finish(1);
    }
    Ok(())
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
