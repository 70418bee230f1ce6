//! Renders and compiles every BF16 configuration of the tensor-core family with NVRTC for
//! sm_90a, and every third FP16 one (`FP16_EVERY`), and reads ptxas's report: each module defines
//! its entry point, uses at most the registers its `__launch_bounds__` leave a thread, and
//! spills nothing (a spilling tensor-core kernel keeps its accumulators in local memory).
//! An FP16 module is its BF16 twin's source with the element type's name and the `wgmma`
//! type suffix changed, so the sample keeps CI within its time while the element type's
//! path is still compiled for every kind of configuration; `NMTUNE_COMPILE_SAMPLE=full`
//! compiles all of them.
//!
//! Cubins are cached under `$NMTUNE_CACHE_DIR` (default: cargo's target tmp folder). Without
//! NVRTC the test prints "SKIPPED: NVRTC not found" and passes, unless
//! `NMTUNE_REQUIRE_NVRTC` is set (CI sets it).

mod common;

use nmtune::codegen::nvrtc::compile_cached;
use nmtune::codegen::tc::TC_ARCH;
use nmtune::codegen::{render_tc, TcConfig};
use nmtune::problem::Dtype;
use rayon::prelude::*;

/// One FP16 configuration in this many is compiled (all with `NMTUNE_COMPILE_SAMPLE=full`):
/// odd, so that the stride does not fall into step with the space's innermost pairs
/// (data-parallel, stream-K).
const FP16_EVERY: usize = 3;

#[test]
fn every_tensor_core_configuration_compiles_without_spills() {
    if !common::nvrtc_or_skip() {
        return;
    }
    let cache = common::cubin_cache();
    let full = std::env::var("NMTUNE_COMPILE_SAMPLE").is_ok_and(|v| v == "full");
    let fp16_step = if full { 1 } else { FP16_EVERY };
    let configs: Vec<TcConfig> = TcConfig::search_space(Dtype::Bf16)
        .into_iter()
        .chain(
            TcConfig::search_space(Dtype::F16)
                .into_iter()
                .step_by(fp16_step),
        )
        .collect();
    let failures: Vec<String> = configs
        .par_iter()
        .filter_map(|cfg| check(cfg, &cache).err().map(|e| format!("{cfg}: {e}")))
        .collect();
    println!(
        "{} tensor-core kernels compiled for {TC_ARCH}",
        configs.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        configs.len(),
        failures.join("\n\n")
    );
}

fn check(cfg: &TcConfig, cache: &std::path::Path) -> Result<(), String> {
    let src = render_tc(cfg).map_err(|e| e.to_string())?;
    let kernel = compile_cached(&src, TC_ARCH, cache).map_err(|e| e.to_string())?;
    if !kernel
        .log
        .contains(&format!("Compiling entry function '{}'", src.name))
    {
        return Err("entry point missing from the ptxas report".into());
    }
    let cap = (65536 / (cfg.threads() * cfg.min_blocks)).min(255) as u32;
    match (kernel.registers, kernel.spill_bytes) {
        (Some(r), Some(0)) if r <= cap => Ok(()),
        (r, s) => Err(format!(
            "registers {r:?} (at most {cap}), spill bytes {s:?}:\n{}",
            kernel.log
        )),
    }
}

/// The support kernels (random data, rounding to 16 bits, the error sums the tuner verifies
/// with) compile for every architecture of the built-in GPU profiles: the BF16 conversion
/// needs sm_80, which every profile has.
#[test]
fn the_support_kernels_compile_for_every_builtin_gpu() {
    if !common::nvrtc_or_skip() {
        return;
    }
    let source = nmtune::codegen::KernelSource {
        name: "nmtune_support".into(),
        reduce_name: None,
        source: nmtune::gpu::device::SUPPORT_SOURCE.to_string(),
    };
    for name in nmtune::gpu_profile::GpuProfile::builtin_names() {
        let arch = nmtune::gpu_profile::GpuProfile::builtin(name)
            .unwrap()
            .arch();
        let compiled = nmtune::codegen::compile(&source, &arch);
        assert!(compiled.is_ok(), "{arch}: {:?}", compiled.err());
    }
}
