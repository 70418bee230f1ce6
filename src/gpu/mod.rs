//! What the rest of nmtune needs to know about a GPU: its resource limits and roofline
//! ceilings ([`GpuProfile`]), from a built-in table for named GPUs or read off the device.

mod profile;

pub use profile::{GpuProfile, BUILTIN_PROFILES};

pub mod device;
pub use device::{Gpu, GpuError};
