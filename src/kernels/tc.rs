//! A tensor-core kernel (codegen's [`TcConfig`]) compiled, loaded and launched.

use super::loaded::{launch_programmatic, opt_into_smem, KernelParams};
use crate::codegen::nvrtc::{compile_cached, CompiledKernel};
use crate::codegen::tc::{
    TC_ARCH, TC_BLOCK_COLS, TC_SMEM_OPTIN, TC_TRANSPOSE_THREADS, TC_TRANSPOSE_TILE,
};
use crate::codegen::{render_tc, KernelSource, TcConfig};
use crate::gpu::device::driver_err;
use crate::gpu::{Gpu, GpuError};
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
    /// Room for the column-major copy of row-major A (`TcConfig::workspace_elements`);
    /// `None` for column-major A.
    pub workspace: Option<&'a mut CudaSlice<u16>>,
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
            _module: module,
        })
    }

    /// Launch on `gpu`'s stream. The caller has checked the problem against the
    /// configuration (`TcConfig::validate_for_problem`) and sized the buffers.
    pub fn launch(&self, gpu: &Gpu, ops: TcOperands<'_>) -> Result<(), GpuError> {
        self.launch_on(&gpu.stream, ops)
    }

    /// [`TcKernel::launch`] on any stream of the context the kernel was loaded into. A
    /// row-major configuration first writes A column-major into the workspace.
    pub fn launch_on(&self, stream: &Arc<CudaStream>, ops: TcOperands<'_>) -> Result<(), GpuError> {
        let smem = self.config.smem_bytes(ops.w) as u32;
        let grid = LaunchConfig {
            grid_dim: (
                (ops.n / TC_BLOCK_COLS) as u32,
                (ops.m / self.config.block_rows()) as u32,
                // A split's blocks along z, one cluster a tile (compiled in: codegen::tc).
                self.config.split_k as u32,
            ),
            block_dim: (self.config.threads() as u32, 1, 1),
            shared_mem_bytes: smem,
        };
        let (m, n, w) = (ops.m as i32, ops.n as i32, ops.w as i32);
        let launched = match (&self.transpose, ops.workspace) {
            (None, _) => {
                let mut launch = stream.launch_builder(&self.function);
                launch
                    .arg(ops.a)
                    .arg(ops.image)
                    .arg(ops.kept_k)
                    .arg(ops.c)
                    .arg(&m)
                    .arg(&n)
                    .arg(&w);
                // SAFETY: the arguments match the family's ABI (codegen::tc) and the buffers'
                // sizes.
                unsafe { launch.launch(grid) }.map(|_| ())
            }
            (Some(transpose), Some(copy)) if copy.len() >= ops.m * ops.k => {
                self.launch_transpose(stream, transpose, ops.a, copy, (ops.m, ops.k))?;
                // The main kernel as the pass's programmatic dependent: its prologue and first
                // B' copies overlap the pass, and it waits for the pass before it reads the
                // copy (`griddepcontrol.wait` in the template).
                let (a, _a) = copy.device_ptr(stream);
                let (image, _image) = ops.image.device_ptr(stream);
                let (kept_k, _kept_k) = ops.kept_k.device_ptr(stream);
                let (c, _c) = ops.c.device_ptr_mut(stream);
                let mut params = KernelParams::default();
                params.pointers.extend([a, image, kept_k, c]);
                params.ints.extend([m, n, w]);
                // SAFETY: the family's ABI (A, image, kept_k, C, m, n, w); the buffers were
                // sized by the caller and the guards keep them alive past the launch.
                unsafe { launch_programmatic(stream, &self.function, grid, params) }
            }
            (Some(_), _) => {
                return Err(GpuError::Driver {
                    what: format!("launching {}", self.config.name()),
                    detail: format!(
                        "row-major A needs a workspace of m·k = {} elements",
                        ops.m * ops.k
                    ),
                })
            }
        };
        launched.map_err(driver_err(format!("launching {}", self.config.name())))
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
