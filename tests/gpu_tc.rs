//! GPU correctness of the tensor-core family: every configuration of its search space, in
//! BF16 and FP16, against the CPU reference (FP32 sums of the same rounded inputs) on random
//! data, at the sparsest and densest M = 32 patterns, within `format::tc::tolerance`.
//! Needs an sm_90 GPU (Hopper: `wgmma`); skipped, visibly, elsewhere.

use nmtune::codegen::TcConfig;
use nmtune::format::tc::{decode, encode, tolerance, TcWeight};
use nmtune::format::{prune_and_compress, CompressedWeight};
use nmtune::gpu::{device, Gpu};
use nmtune::kernels::tc::{TcKernel, TcOperands};
use nmtune::problem::{ALayout, Dtype, NmPattern, Problem};
use nmtune::reference;
use nmtune::runtime::{Lookup, PreparedWeight, Runtime, TcLinear};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::path::PathBuf;

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

/// One product on the GPU against the CPU reference; the relative error.
fn error_of(gpu: &Gpu, kernel: &TcKernel, problem: &Problem, seed: u64) -> f64 {
    let dtype = problem.dtype;
    let (m, n, k) = (problem.m, problem.n, problem.k);
    let mut rng = SmallRng::seed_from_u64(seed);
    let dense = random(k * n, &mut rng);
    let weight = prune_and_compress(&dense, k, n, problem.nm, problem.l)
        .unwrap()
        .0;
    let tc = TcWeight::prepare(&weight, dtype, kernel.config.kept_rows).unwrap();
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

    let a = gpu.upload(&encode(dtype, &a_kernel)).unwrap();
    let image = gpu.upload(&tc.image).unwrap();
    let kept_k = gpu.upload(&tc.kept_k).unwrap();
    // C starts as NaN bits: every element must be written.
    let mut c = gpu.upload(&vec![0xFFFFu16; m * n]).unwrap();
    let room = kernel.config.workspace_elements(m, k).max(1);
    let mut workspace = gpu.upload(&vec![0u16; room]).unwrap();
    let ops = TcOperands {
        a: &a,
        image: &image,
        kept_k: &kept_k,
        c: &mut c,
        workspace: Some(&mut workspace),
        m,
        n,
        k,
        w: tc.w,
    };
    kernel.launch(gpu, ops).unwrap();
    gpu.synchronize().unwrap();
    let got = decode(dtype, &gpu.stream.clone_dtoh(&c).unwrap());
    reference::relative_error(&got, &want)
}

#[test]
fn every_tensor_core_configuration_matches_the_cpu_reference() {
    let Some(gpu) = hopper_or_skip() else { return };
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nmtune-cubins");
    let mut failures = Vec::new();
    let mut checked = 0;
    for dtype in [Dtype::Bf16, Dtype::F16] {
        for cfg in TcConfig::search_space(dtype) {
            let kernel = TcKernel::load(&gpu, cfg, &cache).unwrap();
            for (seed, nm) in [
                (1, NmPattern { n: 16, m: 32 }),
                (2, NmPattern { n: 4, m: 32 }),
            ] {
                // Two blocks down m, three across n, several stages.
                let m = 2 * cfg.block_rows();
                let problem = Problem::new(m, 384, 1024, nm, cfg.l)
                    .unwrap()
                    .with_dtype(dtype)
                    .with_layout(cfg.a_layout)
                    .unwrap();
                if let Err(e) = cfg.validate_for_problem(&problem, gpu.profile()) {
                    failures.push(format!("{cfg} {nm}: {e}"));
                    continue;
                }
                let err = error_of(&gpu, &kernel, &problem, seed);
                checked += 1;
                // (relative_error is infinite, never NaN, for a non-finite result.)
                if err > tolerance(dtype) {
                    failures.push(format!(
                        "{cfg} at {nm}: error {err:.3e} > {:.3e}",
                        tolerance(dtype)
                    ));
                }
            }
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
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nmtune-cubins");
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
