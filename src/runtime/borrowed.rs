//! Launching on memory and streams that belong to another library (PyTorch, CuPy, …): A and C
//! as raw device addresses and the stream as a raw handle, borrowed for one call and never
//! freed, destroyed or copied.

use super::{Choice, RuntimeError, SparseLinear};
use cudarc::driver::{sys, CudaSlice, CudaStream};
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// Bytes every address of A and C must be a multiple of: the kernels move A and C 16 bytes
/// at a time.
pub const DEVICE_ALIGNMENT: u64 = 16;

/// A float matrix in another library's device memory: its address and how many floats the
/// allocation holds from there (at least the m×k or m×n the call needs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceMatrix {
    /// The device address of element 0 (`tensor.data_ptr()` in PyTorch).
    pub address: u64,
    /// Floats readable (A) or writable (C) from `address` on.
    pub len: usize,
}

/// A [`SparseLinear`] that takes A, C and the stream from another library. The layer's own
/// buffers (the weight, col_info, the split-K workspace) stay its own, allocated on its
/// context's default stream; the borrowed ones are wrapped for the length of one
/// [`BorrowedLinear::forward`] and released untouched.
pub struct BorrowedLinear {
    layer: SparseLinear,
}

impl BorrowedLinear {
    pub fn new(layer: SparseLinear) -> Self {
        Self { layer }
    }

    pub fn layer(&self) -> &SparseLinear {
        &self.layer
    }

    /// Enqueue `C = alpha·A ⊗ (B', D) + beta·C` for `m` rows on the borrowed `stream`, with
    /// the kernel the lookup picks (as [`SparseLinear::forward`]); returns that choice.
    /// Asynchronous: the caller's library orders it with its own work on that stream.
    ///
    /// # Safety
    /// `stream` must be a live stream of the runtime's context (the device's primary context,
    /// which PyTorch uses too), and `a` and `c` allocations of that context holding at least
    /// `len` floats each, which stay allocated until the work enqueued on `stream` has run;
    /// nothing else may write A or touch C meanwhile unless ordered on `stream`.
    pub unsafe fn forward(
        &mut self,
        stream: sys::CUstream,
        a: DeviceMatrix,
        c: DeviceMatrix,
        m: usize,
        alpha: f32,
        beta: f32,
    ) -> Result<Choice, RuntimeError> {
        check_aligned("matrix A", a.address)?;
        check_aligned("matrix C", c.address)?;
        let ctx = self.layer.runtime().context().clone();
        // The layer's own buffers (workspace, col_info) are made on the context's default
        // stream, which lives as long as the context, never on the borrowed one.
        let choice = self.layer.choose(m)?;
        self.layer
            .prepare_on(&ctx.default_stream(), &choice.config, m)?;
        // SAFETY: the caller vouches for the stream; the wrapper never destroys it.
        let stream = unsafe { ctx.wrap_borrowed_stream(stream) };
        // SAFETY: the caller vouches for both allocations; `Borrowed` never frees them.
        let a = unsafe { Borrowed::wrap(&stream, a) };
        let mut c = unsafe { Borrowed::wrap(&stream, c) };
        self.layer.forward(&stream, &a, &mut c, m, alpha, beta)
    }
}

fn check_aligned(what: &'static str, address: u64) -> Result<(), RuntimeError> {
    if address % DEVICE_ALIGNMENT == 0 {
        return Ok(());
    }
    Err(RuntimeError::Misaligned {
        what,
        address,
        alignment: DEVICE_ALIGNMENT,
    })
}

/// Another library's allocation seen as a `CudaSlice` for one call; dropping it gives the
/// address back (`CudaSlice::leak`) instead of freeing it, on every path out, errors included.
struct Borrowed(ManuallyDrop<CudaSlice<f32>>);

impl Borrowed {
    /// # Safety
    /// As [`BorrowedLinear::forward`]: `matrix` is a live allocation of `stream`'s context.
    unsafe fn wrap(stream: &Arc<CudaStream>, matrix: DeviceMatrix) -> Self {
        // SAFETY: forwarded from the caller; the slice is leaked, never freed, on drop.
        let slice = unsafe { stream.upgrade_device_ptr::<f32>(matrix.address, matrix.len) };
        Self(ManuallyDrop::new(slice))
    }
}

impl Drop for Borrowed {
    fn drop(&mut self) {
        // SAFETY: taken once, here, and never used again.
        let slice = unsafe { ManuallyDrop::take(&mut self.0) };
        // The address stays the other library's to free.
        let _address = slice.leak();
    }
}

impl Deref for Borrowed {
    type Target = CudaSlice<f32>;

    fn deref(&self) -> &CudaSlice<f32> {
        &self.0
    }
}

impl DerefMut for Borrowed {
    fn deref_mut(&mut self) -> &mut CudaSlice<f32> {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_must_be_16_byte_aligned() {
        assert!(check_aligned("matrix A", 0x7f00_0000_0010).is_ok());
        let err = check_aligned("matrix A", 0x7f00_0000_0004).unwrap_err();
        assert_eq!(
            err.to_string(),
            "matrix A's device address 0x7f0000000004 is not a multiple of 16 bytes (the kernels move A and C 16 bytes at a time): pass a tensor whose storage starts aligned"
        );
    }

    fn movable<T: Send>() {}

    #[test]
    fn a_borrowed_layer_can_move_between_threads() {
        movable::<BorrowedLinear>();
    }
}
