//! GPU correctness of the tensor-core family: every configuration of its search space, in
//! BF16 and FP16, against the CPU reference (FP32 sums of the same rounded inputs) on random
//! data, at the sparsest and densest M = 32 patterns and at 12:32 with an odd count of
//! stages (so that a split of k shares its stages unevenly), within
//! `format::tc::tolerance`. Needs an sm_90 GPU (Hopper: `wgmma`); skipped, visibly, elsewhere.

mod common;

use nmtune::codegen::nvrtc::compile_cached;
use nmtune::codegen::tc::TC_ARCH;
use nmtune::codegen::{render_tc, TcConfig};
use nmtune::format::tc::{decode, encode, tolerance, TcWeight};
use nmtune::format::{prune_and_compress, CompressedWeight};
use nmtune::gpu::{device, Gpu};
use nmtune::kernels::tc::{TcKernel, TcOperands, TcScratch};
use nmtune::problem::{ALayout, Dtype, NmPattern, Problem};
use nmtune::reference;
use nmtune::runtime::{Lookup, PreparedWeight, Runtime, TcLinear};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use std::collections::HashMap;

fn hopper_or_skip() -> Option<Gpu> {
    if !device::driver_present() {
        eprintln!("SKIPPED: tensor-core GPU tests (no NVIDIA driver on this machine)");
        return None;
    }
    match Gpu::open(0) {
        Ok(gpu) if gpu.profile().compute_capability == (9, 0) => Some(gpu),
        Ok(gpu) => {
            eprintln!(
                "SKIPPED: tensor-core GPU tests ({} is not sm_90)",
                gpu.profile().name
            );
            None
        }
        Err(e) => {
            eprintln!("SKIPPED: tensor-core GPU tests ({e})");
            None
        }
    }
}

fn random(len: usize, rng: &mut SmallRng) -> Vec<f32> {
    (0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

/// `a` (m×k row-major) column-major.
fn column_major(a: &[f32], m: usize, k: usize) -> Vec<f32> {
    let mut out = vec![0f32; m * k];
    for i in 0..m {
        for kk in 0..k {
            out[kk * m + i] = a[i * k + kk];
        }
    }
    out
}

/// One product's inputs, as the kernel reads them, and the CPU reference's result on the same
/// rounded values: made once per problem, seed and kept rows a stage (the weight's image
/// depends on them), and shared by every configuration that runs them.
struct Case {
    a_kernel: Vec<u16>,
    tc: TcWeight,
    want: Vec<f32>,
}

fn case(problem: &Problem, seed: u64, kept_rows: usize) -> Case {
    let dtype = problem.dtype;
    let (m, n, k) = (problem.m, problem.n, problem.k);
    let mut rng = SmallRng::seed_from_u64(seed);
    let dense = random(k * n, &mut rng);
    let weight = prune_and_compress(&dense, k, n, problem.nm, problem.l)
        .unwrap()
        .0;
    let tc = TcWeight::prepare(&weight, dtype, kept_rows).unwrap();
    // A rounded to the type, row-major for the reference, in the kernel's layout for it.
    let a_row = decode(dtype, &encode(dtype, &random(m * k, &mut rng)));
    let a_kernel = match problem.a_layout {
        ALayout::RowMajor => a_row.clone(),
        ALayout::ColMajor => column_major(&a_row, m, k),
    };
    let rounded = CompressedWeight {
        values: tc.values(),
        ..weight
    };
    let mut want = vec![0f32; m * n];
    reference::spmm(&a_row, m, &rounded, 1.0, 0.0, &mut want).unwrap();
    Case {
        a_kernel: encode(dtype, &a_kernel),
        tc,
        want,
    }
}

/// One product on the GPU against the CPU reference; the relative error.
fn error_of(gpu: &Gpu, kernel: &TcKernel, problem: &Problem, case: &Case) -> f64 {
    let (m, n, k) = (problem.m, problem.n, problem.k);
    let a = gpu.upload(&case.a_kernel).unwrap();
    let image = gpu.upload(&case.tc.image).unwrap();
    let kept_k = gpu.upload(&case.tc.kept_k).unwrap();
    // C starts as NaN bits: every element must be written.
    let mut c = gpu.upload(&vec![0xFFFFu16; m * n]).unwrap();
    let mut scratch = TcScratch::default();
    scratch.grow_for(&gpu.stream, kernel, (m, n, k)).unwrap();
    let ops = TcOperands {
        a: &a,
        image: &image,
        kept_k: &kept_k,
        c: &mut c,
        scratch: &mut scratch,
        m,
        n,
        k,
        w: case.tc.w,
    };
    kernel.launch(gpu, ops).unwrap();
    gpu.synchronize().unwrap();
    let got = decode(problem.dtype, &gpu.stream.clone_dtoh(&c).unwrap());
    reference::relative_error(&got, &case.want)
}

/// The products every configuration is checked on: (seed, pattern, k). At k = 1024, 16:32
/// has 8 or 16 stages and 4:32 2 or 4; 12:32 at k = 512 has 3 or 6, which splits of 2 and 4
/// share unevenly.
const PRODUCTS: [(u64, NmPattern, usize); 3] = [
    (1, NmPattern { n: 16, m: 32 }, 1024),
    (2, NmPattern { n: 4, m: 32 }, 1024),
    (3, NmPattern { n: 12, m: 32 }, 512),
];

/// The stream-K workers each product of [`PRODUCTS`] runs with. `None`: the kernel's own,
/// SMs × blocks an SM, cut to one a stage of the six tiles, so that every tile is split
/// among all of its stages' workers. With 4 and 5 workers a worker runs whole tiles and the
/// parts of two others.
const STREAM_WORKERS: [Option<usize>; 3] = [None, Some(4), Some(5)];

#[test]
fn every_tensor_core_configuration_matches_the_cpu_reference() {
    let Some(gpu) = hopper_or_skip() else { return };
    let cache = common::cubin_cache();
    let configs: Vec<TcConfig> = [Dtype::Bf16, Dtype::F16]
        .into_iter()
        .flat_map(TcConfig::search_space)
        .collect();
    // Compiled on every core first (a kernel's load then finds its cubin in the cache).
    configs.par_iter().for_each(|cfg| {
        compile_cached(&render_tc(cfg).unwrap(), TC_ARCH, &cache).unwrap();
    });
    let mut cases = HashMap::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for cfg in configs {
        let dtype = cfg.dtype;
        let mut kernel = TcKernel::load(&gpu, cfg, &cache).unwrap();
        let mut products = 0;
        for ((seed, nm, k), workers) in PRODUCTS.into_iter().zip(STREAM_WORKERS) {
            // A stream-K kernel's shares: its own grid (more workers than stages), and
            // fewer workers than tiles (segments of two tiles, whole tiles between).
            if let Some(workers) = workers {
                kernel.set_stream_workers(workers);
            }
            // Two blocks down m, three across n, several stages.
            let m = 2 * cfg.block_rows();
            let problem = Problem::new(m, 384, k, nm, cfg.l)
                .unwrap()
                .with_dtype(dtype)
                .with_layout(cfg.a_layout)
                .unwrap();
            if cfg.split_k > cfg.stages_of(problem.w()) {
                continue; // too few stages for this split: refused by its rules
            }
            if let Err(e) = cfg.validate_for_problem(&problem, gpu.profile()) {
                failures.push(format!("{cfg} {nm}: {e}"));
                continue;
            }
            let case = cases
                .entry((problem.to_string(), seed, cfg.kept_rows))
                .or_insert_with(|| case(&problem, seed, cfg.kept_rows));
            let err = error_of(&gpu, &kernel, &problem, case);
            checked += 1;
            products += 1;
            // (relative_error is infinite, never NaN, for a non-finite result.)
            if err > tolerance(dtype) {
                failures.push(format!(
                    "{cfg} at {nm}, k = {k} ({} stream-K workers): error {err:.3e} > {:.3e}",
                    kernel.stream_workers(),
                    tolerance(dtype)
                ));
            }
        }
        if products == 0 {
            failures.push(format!("{cfg}: no product it can split"));
        }
    }
    println!("{checked} tensor-core products checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The runtime's tensor-core layer (`TcLinear`) with the lookup's default kernel (no
/// database), for each layout of A: a BF16 product against the CPU reference on the same
/// rounded inputs, and a shape off the kernels' grid refused in one line.
#[test]
fn the_runtime_launches_a_bf16_layer_that_matches_the_cpu_reference() {
    let Some(gpu) = hopper_or_skip() else { return };
    let cache = common::cubin_cache();
    let lookup = Lookup::defaults_only(gpu.profile().clone());
    let runtime = Runtime::with_cache_dir(lookup, &gpu.ctx, cache).unwrap();
    let dtype = Dtype::Bf16;
    let (m, n, k, nm, l) = (256, 384, 1024, NmPattern { n: 8, m: 32 }, 128);
    let mut rng = SmallRng::seed_from_u64(9);
    let dense = random(k * n, &mut rng);
    let weight = PreparedWeight::from_dense_kn(&dense, k, n, nm, l).unwrap();
    let rounded = CompressedWeight {
        values: decode(dtype, &encode(dtype, &weight.weight().values)),
        ..weight.weight().clone()
    };
    let a_row = decode(dtype, &encode(dtype, &random(m * k, &mut rng)));
    let mut want = vec![0f32; m * n];
    reference::spmm(&a_row, m, &rounded, 1.0, 0.0, &mut want).unwrap();
    for layout in ALayout::ALL {
        let mut layer = TcLinear::new(runtime.clone(), weight.clone(), dtype, layout).unwrap();
        let a_kernel = match layout {
            ALayout::RowMajor => a_row.clone(),
            ALayout::ColMajor => column_major(&a_row, m, k),
        };
        let a = gpu.upload(&encode(dtype, &a_kernel)).unwrap();
        let mut c = gpu.upload(&vec![0xFFFFu16; m * n]).unwrap();
        let choice = layer.forward(&gpu.stream, &a, &mut c, m).unwrap();
        gpu.synchronize().unwrap();
        let got = decode(dtype, &gpu.stream.clone_dtoh(&c).unwrap());
        let err = reference::relative_error(&got, &want);
        println!("{}: error {err:.3e}", choice.config);
        assert!(
            err <= tolerance(dtype),
            "{}: error {err:.3e}",
            choice.config
        );
        let off_grid = layer
            .forward(&gpu.stream, &a, &mut c, 100)
            .unwrap_err()
            .to_string();
        assert!(off_grid.contains("multiple"), "{off_grid}");
    }
}
