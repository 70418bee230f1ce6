//! Errors of the runtime: each one line, saying what to fix.

use crate::codegen::CodegenError;
use crate::db::DbError;
use crate::format::FormatError;
use crate::gpu::GpuError;
use crate::kernels::OperandError;
use crate::problem::{ALayout, ProblemError};
use thiserror::Error;

/// Why a lookup, a weight preparation or a launch failed.
#[derive(Debug, Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(transparent)]
    Problem(#[from] ProblemError),
    #[error(transparent)]
    Format(#[from] FormatError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Codegen(#[from] CodegenError),
    #[error("{} does not exist", path.display())]
    MissingDatabase { path: std::path::PathBuf },
    #[error("no tuning database given: name at least one")]
    NoDatabase,
    #[error("unknown GPU '{name}': no built-in profile has that name and {databases} stores none")]
    UnknownGpu {
        name: String,
        /// The databases read, as the message names them.
        databases: String,
    },
    #[error("no kernel of the template family can run {problem}: {reason}")]
    Unsupported { problem: String, reason: String },
    #[error("{what} holds {got} floats, fewer than the {need} that {shape} needs")]
    BufferTooSmall {
        what: &'static str,
        got: usize,
        need: usize,
        shape: String,
    },
    #[error("kernel {kernel} takes {kernel_layout}-major A, but the layer takes {layout}-major A (nmtune never transposes A on the way)")]
    LayoutMismatch {
        kernel: String,
        kernel_layout: ALayout,
        layout: ALayout,
    },
    #[error("{what}'s device address {address:#x} is not a multiple of {alignment} bytes (the kernels move A and C {alignment} bytes at a time): pass a tensor whose storage starts aligned")]
    Misaligned {
        what: &'static str,
        address: u64,
        alignment: u64,
    },
    #[error("{what} belongs to another CUDA context than the one the runtime was created for")]
    WrongContext { what: &'static str },
    #[error("the lookup table is for GPU '{table}', but the device is '{device}' ({full_name}); open the table with --gpu {device}")]
    GpuMismatch {
        table: String,
        device: String,
        full_name: String,
    },
}

impl From<OperandError> for RuntimeError {
    fn from(err: OperandError) -> Self {
        match err {
            OperandError::Gpu(e) => Self::Gpu(e),
            OperandError::Format(e) => Self::Format(e),
        }
    }
}
