//! A BF16 or FP16 weight on the device for the tensor-core family ([`TcLinear`]): the
//! 16-bit counterpart of [`super::SparseLinear`].

use super::{Choice, PreparedWeight, Runtime, RuntimeError};
use crate::format::tc::TcWeight;
use crate::gpu::device::{driver_err, upload_on};
use crate::kernels::tc::{TcKernel, TcOperands, TcScratch};
use crate::problem::{ALayout, Dtype, Problem};
use cudarc::driver::{CudaSlice, CudaStream};
use std::collections::HashMap;
use std::sync::Arc;

/// A prepared weight in BF16 or FP16 on the device: `C = A ⊗ (B', D)` for any m the
/// tensor-core family can run, with the kernel the [`super::Lookup`] picks for that m.
///
/// A (m×k in the layout the layer was made for: row-major, element (i, j) at `i·k + j`, as
/// PyTorch holds activations, or column-major, at `j·m + i`) and C (m×n, row-major) are the
/// caller's buffers of 16-bit elements of the layer's type (as `u16` bits), on the caller's
/// stream; the products sum in FP32 and C is rounded to the type once. For row-major A the
/// kernel's first pass writes A column-major into the layer's workspace (grown on first need). B' is rounded to the
/// type when the layer is made. The kernels write C whole (no alpha, no beta). Their tiles
/// ask m to be a multiple of 64 (128 or 256), n of 128 and k·N/M of 32: a shape off that grid is
/// an error naming the rule, never a silent fallback.
///
/// The weight's image for the kernel's stage depth (`format::tc::TcWeight`) is built and
/// uploaded on the first launch that needs it, on that launch's stream; issue the launches of
/// one `TcLinear` on one stream, or order the streams yourself.
pub struct TcLinear {
    runtime: Arc<Runtime>,
    weight: PreparedWeight,
    dtype: Dtype,
    layout: ALayout,
    /// Per kept rows a stage: the image of B' and the kept-row table.
    images: HashMap<usize, (CudaSlice<u16>, CudaSlice<u16>)>,
    /// Row-major A's column-major copy and stream-K kernels' partial sums and counters.
    scratch: TcScratch,
}

impl TcLinear {
    /// A layer of `weight` in `dtype` (bf16 or f16) taking A in `layout`. Nothing is
    /// uploaded yet.
    pub fn new(
        runtime: Arc<Runtime>,
        weight: PreparedWeight,
        dtype: Dtype,
        layout: ALayout,
    ) -> Result<Self, RuntimeError> {
        if dtype == Dtype::F32 {
            return Err(RuntimeError::Unsupported {
                problem: weight.problem(1)?.with_dtype(dtype).to_string(),
                reason: "TcLinear is for bf16 and f16 (SparseLinear takes f32)".into(),
            });
        }
        Ok(Self {
            runtime,
            weight,
            dtype,
            layout,
            images: HashMap::new(),
            scratch: TcScratch::default(),
        })
    }

    pub fn weight(&self) -> &PreparedWeight {
        &self.weight
    }

    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The layout of A this layer takes.
    pub fn layout(&self) -> ALayout {
        self.layout
    }

    /// The problem of `m` rows of A times the weight, in the layer's type and layout.
    pub fn problem(&self, m: usize) -> Result<Problem, RuntimeError> {
        let problem = self.weight.problem(m)?.with_layout(self.layout)?;
        Ok(problem.with_dtype(self.dtype))
    }

    /// The kernel [`TcLinear::forward`] would launch for `m` rows.
    pub fn choose(&self, m: usize) -> Result<Choice, RuntimeError> {
        self.runtime.lookup().lookup(&self.problem(m)?)
    }

    /// Enqueue `C = A ⊗ (B', D)` for `m` rows on `stream` with the kernel the lookup picks;
    /// returns that choice. Asynchronous, like any kernel launch.
    pub fn forward(
        &mut self,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<u16>,
        c: &mut CudaSlice<u16>,
        m: usize,
    ) -> Result<Choice, RuntimeError> {
        let choice = self.choose(m)?;
        let problem = self.problem(m)?;
        self.check_operands(stream, a, c, &problem)?;
        let kernel = self.runtime.tc_kernel(&choice.config)?;
        self.ensure_scratch(stream, &kernel, (m, problem.n, problem.k))?;
        self.prepare_image(stream, kernel.config.kept_rows)?;
        let (image, kept_k) = &self.images[&kernel.config.kept_rows];
        let ops = TcOperands {
            a,
            image,
            kept_k,
            c,
            scratch: &mut self.scratch,
            m,
            n: problem.n,
            k: problem.k,
            w: problem.w(),
        };
        kernel.launch_on(stream, ops)?;
        Ok(choice)
    }

    /// Prepare and upload (on `stream`, waited for) the image and kept-row table for stages
    /// of `kept_rows` unless they exist.
    fn prepare_image(
        &mut self,
        stream: &Arc<CudaStream>,
        kept_rows: usize,
    ) -> Result<(), RuntimeError> {
        if !self.images.contains_key(&kept_rows) {
            let tc = TcWeight::prepare(self.weight.weight(), self.dtype, kept_rows)?;
            let image = upload_on(stream, &tc.image)?;
            let kept_k = upload_on(stream, &tc.kept_k)?;
            stream
                .synchronize()
                .map_err(driver_err("uploading the weight's image"))?;
            self.images.insert(kept_rows, (image, kept_k));
        }
        Ok(())
    }

    /// Grow the scratch for `kernel` on `shape` (allocated on `stream`) unless it fits. An
    /// older, smaller buffer may still be in use by launches on other streams: the context
    /// finishes them first.
    fn ensure_scratch(
        &mut self,
        stream: &Arc<CudaStream>,
        kernel: &TcKernel,
        shape: (usize, usize, usize),
    ) -> Result<(), RuntimeError> {
        if self.scratch.fits(kernel, shape) {
            return Ok(());
        }
        stream
            .context()
            .synchronize()
            .map_err(driver_err("waiting before growing the workspace"))?;
        self.scratch.grow_for(stream, kernel, shape)?;
        Ok(())
    }

    /// Same context everywhere, and A and C large enough for the problem.
    fn check_operands(
        &self,
        stream: &Arc<CudaStream>,
        a: &CudaSlice<u16>,
        c: &CudaSlice<u16>,
        problem: &Problem,
    ) -> Result<(), RuntimeError> {
        self.runtime.check_context(stream.context(), "the stream")?;
        self.runtime.check_context(a.context(), "matrix A")?;
        self.runtime.check_context(c.context(), "matrix C")?;
        let too_small = |what, got, need| RuntimeError::BufferTooSmall {
            what,
            got,
            need,
            shape: problem.to_string(),
        };
        let (m, n, k) = (problem.m, problem.n, problem.k);
        if a.len() < m * k {
            let what = match self.layout {
                ALayout::RowMajor => "matrix A (m×k, row-major)",
                ALayout::ColMajor => "matrix A (m×k, column-major)",
            };
            return Err(too_small(what, a.len(), m * k));
        }
        if c.len() < m * n {
            return Err(too_small("matrix C (m×n)", c.len(), m * n));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shareable<T: Send + Sync>() {}

    #[test]
    fn tensor_core_layers_can_move_between_threads() {
        shareable::<TcLinear>();
    }
}
