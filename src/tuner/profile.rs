//! The profiler: time a given list of kernels on one problem beside cuBLAS, one result per
//! kernel (in the manner of CUTLASS's profiler). Nothing is stored; `nmtune bench` prints it.
//! Every kernel is verified against cuBLAS on the same inputs before its time counts.

use super::build::{build_all, BuildResult};
use super::measure::{Bench, Outcome, Timing, TimingPlan};
use super::workload::DeviceWeight;
use super::TuneError;
use crate::codegen::{compile_key, KernelConfig};
use crate::gpu::Gpu;
use crate::kernels::LoadedKernel;
use crate::problem::Problem;
use std::path::Path;

/// A verified timing of one kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelTiming {
    pub timing: Timing,
    pub rel_error: f64,
}

/// What profiling one kernel gave.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelProfile {
    pub config: KernelConfig,
    pub registers: Option<u32>,
    pub spill_bytes: Option<u32>,
    /// The timing, or why there is none (compile or launch failure, wrong result).
    pub result: Result<KernelTiming, String>,
}

/// One problem: cuBLAS SGEMM's time and every kernel's.
#[derive(Debug, Clone, PartialEq)]
pub struct ProblemProfile {
    pub problem: Problem,
    pub cublas: Timing,
    pub kernels: Vec<KernelProfile>,
}

/// Time `configs` on `problem` (random weight and activations from `seed`), no early
/// abandoning, beside cuBLAS in the same process on the same inputs.
pub fn profile_problem(
    gpu: &Gpu,
    problem: &Problem,
    configs: &[KernelConfig],
    plan: TimingPlan,
    cache_dir: &Path,
    seed: u64,
) -> Result<ProblemProfile, TuneError> {
    let built = build_all(configs, &gpu.profile().arch(), cache_dir);
    let mut weight = DeviceWeight::random(gpu, problem, seed)?;
    let max_split = configs
        .iter()
        .map(|c| c.split_k as usize)
        .max()
        .unwrap_or(1);
    let mut bench = Bench::new(gpu, *problem, &mut weight, max_split, seed as u32)?;
    let cublas = bench.time_cublas(gpu, plan)?;
    let mut kernels = Vec::with_capacity(configs.len());
    for config in configs {
        let built = built.get(&compile_key(config).name());
        kernels.push(profile_one(gpu, &mut bench, config, built, plan)?);
    }
    Ok(ProblemProfile {
        problem: *problem,
        cublas,
        kernels,
    })
}

fn profile_one(
    gpu: &Gpu,
    bench: &mut Bench<'_>,
    config: &KernelConfig,
    built: Option<&BuildResult>,
    plan: TimingPlan,
) -> Result<KernelProfile, TuneError> {
    let mut profile = KernelProfile {
        config: *config,
        registers: None,
        spill_bytes: None,
        result: Err("not built".into()),
    };
    if let Err(e) = crate::codegen::validate::validate(config, gpu.profile()) {
        profile.result = Err(e.to_string());
        return Ok(profile);
    }
    let built = match built {
        Some(Ok(b)) => b,
        Some(Err(reason)) => {
            profile.result = Err(format!("compile failed: {reason}"));
            return Ok(profile);
        }
        None => return Ok(profile),
    };
    profile.registers = built.compiled.registers;
    profile.spill_bytes = built.compiled.spill_bytes;
    let kernel = match LoadedKernel::load(gpu, *config, &built.source, &built.compiled.cubin) {
        Ok(k) => k,
        Err(e) => {
            profile.result = Err(format!("load failed: {e}"));
            return Ok(profile);
        }
    };
    let outcome = bench
        .measure(gpu, &kernel, plan, None)
        .map_err(|e| TuneError::ContextLost {
            kernel: config.name(),
            problem: bench.problem.to_string(),
            detail: e.to_string(),
        })?;
    profile.result = match outcome {
        Outcome::Timed { timing, rel_error } | Outcome::Abandoned { timing, rel_error } => {
            Ok(KernelTiming { timing, rel_error })
        }
        Outcome::Wrong { rel_error } => {
            Err(format!("wrong result: relative error {rel_error:.3e}"))
        }
        Outcome::LaunchFailed(reason) => Err(format!("launch failed: {reason}")),
    };
    Ok(profile)
}
