//! A tensor-core kernel (codegen's [`TcConfig`]) compiled, loaded and launched.

use super::loaded::{launch_params, opt_into_smem, KernelParams};
use super::Workspace;
use crate::codegen::nvrtc::{compile_cached, CompiledKernel};
use crate::codegen::tc::{
    TC_ARCH, TC_BLOCK_COLS, TC_SMEM_OPTIN, TC_TRANSPOSE_THREADS, TC_TRANSPOSE_TILE,
};
use crate::codegen::{render_tc, KernelSource, TcConfig};
use crate::gpu::device::driver_err;
use crate::gpu::{Gpu, GpuError};
use cudarc::driver::sys;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut,
    LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use std::path::Path;
use std::sync::Arc;

/// One tensor-core configuration's kernel, loaded into a GPU's context.
pub struct TcKernel {
    pub config: TcConfig,
    /// Registers a thread, from ptxas's report.
    pub registers: Option<u32>,
    function: CudaFunction,
    /// A row-major configuration's first pass (`<name>_transpose`).
    transpose: Option<CudaFunction>,
    /// A stream-K configuration's workers (`TcConfig::stream_workers` on this GPU); 0
    /// otherwise.
    workers: usize,
    _module: Arc<CudaModule>,
}

/// The device operands of one product: A in the configuration's layout, the weight's image
/// and kept-row table (format::tc::TcWeight), C row-major, all 16-bit elements of the
/// kernel's type.
pub struct TcOperands<'a> {
    pub a: &'a CudaSlice<u16>,
    pub image: &'a CudaSlice<u16>,
    pub kept_k: &'a CudaSlice<u16>,
    pub c: &'a mut CudaSlice<u16>,
    /// Row-major A's column-major copy and a stream-K launch's partial sums and counters,
    /// grown for this launch ([`TcScratch::grow_for`]).
    pub scratch: &'a mut TcScratch,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Kept rows of B'.
    pub w: usize,
}

impl TcKernel {
    /// Render, compile (through the cubin cache in `cache_dir`) and load `config`.
    pub fn load(gpu: &Gpu, config: TcConfig, cache_dir: &Path) -> Result<Self, GpuError> {
        let source = render_tc(&config)?;
        let compiled = compile_cached(&source, TC_ARCH, cache_dir)?;
        Self::load_in(&gpu.ctx, config, &source, &compiled)
    }

    /// Load `config`'s kernel, compiled from `source`, into `ctx`.
    pub fn load_in(
        ctx: &Arc<CudaContext>,
        config: TcConfig,
        source: &KernelSource,
        compiled: &CompiledKernel,
    ) -> Result<Self, GpuError> {
        let module = ctx
            .load_module(Ptx::from_binary(compiled.cubin.clone()))
            .map_err(driver_err("loading a module"))?;
        let function = module
            .load_function(&source.name)
            .map_err(driver_err(format!("loading {}", source.name)))?;
        // Opted into all a launch may ask for (the problem's kept-row table comes on top of
        // the ring), once: a launch then needs no attribute call, from any thread.
        opt_into_smem(&function, &source.name, TC_SMEM_OPTIN as u32)?;
        let workers = match config.stream_k {
            true => {
                let sms = ctx
                    .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                    .map_err(driver_err("reading the SM count"))?;
                config.stream_workers(sms.max(1) as usize)
            }
            false => 0,
        };
        let transpose = match config.transposes_a() {
            true => {
                let symbol = format!("{}_transpose", source.name);
                let f = module
                    .load_function(&symbol)
                    .map_err(driver_err(format!("loading {symbol}")))?;
                Some(f)
            }
            false => None,
        };
        Ok(Self {
            config,
            registers: compiled.registers,
            function,
            transpose,
            workers,
            _module: module,
        })
    }

    /// FP32 workspace a launch needs (a stream-K launch's partial sums).
    pub fn stream_floats(&self) -> usize {
        self.config.stream_floats(self.workers)
    }

    /// A stream-K configuration's workers (0 for any other).
    pub fn stream_workers(&self) -> usize {
        self.workers
    }

    /// Share a stream-K configuration's tiles among `workers` workers instead of its
    /// blocks an SM on every SM (the tests' uneven shares); no effect on other
    /// configurations.
    pub fn set_stream_workers(&mut self, workers: usize) {
        if self.config.stream_k {
            self.workers = workers.max(1);
        }
    }

    /// Launch on `gpu`'s stream. The caller has checked the problem against the
    /// configuration (`TcConfig::validate_for_problem`) and sized the buffers.
    pub fn launch(&self, gpu: &Gpu, ops: TcOperands<'_>) -> Result<(), GpuError> {
        self.launch_on(&gpu.stream, ops)
    }

    /// [`TcKernel::launch`] on any stream of the context the kernel was loaded into. A
    /// row-major configuration first writes A column-major into the workspace.
    pub fn launch_on(&self, stream: &Arc<CudaStream>, ops: TcOperands<'_>) -> Result<(), GpuError> {
        let shape = (ops.m, ops.n, ops.k);
        if !ops.scratch.fits(self, shape) {
            return Err(GpuError::Driver {
                what: format!("launching {}", self.config.name()),
                detail: format!(
                    "its scratch is not grown for m×n×k = {}×{}×{}",
                    ops.m, ops.n, ops.k
                ),
            });
        }
        let grid = self.grid(&ops);
        let (m, n, w) = (ops.m as i32, ops.n as i32, ops.w as i32);
        if let (Some(transpose), Some(copy)) = (&self.transpose, ops.scratch.copy.as_mut()) {
            self.launch_transpose(stream, transpose, ops.a, copy, (ops.m, ops.k))?;
        }
        // A row-major configuration's main kernel reads the copy, as the pass's
        // programmatic dependent: its prologue and first B' copies overlap the pass, and it
        // waits for the pass before it reads the copy (`griddepcontrol.wait` in the template).
        let (a, _a) = match (&self.transpose, ops.scratch.copy.as_ref()) {
            (Some(_), Some(copy)) => copy.device_ptr(stream),
            _ => ops.a.device_ptr(stream),
        };
        let (image, _image) = ops.image.device_ptr(stream);
        let (kept_k, _kept_k) = ops.kept_k.device_ptr(stream);
        let (c, _c) = ops.c.device_ptr_mut(stream);
        let mut params = KernelParams::default();
        params.pointers.extend([a, image, kept_k, c]);
        let _stream_guards = match (self.config.stream_k, ops.scratch.stream_k.as_mut()) {
            (true, Some(ws)) => {
                let (partials, partials_guard) = ws.floats.device_ptr_mut(stream);
                let (counters, counters_guard) = ws.counters.device_ptr_mut(stream);
                params.pointers.extend([partials, counters]);
                Some((partials_guard, counters_guard))
            }
            _ => None,
        };
        params.ints.extend([m, n, w]);
        // SAFETY: the family's ABI (A, image, kept_k, C[, partials, counters], m, n, w:
        // codegen::tc); `fits` checked the scratch, the caller sized the other buffers, and
        // the guards keep them alive past the launch.
        let programmatic = self.transpose.is_some();
        unsafe { launch_params(stream, &self.function, grid, params, programmatic) }
            .map_err(driver_err(format!("launching {}", self.config.name())))
    }

    /// The launch's grid: a stream-K configuration's workers, else one block a tile (a
    /// split's blocks along z, one cluster a tile, compiled in: codegen::tc).
    fn grid(&self, ops: &TcOperands<'_>) -> LaunchConfig {
        let grid_dim = match self.config.stream_k {
            // At most one worker a unit (a tile's stage): none may be idle (the template).
            true => {
                let units = self.config.tiles(ops.m, ops.n) * self.config.stages_of(ops.w);
                (self.workers.min(units).max(1) as u32, 1, 1)
            }
            false => (
                (ops.n / TC_BLOCK_COLS) as u32,
                (ops.m / self.config.block_rows()) as u32,
                self.config.split_k as u32,
            ),
        };
        LaunchConfig {
            grid_dim,
            block_dim: (self.config.threads() as u32, 1, 1),
            shared_mem_bytes: self.config.smem_bytes(ops.w) as u32,
        }
    }

    /// Row-major `a` (m×k) into `copy`, column-major.
    fn launch_transpose(
        &self,
        stream: &Arc<CudaStream>,
        transpose: &CudaFunction,
        a: &CudaSlice<u16>,
        copy: &mut CudaSlice<u16>,
        (m, k): (usize, usize),
    ) -> Result<(), GpuError> {
        let grid = LaunchConfig {
            grid_dim: (
                k.div_ceil(TC_TRANSPOSE_TILE) as u32,
                m.div_ceil(TC_TRANSPOSE_TILE) as u32,
                1,
            ),
            block_dim: (TC_TRANSPOSE_THREADS as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let (m32, k32) = (m as i32, k as i32);
        let mut launch = stream.launch_builder(transpose);
        launch.arg(a).arg(copy).arg(&m32).arg(&k32);
        // SAFETY: (const T* A, T* At, int m, int k) as templates/transpose_a16.cu.tera has it;
        // `a` and `copy` hold m·k elements.
        unsafe { launch.launch(grid) }
            .map(|_| ())
            .map_err(driver_err(format!(
                "launching {}'s transpose",
                self.config.name()
            )))
    }
}

/// The device scratch of tensor-core launches on one stream: row-major A's column-major
/// copy and a stream-K launch's partial sums and tile counters (zero before and after every
/// launch: [`Workspace`]). Empty until grown for a kernel.
#[derive(Default)]
pub struct TcScratch {
    copy: Option<CudaSlice<u16>>,
    stream_k: Option<Workspace>,
}

impl TcScratch {
    /// Whether a launch of `kernel` on (m, n, k) fits.
    pub fn fits(&self, kernel: &TcKernel, (m, n, k): (usize, usize, usize)) -> bool {
        let copy = kernel.config.workspace_elements(m, k);
        let copy_fits = copy == 0 || self.copy.as_ref().is_some_and(|c| c.len() >= copy);
        let (floats, counters) = (kernel.stream_floats(), kernel.config.counters(m, n));
        let stream_fits = floats == 0
            || self
                .stream_k
                .as_ref()
                .is_some_and(|ws| ws.floats.len() >= floats && ws.counters.len() >= counters);
        copy_fits && stream_fits
    }

    /// Grow what is too small for `kernel` on (m, n, k), on `stream`; whether anything grew.
    /// The caller makes sure that no launch still uses the old buffers.
    pub fn grow_for(
        &mut self,
        stream: &Arc<CudaStream>,
        kernel: &TcKernel,
        (m, n, k): (usize, usize, usize),
    ) -> Result<bool, GpuError> {
        if self.fits(kernel, (m, n, k)) {
            return Ok(false);
        }
        let copy = kernel.config.workspace_elements(m, k);
        if self.copy.as_ref().map_or(0, |c| c.len()) < copy {
            let grown = stream
                .alloc_zeros::<u16>(copy)
                .map_err(driver_err("allocating the copy of A"))?;
            self.copy = Some(grown);
        }
        let (floats, counters) = (kernel.stream_floats(), kernel.config.counters(m, n));
        match self.stream_k.as_mut() {
            Some(ws) => {
                ws.grow(stream, floats, counters)?;
            }
            None if floats > 0 => self.stream_k = Some(Workspace::new(stream, floats, counters)?),
            None => {}
        }
        Ok(true)
    }
}
