//! Checkpoints: safetensors files of PyTorch weights pruned to the N:M vector-wise format and
//! back, and the shapes file of their linear layers (docs/design.md "Checkpoints").
//!
//! A PyTorch linear layer computes `y = x·Wᵀ` and stores W as [out, in] = [n, k]. nmtune's
//! dense weight B is k×n (k inputs, n outputs), so **B = Wᵀ**: a checkpoint's W is transposed
//! on the way in ([`prune_file`]) and back on the way out ([`restore_file`]).
//!
//! Submodules: `layout` (the tensor names and metadata keys of a pruned checkpoint: their one
//! home), `select` (which tensors are linear weights), `float` (F32, F16 and BF16 to f32 and
//! back), `files` (the memory-mapped input, the atomically written output), `prune`, `restore`
//! and `shapes` (the three operations).

mod error;
mod files;
mod float;
mod layout;
mod prune;
mod restore;
mod select;
mod shapes;

pub use error::CheckpointError;
pub use files::check_not_input;
pub use layout::{
    indices_name, values_name, weight_key, weight_of_key, WeightInfo, FORMAT_KEY, FORMAT_VERSION,
    KEY_PREFIX,
};
pub use prune::{prune_file, Outcome, PruneOptions, PruneReport};
pub use restore::restore_file;
pub use select::Selection;
pub use shapes::{linear_shapes, shapes_yaml, LinearShape, ShapesRequest};

/// Write `text` to `path` atomically (a staging file renamed into place): the shapes file.
pub fn write_text(path: &std::path::Path, text: &str) -> Result<(), CheckpointError> {
    files::write_atomically(path, |staging| {
        std::fs::write(staging, text).map_err(|e| CheckpointError::Write {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    })
}
