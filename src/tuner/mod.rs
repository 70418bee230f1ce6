//! tuner: searches the configuration space and measures candidates on the GPU.
//!
//! Kept apart as in TVM MetaSchedule: [`search`] proposes candidates; one loop
//! ([`tune_with_runner`]) skips what a killed run already stored, hands the rest to a
//! [`runner::Runner`] and stores every result as it arrives, so an interrupted run resumes
//! where it stopped. The GPU runner ([`gpu_runner`]) compiles each distinct kernel once with
//! the builder ([`build`], in parallel, cached on disk) and verifies and times it beside
//! cuBLAS ([`measure`]); after a template change the warm strategy ([`warm`]) times again
//! what won before instead of searching; the model runner ([`model_runner`]) predicts instead, without a GPU;
//! the replay runner ([`replay`]) hands back the rows of a measurements file; the tests drive
//! the same loop with a deterministic fake runner. `nmtune bench` runs the
//! same loop ([`run_plans`]) with a [`Recorder`] that prints instead of storing.

pub mod build;
pub mod evaluate;
pub mod gpu_runner;
pub mod measure;
pub mod model_runner;
pub mod progress;
pub mod replay;
mod run;
pub mod runner;
pub mod search;
pub mod tc_workload;
pub mod warm;
pub mod workload;

pub use run::{
    check_supported, run_plans, tune_on_gpu, tune_with_model, tune_with_runner, Benchmark,
    Recorder, TuneOptions, TuneSummary,
};
pub use search::Strategy;

use thiserror::Error;

/// Errors of the tuner layer.
#[derive(Debug, Error)]
pub enum TuneError {
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
    #[error(transparent)]
    Db(#[from] crate::db::DbError),
    #[error(transparent)]
    Operands(#[from] crate::kernels::OperandError),
    #[error(transparent)]
    Codegen(#[from] crate::codegen::CodegenError),
    #[error(transparent)]
    Replay(#[from] crate::replay::ReplayError),
    #[error("GPU mismatch: --gpu {asked} but the device is {found} ({full_name}); pass --gpu {found}, --gpu auto, or --force")]
    GpuMismatch {
        asked: String,
        found: String,
        full_name: String,
    },
    /// A recorder other than the database could not keep a result (`nmtune bench`'s CSV).
    #[error("{0}")]
    Recorder(String),
    #[error("no kernel configuration can run {count} of the problems asked for, such as {first}; nothing was tuned or stored: remove them from the shapes file")]
    Unsupported { count: usize, first: String },
    #[error("{kernel} broke the GPU context on {problem} ({detail}): recorded as launch_failed; everything measured so far is stored, and a fresh process resumes the run")]
    ContextLost {
        kernel: String,
        problem: String,
        detail: String,
    },
    #[error("{kernel} was still running on {problem} after the time limit of {limit_s} s: recorded as launch_failed; this process cannot stop it, so a fresh one must resume the run")]
    KernelTimedOut {
        kernel: String,
        problem: String,
        limit_s: f64,
    },
}

impl TuneError {
    /// Whether a fresh process can resume the run: the failing kernel is recorded (so it is
    /// not launched again) and only this process's GPU context is beyond repair.
    pub fn is_restartable(&self) -> bool {
        matches!(
            self,
            TuneError::ContextLost { .. } | TuneError::KernelTimedOut { .. }
        )
    }
}
