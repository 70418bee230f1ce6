//! `nmtune bench`: time kernels on the GPU beside cuBLAS (SGEMM, or GemmEx in a BF16 or FP16
//! problem's type), one line per kernel, nothing stored. Either one problem (`--m --n --k
//! --nm --l --dtype`) with a kernel list or a search
//! strategy's candidates, or every problem of a tuning database re-timed with its stored best
//! kernel (`--db`, optionally only one m), which reproduces the report's speed-ups in one
//! command.

use super::fields::{whole_number, StrategyArg};
use super::tune::{cache_dir_or_default, open_gpu};
use anyhow::{bail, Context};
use clap::Args;
use nmtune::codegen::KernelConfig;
use nmtune::db::{Database, Measurement, Status};
use nmtune::problem::{ALayout, Dtype, Problem};
use nmtune::summary::{speedup_rows, speedup_table};
use nmtune::tuner::gpu_runner::GpuRunner;
use nmtune::tuner::measure::TimingPlan;
use nmtune::tuner::{run_plans, search, Benchmark, TuneError};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// GPU profile the device must match, or auto.
    #[arg(long, value_name = "NAME", default_value = "auto")]
    gpu: String,
    /// Run even when --gpu names another GPU than the device.
    #[arg(long)]
    force: bool,
    /// Re-time the stored best kernel of every problem of this tuning database.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["n", "k", "kernels", "strategy", "dtype"])]
    db: Option<PathBuf>,
    /// Rows of A (with --db: only problems with this m).
    #[arg(long, value_parser = whole_number)]
    m: Option<usize>,
    /// Columns of the weight and of C.
    #[arg(long, value_parser = whole_number)]
    n: Option<usize>,
    /// Inner dimension.
    #[arg(long, value_parser = whole_number)]
    k: Option<usize>,
    /// Sparsity pattern N:M, or the share of weights pruned as a percentage (75%, M = 32).
    #[arg(long, default_value = "16:32")]
    nm: String,
    /// Vector length L.
    #[arg(long, default_value_t = 32, value_parser = whole_number)]
    l: usize,
    /// Layout of A: row (m×k row-major) or col (column-major, the paper's).
    #[arg(long, value_name = "LAYOUT", default_value = "row", value_parser = super::tune::parse_a_layout)]
    a_layout: ALayout,
    /// Element type of A, B' and C: f32, or bf16 and f16 (the tensor-core family, with
    /// --a-layout col).
    #[arg(long, value_name = "TYPE", default_value = "f32", value_parser = super::tune::parse_dtype)]
    dtype: Dtype,
    /// Kernels to time, by name (comma-separated), e.g. nm_spmm_f32_arow4_ms64_ns128_…
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
    /// Time a strategy's candidates instead of a kernel list [default: pruned].
    #[arg(long, value_enum)]
    strategy: Option<StrategyArg>,
    /// Timed runs per kernel (median reported).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    /// Also write every line as CSV to this file.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// NVRTC output cache [default: nmtune/cubins in the user cache directory, where the
    /// runtime API looks for compiled kernels too].
    #[arg(long, value_name = "DIR", env = "NMTUNE_CACHE_DIR")]
    cache_dir: Option<PathBuf>,
}

const CSV_HEADER: &str = "gpu,problem,kernel,registers,spill_bytes,median_us,min_us,runs,effective_tflops,fp32_tflops,cublas_us,speedup,rel_error,error";

/// Seed of the random inputs.
const SEED: u64 = 0x6265_6e63;

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    let jobs = jobs(args)?;
    let gpu = open_gpu(
        &args.gpu,
        args.force,
        "nmtune bench times kernels on one; nmtune kernel (a kernel's resources) and nmtune lookup need none",
    )?;
    let plan = TimingPlan {
        runs: args.runs as usize,
        ..TimingPlan::default()
    };
    let cache = cache_dir_or_default(args.cache_dir.clone());
    let csv = match &args.csv {
        Some(path) => {
            let mut file = std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            writeln!(file, "{CSV_HEADER}")?;
            Some((path.clone(), file))
        }
        None => None,
    };
    let gpu_name = gpu.profile().name.clone();
    println!("{}", header());
    let mut printer = Printer {
        gpu: gpu_name.clone(),
        asked: jobs.iter().cloned().collect(),
        csv,
        best_speedups: Vec::new(),
    };
    // The tuning loop itself, with nothing stored and nothing abandoned.
    let runner = GpuRunner::new(gpu, plan, cache, SEED);
    let mut bench = Benchmark::new(|problem: &Problem, rows| printer.print(problem, rows));
    run_plans(runner, &gpu_name, &jobs, &mut bench, true)?;
    if jobs.len() > 1 {
        println!(
            "\nspeed-up over cuBLAS in the problem's type (SGEMM for f32, no TF32; GemmEx for \
             bf16 and f16), same run, medians of {} runs, best kernel per problem:",
            args.runs
        );
        print!("{}", speedup_table(&speedup_rows(&printer.best_speedups)));
    }
    Ok(())
}

/// Prints each problem's lines (and writes them as CSV) as soon as it finishes, in the order
/// the kernels were asked for.
struct Printer {
    gpu: String,
    asked: HashMap<Problem, Vec<KernelConfig>>,
    csv: Option<(PathBuf, std::fs::File)>,
    best_speedups: Vec<(Problem, f64)>,
}

impl Printer {
    fn print(&mut self, problem: &Problem, mut rows: Vec<Measurement>) -> Result<(), TuneError> {
        let asked = &self.asked[problem];
        rows.sort_by_key(|r| asked.iter().position(|c| *c == r.config));
        for line in lines(&self.gpu, &rows) {
            println!("{}", line.table);
            if let Some((path, file)) = self.csv.as_mut() {
                writeln!(file, "{}", line.csv).map_err(|e| {
                    TuneError::Recorder(format!("cannot write {}: {e}", path.display()))
                })?;
            }
        }
        if let Some(best) = best_speedup(&rows) {
            self.best_speedups.push((*problem, best));
        }
        Ok(())
    }
}

/// A row's verified median time, when it has one.
fn timed_us(row: &Measurement) -> Option<f64> {
    let timed = matches!(row.status, Status::Ok | Status::Abandoned) && row.verified;
    row.median_us.filter(|_| timed)
}

/// The (problem, kernels) pairs to time.
fn jobs(args: &BenchArgs) -> anyhow::Result<Vec<(Problem, Vec<KernelConfig>)>> {
    if let Some(db_path) = &args.db {
        return db_jobs(db_path, &args.gpu, args.m);
    }
    let (Some(m), Some(n), Some(k)) = (args.m, args.n, args.k) else {
        bail!("nmtune bench needs --m, --n and --k (or --db <tuning database>)");
    };
    let nm = super::fields::pattern_arg("--nm", &args.nm)?;
    let problem = Problem::new(m, n, k, nm, args.l)?
        .with_layout(args.a_layout)?
        .with_dtype(args.dtype);
    if let Some(StrategyArg::Warm | StrategyArg::Local) = args.strategy {
        bail!("--strategy warm and local time a tuning database's earlier winners again: tune with them (nmtune --shapes FILE --db DB --strategy warm); nmtune bench --db DB re-times the stored best");
    }
    let configs = if args.kernels.is_empty() {
        let profile = nmtune::gpu::GpuProfile::builtin(&args.gpu)
            .or_else(|| nmtune::gpu::GpuProfile::builtin("h100"))
            .context("no GPU profile")?;
        search::candidates(&problem, &profile, args.strategy.unwrap_or_default().into())
    } else {
        parse_kernels(&args.kernels, &problem)?
    };
    Ok(vec![(problem, configs)])
}

fn parse_kernels(names: &[String], problem: &Problem) -> anyhow::Result<Vec<KernelConfig>> {
    names
        .iter()
        .map(|name| {
            let cfg = KernelConfig::parse_name(name.trim())
                .with_context(|| format!("'{name}' is not a kernel name (see nmtune report)"))?;
            nmtune::codegen::validate::validate_for_problem(&cfg, problem)
                .with_context(|| format!("{name} cannot run {problem}"))?;
            Ok(cfg)
        })
        .collect()
}

fn db_jobs(
    path: &std::path::Path,
    gpu: &str,
    m: Option<usize>,
) -> anyhow::Result<Vec<(Problem, Vec<KernelConfig>)>> {
    let db = Database::open_read_only(path)?;
    let gpu_filter = (gpu != "auto").then_some(gpu);
    let jobs: Vec<_> = db
        .serving_entries(gpu_filter)?
        .into_iter()
        .filter(|best| m.map_or(true, |m| best.problem.m == m))
        .map(|best| (best.problem, vec![best.config]))
        .collect();
    if jobs.is_empty() {
        bail!("{} holds no best entries to re-time", path.display());
    }
    Ok(jobs)
}

struct Line {
    table: String,
    csv: String,
}

fn header() -> String {
    format!(
        "{:<28} {:>4} {:>5} {:>10} {:>8} {:>8} {:>10} {:>7} {:>9}  {}",
        "problem",
        "regs",
        "spill",
        "median_us",
        "eff_TF/s",
        "fp32_TF/s",
        "cublas_us",
        "speedup",
        "rel_err",
        "kernel"
    )
}

fn lines(gpu: &str, rows: &[Measurement]) -> Vec<Line> {
    rows.iter()
        .map(|r| {
            let p = &r.problem;
            let cublas = r.cublas_us.unwrap_or(f64::NAN);
            let name = r.config.name();
            let regs = r.registers.map_or("-".into(), |v| v.to_string());
            let spill = r.spill_bytes.map_or("-".into(), |v| v.to_string());
            // In CSV a missing value is an empty field.
            let csv_regs = r.registers.map_or(String::new(), |v| v.to_string());
            let csv_spill = r.spill_bytes.map_or(String::new(), |v| v.to_string());
            match timed_us(r) {
                Some(us) => {
                    let eff = p.dense_flops() / (us * 1e6);
                    let real = p.sparse_flops() / (us * 1e6);
                    let rel_error = r.max_rel_error.unwrap_or(f64::NAN);
                    Line {
                        table: format!(
                            "{:<28} {regs:>4} {spill:>5} {us:>10.1} {eff:>8.2} {real:>8.2} {cublas:>10.1} {:>6.2}x {rel_error:>9.2e}  {name}",
                            p.to_string(), cublas / us
                        ),
                        csv: format!(
                            "{gpu},{p},{name},{csv_regs},{csv_spill},{us:.3},{:.3},{},{eff:.3},{real:.3},{cublas:.3},{:.4},{rel_error:.3e},",
                            r.min_us.unwrap_or(us), r.runs, cublas / us
                        ),
                    }
                }
                None => {
                    let reason = format!(
                        "{}: {}",
                        r.status.as_str(),
                        r.error.as_deref().unwrap_or("no verified time")
                    );
                    Line {
                        table: format!("{:<28} {regs:>4} {spill:>5} {:>10} {:>8} {:>8} {cublas:>10.1} {:>7} {:>9}  {name}: {reason}", p.to_string(), "-", "-", "-", "-", "-"),
                        csv: format!("{gpu},{p},{name},{csv_regs},{csv_spill},,,,,,{cublas:.3},,,\"{}\"", reason.replace('"', "'")),
                    }
                }
            }
        })
        .collect()
}

fn best_speedup(rows: &[Measurement]) -> Option<f64> {
    rows.iter()
        .filter_map(|r| Some(r.cublas_us? / timed_us(r)?))
        .max_by(f64::total_cmp)
}
