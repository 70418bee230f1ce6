//! The GPU runner: candidates compiled once for the run, loaded once, then verified and timed
//! beside cuBLAS on one random instance per problem (one random weight per (n, k, N:M, L,
//! type), shared by every m): SGEMM for FP32 problems, `cublasGemmEx` in the problem's type
//! for BF16 and FP16 ones (the tensor-core family, [`super::tc_workload`]). The device's copy
//! bandwidth is timed once per run, before the first problem, and stored beside every row.

use super::build::{build_all, BuildResult, Built};
use super::measure::{copy_bandwidth_gbps, Bench, Outcome, TimingPlan};
use super::runner::{Runner, Session, Trial};
use super::tc_workload::{TcBench, TcDeviceWeight};
use super::workload::DeviceWeight;
use super::TuneError;
use crate::codegen::{compile_key, KernelConfig};
use crate::db::{Source, Status};
use crate::gpu::{Gpu, GpuError};
use crate::gpu_profile::GpuProfile;
use crate::kernels::tc::TcKernel;
use crate::kernels::LoadedKernel;
use crate::model;
use crate::problem::{Dtype, Problem};
use std::collections::HashMap;
use std::path::PathBuf;

/// What the random weight of a problem depends on: (n, k, N, M, L, type).
type WeightKey = (usize, usize, u32, u32, usize, Dtype);

fn weight_key(p: &Problem) -> WeightKey {
    (p.n, p.k, p.nm.n, p.nm.m, p.l, p.dtype)
}

/// A problem's weight on the device, as its type's kernels read it.
enum Weight {
    Fp32(DeviceWeight),
    Tc(TcDeviceWeight),
}

/// A kernel loaded for the run, of either kind.
enum Loaded {
    Fp32(LoadedKernel),
    Tc(TcKernel),
}

pub struct GpuRunner {
    gpu: Gpu,
    plan: TimingPlan,
    cache_dir: PathBuf,
    seed: u64,
    built: HashMap<String, BuildResult>,
    loaded: HashMap<KernelConfig, Loaded>,
    weight: Option<(WeightKey, Weight)>,
    /// The device's copy bandwidth, GB/s, timed once per run, at the first problem.
    copy_gbps: Option<f64>,
}

impl GpuRunner {
    pub fn new(gpu: Gpu, plan: TimingPlan, cache_dir: PathBuf, seed: u64) -> Self {
        Self {
            gpu,
            plan,
            cache_dir,
            seed,
            built: HashMap::new(),
            loaded: HashMap::new(),
            weight: None,
            copy_gbps: None,
        }
    }
}

impl Runner for GpuRunner {
    type Session<'a> = GpuSession<'a>;

    fn source(&self) -> Source {
        Source::Measured
    }

    fn compiles(&self) -> bool {
        true
    }

    fn prepare(&mut self, all: &[KernelConfig]) {
        self.built = build_all(all, &self.gpu.profile().arch(), &self.cache_dir);
    }

    fn begin<'a>(
        &'a mut self,
        problem: &Problem,
        configs: &[KernelConfig],
    ) -> Result<GpuSession<'a>, TuneError> {
        let copy_gbps = match self.copy_gbps {
            Some(gbps) => gbps,
            // Before the first weight is allocated: the copy needs 2 GiB of its own.
            None => *self
                .copy_gbps
                .insert(copy_bandwidth_gbps(&self.gpu, self.plan.time_limit)?),
        };
        let key = weight_key(problem);
        if self.weight.as_ref().map(|(k, _)| *k) != Some(key) {
            // Drop the previous weight first: both may not fit beside each other.
            self.weight = None;
            let weight = if problem.dtype == Dtype::F32 {
                Weight::Fp32(DeviceWeight::random(&self.gpu, problem, self.seed)?)
            } else {
                Weight::Tc(TcDeviceWeight::random(&self.gpu, problem, self.seed)?)
            };
            self.weight = Some((key, weight));
        }
        let seed = self.seed as u32 ^ problem.m as u32;
        let instance = match &mut self.weight.as_mut().expect("set above").1 {
            Weight::Fp32(weight) => {
                let workspace = workspace_for(configs, problem, self.gpu.profile());
                Instance::Fp32(Bench::new(&self.gpu, *problem, weight, workspace, seed)?)
            }
            Weight::Tc(weight) => Instance::Tc(TcBench::new(&self.gpu, *problem, weight, seed)?),
        };
        let mut session = GpuSession {
            gpu: &self.gpu,
            plan: self.plan,
            built: &self.built,
            loaded: &mut self.loaded,
            instance,
            cublas_us: 0.0,
            copy_gbps,
        };
        session.cublas_us = match &mut session.instance {
            Instance::Fp32(bench) => bench.time_cublas(&self.gpu, self.plan)?.median_us,
            Instance::Tc(bench) => bench.time_cublas(&self.gpu, self.plan)?.median_us,
        };
        Ok(session)
    }
}

/// One workspace serves every FP32 candidate of a problem: room for the largest of each part
/// (a stream-K kernel's workers are known once it is loaded: the most the GPU could hold).
fn workspace_for(
    configs: &[KernelConfig],
    problem: &Problem,
    profile: &GpuProfile,
) -> (usize, usize) {
    let (m, n, k) = (problem.m, problem.n, problem.k);
    let floats = |c: &KernelConfig| {
        c.workspace_floats(m, n, k) + c.stream_floats(c.stream_workers_at_most(profile))
    };
    (
        configs.iter().map(floats).max().unwrap_or(0),
        configs.iter().map(|c| c.counters(m, n)).max().unwrap_or(0),
    )
}

/// A problem instance on the device, of the problem's type.
enum Instance<'a> {
    Fp32(Bench<'a>),
    Tc(TcBench<'a>),
}

impl Instance<'_> {
    fn problem(&self) -> &Problem {
        match self {
            Instance::Fp32(bench) => &bench.problem,
            Instance::Tc(bench) => &bench.problem,
        }
    }
}

pub struct GpuSession<'a> {
    gpu: &'a Gpu,
    plan: TimingPlan,
    built: &'a HashMap<String, BuildResult>,
    loaded: &'a mut HashMap<KernelConfig, Loaded>,
    instance: Instance<'a>,
    cublas_us: f64,
    copy_gbps: f64,
}

impl Session for GpuSession<'_> {
    fn baseline_us(&self) -> Option<f64> {
        Some(self.cublas_us)
    }

    fn copy_gbps(&self) -> Option<f64> {
        Some(self.copy_gbps)
    }

    fn order(&self, configs: &[KernelConfig]) -> Vec<KernelConfig> {
        by_compiled_prediction(
            configs,
            self.instance.problem(),
            self.built,
            self.gpu.profile(),
        )
    }

    fn run(&mut self, config: &KernelConfig, best_us: Option<f64>) -> Trial {
        let mut trial = Trial::new();
        match self.built.get(&compile_key(config).name()) {
            Some(Ok(b)) => {
                trial.registers = b.compiled.registers;
                trial.spill_bytes = b.compiled.spill_bytes;
                let spilled = b.compiled.spill_bytes.unwrap_or(0);
                if spilled > 0 {
                    trial.fail(
                        Status::Rejected,
                        format!(
                            "ptxas spills {spilled} bytes of registers: rejected before timing"
                        ),
                    );
                } else if !self.loaded.contains_key(config) {
                    match load(self.gpu, config, b) {
                        Ok(k) => {
                            self.loaded.insert(*config, k);
                        }
                        Err(e) => trial.fail(Status::LaunchFailed, e.to_string()),
                    }
                }
            }
            Some(Err(reason)) => trial.fail(Status::CompileFailed, reason.clone()),
            None => trial.fail(Status::CompileFailed, "not built".into()),
        }
        if trial.status != Status::Ok {
            return trial;
        }
        let measured = match (&mut self.instance, &self.loaded[config]) {
            (Instance::Fp32(bench), Loaded::Fp32(k)) => {
                bench.measure(self.gpu, k, self.plan, best_us)
            }
            (Instance::Tc(bench), Loaded::Tc(k)) => bench.measure(self.gpu, k, self.plan, best_us),
            _ => Ok(Outcome::LaunchFailed(format!(
                "{config} is not of the family of {}",
                self.instance.problem()
            ))),
        };
        match measured {
            Ok(outcome) => trial.apply(outcome),
            Err(e) => {
                // Stored before the run ends, so that neither the recovery nor a resumed run
                // launches this kernel again.
                trial.fail(Status::LaunchFailed, e.to_string());
                let (kernel, problem) = (config.name(), self.instance.problem().to_string());
                trial.fatal = Some(match e {
                    GpuError::TimedOut { limit_s } => TuneError::KernelTimedOut {
                        kernel,
                        problem,
                        limit_s,
                    },
                    other => TuneError::ContextLost {
                        kernel,
                        problem,
                        detail: other.to_string(),
                    },
                });
            }
        }
        trial
    }
}

/// Load `config`'s compiled kernel: a tensor-core one for the tensor-core family.
fn load(gpu: &Gpu, config: &KernelConfig, built: &Built) -> Result<Loaded, GpuError> {
    match config.as_tc() {
        Some(tc) => TcKernel::load_in(&gpu.ctx, tc, &built.source, &built.compiled).map(Loaded::Tc),
        None => {
            LoadedKernel::load(gpu, *config, &built.source, &built.compiled.cubin).map(Loaded::Fp32)
        }
    }
}

/// The candidates fastest first by the model, with each compiled kernel's occupancy from
/// ptxas's register count rather than the estimate: the first timed sets the bar that
/// abandons slower ones. Kernels that failed to build keep their place at the end.
fn by_compiled_prediction(
    configs: &[KernelConfig],
    problem: &Problem,
    built: &HashMap<String, BuildResult>,
    profile: &GpuProfile,
) -> Vec<KernelConfig> {
    let mut keyed: Vec<(f64, KernelConfig)> = configs
        .iter()
        .map(|cfg| {
            let registers = match built.get(&compile_key(cfg).name()) {
                Some(Ok(b)) => b.compiled.registers,
                _ => return (f64::INFINITY, *cfg),
            };
            let time = model::predict_with_registers(cfg, problem, profile, registers).time_s;
            (time, *cfg)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    keyed.into_iter().map(|(_, cfg)| cfg).collect()
}
