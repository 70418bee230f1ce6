//! nmtune: an autotuning code generator for N:M-sparse matrix multiplication on NVIDIA GPUs.
//!
//! Data flows one way through the modules:
//! shapes ([`shapes`]) → candidate configurations ([`codegen::enumerate`]) → rendered CUDA
//! ([`codegen::render`]) → compiled module ([`codegen::nvrtc`]) → timing ([`tuner`]) →
//! database ([`db`]) → lookup and launch ([`runtime`]).
//!
//! The N:M vector-wise sparse format lives in [`format`], the CPU reference in [`reference`];
//! every other layer shares them. [`checkpoint`] prunes safetensors checkpoints into that
//! format and lists their shapes for tuning. The tuner and the runtime both stand on the kernel library
//! ([`kernels`]: Table I and the default configuration, a loaded kernel and its launch) and
//! the performance model ([`model`]); neither uses the other. `tests/layers.rs` keeps every
//! module's imports pointing down.

pub mod checkpoint;
pub mod codegen;
pub mod db;
pub mod format;
pub mod gpu;
pub mod gpu_profile;
pub mod kernels;
pub mod model;
pub mod plot;
pub mod problem;
pub mod reference;
pub mod replay;
pub mod runtime;
pub mod shapes;
pub mod summary;
pub mod tuner;

/// Version of this tool, recorded beside every measurement.
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");
