//! The main job: tune every shape of a shapes file and write the tuning database.

use super::fields::StrategyArg;
use super::supervise;
use anyhow::{bail, Context};
use chrono::{DateTime, Utc};
use clap::{Args, ValueEnum};
use nmtune::codegen::nvrtc;
use nmtune::db::{Database, Source};
use nmtune::gpu::{device, Gpu, GpuError, GpuProfile};
use nmtune::problem::{ALayout, Dtype, Problem};
use nmtune::replay::MeasurementLog;
use nmtune::tuner::{self, measure::TimingPlan, TuneOptions, TuneSummary};
use std::path::PathBuf;

/// Where timings come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// Measure on the GPU; fails clearly when there is none.
    Gpu,
    /// Predict with the performance model; entries are stored with source = model.
    Model,
    /// Replay the rows of a measurements file (--measurements); source = replay.
    Replay,
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
    /// Layouts of A to tune, replacing the shapes file's a_layout: row, col, or row,col for
    /// both [default: the file's, else row].
    #[arg(long, value_name = "LAYOUT", value_delimiter = ',', value_parser = parse_a_layout)]
    a_layout: Vec<ALayout>,
    /// Element types to tune, replacing the shapes file's dtype: f32, bf16, f16, or a list
    /// such as f32,bf16 [default: the file's, else f32].
    #[arg(long, value_name = "TYPE", value_delimiter = ',', value_parser = parse_dtype)]
    dtype: Vec<Dtype>,
    /// Vector lengths L to tune, replacing the shapes file's L: one or a list such as 32,128
    /// [default: the file's].
    #[arg(long = "l", value_name = "L", value_delimiter = ',')]
    ls: Vec<usize>,
    /// Search strategy.
    #[arg(long, value_enum, default_value_t = StrategyArg::Pruned)]
    strategy: StrategyArg,
    /// Measure on the GPU, predict with the performance model, or replay a measurements file
    /// [default: gpu, or model with a notice when the machine has no GPU].
    #[arg(long, value_enum)]
    backend: Option<Backend>,
    /// Measurements file (JSON lines, see `nmtune export`) for --backend replay.
    #[arg(long, value_name = "FILE")]
    measurements: Option<PathBuf>,
    /// Tune even when --gpu names another GPU than the device.
    #[arg(long)]
    force: bool,
    /// Timed runs per candidate (the median is stored).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// NVRTC output cache [default: nmtune/cubins in the user cache directory, where the
    /// runtime API looks for compiled kernels too].
    #[arg(long, value_name = "DIR", env = "NMTUNE_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
    /// Seconds one verification or one batch of timed launches may take; a kernel still
    /// running then is recorded as failed and the run resumes in a fresh process.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_time_limit)]
    kernel_time_limit: f64,
    /// Search again the problems this build's templates already tuned, for a changed search
    /// (new candidates, a wider --strategy); kernels already timed are not run again, so a
    /// problem with nothing new costs no GPU time.
    #[arg(long)]
    retune: bool,
    /// No progress bar, no summary.
    #[arg(long, short)]
    quiet: bool,
}

/// The instant a `--retune` started, handed to the workers that resume it: a problem searched
/// since then is not searched again by a fresh worker.
const RETUNE_SINCE_ENV: &str = "NMTUNE_RETUNE_SINCE";

/// The GPU profile `--gpu auto` models when the machine has no GPU to read one from.
pub const DEFAULT_MODEL_PROFILE: &str = "h100";

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
    if args.measurements.is_some() && args.backend != Some(Backend::Replay) {
        bail!("--measurements is read only by --backend replay");
    }
    let mut layouts = args.a_layout.clone();
    layouts.sort();
    layouts.dedup();
    let layouts = (!layouts.is_empty()).then_some(layouts.as_slice());
    let shapes = nmtune::shapes::load_with_layouts(shapes_path, layouts)?;
    let problems = with_ls(shapes.entries.iter().map(|e| e.problem), &args.ls)?;
    let problems = with_dtypes(problems.into_iter(), &args.dtype);
    if args.retune && args.backend == Some(Backend::Replay) {
        bail!("--retune searches again; --backend replay reproduces a measurements file as it is");
    }
    let on_gpu = matches!(args.backend, None | Some(Backend::Gpu));
    if on_gpu && !supervise::is_worker() && device::driver_present() {
        let since = retune_since(args)?.map(|t| (RETUNE_SINCE_ENV, t.to_rfc3339()));
        return supervise::run_workers(since.as_slice());
    }
    let (summary, db_path) = match args.backend {
        Some(Backend::Model) => tune_model(args, &gpu_name, &problems, None)?,
        Some(Backend::Gpu) => tune_gpu(args, &gpu_name, &problems)?,
        Some(Backend::Replay) => return replay_backend(args, &gpu_name, &problems),
        None => tune_default(args, &gpu_name, &problems)?,
    };
    if !args.quiet {
        eprintln!(
            "nmtune: {} problems: {} tuned, {} already done; {} candidates timed, {} abandoned \
             as slower than the best, {} rejected before timing (register spills), {} failed; \
             {:.1} s; database {}",
            summary.problems_total,
            summary.problems_tuned,
            summary.problems_skipped,
            summary.candidates_timed,
            summary.candidates_abandoned,
            summary.candidates_rejected,
            summary.candidates_failed,
            summary.elapsed_s,
            db_path.display()
        );
    }
    Ok(())
}

/// No --backend: the GPU when there is one, else the model, saying so.
fn tune_default(
    args: &TuneArgs,
    gpu_name: &str,
    problems: &[Problem],
) -> anyhow::Result<(TuneSummary, PathBuf)> {
    match Gpu::open(0) {
        Ok(gpu) => tune_on(args, gpu_name, gpu, problems),
        Err(GpuError::DriverMissing | GpuError::NoDevice(_)) => {
            tune_model(args, gpu_name, problems, Some("no GPU found"))
        }
        Err(err) => Err(err.into()),
    }
}

fn named_profile(gpu_name: &str, backend: &str) -> anyhow::Result<GpuProfile> {
    if gpu_name == "auto" {
        bail!("--backend {backend} needs a named GPU profile (--gpu h100, …), not auto");
    }
    GpuProfile::builtin(gpu_name).context("unknown GPU profile")
}

/// The profile a model run predicts for, and how `--gpu auto` was resolved: the device's when
/// there is one, else [`DEFAULT_MODEL_PROFILE`].
fn model_profile(gpu_name: &str) -> anyhow::Result<(GpuProfile, Option<String>)> {
    if gpu_name != "auto" {
        return Ok((named_profile(gpu_name, "model")?, None));
    }
    if device::driver_present() {
        if let Ok(gpu) = Gpu::open(0) {
            let profile = gpu.profile().clone();
            let note = format!("--gpu auto reads {} off the device", profile.name);
            return Ok((profile, Some(note)));
        }
    }
    let profile = GpuProfile::builtin(DEFAULT_MODEL_PROFILE).context("no default GPU profile")?;
    let note = format!(
        "--gpu auto falls back to the default profile {} ({}; pass --gpu <{}> for another)",
        profile.name,
        profile.full_name,
        GpuProfile::builtin_names().join("|")
    );
    Ok((profile, Some(note)))
}

fn replay_backend(args: &TuneArgs, gpu_name: &str, problems: &[Problem]) -> anyhow::Result<()> {
    let Some(measurements) = &args.measurements else {
        bail!("--backend replay needs --measurements <file> (written by `nmtune export`)");
    };
    let profile = named_profile(gpu_name, "replay")?;
    let log = MeasurementLog::read(measurements)?;
    // Everything that can be checked is checked before the database is created.
    log.check_gpu(&profile.name)?;
    let db = open_db(args, &profile.name, Source::Replay)?;
    super::replay::tune_replay(&log, &profile, problems, &db, args.quiet)
}

/// Fill the database from the performance model. `why` is the reason when the run did not ask
/// for the model (no GPU): then the notice is printed even with --quiet.
fn tune_model(
    args: &TuneArgs,
    gpu_name: &str,
    problems: &[Problem],
    why: Option<&str>,
) -> anyhow::Result<(TuneSummary, PathBuf)> {
    let (profile, resolved) = model_profile(gpu_name)?;
    tuner::check_supported(problems, &profile)?;
    let db = open_db(args, &profile.name, Source::Model)?;
    if why.is_some() || !args.quiet {
        let lead: String = why
            .map(String::from)
            .into_iter()
            .chain(resolved)
            .map(|r| r + ": ")
            .collect();
        eprintln!(
            "nmtune: {lead}filling {} from the performance model of the {} profile (source = model)",
            db.path().display(),
            profile.name
        );
    }
    let summary = tuner::tune_with_model(&profile, problems, &db, args.quiet, retune_since(args)?)?;
    Ok((summary, db.path().to_path_buf()))
}

fn tune_gpu(
    args: &TuneArgs,
    gpu_name: &str,
    problems: &[Problem],
) -> anyhow::Result<(TuneSummary, PathBuf)> {
    let needs = "--backend gpu needs one; leave --backend out, or use --backend model, to fill \
                 the database from the performance model";
    tune_on(
        args,
        gpu_name,
        open_gpu(gpu_name, args.force, needs)?,
        problems,
    )
}

fn tune_on(
    args: &TuneArgs,
    gpu_name: &str,
    gpu: Gpu,
    problems: &[Problem],
) -> anyhow::Result<(TuneSummary, PathBuf)> {
    check_match(gpu_name, &gpu, args.force)?;
    tuner::check_supported(problems, gpu.profile())?;
    let db = open_db(args, &gpu.profile().name, Source::Measured)?;
    let opts = TuneOptions {
        strategy: args.strategy.into(),
        plan: TimingPlan {
            runs: args.runs as usize,
            time_limit: std::time::Duration::from_secs_f64(args.kernel_time_limit),
            ..TimingPlan::default()
        },
        quiet: args.quiet,
        cache_dir: cache_dir_or_default(args.cache_dir.clone()),
        seed: 0x6e6d_7475,
        retune_since: retune_since(args)?,
    };
    let summary = tuner::tune_on_gpu(gpu, problems, &db, &opts)?;
    Ok((summary, db.path().to_path_buf()))
}

/// Where a `--retune` starts from: the instant its supervisor handed the workers, else now.
fn retune_since(args: &TuneArgs) -> anyhow::Result<Option<DateTime<Utc>>> {
    if !args.retune {
        return Ok(None);
    }
    let Some(text) = std::env::var_os(RETUNE_SINCE_ENV) else {
        return Ok(Some(Utc::now()));
    };
    let text = text.to_string_lossy();
    let since = DateTime::parse_from_rfc3339(&text)
        .with_context(|| format!("{RETUNE_SINCE_ENV}='{text}' is not an RFC 3339 time"))?;
    Ok(Some(since.with_timezone(&Utc)))
}

/// Open GPU 0 and check that it is the one `gpu_name` names (`auto`: any; `force`: any).
/// `needs` says, for a machine without one, who needs it and what runs without.
pub fn open_gpu(gpu_name: &str, force: bool, needs: &str) -> anyhow::Result<Gpu> {
    if !device::driver_present() {
        bail!("no NVIDIA GPU on this machine (libcuda.so not found): {needs}");
    }
    let gpu = Gpu::open(0)?;
    check_match(gpu_name, &gpu, force)?;
    Ok(gpu)
}

/// The device must be the GPU `gpu_name` names (`auto`: any; `force`: any).
fn check_match(gpu_name: &str, gpu: &Gpu, force: bool) -> anyhow::Result<()> {
    let found = &gpu.profile().name;
    if gpu_name != "auto" && gpu_name != found && !force {
        return Err(tuner::TuneError::GpuMismatch {
            asked: gpu_name.to_string(),
            found: found.clone(),
            full_name: gpu.profile().full_name.clone(),
        }
        .into());
    }
    Ok(())
}

/// The database of the run: `--db`, else the default for the GPU and source of the times
/// ([`super::default_db_path`]).
fn open_db(args: &TuneArgs, gpu: &str, source: Source) -> anyhow::Result<Database> {
    let path = args
        .db
        .clone()
        .unwrap_or_else(|| super::default_db_path(gpu, source));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    Ok(Database::open(&path)?)
}

/// The NVRTC cache directory: the one given, else the one the runtime uses
/// ([`nvrtc::default_cache_dir`]), so that an application finds every kernel tuning compiled.
pub fn cache_dir_or_default(given: Option<PathBuf>) -> PathBuf {
    given.unwrap_or_else(nvrtc::default_cache_dir)
}

fn parse_time_limit(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && (0.01..=3600.0).contains(&s) => Ok(s),
        _ => Err(format!(
            "'{text}' is not a time limit between 0.01 and 3600 seconds"
        )),
    }
}

/// The problems at every vector length of `ls` (none: as the shapes file says), in order,
/// each once; a length a layer's n does not take is a one-line error.
fn with_ls(problems: impl Iterator<Item = Problem>, ls: &[usize]) -> anyhow::Result<Vec<Problem>> {
    if ls.is_empty() {
        return Ok(problems.collect());
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for p in problems {
        for &l in ls {
            let with_l = Problem::new(p.m, p.n, p.k, p.nm, l)
                .and_then(|q| q.with_layout(p.a_layout))
                .map(|q| q.with_dtype(p.dtype))
                .with_context(|| format!("--l {l} for {p}"))?;
            if seen.insert(with_l) {
                out.push(with_l);
            }
        }
    }
    Ok(out)
}

/// The problems in every element type of `dtypes` (none: as the shapes file says), in order,
/// each once.
fn with_dtypes(problems: impl Iterator<Item = Problem>, dtypes: &[Dtype]) -> Vec<Problem> {
    if dtypes.is_empty() {
        return problems.collect();
    }
    let mut seen = std::collections::HashSet::new();
    problems
        .flat_map(|p| dtypes.iter().map(move |&d| p.with_dtype(d)))
        .filter(|p| seen.insert(*p))
        .collect()
}

/// `--dtype` values: `f32`, `bf16` or `f16`, a one-line error naming them otherwise.
pub fn parse_dtype(text: &str) -> Result<Dtype, String> {
    text.parse()
        .map_err(|e: nmtune::problem::ProblemError| e.to_string())
}

/// `--a-layout` values: `row` or `col`, a one-line error naming both otherwise.
pub fn parse_a_layout(text: &str) -> Result<ALayout, String> {
    text.parse()
        .map_err(|e: nmtune::problem::ProblemError| e.to_string())
}
