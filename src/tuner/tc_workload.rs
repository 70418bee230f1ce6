//! BF16/FP16 problem instances for the tensor-core family: a random weight rounded to the
//! problem's type, with the image and kept-row table of each stage depth prepared on first
//! need (`format::tc::TcWeight`), rotating 16-bit activation sets, and cuBLAS in the same type
//! (`Gpu::gemm_16bit`) as the reference every candidate is verified against and the baseline
//! it is timed beside.

use super::measure::{judge_and_time, time_launches, Outcome, Timing, TimingPlan};
use super::workload::{random_weight, rotation_sets, DeviceWeight};
use crate::format::tc::{decode, encode, tolerance, TcWeight};
use crate::gpu::device::driver_err;
use crate::gpu::{Gpu, GpuError};
use crate::kernels::tc::{TcKernel, TcOperands, TcScratch};
use crate::kernels::OperandError;
use crate::problem::{Dtype, Problem};
use cudarc::driver::CudaSlice;
use std::collections::HashMap;
use std::time::Duration;

/// The largest relative error a tensor-core candidate may have against cuBLAS on the same
/// rounded inputs: each result is within [`tolerance`] of the exact product (docs/design.md
/// "Tensor cores: the kernel family"), so their difference is within twice it.
pub fn max_relative_error(dtype: Dtype) -> f64 {
    2.0 * tolerance(dtype)
}

/// A random weight of one (n, k, N:M, L) rounded to a 16-bit type, on the device.
pub struct TcDeviceWeight {
    pub dtype: Dtype,
    /// The rounded weight (its values exact in `dtype`), as the FP32 path holds it.
    weight: DeviceWeight,
    /// The decompressed k×n weight in `dtype`: cuBLAS's operand.
    dense: CudaSlice<u16>,
    /// Per kept rows a stage: the image of B' and the kept-row table.
    images: HashMap<usize, (CudaSlice<u16>, CudaSlice<u16>)>,
}

impl TcDeviceWeight {
    /// A random weight for `problem` ([`random_weight`]) with its values rounded to the
    /// problem's type.
    pub fn random(gpu: &Gpu, problem: &Problem, seed: u64) -> Result<Self, OperandError> {
        let dtype = problem.dtype;
        let mut host = random_weight(problem, seed)?;
        host.values = decode(dtype, &encode(dtype, &host.values));
        let weight = DeviceWeight::upload(gpu, host)?;
        let mut dense = gpu
            .stream
            .alloc_zeros::<u16>(weight.dense.len())
            .map_err(driver_err("allocating the 16-bit weight"))?;
        // Exact: the values are already of the type.
        gpu.to_16bit(dtype, &weight.dense, &mut dense)?;
        Ok(Self {
            dtype,
            weight,
            dense,
            images: HashMap::new(),
        })
    }

    /// The image and kept-row table for stages of `kept_rows`, prepared and uploaded on
    /// first need.
    fn image(
        &mut self,
        gpu: &Gpu,
        kept_rows: usize,
    ) -> Result<&(CudaSlice<u16>, CudaSlice<u16>), OperandError> {
        if !self.images.contains_key(&kept_rows) {
            let tc = TcWeight::prepare(&self.weight.host, self.dtype, kept_rows)?;
            let uploaded = (gpu.upload(&tc.image)?, gpu.upload(&tc.kept_k)?);
            self.images.insert(kept_rows, uploaded);
        }
        Ok(&self.images[&kept_rows])
    }

    /// Kept rows of B'.
    fn w(&self) -> usize {
        self.weight.host.w()
    }
}

/// One BF16/FP16 problem instance on the GPU, with cuBLAS's output computed.
pub struct TcBench<'w> {
    pub problem: Problem,
    weight: &'w mut TcDeviceWeight,
    a_sets: Vec<CudaSlice<u16>>,
    c_sets: Vec<CudaSlice<u16>>,
    reference: CudaSlice<u16>,
    /// Row-major A's column-major copy, made by the candidate's first pass (timed with it),
    /// and a stream-K candidate's partial sums and counters; grown for each candidate.
    scratch: TcScratch,
}

impl<'w> TcBench<'w> {
    /// Random activation sets for `problem` (enough that one pass over them exceeds L2, as
    /// the FP32 bench has), and cuBLAS's product on the first.
    pub fn new(
        gpu: &Gpu,
        problem: Problem,
        weight: &'w mut TcDeviceWeight,
        seed: u32,
    ) -> Result<Self, OperandError> {
        let (a_len, c_len) = (problem.m * problem.k, problem.m * problem.n);
        let bytes_per_set = problem.dtype.bytes() * (a_len + c_len) as u64;
        let sets = rotation_sets(bytes_per_set, gpu.profile().l2_bytes);
        let alloc = |len: usize| {
            gpu.stream
                .alloc_zeros::<u16>(len)
                .map_err(driver_err("allocating activations"))
        };
        let mut a_sets = Vec::with_capacity(sets);
        let mut c_sets = Vec::with_capacity(sets);
        for set in 0..sets {
            let mut a = alloc(a_len)?;
            gpu.fill_uniform_16(problem.dtype, &mut a, seed.wrapping_add(set as u32 * 7919))?;
            a_sets.push(a);
            c_sets.push(alloc(c_len)?);
        }
        let mut bench = Self {
            problem,
            weight,
            a_sets,
            c_sets,
            reference: alloc(c_len)?,
            scratch: TcScratch::default(),
        };
        let shape = bench.shape();
        gpu.gemm_16bit(
            problem.dtype,
            problem.a_layout,
            &bench.a_sets[0],
            &bench.weight.dense,
            &mut bench.reference,
            shape,
        )?;
        Ok(bench)
    }

    fn shape(&self) -> (usize, usize, usize) {
        (self.problem.m, self.problem.n, self.problem.k)
    }

    /// Time cuBLAS in the problem's type on the dense weight, rotating inputs.
    pub fn time_cublas(&mut self, gpu: &Gpu, plan: TimingPlan) -> Result<Timing, GpuError> {
        let (shape, dtype, sets) = (self.shape(), self.problem.dtype, self.a_sets.len());
        let layout = self.problem.a_layout;
        let (a_sets, c_sets, dense) = (&self.a_sets, &mut self.c_sets, &self.weight.dense);
        let times = time_launches(
            gpu,
            &self.problem,
            1,
            plan.warmup,
            plan.runs,
            plan.time_limit,
            |i| {
                gpu.gemm_16bit(
                    dtype,
                    layout,
                    &a_sets[i % sets],
                    dense,
                    &mut c_sets[i % sets],
                    shape,
                )
            },
        )?;
        Ok(Timing::from_ms(&times))
    }

    /// Verify `kernel` on set 0 against cuBLAS, then time it over the rotating sets.
    pub fn measure(
        &mut self,
        gpu: &Gpu,
        kernel: &TcKernel,
        plan: TimingPlan,
        best_us: Option<f64>,
    ) -> Result<Outcome, GpuError> {
        let max_error = max_relative_error(self.problem.dtype);
        let verified = self.verify(gpu, kernel, plan.time_limit);
        judge_and_time(gpu, plan, best_us, max_error, verified, |warmup, runs| {
            self.time(gpu, kernel, warmup, runs, plan.time_limit)
        })
    }

    /// Relative error of one launch (C poisoned first) against cuBLAS.
    fn verify(&mut self, gpu: &Gpu, kernel: &TcKernel, limit: Duration) -> Result<f64, GpuError> {
        gpu.poison_16(&mut self.c_sets[0])?;
        self.launch(gpu, kernel, 0)?;
        gpu.synchronize_within(limit)?;
        let count = self.problem.m * self.problem.n;
        gpu.relative_error_16(self.problem.dtype, &self.c_sets[0], &self.reference, count)
    }

    fn time(
        &mut self,
        gpu: &Gpu,
        kernel: &TcKernel,
        warmup: usize,
        runs: usize,
        limit: Duration,
    ) -> Result<Timing, GpuError> {
        let problem = self.problem;
        let times = time_launches(gpu, &problem, 1, warmup, runs, limit, |i| {
            self.launch(gpu, kernel, i)
        })?;
        Ok(Timing::from_ms(&times))
    }

    /// Launch on activation set `i % sets`.
    fn launch(&mut self, gpu: &Gpu, kernel: &TcKernel, i: usize) -> Result<(), GpuError> {
        let set = i % self.a_sets.len();
        let (m, n, k) = (self.problem.m, self.problem.n, self.problem.k);
        let w = self.weight.w();
        // (Stream-ordered: a buffer it replaces is freed after the launches before.)
        self.scratch.grow_for(&gpu.stream, kernel, (m, n, k))?;
        let (image, kept_k) = self
            .weight
            .image(gpu, kernel.config.kept_rows)
            .map_err(|e| GpuError::Driver {
                what: "preparing the tensor-core weight".into(),
                detail: e.to_string(),
            })?;
        let ops = TcOperands {
            a: &self.a_sets[set],
            image,
            kept_k,
            c: &mut self.c_sets[set],
            scratch: &mut self.scratch,
            m,
            n,
            k,
            w,
        };
        kernel.launch(gpu, ops)
    }
}
