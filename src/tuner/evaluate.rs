//! How well the model-guided search would have done, judged on measurements.
//!
//! For every problem with enough measured configurations (the ground truth: ideally an
//! exhaustive sweep, or the sample strategy's), the model strategy's selection ([`search::model_picks`]: the `top_k`
//! best predicted and their one-parameter neighbours) is run on the measured set alone, as if
//! only those configurations existed. A problem is a hit when the fastest of the picks is
//! within `tolerance` of the fastest measured one. Time saved is the share of candidates, and
//! of timed kernel time (median × runs), the picks would not have timed. The pruned (default)
//! strategy is judged the same way, its picks being its candidates that were measured.

use super::search;
use crate::codegen::enumerate::space_for;
use crate::codegen::{validate, KernelConfig};
use crate::db::{best_per_problem, can_be_best, Measurement, Source};
use crate::gpu_profile::GpuProfile;
use crate::problem::{ALayout, Dtype, NmPattern, Problem};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// A pick within 3 % of the measured best counts as a hit.
pub const HIT_TOLERANCE: f64 = 0.03;

/// What to evaluate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EvalOptions {
    /// The strategy whose selection is judged: `Model` (below) or `Pruned` (the default
    /// strategy's candidates that were measured).
    pub strategy: search::Strategy,
    /// Configurations the model picks before neighbours are added.
    pub top_k: usize,
    pub neighbours: bool,
    /// Relative slack of a hit.
    pub tolerance: f64,
    /// Problems with fewer measured configurations are skipped.
    pub min_configs: usize,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            strategy: search::Strategy::Model,
            top_k: search::MODEL_TOP,
            neighbours: true,
            tolerance: HIT_TOLERANCE,
            min_configs: 5,
        }
    }
}

/// One problem's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct ProblemEval {
    pub problem: String,
    #[serde(skip)]
    pub nm: NmPattern,
    /// Measured configurations (the ground truth set).
    pub measured: usize,
    /// Valid configurations of the search space for this problem.
    pub search_space: usize,
    /// Configurations the model would have timed.
    pub picked: usize,
    pub best_kernel: String,
    pub best_us: f64,
    pub picked_kernel: Option<String>,
    pub picked_us: Option<f64>,
    pub hit: bool,
    /// Σ median × runs over the measured set and over the picks, µs.
    pub measured_time_us: f64,
    pub picked_time_us: f64,
}

impl ProblemEval {
    /// Fastest pick over fastest measured (infinite when no pick has a valid time).
    pub fn slowdown(&self) -> f64 {
        self.picked_us.map_or(f64::INFINITY, |t| t / self.best_us)
    }
}

/// Totals over a set of problems.
#[derive(Debug, Clone, Serialize)]
pub struct GroupEval {
    pub group: String,
    pub problems: usize,
    pub hits: usize,
    pub hit_rate: f64,
    pub mean_measured: f64,
    pub mean_picked: f64,
    pub mean_search_space: f64,
    /// 1 − picked / measured candidates.
    pub candidates_saved: f64,
    /// 1 − picked / measured kernel time; `None` when the rows hold no time.
    pub kernel_time_saved: Option<f64>,
    /// Geometric mean of [`ProblemEval::slowdown`] over problems whose picks have a time.
    pub geomean_slowdown: Option<f64>,
    pub worst_slowdown: f64,
}

/// The whole evaluation of one GPU's measurements.
#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    pub gpu: String,
    pub strategy: search::Strategy,
    pub top_k: usize,
    pub neighbours: bool,
    pub tolerance: f64,
    pub min_configs: usize,
    /// Problems with too few measured configurations or no verified time.
    pub problems_skipped: usize,
    /// Mean share of a problem's search space that was measured.
    pub coverage: f64,
    pub overall: GroupEval,
    pub by_sparsity: Vec<GroupEval>,
    pub problems: Vec<ProblemEval>,
}

/// One measured configuration: its best eligible time and the kernel time spent on it.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    best_us: Option<f64>,
    time_us: f64,
}

/// Evaluate the model strategy on `rows` (one GPU's measurements; model rows are ignored).
pub fn evaluate(rows: &[Measurement], profile: &GpuProfile, opts: &EvalOptions) -> Evaluation {
    let sets = measured_sets(rows);
    let mut spaces: HashMap<(NmPattern, usize, ALayout, Dtype), Vec<KernelConfig>> = HashMap::new();
    let mut problems = Vec::new();
    for (problem, samples) in &sets {
        if samples.len() < opts.min_configs {
            continue;
        }
        let space = spaces
            .entry((problem.nm, problem.l, problem.a_layout, problem.dtype))
            .or_insert_with(|| {
                let (nm, l, layout) = (problem.nm, problem.l as u32, problem.a_layout);
                space_for(nm, l, layout, problem.dtype, profile)
            });
        let valid = space
            .iter()
            .filter(|c| validate::validate_for_problem(c, problem).is_ok())
            .count();
        if let Some(eval) = evaluate_problem(problem, samples, valid, profile, opts) {
            problems.push(eval);
        }
    }
    summarise(problems, sets.len(), &profile.name, opts)
}

/// Every problem's measured configurations: the timed rows (model rows are ignored) that share
/// the template checksum and source of the problem's best entry by the database's rule
/// ([`crate::db::better`]), so that the ground truth is the set the `best` table chose from.
fn measured_sets(rows: &[Measurement]) -> BTreeMap<ProblemKey, BTreeMap<KernelConfig, Sample>> {
    let timed: Vec<&Measurement> = rows.iter().filter(|r| r.source != Source::Model).collect();
    let best = best_per_problem(timed.iter().map(|r| (*r).clone()));
    let mut sets: BTreeMap<ProblemKey, BTreeMap<KernelConfig, Sample>> = BTreeMap::new();
    for row in timed {
        let set = sets.entry(ProblemKey(row.problem)).or_default();
        // A problem without any entry that can be best keeps every row: it is skipped later.
        if let Some(best) = best.get(&(row.gpu.clone(), row.problem)) {
            if (row.template_checksum.as_str(), row.source)
                != (best.template_checksum.as_str(), best.source)
            {
                continue;
            }
        }
        let sample = set.entry(row.config).or_default();
        sample.time_us += row.median_us.filter(|t| t.is_finite()).unwrap_or(0.0) * row.runs as f64;
        if can_be_best(row) {
            sample.best_us = min_opt(sample.best_us, row.median_us);
        }
    }
    sets
}

/// A problem ordered like the report: A layout, m, n, k, N, M, L (every field of its
/// equality: two layouts of one shape are two problems).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ProblemKey(Problem);

impl std::ops::Deref for ProblemKey {
    type Target = Problem;
    fn deref(&self) -> &Problem {
        &self.0
    }
}

impl Ord for ProblemKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let key = |p: &Problem| (p.a_layout, p.m, p.n, p.k, p.nm.n, p.nm.m, p.l);
        key(&self.0).cmp(&key(&other.0))
    }
}

impl PartialOrd for ProblemKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

fn min_opt(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// The fastest eligible configuration among `configs`, with its time.
fn fastest<'a>(
    configs: impl Iterator<Item = &'a KernelConfig>,
    samples: &BTreeMap<KernelConfig, Sample>,
) -> Option<(KernelConfig, f64)> {
    configs
        .filter_map(|c| samples[c].best_us.map(|t| (*c, t)))
        .min_by(|a, b| {
            a.1.total_cmp(&b.1)
                .then_with(|| a.0.name().cmp(&b.0.name()))
        })
}

fn evaluate_problem(
    problem: &Problem,
    samples: &BTreeMap<KernelConfig, Sample>,
    search_space: usize,
    profile: &GpuProfile,
    opts: &EvalOptions,
) -> Option<ProblemEval> {
    let (best, best_us) = fastest(samples.keys(), samples)?;
    let picks: Vec<KernelConfig> = match opts.strategy {
        search::Strategy::Model => {
            let ranked = crate::model::ranked(samples.keys().copied().collect(), problem, profile);
            search::model_picks(&ranked, opts.top_k, opts.neighbours)
        }
        other => search::candidates(problem, profile, other)
            .into_iter()
            .filter(|c| samples.contains_key(c))
            .collect(),
    };
    let picked = fastest(picks.iter(), samples);
    let hit = picked.is_some_and(|(_, t)| t <= best_us * (1.0 + opts.tolerance));
    Some(ProblemEval {
        problem: problem.to_string(),
        nm: problem.nm,
        measured: samples.len(),
        search_space,
        picked: picks.len(),
        best_kernel: best.name(),
        best_us,
        picked_kernel: picked.map(|(c, _)| c.name()),
        picked_us: picked.map(|(_, t)| t),
        hit,
        measured_time_us: samples.values().map(|s| s.time_us).sum(),
        picked_time_us: picks.iter().map(|c| samples[c].time_us).sum(),
    })
}

fn summarise(
    problems: Vec<ProblemEval>,
    with_rows: usize,
    gpu: &str,
    opts: &EvalOptions,
) -> Evaluation {
    let mut patterns: Vec<NmPattern> = problems.iter().map(|p| p.nm).collect();
    patterns.sort_by(|a, b| b.density().total_cmp(&a.density()).then(a.cmp(b)));
    patterns.dedup();
    let by_sparsity = patterns
        .iter()
        .map(|nm| {
            let label = format!("{nm} ({:.1} %)", nm.sparsity() * 100.0);
            group(&label, problems.iter().filter(|p| p.nm == *nm))
        })
        .collect();
    let coverage = mean(
        problems
            .iter()
            .map(|p| p.measured as f64 / p.search_space.max(p.measured).max(1) as f64),
    );
    Evaluation {
        gpu: gpu.to_string(),
        strategy: opts.strategy,
        top_k: opts.top_k,
        neighbours: opts.neighbours,
        tolerance: opts.tolerance,
        min_configs: opts.min_configs,
        problems_skipped: with_rows - problems.len(),
        coverage,
        overall: group("overall", problems.iter()),
        by_sparsity,
        problems,
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0usize), |(s, c), v| (s + v, c + 1));
    if count == 0 {
        0.0
    } else {
        sum / count as f64
    }
}

fn group<'a>(label: &str, problems: impl Iterator<Item = &'a ProblemEval>) -> GroupEval {
    let problems: Vec<&ProblemEval> = problems.collect();
    let n = problems.len();
    let hits = problems.iter().filter(|p| p.hit).count();
    let sum = |f: fn(&ProblemEval) -> f64| problems.iter().map(|p| f(p)).sum::<f64>();
    let (measured, picked) = (sum(|p| p.measured as f64), sum(|p| p.picked as f64));
    let (measured_t, picked_t) = (sum(|p| p.measured_time_us), sum(|p| p.picked_time_us));
    let finite: Vec<f64> = problems
        .iter()
        .map(|p| p.slowdown())
        .filter(|s| s.is_finite())
        .collect();
    GroupEval {
        group: label.to_string(),
        problems: n,
        hits,
        hit_rate: if n == 0 { 0.0 } else { hits as f64 / n as f64 },
        mean_measured: mean(problems.iter().map(|p| p.measured as f64)),
        mean_picked: mean(problems.iter().map(|p| p.picked as f64)),
        mean_search_space: mean(problems.iter().map(|p| p.search_space as f64)),
        candidates_saved: if measured > 0.0 {
            1.0 - picked / measured
        } else {
            0.0
        },
        kernel_time_saved: (measured_t > 0.0).then(|| 1.0 - picked_t / measured_t),
        geomean_slowdown: (!finite.is_empty()).then(|| mean(finite.iter().map(|s| s.ln())).exp()),
        worst_slowdown: problems.iter().map(|p| p.slowdown()).fold(1.0, f64::max),
    }
}
