//! Why a checkpoint cannot be pruned, restored or listed. Every message is one line that
//! names the file or tensor at fault.

use crate::format::FormatError;
use crate::problem::ProblemError;
use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum CheckpointError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a safetensors file: {reason}", path.display())]
    NotSafetensors { path: PathBuf, reason: String },
    #[error("cannot write {}: {reason}", path.display())]
    Write { path: PathBuf, reason: String },
    #[error("the output {} is the input file: write to another file", path.display())]
    OutputIsInput { path: PathBuf },
    #[error("layer selection '{pattern}' is not a valid regular expression: {reason}")]
    BadSelection { pattern: String, reason: String },
    #[error("{} has no tensor that {rule} selects", path.display())]
    NothingSelected { path: PathBuf, rule: String },
    #[error("tensor '{name}' has shape {shape:?}: only 2-D [out, in] weights can be pruned (narrow the layer selection)")]
    NotTwoDimensional { name: String, shape: Vec<usize> },
    #[error("tensor '{name}' is {dtype}: only F32, F16 and BF16 weights can be pruned (narrow the layer selection)")]
    NotFloat { name: String, dtype: String },
    #[error("tensor '{name}': {source}")]
    Shape { name: String, source: FormatError },
    #[error("tensor '{name}' cannot be run by the kernels: {source}")]
    Kernels { name: String, source: ProblemError },
    #[error("tensor '{name}' is in the input, where a pruned weight's part would go: rename it or narrow the layer selection")]
    NameClash { name: String },
    #[error("{} is already a pruned checkpoint (metadata '{key}'): prune the original, or restore it first with --decompress", path.display())]
    AlreadyPruned { path: PathBuf, key: &'static str },
    #[error("{} is not a pruned checkpoint: its metadata has no '{key}'", path.display())]
    NotPruned { path: PathBuf, key: &'static str },
    #[error("{} has no tensor '{name}'", path.display())]
    NoSuchTensor { path: PathBuf, name: String },
    #[error("tensor '{name}' is {dtype}, not F32, F16 or BF16")]
    NotFloatTensor { name: String, dtype: String },
    #[error("{} holds no pruned weight '{name}' (it holds {known})", path.display())]
    NoSuchWeight {
        path: PathBuf,
        name: String,
        known: String,
    },
    #[error("{}: weight '{name}': {detail}", path.display())]
    BadMetadata {
        path: PathBuf,
        name: String,
        detail: String,
    },
}
