//! The tensor-core family (BF16/FP16 on Hopper) timed beside cuBLAS on the dense weight:
//! every configuration of its search space that can compute the shape, each checked against
//! cuBLAS's result and timed (median of `--runs` launches, CUDA events), one line each, then
//! the fastest per problem. Needs an sm_90 GPU.
//!
//! ```sh
//! cargo run --release --example tc_bench -- --shape 4096x4096x4096 --sparsity 16:32,4:32 --l 128
//! ```

use anyhow::{bail, Context};
use clap::Parser;
use nmtune::codegen::TcConfig;
use nmtune::format::tc::{decode, encode, TcWeight};
use nmtune::format::{decompress, prune_and_compress, CompressedWeight};
use nmtune::gpu::Gpu;
use nmtune::kernels::tc::{TcKernel, TcOperands, TcScratch};
use nmtune::problem::{ALayout, Dtype, NmPattern, Problem};
use nmtune::reference;
use nmtune::tuner::tc_workload::max_relative_error;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
struct Args {
    /// Problems m×n×k (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "4096x4096x4096")]
    shape: Vec<String>,
    /// N:M patterns (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "16:32,12:32,8:32,4:32")]
    sparsity: Vec<String>,
    /// Group widths L (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "128")]
    l: Vec<usize>,
    #[arg(long, default_value = "bf16")]
    dtype: Dtype,
    /// Timed launches per kernel (the median is reported).
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Where compiled kernels are cached.
    #[arg(long, default_value = "target/nmtune-cubins")]
    cache: PathBuf,
}

const LIMIT: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tc_bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    if args.dtype == Dtype::F32 {
        bail!("--dtype f32: the tensor-core family takes bf16 or f16");
    }
    let gpu = Gpu::open(0).context("opening the GPU")?;
    if gpu.profile().compute_capability != (9, 0) {
        bail!(
            "the tensor-core family needs an sm_90 GPU, this is {}",
            gpu.profile().full_name
        );
    }
    println!(
        "GPU: {}, {}, {} timed runs a kernel",
        gpu.profile().full_name,
        args.dtype,
        args.runs
    );
    for shape in &args.shape {
        let dims: Vec<usize> = shape
            .split('x')
            .map(|d| d.parse().with_context(|| format!("shape '{shape}': m×n×k")))
            .collect::<Result<_, _>>()?;
        let [m, n, k] = dims[..] else {
            bail!("shape '{shape}': m×n×k")
        };
        for text in &args.sparsity {
            let nm = NmPattern::parse_explicit(text)?;
            for &l in &args.l {
                let problem = Problem::new(m, n, k, nm, l)?
                    .with_dtype(args.dtype)
                    .with_layout(ALayout::ColMajor)?;
                bench(&gpu, &problem, &args)?;
            }
        }
    }
    Ok(())
}

fn median(mut ms: Vec<f64>) -> f64 {
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2] * 1e3
}

/// Every configuration that fits `problem`, checked and timed beside cuBLAS.
fn bench(gpu: &Gpu, problem: &Problem, args: &Args) -> anyhow::Result<()> {
    let (m, n, k, dtype) = (problem.m, problem.n, problem.k, problem.dtype);
    let mut rng = SmallRng::seed_from_u64(17);
    let dense: Vec<f32> = (0..k * n).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    let weight = prune_and_compress(&dense, k, n, problem.nm, problem.l)?.0;
    let a_col: Vec<f32> = (0..m * k).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    let a = gpu.upload(&encode(dtype, &a_col))?;

    // cuBLAS on the pruned weight (zeros where rows were pruned), rounded as ours.
    let rounded = CompressedWeight {
        values: decode(dtype, &encode(dtype, &weight.values)),
        ..weight.clone()
    };
    let b_dense = gpu.upload(&encode(dtype, &decompress(&rounded)))?;
    let mut c_ref = gpu.upload(&vec![0u16; m * n])?;
    let blas_ms = gpu.time_each(3, args.runs, LIMIT, |_| {
        gpu.gemm_16bit(
            dtype,
            ALayout::ColMajor,
            &a,
            &b_dense,
            &mut c_ref,
            (m, n, k),
        )
    })?;
    let blas_us = median(blas_ms);
    let want = decode(dtype, &gpu.stream.clone_dtoh(&c_ref)?);
    println!("{problem}: cuBLAS {blas_us:.1} us");

    let mut best: Option<(f64, TcConfig)> = None;
    let mut prepared: Option<TcWeight> = None;
    for cfg in TcConfig::search_space(dtype) {
        if cfg.validate_for_problem(problem, gpu.profile()).is_err() {
            continue;
        }
        if prepared
            .as_ref()
            .map_or(true, |p| p.kept_rows != cfg.kept_rows)
        {
            prepared = Some(TcWeight::prepare(&weight, dtype, cfg.kept_rows)?);
        }
        let tc = prepared.as_ref().expect("prepared above");
        let kernel = TcKernel::load(gpu, cfg, &args.cache)?;
        let image = gpu.upload(&tc.image)?;
        let kept_k = gpu.upload(&tc.kept_k)?;
        let mut c = gpu.upload(&vec![0xFFFFu16; m * n])?;
        let mut scratch = TcScratch::default();
        scratch.grow_for(&gpu.stream, &kernel, (m, n, k))?;
        let mut launch = |c: &mut cudarc::driver::CudaSlice<u16>| {
            let ops = TcOperands {
                a: &a,
                image: &image,
                kept_k: &kept_k,
                c,
                scratch: &mut scratch,
                m,
                n,
                k,
                w: tc.w,
            };
            kernel.launch(gpu, ops)
        };
        launch(&mut c)?;
        gpu.synchronize()?;
        let got = decode(dtype, &gpu.stream.clone_dtoh(&c)?);
        let error = reference::relative_error(&got, &want);
        let us = median(gpu.time_each(3, args.runs, LIMIT, |_| launch(&mut c))?);
        let ok = error <= max_relative_error(dtype);
        println!(
            "  {cfg}: {us:.1} us, speed-up {:.3}, error vs cuBLAS {error:.2e}{}, {} registers",
            blas_us / us,
            if ok { "" } else { " WRONG" },
            kernel.registers.map_or("?".into(), |r| r.to_string())
        );
        if ok && best.map_or(true, |(t, _)| us < t) {
            best = Some((us, cfg));
        }
    }
    match best {
        Some((us, cfg)) => println!(
            "  best {cfg}: {us:.1} us against cuBLAS {blas_us:.1} us: {:.3}×",
            blas_us / us
        ),
        None => println!("  no configuration fits this problem"),
    }
    Ok(())
}
