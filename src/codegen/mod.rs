//! codegen: configurations, their validation, rendering to CUDA and compilation with NVRTC.
//!
//! # Kernel ABI (the contract with `tuner` and `runtime`)
//!
//! Each rendered module defines, for configuration `cfg`, the entry points named after
//! `<name>` = `render::compile_key(cfg).name()` (split_k is a run-time value, `gridDim.z`, so
//! configurations that differ only in split_k share one module and their symbols carry
//! `_sk1`; the tensor-core family compiles its split in, `codegen::tc`): `<name>` and `<name>_reduce`, and for a stream-K configuration also
//! `<name>_stream`, the kernel its launches start ([`render::KernelSource::name`]):
//!
//! ```text
//! extern "C" __global__ void <name>(
//!     const float* A,          // m×k row-major
//!     const float* B,          // B', w×n row-major
//!     const int*   D,          // w×q: raw window positions (non-packing) or
//!                              //      ColInfo::packed_indices (packing)
//!     const int*   col_info,   // ColInfo::columns for (k_s, n_s) (packing; else unused, may be null)
//!     const int*   col_count,  // ColInfo::counts (packing; else unused, may be null)
//!     float*       C,          // m×n row-major
//!     float*       workspace,  // split_k > 1: split_k×m×n floats of partial sums; else unused
//!     int m, int n, int k, float alpha, float beta)
//! grid  = (ceil(n / n_s), ceil(m / m_s), split_k), block = (threads, 1, 1),
//! dynamic shared memory = cfg.smem_bytes() (opt in above 48 KiB).
//!
//! extern "C" __global__ void <name>_reduce(   // launched only when split_k > 1
//!     const float* workspace, float* C, int m, int n, int split_k, float alpha, float beta)
//! grid = (ceil(m·n / 4 / 256), 1, 1), block = (256, 1, 1), no shared memory.
//!
//! extern "C" __global__ void <name>_stream(   // stream-K (tiled family, split_k = 1)
//!     const float* A, const float* B, const int* D, const int* col_info,
//!     const int* col_count, float* C,
//!     float*       workspace,  // 2·P·m_s·n_s floats: each worker's two partial tiles
//!     unsigned*    counters,   // one per tile, zero before the launch and after it
//!     int m, int n, int k,
//!     int sk_tiles,            // the last sk_tiles tiles are shared out among the P workers
//!     float alpha, float beta)
//! grid = (P, 1, 1) for P workers, block and dynamic shared memory as `<name>`; launched after
//! `<name>` over the first T/n_tiles − sk_tiles/n_tiles rows of tiles
//! (kernels::loaded::stream_split).
//! ```
//!
//! Kernels that transpose A first (`atrans`, `ewtrans`) take the workspace's column-major
//! copy of A as their `A` (columns `transposed_lda(m)` floats apart), made by
//! `<name>_transpose(const float* A, float* At, int m, int k)`, grid = (ceil(k/32),
//! ceil(m/32), 1), block = (32, 8, 1); the partial sums follow the copy in the workspace.
//!
//! The element-wise families (L = 1, [`Family::Ew`] and [`Family::EwDecode`]) read D as bytes
//! and have no col_info:
//!
//! ```text
//! extern "C" __global__ void <name>(
//!     const float* A, const float* B,
//!     const unsigned char* D,  // w×n u8: window position of kept row u of column j
//!     float* C, float* workspace, int m, int n, int k, float alpha, float beta)
//! ```
//!
//! `beta == 0` never reads C (it may hold NaN), as in BLAS.

mod config;
mod config_fields;
pub mod enumerate;
pub mod nvrtc;
pub mod render;
pub mod tc;
pub mod validate;

pub use config::{ACopy, EwShape, Family, KernelConfig, WarpLayout};
pub use config_fields::ConfigFields;
pub use enumerate::{compile_set, search_space};
pub use nvrtc::{compile, compile_cached, nvrtc_available, nvrtc_version, CompiledKernel};
pub use render::{
    compile_arch, compile_key, family_checksum, kernel_checksum, render, templates_checksum,
    KernelSource,
};
pub use tc::{render_tc, TcConfig};
pub use validate::{estimated_registers, validate, validate_for_problem};

use thiserror::Error;

/// Errors of the codegen layer.
#[derive(Debug, Error)]
pub enum CodegenError {
    #[error("configuration {name} rejected: {reason}")]
    Rejected { name: String, reason: String },
    #[error("template error: {0}")]
    Template(String),
    #[error("NVRTC library not found: {0}")]
    NvrtcMissing(String),
    #[error("kernel {name} failed to compile for {arch}: {log}")]
    Compile {
        name: String,
        arch: String,
        log: String,
    },
}
