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
pub use restore::{pruned_names, read_pruned, restore_file, PrunedWeight};
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

/// A float tensor (F32, F16 or BF16) of the safetensors file at `path`, widened to f32
/// (exactly): its shape and its values, row-major. Only that tensor is read from the
/// memory-mapped file; for a bias beside a pruned weight, say.
pub fn read_float_tensor(
    path: &std::path::Path,
    name: &str,
) -> Result<(Vec<usize>, Vec<f32>), CheckpointError> {
    let mapped = files::Mapped::open(path)?;
    let tensors = mapped.tensors()?;
    let view = tensors
        .tensor(name)
        .map_err(|_| CheckpointError::NoSuchTensor {
            path: path.to_path_buf(),
            name: name.to_string(),
        })?;
    let ty = float::FloatType::of(view.dtype()).ok_or_else(|| CheckpointError::NotFloatTensor {
        name: name.to_string(),
        dtype: view.dtype().to_string(),
    })?;
    Ok((view.shape().to_vec(), ty.widen(view.data())))
}
