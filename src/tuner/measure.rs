//! The runner: verify and time candidate kernels for one problem against cuBLAS SGEMM on the
//! same inputs, in the same process.

use super::workload::{weight_copies, Activations, DeviceWeight};
use crate::gpu::{Gpu, GpuError};
use crate::gpu_profile::gbps;
use crate::kernels::OperandError;
use crate::kernels::{IndexOperand, LaunchBuffers, LoadedKernel};
use crate::problem::Problem;
use std::time::Duration;

/// A candidate's output must be this close to cuBLAS's on the same inputs, in relative L2
/// norm. Both sum w = k·N/M FP32 products in different orders, which lands near
/// sqrt(w)·2⁻²⁴ ≈ 5e-6 at w = 8192; one wrong index or a missed tile is O(1).
pub const MAX_RELATIVE_ERROR: f64 = 1e-4;

/// How long to time: warm-up launches, then `runs` timed launches (median kept).
#[derive(Debug, Clone, Copy)]
pub struct TimingPlan {
    pub warmup: usize,
    pub runs: usize,
    /// After `probe_runs` timed launches, give up on a candidate slower than
    /// `abandon_factor` × the best so far.
    pub probe_runs: usize,
    pub abandon_factor: f64,
    /// The longest one verification or one batch of timed launches may run: a candidate
    /// still running after it is recorded as failed, and its process must end.
    pub time_limit: Duration,
}

impl Default for TimingPlan {
    fn default() -> Self {
        Self {
            warmup: 2,
            runs: 10,
            probe_runs: 3,
            abandon_factor: 1.5,
            time_limit: Duration::from_secs(10),
        }
    }
}

/// Bytes of the copy behind a run's copy bandwidth ([`copy_bandwidth_gbps`]): 1 GiB, a
/// few dozen times the largest L2, so that the copy streams from and to DRAM.
pub const COPY_BYTES: usize = 1 << 30;

/// Timed copies behind the copy bandwidth's median, after one untimed copy.
pub const COPY_RUNS: usize = 7;

/// The device's copy bandwidth, GB/s: [`COPY_BYTES`] copied device to device with
/// cuMemcpyDtoD, every byte counted twice (read and written), over the median of
/// [`COPY_RUNS`] copies timed with CUDA events. It is the reference an entry's achieved
/// bandwidth is read against, so a tuning run times it itself, once, in its own process:
/// clocks, ECC and whatever else shares the GPU are then those its kernels met.
pub fn copy_bandwidth_gbps(gpu: &Gpu, time_limit: Duration) -> Result<f64, GpuError> {
    let floats = COPY_BYTES / std::mem::size_of::<f32>();
    let mut source = gpu.alloc(floats)?;
    gpu.fill_uniform(&mut source, 1)?;
    let mut target = gpu.alloc(floats)?;
    let times_ms = gpu.time_each(1, COPY_RUNS, time_limit, |_| gpu.copy(&source, &mut target))?;
    let median_s = Timing::from_ms(&times_ms).median_us * 1e-6;
    Ok(gbps(2.0 * COPY_BYTES as f64, median_s))
}

/// Median and minimum of a set of times, microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub median_us: f64,
    pub min_us: f64,
    pub runs: u32,
}

impl Timing {
    pub fn from_ms(times_ms: &[f64]) -> Self {
        let mut us: Vec<f64> = times_ms.iter().map(|t| t * 1e3).collect();
        us.sort_by(f64::total_cmp);
        let mid = us.len() / 2;
        let median_us = if us.len() % 2 == 0 && !us.is_empty() {
            (us[mid - 1] + us[mid]) / 2.0
        } else {
            us.get(mid).copied().unwrap_or(f64::NAN)
        };
        Self {
            median_us,
            min_us: us.first().copied().unwrap_or(f64::NAN),
            runs: us.len() as u32,
        }
    }
}

/// What happened to one candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Timed { timing: Timing, rel_error: f64 },
    Wrong { rel_error: f64 },
    Abandoned { timing: Timing, rel_error: f64 },
    LaunchFailed(String),
}

/// One problem instance on the GPU, with its cuBLAS reference output computed.
pub struct Bench<'w> {
    pub problem: Problem,
    pub weight: &'w mut DeviceWeight,
    pub acts: Activations,
}

impl<'w> Bench<'w> {
    pub fn new(
        gpu: &Gpu,
        problem: Problem,
        weight: &'w mut DeviceWeight,
        workspace: (usize, usize),
        seed: u32,
    ) -> Result<Self, OperandError> {
        let acts = Activations::random(gpu, &problem, workspace, seed)?;
        if problem.is_decode() {
            let copies = weight_copies(weight.sparse_bytes(), gpu.profile().l2_bytes);
            weight.ensure_rotation(gpu, copies)?;
        }
        let mut bench = Self {
            problem,
            weight,
            acts,
        };
        let shape = bench.shape();
        gpu.sgemm(
            &bench.acts.a_sets[0],
            problem.a_layout,
            &bench.weight.dense,
            &mut bench.acts.reference,
            shape,
        )?;
        Ok(bench)
    }

    fn shape(&self) -> (usize, usize, usize) {
        (self.problem.m, self.problem.n, self.problem.k)
    }

    /// Time cuBLAS SGEMM (FP32, no TF32) on the dense decompressed weight, rotating inputs
    /// (and, for a decode problem, weights: [`Bench::time_launches`]).
    pub fn time_cublas(&mut self, gpu: &Gpu, plan: TimingPlan) -> Result<Timing, GpuError> {
        let shape = self.shape();
        let sets = self.acts.sets();
        let (a_sets, c_sets, weight) = (&self.acts.a_sets, &mut self.acts.c_sets, &*self.weight);
        let layout = self.problem.a_layout;
        let launch = |i: usize| {
            gpu.sgemm(
                &a_sets[i % sets],
                layout,
                weight.dense_of(i),
                &mut c_sets[i % sets],
                shape,
            )
        };
        let times = time_launches(
            gpu,
            &self.problem,
            weight.copies(),
            plan.warmup,
            plan.runs,
            plan.time_limit,
            launch,
        )?;
        Ok(Timing::from_ms(&times))
    }

    /// Verify `kernel` on set 0 against cuBLAS, then time it over the rotating sets.
    pub fn measure(
        &mut self,
        gpu: &Gpu,
        kernel: &LoadedKernel,
        plan: TimingPlan,
        best_us: Option<f64>,
    ) -> Result<Outcome, GpuError> {
        let verified = self.verify(gpu, kernel, plan.time_limit);
        judge_and_time(
            gpu,
            plan,
            best_us,
            MAX_RELATIVE_ERROR,
            verified,
            |warmup, runs| self.time(gpu, kernel, warmup, runs, plan.time_limit),
        )
    }

    /// Relative error of one launch (alpha = 1, beta = 0, C poisoned first) against cuBLAS.
    pub fn verify(
        &mut self,
        gpu: &Gpu,
        kernel: &LoadedKernel,
        time_limit: Duration,
    ) -> Result<f64, GpuError> {
        gpu.poison(&mut self.acts.c_sets[0])?;
        self.launch(gpu, kernel, 0)?;
        gpu.synchronize_within(time_limit)?;
        let count = self.problem.m * self.problem.n;
        gpu.relative_error(&self.acts.c_sets[0], &self.acts.reference, count)
    }

    fn time(
        &mut self,
        gpu: &Gpu,
        kernel: &LoadedKernel,
        warmup: usize,
        runs: usize,
        limit: Duration,
    ) -> Result<Timing, GpuError> {
        let copies = self.weight.copies();
        let problem = self.problem;
        let times = time_launches(gpu, &problem, copies, warmup, runs, limit, |i| {
            self.launch(gpu, kernel, i)
        })?;
        Ok(Timing::from_ms(&times))
    }

    /// Launch on activation set `i % sets` and weight copy `i % copies`.
    fn launch(&mut self, gpu: &Gpu, kernel: &LoadedKernel, i: usize) -> Result<(), GpuError> {
        let set = i % self.acts.sets();
        let cfg = kernel.config;
        let shape = self.shape();
        if cfg.packing {
            self.weight
                .prepare_col_info(gpu, cfg.k_s, cfg.n_s)
                .map_err(|e| GpuError::Driver {
                    what: "building col_info".into(),
                    detail: e.to_string(),
                })?;
        }
        let packed = self
            .weight
            .col_info(cfg.k_s, cfg.n_s)
            .filter(|_| cfg.packing);
        let indices = match packed {
            Some(info) => IndexOperand::Wide {
                d: &info.packed_indices,
                col_info: &info.columns,
                col_count: &info.counts,
            },
            None => self.weight.indices.operand(),
        };
        let bufs = LaunchBuffers {
            a: &self.acts.a_sets[set],
            b_values: self.weight.values_of(i),
            indices,
            c: &mut self.acts.c_sets[set],
            workspace: &mut self.acts.workspace,
        };
        kernel.launch(gpu, bufs, shape, 1.0, 0.0)
    }
}

/// The one rule from a candidate's verification to its outcome: a launch that failed cleanly
/// is an outcome (a timeout or a fault, which leave the context unusable, are errors); an
/// error above `max_error` is wrong; then `time(warmup, runs)` probes it, abandons it when
/// slower than `abandon_factor` × the best so far, and times it.
pub(super) fn judge_and_time(
    gpu: &Gpu,
    plan: TimingPlan,
    best_us: Option<f64>,
    max_error: f64,
    verified: Result<f64, GpuError>,
    mut time: impl FnMut(usize, usize) -> Result<Timing, GpuError>,
) -> Result<Outcome, GpuError> {
    let rel_error = match verified {
        Ok(err) => err,
        Err(e @ GpuError::TimedOut { .. }) => return Err(e),
        Err(e) => {
            // A launch that fails cleanly leaves the context usable; a fault does not.
            gpu.check_healthy()?;
            return Ok(Outcome::LaunchFailed(e.to_string()));
        }
    };
    if rel_error.is_nan() || rel_error > max_error {
        return Ok(Outcome::Wrong { rel_error });
    }
    let probe = time(plan.warmup, plan.probe_runs)?;
    if let Some(best) = best_us {
        if probe.min_us > plan.abandon_factor * best {
            return Ok(Outcome::Abandoned {
                timing: probe,
                rel_error,
            });
        }
    }
    let timing = time(0, plan.runs)?;
    Ok(Outcome::Timed { timing, rel_error })
}

/// Launches per timed burst of a decode problem: at least this many, and every weight copy
/// once.
const MIN_BURST_LAUNCHES: usize = 20;

/// The one timing rule of launches (`launch(i)` makes launch i). Most problems: events
/// around every launch, `runs` times after `warmup`. Decode problems, whose time is their
/// weight's bytes: `runs` bursts of back-to-back launches over the `copies` rotating weight
/// copies, queued behind a spin kernel (as a forward pass runs its layers: every weight cold,
/// no launch latency between them), each burst's time per launch.
pub(super) fn time_launches(
    gpu: &Gpu,
    problem: &Problem,
    copies: usize,
    warmup: usize,
    runs: usize,
    limit: Duration,
    mut launch: impl FnMut(usize) -> Result<(), GpuError>,
) -> Result<Vec<f64>, GpuError> {
    if !problem.is_decode() {
        return gpu.time_each(warmup, runs, limit, launch);
    }
    for i in 0..warmup {
        launch(i)?;
    }
    let per_burst = MIN_BURST_LAUNCHES.max(copies);
    gpu.time_bursts(runs, per_burst, limit, launch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_and_odd_counts() {
        let t = Timing::from_ms(&[3.0, 1.0, 2.0]);
        assert_eq!((t.median_us, t.min_us, t.runs), (2000.0, 1000.0, 3));
        let t = Timing::from_ms(&[4.0, 1.0, 2.0, 3.0]);
        assert_eq!(t.median_us, 2500.0);
    }
}
