//! The real GPU, through cudarc: device properties, support kernels, cuBLAS and event timing.
//!
//! cudarc loads libcuda, libcublas and libnvrtc at run time and panics when one is missing, so
//! every entry point checks for the library first and turns its absence into a [`GpuError`].

use super::GpuProfile;
use crate::codegen::nvrtc;
use crate::problem::{ALayout, Dtype};
use cudarc::cublas::{sys as blas_sys, CudaBlas, Gemm, GemmConfig};
use cudarc::driver::sys::{CUdevice_attribute as Attr, CUevent_flags};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DriverError, LaunchConfig,
    PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use std::mem::ManuallyDrop;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Errors of the GPU layer.
#[derive(Debug, Error)]
pub enum GpuError {
    #[error(
        "no NVIDIA driver found (libcuda.so could not be loaded): this machine has no usable GPU"
    )]
    DriverMissing,
    #[error("no CUDA device found (driver loaded, {0} devices)")]
    NoDevice(i32),
    #[error("cuBLAS (libcublas.so) not found: install the CUDA toolkit and put its lib64 on LD_LIBRARY_PATH")]
    CublasMissing,
    #[error("CUDA driver error while {what}: {detail}")]
    Driver { what: String, detail: String },
    #[error("cuBLAS error while {what}: {detail}")]
    Cublas { what: String, detail: String },
    #[error("the kernel was still running after the time limit of {limit_s} s")]
    TimedOut { limit_s: f64 },
    #[error(transparent)]
    Codegen(#[from] crate::codegen::CodegenError),
    #[error("kernel {kernel} reads D as {wanted}, but the launch was given {given}")]
    IndexType {
        kernel: String,
        wanted: &'static str,
        given: &'static str,
    },
    #[error("the workspace is too small for kernel {kernel} on m×n×k = {shape:?}")]
    WorkspaceTooSmall {
        kernel: String,
        shape: (usize, usize, usize),
    },
}

pub(crate) fn driver_err(what: impl Into<String>) -> impl FnOnce(DriverError) -> GpuError {
    let what = what.into();
    move |e| GpuError::Driver {
        what,
        detail: e.to_string(),
    }
}

/// Copy `host` into a new buffer on `stream`; an empty slice becomes a one-element
/// placeholder (kernels never read it, and CUDA cannot allocate zero bytes).
pub fn upload_on<T: cudarc::driver::DeviceRepr>(
    stream: &Arc<CudaStream>,
    host: &[T],
) -> Result<CudaSlice<T>, GpuError> {
    if host.is_empty() {
        // SAFETY: a one-element placeholder that kernels never read.
        return unsafe { stream.alloc::<T>(1) }.map_err(driver_err("allocating"));
    }
    stream
        .clone_htod(host)
        .map_err(driver_err("copying to the device"))
}

/// Whether libcuda can be loaded (without panicking).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// The support kernels' CUDA source (`support.cu`), compiled for the device when it is opened.
pub const SUPPORT_SOURCE: &str = include_str!("support.cu");

/// Clock cycles every timed series waits behind (about 1 ms at 2 GHz): long enough for the
/// host to queue tens of launches and their events, so that the GPU runs them back to back
/// at its own pace. Without it a 10 µs product timed on its own measures the host too: the
/// gap while cuBLAS's host side or a second kernel of the same launch is being queued.
pub const HEAD_START_CYCLES: i64 = 2_000_000;

/// Kernels of `support.cu`, compiled for the device at open time.
struct SupportKernels {
    fill_uniform: CudaFunction,
    decompress: CudaFunction,
    error_sums: CudaFunction,
    poison: CudaFunction,
    spin: CudaFunction,
    fill_uniform_16: CudaFunction,
    to_16bit: CudaFunction,
    error_sums_16: CudaFunction,
    poison_16: CudaFunction,
    _module: Arc<CudaModule>,
}

/// One opened GPU: context, stream, cuBLAS handle, support kernels and its profile.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// Dropped by hand (see `Drop for Gpu`).
    blas: ManuallyDrop<CudaBlas>,
    support: SupportKernels,
    profile: GpuProfile,
}

impl Gpu {
    /// Open device `ordinal`, read its profile, compile the support kernels.
    pub fn open(ordinal: usize) -> Result<Self, GpuError> {
        if !driver_present() {
            return Err(GpuError::DriverMissing);
        }
        let count = match CudaContext::device_count() {
            // A driver without a device fails cuInit itself with CUDA_ERROR_NO_DEVICE.
            Err(e) if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_NO_DEVICE => 0,
            other => other.map_err(driver_err("counting devices"))?,
        };
        if count <= ordinal as i32 {
            return Err(GpuError::NoDevice(count));
        }
        // SAFETY: only tries to dlopen the library.
        if !unsafe { cudarc::cublas::sys::is_culib_present() } {
            return Err(GpuError::CublasMissing);
        }
        nvrtc::nvrtc_available()?;
        let ctx = CudaContext::new(ordinal).map_err(driver_err("creating a context"))?;
        // One stream, ordered by construction: cudarc's per-buffer event tracking would only add
        // event records between timed launches.
        // SAFETY: every buffer of nmtune is used on this single stream.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let profile = read_profile(&ctx)?;
        let blas = CudaBlas::new(stream.clone()).map_err(|e| GpuError::Cublas {
            what: "creating a handle".into(),
            detail: e.to_string(),
        })?;
        // FP32 compute, no TF32: the baseline the design card fixes.
        // SAFETY: valid handle; the mode is a plain enum.
        let status = unsafe {
            blas_sys::cublasSetMathMode(*blas.handle(), blas_sys::cublasMath_t::CUBLAS_DEFAULT_MATH)
        };
        if status != blas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(GpuError::Cublas {
                what: "setting FP32 math mode".into(),
                detail: format!("{status:?}"),
            });
        }
        let support = compile_support(&ctx, &profile)?;
        Ok(Self {
            ctx,
            stream,
            blas: ManuallyDrop::new(blas),
            support,
            profile,
        })
    }

    pub fn profile(&self) -> &GpuProfile {
        &self.profile
    }

    /// The device ordinal this GPU was opened with ([`Gpu::open`]).
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// Load a compiled cubin into this context.
    pub fn load_module(&self, cubin: &[u8]) -> Result<Arc<CudaModule>, GpuError> {
        self.ctx
            .load_module(Ptx::from_binary(cubin.to_vec()))
            .map_err(driver_err("loading a module"))
    }

    pub fn alloc(&self, len: usize) -> Result<CudaSlice<f32>, GpuError> {
        // SAFETY: every buffer is written (fill, upload or kernel) before it is read.
        unsafe { self.stream.alloc::<f32>(len.max(1)) }
            .map_err(driver_err("allocating device memory"))
    }

    /// A device copy of `buf`.
    pub fn duplicate(&self, buf: &CudaSlice<f32>) -> Result<CudaSlice<f32>, GpuError> {
        self.stream
            .clone_dtod(buf)
            .map_err(driver_err("copying device memory"))
    }

    /// Copy `src` into `dst` (device to device, on the stream); `dst` must be at least as long.
    pub fn copy(&self, src: &CudaSlice<f32>, dst: &mut CudaSlice<f32>) -> Result<(), GpuError> {
        self.stream
            .memcpy_dtod(src, dst)
            .map_err(driver_err("copying device memory"))
    }

    pub fn upload<T: cudarc::driver::DeviceRepr>(
        &self,
        host: &[T],
    ) -> Result<CudaSlice<T>, GpuError> {
        upload_on(&self.stream, host)
    }

    pub fn download(&self, dev: &CudaSlice<f32>) -> Result<Vec<f32>, GpuError> {
        self.stream
            .clone_dtoh(dev)
            .map_err(driver_err("copying from the device"))
    }

    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream
            .synchronize()
            .map_err(driver_err("synchronizing (a kernel may have faulted)"))
    }

    /// Wait for the stream like [`Gpu::synchronize`], but give up after `limit`. Nothing can
    /// stop a running kernel short of tearing down its context, so after `TimedOut` the
    /// context is unusable and the process should end (see `tuner::TuneError::is_restartable`).
    pub fn synchronize_within(&self, limit: Duration) -> Result<(), GpuError> {
        let started = Instant::now();
        let mut pause = Duration::from_micros(20);
        loop {
            // SAFETY: queries this GPU's own live stream.
            let status = unsafe { cudarc::driver::sys::cuStreamQuery(self.stream.cu_stream()) };
            match status {
                cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_READY => {}
                other => {
                    return other
                        .result()
                        .map_err(driver_err("synchronizing (a kernel may have faulted)"))
                }
            }
            if started.elapsed() >= limit {
                return Err(GpuError::TimedOut {
                    limit_s: limit.as_secs_f64(),
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    /// Err when the context holds a sticky error (a kernel faulted): it cannot run more work.
    pub fn check_healthy(&self) -> Result<(), GpuError> {
        self.ctx
            .check_err()
            .map_err(driver_err("checking the context"))?;
        self.synchronize()
    }

    fn grid_for(&self, count: usize) -> LaunchConfig {
        let blocks = count
            .div_ceil(256)
            .clamp(1, self.profile.sm_count as usize * 8);
        LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Fill with uniform values in [-1, 1) derived from `seed` (never zeros).
    pub fn fill_uniform(&self, buf: &mut CudaSlice<f32>, seed: u32) -> Result<(), GpuError> {
        let count = buf.len() as u64;
        let cfg = self.grid_for(buf.len());
        let mut launch = self.stream.launch_builder(&self.support.fill_uniform);
        launch.arg(buf).arg(&count).arg(&seed);
        // SAFETY: signature matches support.cu.
        unsafe { launch.launch(cfg) }.map_err(driver_err("filling random data"))?;
        Ok(())
    }

    /// Fill with NaN so that unwritten outputs fail verification.
    pub fn poison(&self, buf: &mut CudaSlice<f32>) -> Result<(), GpuError> {
        self.poison_with(&self.support.poison, buf)
    }

    /// Run a poisoning kernel of `support.cu` (`(T* out, count)`) over `buf`.
    fn poison_with<T: cudarc::driver::DeviceRepr>(
        &self,
        kernel: &CudaFunction,
        buf: &mut CudaSlice<T>,
    ) -> Result<(), GpuError> {
        let count = buf.len() as u64;
        let cfg = self.grid_for(buf.len());
        let mut launch = self.stream.launch_builder(kernel);
        launch.arg(buf).arg(&count);
        // SAFETY: `kernel` takes (T*, unsigned long long) in support.cu.
        unsafe { launch.launch(cfg) }.map_err(driver_err("poisoning a buffer"))?;
        Ok(())
    }

    /// dense (k×n, row-major) from B' and D (raw window positions as i32).
    #[allow(clippy::too_many_arguments)]
    pub fn decompress(
        &self,
        values: &CudaSlice<f32>,
        indices: &CudaSlice<i32>,
        dense: &mut CudaSlice<f32>,
        w: usize,
        n: usize,
        nm: crate::problem::NmPattern,
        l: usize,
    ) -> Result<(), GpuError> {
        self.stream
            .memset_zeros(dense)
            .map_err(driver_err("zeroing"))?;
        let (w32, n32, q32) = (w as i32, n as i32, (n / l) as i32);
        let (nn, mm, l32) = (nm.n as i32, nm.m as i32, l as i32);
        let cfg = self.grid_for(w * n);
        let mut launch = self.stream.launch_builder(&self.support.decompress);
        launch.arg(values).arg(indices).arg(dense);
        launch
            .arg(&w32)
            .arg(&n32)
            .arg(&q32)
            .arg(&nn)
            .arg(&mm)
            .arg(&l32);
        // SAFETY: signature matches support.cu; buffers sized w×n, w×q, k×n.
        unsafe { launch.launch(cfg) }.map_err(driver_err("decompressing the weight"))?;
        Ok(())
    }

    /// ‖got − want‖₂ / ‖want‖₂ over `count` elements, computed on the device in f64.
    /// Any non-finite value in `got` gives infinity.
    pub fn relative_error(
        &self,
        got: &CudaSlice<f32>,
        want: &CudaSlice<f32>,
        count: usize,
    ) -> Result<f64, GpuError> {
        let count64 = count as u64;
        self.error_from_sums(count, |sums, cfg| {
            let mut launch = self.stream.launch_builder(&self.support.error_sums);
            launch.arg(got).arg(want).arg(&count64).arg(sums);
            // SAFETY: signature matches support.cu.
            unsafe { launch.launch(cfg) }.map(|_| ())
        })
    }

    /// The relative error from an error-sums kernel over `count` elements, which `launch`
    /// starts with the three zeroed sums and a grid.
    fn error_from_sums(
        &self,
        count: usize,
        launch: impl FnOnce(&mut CudaSlice<f64>, LaunchConfig) -> Result<(), DriverError>,
    ) -> Result<f64, GpuError> {
        let mut sums = self
            .stream
            .alloc_zeros::<f64>(3)
            .map_err(driver_err("allocating"))?;
        launch(&mut sums, self.grid_for(count)).map_err(driver_err("computing the error"))?;
        let host = self
            .stream
            .clone_dtoh(&sums)
            .map_err(driver_err("reading the error"))?;
        Ok(relative_error_from_sums(host[0], host[1], host[2]))
    }

    /// [`Gpu::fill_uniform`]'s values rounded to `dtype` (BF16 or FP16), as bits.
    pub fn fill_uniform_16(
        &self,
        dtype: Dtype,
        buf: &mut CudaSlice<u16>,
        seed: u32,
    ) -> Result<(), GpuError> {
        let kind = kind_16bit(dtype)?;
        let count = buf.len() as u64;
        let cfg = self.grid_for(buf.len());
        let mut launch = self.stream.launch_builder(&self.support.fill_uniform_16);
        launch.arg(buf).arg(&count).arg(&seed).arg(&kind);
        // SAFETY: signature matches support.cu.
        unsafe { launch.launch(cfg) }.map_err(driver_err("filling random data"))?;
        Ok(())
    }

    /// `values` rounded to `dtype` (BF16 or FP16), as bits, into `out` (as long).
    pub fn to_16bit(
        &self,
        dtype: Dtype,
        values: &CudaSlice<f32>,
        out: &mut CudaSlice<u16>,
    ) -> Result<(), GpuError> {
        let kind = kind_16bit(dtype)?;
        let count = values.len().min(out.len()) as u64;
        let cfg = self.grid_for(count as usize);
        let mut launch = self.stream.launch_builder(&self.support.to_16bit);
        launch.arg(values).arg(out).arg(&count).arg(&kind);
        // SAFETY: signature matches support.cu; both buffers hold `count` elements.
        unsafe { launch.launch(cfg) }.map_err(driver_err("rounding to 16 bits"))?;
        Ok(())
    }

    /// Fill 16-bit elements with NaN (0xFFFF in BF16 and FP16).
    pub fn poison_16(&self, buf: &mut CudaSlice<u16>) -> Result<(), GpuError> {
        self.poison_with(&self.support.poison_16, buf)
    }

    /// [`Gpu::relative_error`] of 16-bit elements of `dtype`.
    pub fn relative_error_16(
        &self,
        dtype: Dtype,
        got: &CudaSlice<u16>,
        want: &CudaSlice<u16>,
        count: usize,
    ) -> Result<f64, GpuError> {
        let kind = kind_16bit(dtype)?;
        let count64 = count as u64;
        self.error_from_sums(count, |sums, cfg| {
            let mut launch = self.stream.launch_builder(&self.support.error_sums_16);
            launch.arg(got).arg(want).arg(&count64).arg(&kind).arg(sums);
            // SAFETY: signature matches support.cu.
            unsafe { launch.launch(cfg) }.map(|_| ())
        })
    }

    /// Row-major C (m×n) = A (m×k, in `layout`) · B (k×n, row-major) with cuBLAS SGEMM,
    /// FP32 compute, no TF32.
    pub fn sgemm(
        &self,
        a: &CudaSlice<f32>,
        layout: ALayout,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
        (m, n, k): (usize, usize, usize),
    ) -> Result<(), GpuError> {
        // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first. Row-major A is Aᵀ in
        // column-major terms (k×m, leading dimension k); column-major A is A itself (m×k,
        // leading dimension m), transposed by the operation.
        let (transb, ldb) = match layout {
            ALayout::RowMajor => (blas_sys::cublasOperation_t::CUBLAS_OP_N, k),
            ALayout::ColMajor => (blas_sys::cublasOperation_t::CUBLAS_OP_T, m),
        };
        let cfg = GemmConfig {
            transa: blas_sys::cublasOperation_t::CUBLAS_OP_N,
            transb,
            m: n as i32,
            n: m as i32,
            k: k as i32,
            alpha: 1.0f32,
            lda: n as i32,
            ldb: ldb as i32,
            beta: 0.0f32,
            ldc: n as i32,
        };
        // SAFETY: buffer sizes checked by the caller (k×n, m×k, m×n).
        unsafe { self.blas.gemm(cfg, b, a, c) }.map_err(|e| GpuError::Cublas {
            what: "running SGEMM".into(),
            detail: e.to_string(),
        })
    }

    /// Row-major C (m×n) = A (m×k, in `layout`) · B (k×n, row-major), all three in `dtype`
    /// (BF16 or FP16 bits), with cuBLAS `cublasGemmEx`, FP32 compute, tensor cores allowed:
    /// the baseline of the tensor-core family.
    pub fn gemm_16bit(
        &self,
        dtype: Dtype,
        layout: ALayout,
        a: &CudaSlice<u16>,
        b: &CudaSlice<u16>,
        c: &mut CudaSlice<u16>,
        (m, n, k): (usize, usize, usize),
    ) -> Result<(), GpuError> {
        use cudarc::driver::{DevicePtr, DevicePtrMut};
        let kind = match dtype {
            Dtype::Bf16 => blas_sys::cudaDataType_t::CUDA_R_16BF,
            Dtype::F16 => blas_sys::cudaDataType_t::CUDA_R_16F,
            Dtype::F32 => {
                return Err(GpuError::Cublas {
                    what: "running a 16-bit GEMM".into(),
                    detail: "f32 is not a 16-bit type".into(),
                })
            }
        };
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (a_ptr, _a_use) = a.device_ptr(&self.stream);
        let (b_ptr, _b_use) = b.device_ptr(&self.stream);
        let (c_ptr, _c_use) = c.device_ptr_mut(&self.stream);
        // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: B first (n×k column-major, leading
        // dimension n), then Aᵀ: row-major A is column-major Aᵀ as it lies (leading dimension
        // k), column-major A is transposed (leading dimension m).
        let (a_op, lda) = match layout {
            ALayout::RowMajor => (blas_sys::cublasOperation_t::CUBLAS_OP_N, k),
            ALayout::ColMajor => (blas_sys::cublasOperation_t::CUBLAS_OP_T, m),
        };
        // SAFETY: the caller's buffers hold k×n, m×k and m×n elements of `dtype`.
        unsafe {
            cudarc::cublas::result::gemm_ex(
                *self.blas.handle(),
                blas_sys::cublasOperation_t::CUBLAS_OP_N,
                a_op,
                n as i32,
                m as i32,
                k as i32,
                (&alpha) as *const f32 as *const _,
                b_ptr as *const _,
                kind,
                n as i32,
                a_ptr as *const _,
                kind,
                lda as i32,
                (&beta) as *const f32 as *const _,
                c_ptr as *mut _,
                kind,
                n as i32,
                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| GpuError::Cublas {
            what: "running a 16-bit GEMM".into(),
            detail: e.to_string(),
        })
    }

    /// Time `runs` back-to-back calls of `launch` with CUDA events (timing enabled), after
    /// `warmup` untimed calls, all queued behind a spin kernel of [`HEAD_START_CYCLES`].
    /// Returns each call's milliseconds.
    /// Gives up with `TimedOut` when the launches are not done after `limit`.
    pub fn time_each(
        &self,
        warmup: usize,
        runs: usize,
        limit: Duration,
        mut launch: impl FnMut(usize) -> Result<(), GpuError>,
    ) -> Result<Vec<f64>, GpuError> {
        for i in 0..warmup {
            launch(i)?;
        }
        self.spin(HEAD_START_CYCLES)?;
        let mut events = Vec::with_capacity(runs + 1);
        events.push(self.timing_event()?);
        for i in 0..runs {
            launch(warmup + i)?;
            events.push(self.timing_event()?);
        }
        self.synchronize_within(limit)?;
        events
            .windows(2)
            .map(|pair| {
                pair[0]
                    .elapsed_ms(&pair[1])
                    .map(|ms| ms as f64)
                    .map_err(driver_err("reading event times"))
            })
            .collect()
    }

    /// Time `runs` bursts of `per_burst` launches each, back to back: every burst is queued
    /// behind a spin kernel of [`HEAD_START_CYCLES`], so that the GPU, not the host's
    /// launch rate, sets its pace, with events around the burst. `launch(i)` makes launch i
    /// (numbered across bursts). Returns each burst's time per launch, ms.
    pub fn time_bursts(
        &self,
        runs: usize,
        per_burst: usize,
        limit: Duration,
        mut launch: impl FnMut(usize) -> Result<(), GpuError>,
    ) -> Result<Vec<f64>, GpuError> {
        let per_burst = per_burst.max(1);
        let mut times = Vec::with_capacity(runs);
        for run in 0..runs {
            self.spin(HEAD_START_CYCLES)?;
            let start = self.timing_event()?;
            for j in 0..per_burst {
                launch(run * per_burst + j)?;
            }
            let end = self.timing_event()?;
            self.synchronize_within(limit)?;
            let ms = start
                .elapsed_ms(&end)
                .map_err(driver_err("reading event times"))?;
            times.push(ms as f64 / per_burst as f64);
        }
        Ok(times)
    }

    /// Occupy the stream for `cycles` clock cycles of one thread.
    fn spin(&self, cycles: i64) -> Result<(), GpuError> {
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = self.stream.launch_builder(&self.support.spin);
        launch.arg(&cycles);
        // SAFETY: signature matches support.cu.
        unsafe { launch.launch(cfg) }.map_err(driver_err("launching the spin kernel"))?;
        Ok(())
    }

    fn timing_event(&self) -> Result<cudarc::driver::CudaEvent, GpuError> {
        // record_event(None) would disable timing; ask for CU_EVENT_DEFAULT explicitly.
        self.stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver_err("recording an event"))
    }
}

impl Drop for Gpu {
    /// cudarc unwraps the status of `cublasDestroy`, which may fail once a kernel fault has
    /// broken the context; dropping a GPU (to open it afresh) must not take the process down.
    fn drop(&mut self) {
        // SAFETY: taken exactly once, here; the field is not used afterwards.
        let blas = unsafe { ManuallyDrop::take(&mut self.blas) };
        if std::panic::catch_unwind(AssertUnwindSafe(move || drop(blas))).is_err() {
            log::warn!("the cuBLAS handle could not be destroyed (the GPU context had failed)");
        }
    }
}

/// The support kernels' code for a 16-bit type: 0 for BF16, 1 for FP16.
fn kind_16bit(dtype: Dtype) -> Result<i32, GpuError> {
    match dtype {
        Dtype::Bf16 => Ok(0),
        Dtype::F16 => Ok(1),
        Dtype::F32 => Err(GpuError::Driver {
            what: "converting to 16 bits".into(),
            detail: "f32 is not a 16-bit type".into(),
        }),
    }
}

/// The relative L2 error from the three device sums; non-finite output is infinitely wrong.
pub fn relative_error_from_sums(diff2: f64, ref2: f64, non_finite: f64) -> f64 {
    if non_finite > 0.0 || !diff2.is_finite() {
        return f64::INFINITY;
    }
    if ref2 == 0.0 {
        return if diff2 == 0.0 { 0.0 } else { f64::INFINITY };
    }
    (diff2 / ref2).sqrt()
}

fn compile_support(
    ctx: &Arc<CudaContext>,
    profile: &GpuProfile,
) -> Result<SupportKernels, GpuError> {
    let source = crate::codegen::render::KernelSource {
        name: "nmtune_support".into(),
        reduce_name: None,
        source: SUPPORT_SOURCE.to_string(),
    };
    let compiled = nvrtc::compile(&source, &profile.arch())?;
    let module = ctx
        .load_module(Ptx::from_binary(compiled.cubin))
        .map_err(driver_err("loading support kernels"))?;
    let load = |name: &str| {
        module
            .load_function(name)
            .map_err(driver_err(format!("loading {name}")))
    };
    Ok(SupportKernels {
        fill_uniform: load("nmtune_fill_uniform")?,
        decompress: load("nmtune_decompress")?,
        error_sums: load("nmtune_error_sums")?,
        poison: load("nmtune_poison")?,
        spin: load("nmtune_spin")?,
        fill_uniform_16: load("nmtune_fill_uniform_16")?,
        to_16bit: load("nmtune_to_16bit")?,
        error_sums_16: load("nmtune_error_sums_16")?,
        poison_16: load("nmtune_poison_16")?,
        _module: module.clone(),
    })
}

/// Read the resource limits and ceilings off the device; the short name comes from the
/// built-in table when the marketing name matches one.
fn read_profile(ctx: &Arc<CudaContext>) -> Result<GpuProfile, GpuError> {
    let attr = |a: Attr| {
        ctx.attribute(a)
            .map_err(driver_err("reading device attributes"))
    };
    let full_name = ctx.name().map_err(driver_err("reading the device name"))?;
    let (major, minor) = ctx
        .compute_capability()
        .map_err(driver_err("reading the compute capability"))?;
    let mem_clock_khz = attr(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? as f64;
    let bus_bits = attr(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)? as f64;
    let builtin = short_name_for(&full_name).and_then(GpuProfile::builtin);
    let read_gbps = 2.0 * mem_clock_khz * 1e3 * bus_bits / 8.0 / 1e9;
    Ok(GpuProfile {
        name: builtin
            .as_ref()
            .map(|p| p.name.clone())
            .unwrap_or_else(|| sanitize_name(&full_name)),
        full_name,
        compute_capability: (major as u32, minor as u32),
        sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
        smem_per_block_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?
            as u32,
        smem_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)? as u32,
        regs_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)? as u32,
        max_threads_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? as u32,
        max_blocks_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)? as u32,
        fp32_lanes_per_sm: if (major, minor) == (8, 0) { 64 } else { 128 },
        clock_mhz: (attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? / 1000) as u32,
        // Data-sheet bandwidth where the GPU is known: clock × bus width overstates HBM parts.
        dram_gbps: builtin.as_ref().map(|p| p.dram_gbps).unwrap_or(read_gbps),
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
    })
}

/// "NVIDIA H100 80GB HBM3" → "h100"; None for GPUs without a built-in profile.
pub fn short_name_for(full_name: &str) -> Option<&'static str> {
    let upper = full_name.to_ascii_uppercase();
    [
        ("H200", "h200"),
        ("H100", "h100"),
        ("A100", "a100"),
        ("4090", "4090"),
        ("3090", "3090"),
    ]
    .into_iter()
    .find(|(needle, _)| upper.contains(needle))
    .map(|(_, short)| short)
}

/// The profile name of a device: the built-in short name ("h200") when known, else the
/// marketing name made filename-safe, as [`Gpu::open`] names it.
pub fn profile_name_for(full_name: &str) -> String {
    short_name_for(full_name)
        .map(str::to_string)
        .unwrap_or_else(|| sanitize_name(full_name))
}

fn sanitize_name(full_name: &str) -> String {
    full_name
        .to_ascii_lowercase()
        .replace("nvidia", "")
        .trim()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_map_to_profiles() {
        assert_eq!(short_name_for("NVIDIA H100 80GB HBM3"), Some("h100"));
        assert_eq!(short_name_for("NVIDIA H200"), Some("h200"));
        assert_eq!(short_name_for("NVIDIA GeForce RTX 4090"), Some("4090"));
        assert_eq!(short_name_for("Tesla V100"), None);
    }

    #[test]
    fn error_sums_treat_nan_as_wrong() {
        assert_eq!(relative_error_from_sums(0.0, 4.0, 1.0), f64::INFINITY);
        assert!((relative_error_from_sums(1.0, 4.0, 0.0) - 0.5).abs() < 1e-12);
    }
}
