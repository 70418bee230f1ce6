//! Launching: the compiled kernels of one device context ([`Runtime`]) and a weight on the
//! device that picks its kernel per call ([`SparseLinear`]).

use super::{Choice, Lookup, PreparedWeight, RuntimeError};
use crate::codegen::{self, nvrtc, KernelConfig};
use crate::gpu::device::{driver_err, profile_name_for};
use crate::kernels::tc::TcKernel;
use crate::kernels::{upload_compressed, DeviceColInfos, DeviceIndices};
use crate::kernels::{IndexOperand, LaunchBuffers, LoadedKernel, Workspace};
use crate::problem::{ALayout, Problem};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// A lookup table bound to one CUDA context, with the kernels loaded into it so far.
///
/// Kernels are rendered, compiled (through the checksum-verified on-disk NVRTC cache) and
/// loaded on first use, then kept in memory; every [`SparseLinear`] of the context shares
/// them. Compilation happens under a lock, so two threads never compile the same kernel.
pub struct Runtime {
    lookup: Lookup,
    ctx: Arc<CudaContext>,
    arch: String,
    cache_dir: PathBuf,
    kernels: Mutex<HashMap<KernelConfig, Arc<LoadedKernel>>>,
    /// The tensor-core kernels, by compile key (one module serves every N:M).
    tc_kernels: Mutex<HashMap<KernelConfig, Arc<TcKernel>>>,
}

impl Runtime {
    /// A runtime for `ctx`, caching cubins in [`nvrtc::default_cache_dir`]. The device must
    /// be the GPU the lookup table was made for (its timings and limits describe that GPU).
    pub fn new(lookup: Lookup, ctx: &Arc<CudaContext>) -> Result<Arc<Self>, RuntimeError> {
        Self::with_cache_dir(lookup, ctx, nvrtc::default_cache_dir())
    }

    /// [`Runtime::new`] with another cubin cache folder.
    pub fn with_cache_dir(
        lookup: Lookup,
        ctx: &Arc<CudaContext>,
        cache_dir: PathBuf,
    ) -> Result<Arc<Self>, RuntimeError> {
        check_device(&lookup, ctx)?;
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver_err("reading the compute capability"))?;
        Ok(Arc::new(Self {
            lookup,
            ctx: ctx.clone(),
            arch: format!("sm_{major}{minor}"),
            cache_dir,
            kernels: Mutex::new(HashMap::new()),
            tc_kernels: Mutex::new(HashMap::new()),
        }))
    }

    pub fn lookup(&self) -> &Lookup {
        &self.lookup
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// `config`'s kernel, loaded into this context (compiled on first use); FP32 families
    /// ([`Runtime::tc_kernel`] loads the tensor-core family's).
    pub fn kernel(&self, config: &KernelConfig) -> Result<Arc<LoadedKernel>, RuntimeError> {
        if config.as_tc().is_some() {
            return Err(not_of_family(
                config,
                "an FP32 family (TcLinear launches it)",
            ));
        }
        let mut kernels = self.kernels.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kernel) = kernels.get(config) {
            return Ok(kernel.clone());
        }
        let source = codegen::render(config)?;
        let compiled = nvrtc::compile_cached(&source, &self.arch, &self.cache_dir)?;
        let kernel = LoadedKernel::load_in(&self.ctx, *config, &source, &compiled.cubin)?;
        let kernel = Arc::new(kernel);
        kernels.insert(*config, kernel.clone());
        Ok(kernel)
    }

    /// `config`'s tensor-core kernel, loaded into this context (compiled for sm_90a on first
    /// use).
    pub fn tc_kernel(&self, config: &KernelConfig) -> Result<Arc<TcKernel>, RuntimeError> {
        let Some(tc) = config.as_tc() else {
            return Err(not_of_family(config, "the tensor-core family"));
        };
        let key = codegen::compile_key(config);
        let mut kernels = self
            .tc_kernels
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(kernel) = kernels.get(&key) {
            return Ok(kernel.clone());
        }
        let source = codegen::render(config)?;
        let arch = codegen::compile_arch(config, &self.arch);
        let compiled = nvrtc::compile_cached(&source, arch, &self.cache_dir)?;
        let kernel = Arc::new(TcKernel::load_in(&self.ctx, tc, &source, &compiled)?);
        kernels.insert(key, kernel.clone());
        Ok(kernel)
    }

    pub(super) fn check_context(
        &self,
        ctx: &Arc<CudaContext>,
        what: &'static str,
    ) -> Result<(), RuntimeError> {
        if Arc::ptr_eq(ctx, &self.ctx) {
            Ok(())
        } else {
            Err(RuntimeError::WrongContext { what })
        }
    }
}

/// The error for a configuration handed to the launcher of another family.
fn not_of_family(config: &KernelConfig, family: &str) -> RuntimeError {
    RuntimeError::Codegen(codegen::CodegenError::Rejected {
        name: config.name(),
        reason: format!("this launcher takes kernels of {family}"),
    })
}

/// The device must carry the lookup table's GPU name.
fn check_device(lookup: &Lookup, ctx: &Arc<CudaContext>) -> Result<(), RuntimeError> {
    let full_name = ctx.name().map_err(driver_err("reading the device name"))?;
    let device = profile_name_for(&full_name);
    if device == lookup.gpu().name {
        return Ok(());
    }
    Err(RuntimeError::GpuMismatch {
        table: lookup.gpu().name.clone(),
        device,
        full_name,
    })
}

/// A prepared weight on the device: `C = alpha·A ⊗ (B', D) + beta·C` for any m, with the
/// kernel the [`Lookup`] picks for that m.
///
/// A (m×k) and C (m×n, row-major) are the caller's buffers, on the caller's stream; k and n
/// are the weight's padded sizes ([`PreparedWeight::k`], [`PreparedWeight::n`]). A is in the
/// layout the layer was created for ([`SparseLinear::layout`]): row-major (element (i, j) at
/// `i·k + j`) or column-major (at `j·m + i`, m a multiple of 4). Only kernels compiled for that
/// layout are launched; A is never transposed on the way. Buffers may be larger than needed,
/// never smaller. The split-K workspace and the col_info of packing
/// kernels live here, grown and built on first need. Launches of one `SparseLinear` share
/// that workspace: issue them on one stream, or order the streams yourself.
pub struct SparseLinear {
    runtime: Arc<Runtime>,
    weight: PreparedWeight,
    layout: ALayout,
    values: CudaSlice<f32>,
    /// D as its family reads it: u8 for L = 1 (the element-wise family), else i32.
    indices: DeviceIndices,
    col_infos: DeviceColInfos,
    workspace: Workspace,
}

impl SparseLinear {
    /// Upload `weight` on `stream` (of the runtime's context) and wait for the copy, so the
    /// weight is usable from any stream afterwards. Every [`SparseLinear::forward`] takes A in
    /// `layout`.
    pub fn new(
        runtime: Arc<Runtime>,
        weight: PreparedWeight,
        layout: ALayout,
        stream: &Arc<CudaStream>,
    ) -> Result<Self, RuntimeError> {
        runtime.check_context(stream.context(), "the stream")?;
        let (values, indices) = upload_compressed(stream, weight.weight())?;
        // Grown on a kernel's first launch that needs more.
        let workspace = Workspace::new(stream, 0, 0)?;
        stream
            .synchronize()
            .map_err(driver_err("uploading the weight"))?;
        Ok(Self {
            runtime,
            weight,
            layout,
            values,
            indices,
            col_infos: DeviceColInfos::default(),
            workspace,
        })
    }

    pub fn weight(&self) -> &PreparedWeight {
        &self.weight
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The layout of A this layer takes.
    pub fn layout(&self) -> ALayout {
        self.layout
    }

    /// The problem of `m` rows of A (in this layer's layout) times the weight; an error when
    /// the layout cannot take m rows (column-major A needs m to be a multiple of 4).
    pub fn problem(&self, m: usize) -> Result<Problem, RuntimeError> {
        Ok(self.weight.problem(m)?.with_layout(self.layout)?)
    }

    /// The kernel [`SparseLinear::forward`] would launch for `m` rows.
    pub fn choose(&self, m: usize) -> Result<Choice, RuntimeError> {
        self.runtime.lookup().lookup(&self.problem(m)?)
    }

    /// Enqueue `C = alpha·A ⊗ (B', D) + beta·C` for `m` rows on `stream` with the kernel
    /// the lookup picks; returns that choice. Asynchronous, like any kernel launch.
    /// `beta == 0` never reads C.
    pub fn forward(
        &mut self,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
        m: usize,
        alpha: f32,
        beta: f32,
    ) -> Result<Choice, RuntimeError> {
        let choice = self.choose(m)?;
        self.launch(&choice.config, stream, (a, c, m), (alpha, beta))?;
        Ok(choice)
    }

    /// [`SparseLinear::forward`] with a configuration of the caller's choosing (to compare
    /// kernels); it must be valid for the problem (its layout included) and the GPU.
    #[allow(clippy::too_many_arguments)]
    pub fn forward_with(
        &mut self,
        config: &KernelConfig,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
        m: usize,
        alpha: f32,
        beta: f32,
    ) -> Result<(), RuntimeError> {
        self.check_layout(config)?;
        codegen::validate(config, self.runtime.lookup().gpu())?;
        codegen::validate_for_problem(config, &self.problem(m)?)?;
        self.launch(config, stream, (a, c, m), (alpha, beta))
    }

    fn launch(
        &mut self,
        config: &KernelConfig,
        stream: &Arc<CudaStream>,
        (a, c, m): (&CudaSlice<f32>, &mut CudaSlice<f32>, usize),
        (alpha, beta): (f32, f32),
    ) -> Result<(), RuntimeError> {
        self.check_layout(config)?;
        self.check_operands(stream, a, c, m)?;
        let (k, n) = (self.weight.k(), self.weight.n());
        let kernel = self.runtime.kernel(config)?;
        self.ensure_workspace(stream, &kernel, (m, n, k))?;
        let packed = match config.packing {
            true => Some(self.col_infos.prepare(
                stream,
                self.weight.weight(),
                (config.k_s, config.n_s),
            )?),
            false => None,
        };
        let indices = match packed {
            Some(info) => IndexOperand::Wide {
                d: &info.packed_indices,
                col_info: &info.columns,
                col_count: &info.counts,
            },
            None => self.indices.operand(),
        };
        let bufs = LaunchBuffers {
            a,
            b_values: &self.values,
            indices,
            c,
            workspace: &mut self.workspace,
        };
        kernel.launch_on(stream, bufs, (m, n, k), alpha, beta)?;
        Ok(())
    }

    /// Allocate and upload, on `stream`, what launching `config` for `m` rows needs (the
    /// split-K workspace, a packing kernel's col_info), and wait for it when anything was
    /// done; a no-op once they exist. A launch that follows on another stream then allocates
    /// nothing: [`super::BorrowedLinear`] prepares on the context's own stream, because the
    /// buffers it keeps must not belong to a stream another library may destroy.
    pub(super) fn prepare_on(
        &mut self,
        stream: &Arc<CudaStream>,
        config: &KernelConfig,
        m: usize,
    ) -> Result<(), RuntimeError> {
        self.runtime.check_context(stream.context(), "the stream")?;
        let kernel = self.runtime.kernel(config)?;
        let shape = (m, self.weight.n(), self.weight.k());
        let mut changed = self.ensure_workspace(stream, &kernel, shape)?;
        if config.packing && self.col_infos.get(config.k_s, config.n_s).is_none() {
            self.col_infos
                .prepare(stream, self.weight.weight(), (config.k_s, config.n_s))?;
            changed = true;
        }
        if changed {
            stream
                .synchronize()
                .map_err(driver_err("preparing the layer's buffers"))?;
        }
        Ok(())
    }

    /// The kernel must be compiled for this layer's layout of A.
    fn check_layout(&self, config: &KernelConfig) -> Result<(), RuntimeError> {
        if config.a_layout() == self.layout {
            return Ok(());
        }
        Err(RuntimeError::LayoutMismatch {
            kernel: config.name(),
            kernel_layout: config.a_layout(),
            layout: self.layout,
        })
    }

    /// Same context everywhere, and A and C large enough for m rows.
    fn check_operands(
        &self,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<f32>,
        c: &CudaSlice<f32>,
        m: usize,
    ) -> Result<(), RuntimeError> {
        self.runtime.check_context(stream.context(), "the stream")?;
        self.runtime.check_context(a.context(), "matrix A")?;
        self.runtime.check_context(c.context(), "matrix C")?;
        let problem = self.problem(m)?;
        let too_small = |what, got, need| RuntimeError::BufferTooSmall {
            what,
            got,
            need,
            shape: problem.to_string(),
        };
        let a_what = match self.layout {
            ALayout::RowMajor => "matrix A (m×k, row-major)",
            ALayout::ColMajor => "matrix A (m×k, column-major)",
        };
        if a.len() < m * problem.k {
            return Err(too_small(a_what, a.len(), m * problem.k));
        }
        if c.len() < m * problem.n {
            return Err(too_small("matrix C (m×n)", c.len(), m * problem.n));
        }
        Ok(())
    }

    /// Grow the workspace until `kernel` fits on `shape`; whether it grew.
    fn ensure_workspace(
        &mut self,
        stream: &Arc<CudaStream>,
        kernel: &LoadedKernel,
        shape: (usize, usize, usize),
    ) -> Result<bool, RuntimeError> {
        if self.workspace.fits(kernel, shape) {
            return Ok(false);
        }
        // Launches on other streams may still use the old buffers: let them finish first.
        self.runtime
            .ctx
            .synchronize()
            .map_err(driver_err("waiting before growing the workspace"))?;
        Ok(self.workspace.grow_for(stream, kernel, shape)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shareable<T: Send + Sync>() {}

    #[test]
    fn runtime_and_layers_can_move_between_threads() {
        shareable::<Runtime>();
        shareable::<Arc<Runtime>>();
        shareable::<SparseLinear>();
    }
}
