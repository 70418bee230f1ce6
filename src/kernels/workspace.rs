//! A launch's scratch memory on the device: the floats (the column-major copy of A of the
//! `Transposed` paths, split-K partial sums, a stream-K schedule's partial tiles) and the
//! stream-K schedule's arrival counters.
//!
//! The counters are the one piece of device state that outlives a launch: a stream-K kernel
//! counts the two workers of each split tile as they finish, and the second adds their
//! partial sums up (`templates/nm_spmm_sk.cu.tera`). A launch finds them zero and leaves them
//! zero, so they are allocated zeroed here and nothing else ever writes them; kernels of any
//! configuration, m and family may then share one `Workspace`, one launch after another.

use super::LoadedKernel;
use crate::gpu::device::driver_err;
use crate::gpu::GpuError;
use cudarc::driver::{CudaSlice, CudaStream};
use std::sync::Arc;

/// The scratch buffers of launches on one stream (or on streams ordered by the caller).
pub struct Workspace {
    pub(super) floats: CudaSlice<f32>,
    pub(super) counters: CudaSlice<u32>,
}

impl Workspace {
    /// Room for at least `floats` floats and `counters` counters (zero), on `stream`.
    pub fn new(stream: &Arc<CudaStream>, floats: usize, counters: usize) -> Result<Self, GpuError> {
        Ok(Self {
            floats: alloc_floats(stream, floats)?,
            counters: alloc_counters(stream, counters)?,
        })
    }

    /// Room for launching `kernel` on an (m, n, k) problem.
    pub fn for_launch(
        stream: &Arc<CudaStream>,
        kernel: &LoadedKernel,
        (m, n, k): (usize, usize, usize),
    ) -> Result<Self, GpuError> {
        Self::new(
            stream,
            kernel.workspace_len(m, n, k),
            kernel.counters_len(m, n),
        )
    }

    /// Whether a launch of `kernel` on (m, n, k) fits.
    pub fn fits(&self, kernel: &LoadedKernel, (m, n, k): (usize, usize, usize)) -> bool {
        self.floats.len() >= kernel.workspace_len(m, n, k)
            && self.counters.len() >= kernel.counters_len(m, n)
    }

    /// Grow each buffer that is too small for `kernel` on (m, n, k); whether anything grew.
    /// The caller makes sure that no launch still uses the old buffers.
    pub fn grow_for(
        &mut self,
        stream: &Arc<CudaStream>,
        kernel: &LoadedKernel,
        (m, n, k): (usize, usize, usize),
    ) -> Result<bool, GpuError> {
        self.grow(
            stream,
            kernel.workspace_len(m, n, k),
            kernel.counters_len(m, n),
        )
    }

    /// Grow each buffer below `floats` floats or `counters` counters; whether anything grew.
    /// The caller makes sure that no launch still uses the old buffers.
    pub fn grow(
        &mut self,
        stream: &Arc<CudaStream>,
        floats: usize,
        counters: usize,
    ) -> Result<bool, GpuError> {
        let mut grew = false;
        if floats > self.floats.len() {
            self.floats = alloc_floats(stream, floats)?;
            grew = true;
        }
        if counters > self.counters.len() {
            self.counters = alloc_counters(stream, counters)?;
            grew = true;
        }
        Ok(grew)
    }
}

fn alloc_floats(stream: &Arc<CudaStream>, len: usize) -> Result<CudaSlice<f32>, GpuError> {
    // SAFETY: kernels write every float of the workspace they read (the transposed copy,
    // each slice's partial sums) before reading it.
    unsafe { stream.alloc::<f32>(len.max(1)) }.map_err(driver_err("allocating the workspace"))
}

fn alloc_counters(stream: &Arc<CudaStream>, len: usize) -> Result<CudaSlice<u32>, GpuError> {
    stream
        .alloc_zeros::<u32>(len.max(1))
        .map_err(driver_err("allocating the split-K counters"))
}
