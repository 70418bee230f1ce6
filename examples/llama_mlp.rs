//! A pruned Llama-7B linear layer (default up_proj: n = 11008 outputs, k = 4096 inputs)
//! through the runtime API: prepare the weight, look the kernel up in the tuning database, run
//! it on the GPU, check it against the CPU reference and time it beside cuBLAS SGEMM on the
//! dense (decompressed) weight, at one or several m (one line each, then a table).
//!
//! ```sh
//! cargo run --release --example llama_mlp -- --m 4096 --sparsity 8:32 --db tuning-db/h200.sqlite
//! cargo run --release --example llama_mlp -- --layer down --m 7,300,700 --sparsity 4:32
//! ```

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use cudarc::driver::CudaSlice;
use nmtune::format;
use nmtune::gpu::{device, Gpu, GpuError};
use nmtune::problem::{ALayout, NmPattern};
use nmtune::reference;
use nmtune::runtime::{Choice, Lookup, PreparedWeight, Rule, Runtime, SparseLinear};
use nmtune::tuner::measure::Timing;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The linear layers of Llama-7B, by their (n, k) = (outputs, inputs).
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Layer {
    /// up_proj and gate_proj: 4096 → 11008.
    Up,
    /// down_proj: 11008 → 4096.
    Down,
    /// q_proj, k_proj, v_proj and o_proj: 4096 → 4096.
    Attn,
}

impl Layer {
    /// (n, k): outputs and inputs.
    fn shape(self) -> (usize, usize) {
        match self {
            Layer::Up => (11008, 4096),
            Layer::Down => (4096, 11008),
            Layer::Attn => (4096, 4096),
        }
    }
}

#[derive(Debug, Parser)]
#[command(about = "Run a pruned Llama-7B linear layer through nmtune's runtime")]
struct Args {
    /// Which layer of Llama-7B.
    #[arg(long, value_enum, default_value = "up")]
    layer: Layer,
    /// Rows of A (tokens); a comma-separated list runs each in turn on the same weight.
    #[arg(long, value_delimiter = ',', default_value = "4096", value_parser = clap::value_parser!(u64).range(1..))]
    m: Vec<u64>,
    /// Sparsity "N:M" (or a fraction with M = 32).
    #[arg(long, default_value = "8:32")]
    sparsity: String,
    /// Vector length L.
    #[arg(long, default_value_t = 32)]
    l: usize,
    /// Tuning database; repeat to read several as one [default: tuning-db/<gpu>.sqlite and
    /// tuning-db/<gpu>-decode.sqlite, e.g. tuning-db/h200.sqlite and
    /// tuning-db/h200-decode.sqlite on an H200].
    #[arg(long, value_name = "PATH")]
    db: Vec<PathBuf>,
    /// Timed runs of each kernel (the median is reported).
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Rows checked against the CPU reference (all of them when m is not larger).
    #[arg(long, default_value_t = 256)]
    check_rows: usize,
}

/// Most weight copies the timed launches rotate over.
const MAX_COPIES: usize = 64;

/// One m's outcome, for the closing table.
struct Row {
    m: usize,
    choice: Choice,
    sparse: Timing,
    cublas: Timing,
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp(None)
        .init();
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let chain: Vec<String> = err.chain().map(|c| c.to_string()).collect();
            eprintln!("llama_mlp: error: {}", chain.join(": "));
            ExitCode::from(1)
        }
    }
}

fn run(args: &Args) -> anyhow::Result<()> {
    if !device::driver_present() {
        bail!("no NVIDIA GPU on this machine (libcuda.so not found): this example runs a kernel on the GPU");
    }
    let gpu = Gpu::open(0)?;
    let nm = NmPattern::parse(&args.sparsity, 32)?;
    let weight = prepare(args.layer, nm, args.l)?;
    // The device's own name: a table for another GPU would describe other hardware.
    let name = gpu.profile().name.clone();
    let dbs = if args.db.is_empty() {
        ["", "-decode"]
            .map(|part| PathBuf::from(format!("tuning-db/{name}{part}.sqlite")))
            .to_vec()
    } else {
        args.db.clone()
    };
    let shown: Vec<String> = dbs.iter().map(|db| db.display().to_string()).collect();
    println!("tuning databases {} (GPU {name})", shown.join(", "));
    let lookup = Lookup::open_all(&dbs, &name)?;
    let runtime = Runtime::new(lookup, &gpu.ctx)?;
    // Copies of the weight, launched in turn, so that no timed launch finds its weight in L2
    // from the launch before (a serving engine runs other layers in between).
    let l2 = gpu.profile().l2_bytes as usize;
    let sparse_bytes = 4 * (weight.weight().values.len() + weight.weight().indices.len());
    let mut layers = (0..copies(l2, sparse_bytes))
        .map(|_| {
            SparseLinear::new(
                runtime.clone(),
                weight.clone(),
                ALayout::RowMajor,
                &gpu.stream,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let dense_host = format::decompress(weight.weight());
    let dense = (0..copies(l2, 4 * dense_host.len()))
        .map(|_| gpu.upload(&dense_host))
        .collect::<Result<Vec<_>, _>>()?;
    println!(
        "timed launches rotate over {} copies of the compressed weight and {} of the dense one",
        layers.len(),
        dense.len()
    );
    let mut rows = Vec::new();
    for &m in &args.m {
        rows.push(run_m(args, &gpu, &mut layers, &dense, m as usize, nm)?);
    }
    if rows.len() > 1 {
        print_table(&rows, args.layer, nm);
    }
    Ok(())
}

/// Look up, run, check and time the layer at one m.
fn run_m(
    args: &Args,
    gpu: &Gpu,
    layers: &mut [SparseLinear],
    dense: &[CudaSlice<f32>],
    m: usize,
    nm: NmPattern,
) -> anyhow::Result<Row> {
    let choice = report_choice(&layers[0], m)?;
    let (k, n) = (layers[0].weight().k(), layers[0].weight().n());
    let a = random(m * k, 7);
    let a_dev = gpu.upload(&a)?;
    let mut c_dev = gpu.alloc(m * n)?;
    layers[0].forward(&gpu.stream, &a_dev, &mut c_dev, m, 1.0, 0.0)?;
    let got = gpu.download(&c_dev)?;
    check_against_cpu(&layers[0], &a, &got, m, args.check_rows)?;

    // Every copy's first launch at this m does its one-time work (kernel load, col_info of a
    // packing kernel, a larger workspace) outside the timed launches.
    for layer in layers.iter_mut() {
        layer.forward(&gpu.stream, &a_dev, &mut c_dev, m, 1.0, 0.0)?;
    }
    let copies = layers.len();
    let sparse = time(gpu, args.runs, |i| {
        layers[i % copies]
            .forward(&gpu.stream, &a_dev, &mut c_dev, m, 1.0, 0.0)
            .map(|_| ())
            .map_err(launch_error)
    })?;
    let mut c_blas = gpu.alloc(m * n)?;
    let cublas = time(gpu, args.runs, |i| {
        let w = &dense[i % dense.len()];
        gpu.sgemm(&a_dev, ALayout::RowMajor, w, &mut c_blas, (m, n, k))
    })?;
    let agreement = gpu.relative_error(&c_dev, &c_blas, m * n)?;
    println!("all {m} rows vs cuBLAS on the decompressed weight: relative error {agreement:.2e}");
    print_times(&sparse, &cublas, (m, n, k), nm);
    Ok(Row {
        m,
        choice,
        sparse,
        cublas,
    })
}

/// Copies of a weight of `bytes` that together exceed three times the L2 cache (at most
/// [`MAX_COPIES`]).
fn copies(l2_bytes: usize, bytes: usize) -> usize {
    (3 * l2_bytes).div_ceil(bytes.max(1)).clamp(1, MAX_COPIES)
}

/// A random dense weight of `layer`'s shape in PyTorch's layout (out × in), pruned and
/// compressed.
fn prepare(layer: Layer, nm: NmPattern, l: usize) -> anyhow::Result<PreparedWeight> {
    let (n, k) = layer.shape();
    let dense_nk = random(n * k, 42);
    let started = Instant::now();
    let weight = PreparedWeight::from_dense_nk(&dense_nk, n, k, nm, l)?;
    println!(
        "{layer:?} {n}×{k} (n×k) pruned to {nm}, L={l}, compressed in {:.0} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    Ok(weight)
}

fn report_choice(layer: &SparseLinear, m: usize) -> anyhow::Result<Choice> {
    let choice = layer.choose(m)?;
    let us = |t: Option<f64>| t.map_or_else(|| "-".to_string(), |t| format!("{t:.1} µs"));
    println!("m={m}: kernel {}", choice.config.name());
    println!(
        "  rule: {}; source: {}; stored median {}, cuBLAS {}",
        choice.rule,
        choice
            .source
            .map_or_else(|| "built-in default".to_string(), |s| s.to_string()),
        us(choice.median_us),
        us(choice.cublas_us)
    );
    Ok(choice)
}

/// One line per m: the rule that chose the kernel, the kernel, and the times of this run.
fn print_table(rows: &[Row], layer: Layer, nm: NmPattern) {
    let (n, k) = layer.shape();
    println!("\n{layer:?} {n}×{k} at {nm}: medians of this run");
    println!(
        "{:>6} {:>16} {:>10} {:>10} {:>8}  kernel",
        "m", "rule", "nmtune_us", "cublas_us", "speedup"
    );
    for row in rows {
        println!(
            "{:>6} {:>16} {:>10.1} {:>10.1} {:>8.3}  {}",
            row.m,
            match row.choice.rule {
                Rule::NearestM { from_m } => format!("nearest_m:{from_m}"),
                rule => rule.as_str().to_string(),
            },
            row.sparse.median_us,
            row.cublas.median_us,
            row.cublas.median_us / row.sparse.median_us,
            row.choice.config.name()
        );
    }
}

/// Compare the first `rows` rows (all when m ≤ rows) with the CPU reference.
fn check_against_cpu(
    layer: &SparseLinear,
    a: &[f32],
    got: &[f32],
    m: usize,
    rows: usize,
) -> anyhow::Result<()> {
    let (k, n) = (layer.weight().k(), layer.weight().n());
    let rows = rows.min(m);
    let mut want = vec![0.0f32; rows * n];
    reference::spmm(
        &a[..rows * k],
        rows,
        layer.weight().weight(),
        1.0,
        0.0,
        &mut want,
    )?;
    let err = reference::relative_error(&got[..rows * n], &want);
    let scope = if rows < m {
        format!("first {rows} of {m} rows (the full CPU reference is too slow)")
    } else {
        format!("all {m} rows")
    };
    println!("{scope} vs the CPU reference: relative error {err:.2e}");
    if err.is_nan() || err > 1e-5 {
        bail!("relative error {err:.3e} above 1e-5");
    }
    Ok(())
}

/// Median of `runs` launches timed with CUDA events, after three warm-ups.
fn time(
    gpu: &Gpu,
    runs: usize,
    launch: impl FnMut(usize) -> Result<(), GpuError>,
) -> anyhow::Result<Timing> {
    let times = gpu
        .time_each(3, runs.max(1), Duration::from_secs(60), launch)
        .context("timing")?;
    Ok(Timing::from_ms(&times))
}

fn launch_error(err: nmtune::runtime::RuntimeError) -> GpuError {
    GpuError::Driver {
        what: "launching the sparse layer".into(),
        detail: err.to_string(),
    }
}

fn print_times(sparse: &Timing, cublas: &Timing, (m, n, k): (usize, usize, usize), nm: NmPattern) {
    let tflops = |t: &Timing| 2.0 * (m * n * k) as f64 / (t.median_us * 1e-6) / 1e12;
    println!(
        "nmtune {nm}: {:.1} µs median ({:.1} dense-equivalent TFLOP/s)",
        sparse.median_us,
        tflops(sparse)
    );
    println!(
        "cuBLAS SGEMM (FP32, dense): {:.1} µs median ({:.1} TFLOP/s)",
        cublas.median_us,
        tflops(cublas)
    );
    println!(
        "speed-up {:.2}× (ideal M/N = {:.2}×), median of {} runs each",
        cublas.median_us / sparse.median_us,
        nm.m as f64 / nm.n as f64,
        sparse.runs
    );
}

/// Uniform in [-1, 1).
fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..len).map(|_| rng.gen_range(-1.0..1.0)).collect()
}
