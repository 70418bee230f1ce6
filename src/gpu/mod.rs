//! The GPU itself: a device context, its stream, allocations, cuBLAS and the driver's
//! errors. What nmtune knows about a GPU model without one (limits and roofline ceilings)
//! is [`crate::gpu_profile`], re-exported here.

pub use crate::gpu_profile::{GpuProfile, BUILTIN_PROFILES};

pub mod device;
pub use device::{Gpu, GpuError};
