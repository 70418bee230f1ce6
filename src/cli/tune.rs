//! The main job: tune every shape of a shapes file and write the tuning database.

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use nmtune::db::Database;
use nmtune::gpu::{device, Gpu, GpuProfile};
use nmtune::problem::Problem;
use nmtune::tuner::{self, measure::TimingPlan, Strategy, TuneOptions, TuneSummary};
use std::path::PathBuf;

/// Where timings come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// Measure on the GPU (the default); fails clearly when there is none.
    Gpu,
    /// Predict with the performance model; entries are stored with source = model.
    Model,
}

#[derive(Debug, Args)]
pub struct TuneArgs {
    /// GPU profile: h100, h200, a100, 4090, 3090, or auto (read off the device).
    #[arg(long, value_name = "NAME")]
    gpu: Option<String>,
    /// Shapes file (YAML) listing the problems to tune; see shapes/llama.yaml.
    #[arg(long, value_name = "FILE")]
    shapes: Option<PathBuf>,
    /// Tuning database to write [default: tuning-db/<gpu>.sqlite].
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// Search strategy.
    #[arg(long, value_enum, default_value_t = Strategy::Pruned)]
    strategy: Strategy,
    /// Measure on the GPU, or predict with the performance model (no GPU needed).
    #[arg(long, value_enum, default_value_t = Backend::Gpu)]
    backend: Backend,
    /// Tune even when --gpu names another GPU than the device.
    #[arg(long)]
    force: bool,
    /// Timed runs per candidate (the median is stored).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// NVRTC output cache [default: the user cache directory].
    #[arg(long, value_name = "DIR", env = "NMTUNE_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// No progress bar, no summary.
    #[arg(long, short)]
    quiet: bool,
}

pub fn run(args: &TuneArgs) -> anyhow::Result<()> {
    let (Some(gpu_name), Some(shapes_path)) = (&args.gpu, &args.shapes) else {
        bail!("the main job needs --gpu <name|auto> and --shapes <file> (see nmtune --help)");
    };
    let gpu_name = gpu_name.trim().to_ascii_lowercase();
    if gpu_name != "auto" && GpuProfile::builtin(&gpu_name).is_none() {
        bail!(
            "unknown GPU '{gpu_name}': use auto or one of {}",
            GpuProfile::builtin_names().join(", ")
        );
    }
    let shapes = nmtune::shapes::load(shapes_path)?;
    let problems: Vec<Problem> = shapes.entries.iter().map(|e| e.problem).collect();
    let summary = match args.backend {
        Backend::Model => tune_model(args, &gpu_name, &problems)?,
        Backend::Gpu => tune_gpu(args, &gpu_name, &problems)?,
    };
    if !args.quiet {
        eprintln!(
            "nmtune: {} problems: {} tuned, {} already done; {} candidates timed, {} failed; {:.1} s",
            summary.problems_total,
            summary.problems_tuned,
            summary.problems_skipped,
            summary.candidates_timed,
            summary.candidates_failed,
            summary.elapsed_s
        );
    }
    Ok(())
}

fn tune_model(
    args: &TuneArgs,
    gpu_name: &str,
    problems: &[Problem],
) -> anyhow::Result<TuneSummary> {
    if gpu_name == "auto" {
        bail!("--backend model needs a named GPU profile (--gpu h100, …), not auto");
    }
    let profile = GpuProfile::builtin(gpu_name).context("unknown GPU profile")?;
    let db = open_db(args, &profile.name)?;
    if !args.quiet {
        eprintln!(
            "nmtune: no measurement: filling {} from the performance model (source = model)",
            db.path().display()
        );
    }
    Ok(tuner::tune_with_model(&profile, problems, &db, args.quiet)?)
}

fn tune_gpu(args: &TuneArgs, gpu_name: &str, problems: &[Problem]) -> anyhow::Result<TuneSummary> {
    let gpu = open_gpu(gpu_name, args.force)?;
    let db = open_db(args, &gpu.profile().name)?;
    let opts = TuneOptions {
        strategy: args.strategy,
        plan: TimingPlan {
            runs: args.runs as usize,
            ..TimingPlan::default()
        },
        quiet: args.quiet,
        cache_dir: cache_dir_or_default(args.cache_dir.clone()),
        seed: 0x6e6d_7475,
    };
    Ok(tuner::tune_on_gpu(gpu, problems, &db, &opts)?)
}

/// Open GPU 0 and check that it is the one `gpu_name` names (`auto`: any; `force`: any).
pub fn open_gpu(gpu_name: &str, force: bool) -> anyhow::Result<Gpu> {
    if !device::driver_present() {
        bail!(
            "no NVIDIA GPU on this machine (libcuda.so not found): {gpu_name} needs one; \
             run on a GPU machine, or use --backend model to fill the database from the performance model"
        );
    }
    let gpu = Gpu::open(0)?;
    let found = gpu.profile().name.clone();
    if gpu_name != "auto" && gpu_name != found && !force {
        return Err(tuner::TuneError::GpuMismatch {
            asked: gpu_name.to_string(),
            found,
            full_name: gpu.profile().full_name.clone(),
        }
        .into());
    }
    Ok(gpu)
}

fn open_db(args: &TuneArgs, gpu: &str) -> anyhow::Result<Database> {
    let path = args
        .db
        .clone()
        .unwrap_or_else(|| super::default_db_path(gpu));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    Ok(Database::open(&path)?)
}

/// The NVRTC cache directory: the one given, else the user cache directory.
pub fn cache_dir_or_default(given: Option<PathBuf>) -> PathBuf {
    given
        .or_else(|| dirs::cache_dir().map(|d| d.join("nmtune")))
        .unwrap_or_else(|| PathBuf::from(".nmtune-cache"))
}
