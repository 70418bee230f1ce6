//! `nmtune model-eval`: how often the model-guided search finds the measured best.

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use nmtune::db::Database;
use nmtune::gpu::GpuProfile;
use nmtune::tuner::evaluate::{evaluate, EvalOptions, Evaluation, GroupEval, HIT_TOLERANCE};
use nmtune::tuner::search::{Strategy, MODEL_TOP};
use std::io::Write;
use std::path::PathBuf;

/// Below this mean share of the search space measured, the output warns that the ground truth
/// is not an exhaustive sweep.
const EXHAUSTIVE_COVERAGE: f64 = 0.9;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Judged {
    Model,
    Pruned,
}

#[derive(Debug, Args)]
pub struct ModelEvalArgs {
    /// Tuning database whose measurements are the ground truth (ideally an exhaustive sweep).
    #[arg(long, value_name = "PATH")]
    db: PathBuf,
    /// Only this GPU [default: every GPU of the database].
    #[arg(long, value_name = "NAME")]
    gpu: Option<String>,
    /// The strategy judged: model (its selection re-run on the measured set) or pruned (its
    /// candidates among the measured ones).
    #[arg(long, value_enum, default_value_t = Judged::Model)]
    strategy: Judged,
    /// Configurations the model picks before their neighbours are added.
    #[arg(long, default_value_t = MODEL_TOP as u32, value_parser = clap::value_parser!(u32).range(1..))]
    top_k: u32,
    /// Time only the top K, without their one-parameter neighbours.
    #[arg(long)]
    no_neighbours: bool,
    /// A hit is within this fraction of the measured best.
    #[arg(long, default_value_t = HIT_TOLERANCE)]
    tolerance: f64,
    /// Skip problems with fewer measured configurations.
    #[arg(long, default_value_t = 5, value_parser = super::fields::whole_number)]
    min_configs: usize,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

pub fn run(args: &ModelEvalArgs) -> anyhow::Result<()> {
    if !(args.tolerance.is_finite() && args.tolerance >= 0.0) {
        bail!("--tolerance must be a fraction ≥ 0, such as 0.03");
    }
    let db = Database::open_read_only(&args.db)?;
    let gpus = match &args.gpu {
        Some(gpu) => vec![gpu.trim().to_ascii_lowercase()],
        None => db.gpus()?,
    };
    let opts = EvalOptions {
        strategy: match args.strategy {
            Judged::Model => Strategy::Model,
            Judged::Pruned => Strategy::Pruned,
        },
        top_k: args.top_k as usize,
        neighbours: !args.no_neighbours,
        tolerance: args.tolerance,
        min_configs: args.min_configs,
    };
    let mut evaluations = Vec::new();
    for gpu in &gpus {
        let rows = db.measurements(Some(gpu))?;
        if rows.is_empty() {
            bail!("{} holds no measurements of GPU '{gpu}'", args.db.display());
        }
        let Some(profile) = db.gpu_profile(gpu)?.or_else(|| GpuProfile::builtin(gpu)) else {
            bail!(
                "no profile of GPU '{gpu}' in {} nor built in",
                args.db.display()
            );
        };
        evaluations.push(evaluate(&rows, &profile, &opts));
    }
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&evaluations)? + "\n",
        Format::Table => evaluations.iter().map(|e| table(e, &args.db)).collect(),
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("cannot write to standard output")
}

fn table(e: &Evaluation, db: &std::path::Path) -> String {
    let selection = if e.strategy == Strategy::Pruned {
        "its candidates among the measured ones".to_string()
    } else if e.neighbours {
        format!(
            "the {} best predicted and their one-parameter neighbours",
            e.top_k
        )
    } else {
        format!("the {} best predicted", e.top_k)
    };
    let mut out = format!(
        "model-eval of {}, GPU {}: the {} strategy's selection ({selection}) run on each \
         problem's measured configurations; hit = its fastest within {:.1} % of the measured best\n",
        db.display(),
        e.gpu,
        e.strategy.as_str(),
        e.tolerance * 100.0
    );
    out += &format!(
        "{:<16} {:>8} {:>5} {:>8} {:>9} {:>7} {:>10} {:>10} {:>9} {:>8}\n",
        "sparsity",
        "problems",
        "hits",
        "hit_rate",
        "measured",
        "picked",
        "cand_saved",
        "time_saved",
        "geo_slow",
        "worst"
    );
    for g in e.by_sparsity.iter().chain(std::iter::once(&e.overall)) {
        out += &row(g);
    }
    out += &format!(
        "{} problems skipped (fewer than {} measured configurations, or none verified)\n",
        e.problems_skipped, e.min_configs
    );
    if e.coverage < EXHAUSTIVE_COVERAGE {
        out += &format!(
            "caveat: the ground truth is what was measured, {:.1} configurations per problem on \
             average, {:.2} % of the {:.0} valid ones: not an exhaustive sweep, so a hit means \
             the model finds the best of that set, not the optimum\n",
            e.overall.mean_measured,
            e.coverage * 100.0,
            e.overall.mean_search_space
        );
    }
    out
}

fn row(g: &GroupEval) -> String {
    let pct = |v: f64| format!("{:.1} %", v * 100.0);
    format!(
        "{:<16} {:>8} {:>5} {:>8} {:>9.1} {:>7.1} {:>10} {:>10} {:>9} {:>8}\n",
        g.group,
        g.problems,
        g.hits,
        pct(g.hit_rate),
        g.mean_measured,
        g.mean_picked,
        pct(g.candidates_saved),
        g.kernel_time_saved.map_or("-".into(), pct),
        g.geomean_slowdown
            .map_or("-".into(), |s| format!("{s:.3}×")),
        if g.worst_slowdown.is_finite() {
            format!("{:.3}×", g.worst_slowdown)
        } else {
            "no pick".into()
        }
    )
}
