//! `nmtune prune --decompress`: a pruned checkpoint back to dense PyTorch weights, so that a
//! user can check what pruning kept (and run the pruned model with any dense code).
//!
//! Each weight's B' and D become the dense [n, k] weight with zeros where rows were pruned
//! (`format::decompress_nk`), in B''s type, under the weight's original name; nmtune's
//! metadata keys are dropped; every other tensor and metadata entry is copied unchanged. Like
//! pruning, it maps the input and expands one weight at a time.

use super::files::{check_not_input, sorted, write_atomically, Mapped};
use super::float::FloatType;
use super::layout::{
    indices_name, values_name, weight_key, weight_of_key, WeightInfo, FORMAT_KEY, FORMAT_VERSION,
    KEY_PREFIX,
};
use super::CheckpointError;
use crate::format::{self, CompressedWeight, Padding};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors, View};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Restore the pruned checkpoint `input` into `output` (a new file, written atomically).
/// Returns the names of the restored weights, in name order.
pub fn restore_file(input: &Path, output: &Path) -> Result<Vec<String>, CheckpointError> {
    check_not_input(input, output)?;
    let mapped = Mapped::open(input)?;
    let metadata = mapped.metadata()?;
    check_format(input, &metadata)?;
    let tensors = mapped.tensors()?;
    let weights = pruned_weights(input, &metadata, &tensors)?;
    let restored: Vec<String> = weights.iter().map(|w| w.name.clone()).collect();
    let error = Rc::new(RefCell::new(None));
    let entries = output_tensors(&tensors, weights, &error);
    let kept: HashMap<String, String> = metadata
        .into_iter()
        .filter(|(key, _)| !key.starts_with(KEY_PREFIX))
        .collect();
    write_atomically(output, |staging| {
        safetensors::serialize_to_file(entries, Some(kept), staging).map_err(|e| {
            CheckpointError::Write {
                path: output.to_path_buf(),
                reason: e.to_string(),
            }
        })?;
        error.borrow_mut().take().map_or(Ok(()), Err)
    })?;
    Ok(restored)
}

fn check_format(path: &Path, metadata: &HashMap<String, String>) -> Result<(), CheckpointError> {
    match metadata.get(FORMAT_KEY) {
        None => Err(CheckpointError::NotPruned {
            path: path.to_path_buf(),
            key: FORMAT_KEY,
        }),
        Some(version) if version != FORMAT_VERSION => Err(CheckpointError::BadMetadata {
            path: path.to_path_buf(),
            name: FORMAT_KEY.to_string(),
            detail: format!("format '{version}', this build reads '{FORMAT_VERSION}'"),
        }),
        Some(_) => Ok(()),
    }
}

/// One weight to restore: its metadata and its two parts, checked against each other.
struct Pruned<'data> {
    /// The checkpoint it comes from, for errors.
    path: PathBuf,
    name: String,
    info: WeightInfo,
    values: TensorView<'data>,
    ty: FloatType,
    indices: TensorView<'data>,
    shape: [usize; 2],
}

/// Every weight the metadata names, with its parts checked.
fn pruned_weights<'data>(
    path: &Path,
    metadata: &HashMap<String, String>,
    tensors: &SafeTensors<'data>,
) -> Result<Vec<Pruned<'data>>, CheckpointError> {
    let mut weights = Vec::new();
    for (key, value) in metadata {
        if let Some(name) = weight_of_key(key) {
            weights.push(pruned_weight(path, name, value, tensors)?);
        }
    }
    weights.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(weights)
}

/// Weight `name`, whose metadata entry is `value`, with its two parts checked against it.
fn pruned_weight<'data>(
    path: &Path,
    name: &str,
    value: &str,
    tensors: &SafeTensors<'data>,
) -> Result<Pruned<'data>, CheckpointError> {
    let bad = |detail: String| CheckpointError::BadMetadata {
        path: path.to_path_buf(),
        name: name.to_string(),
        detail,
    };
    let info: WeightInfo = serde_json::from_str(value).map_err(|e| bad(e.to_string()))?;
    let part = |part: String, dtype_ok: &dyn Fn(Dtype) -> bool, shape: [usize; 2]| {
        let view = tensors
            .tensor(&part)
            .map_err(|_| bad(format!("tensor '{part}' is missing")))?;
        if !dtype_ok(view.dtype()) || view.shape() != shape {
            return Err(bad(format!(
                "tensor '{part}' is {} {:?}, expected {shape:?}",
                view.dtype(),
                view.shape()
            )));
        }
        Ok(view)
    };
    if tensors.tensor(name).is_ok() {
        return Err(bad(
            "a tensor of that name is in the file beside its parts".into()
        ));
    }
    let (w, q) = parts_shape(&info).map_err(bad)?;
    let n_p = info.padded_shape[0];
    let values = part(values_name(name), &|d| FloatType::of(d).is_some(), [w, n_p])?;
    let indices = part(indices_name(name), &|d| d == Dtype::U8, [w, q])?;
    Ok(Pruned {
        path: path.to_path_buf(),
        name: name.to_string(),
        ty: FloatType::of(values.dtype()).unwrap_or(FloatType::F32),
        shape: info.shape,
        info,
        values,
        indices,
    })
}

/// [w, q] of a weight's B' rows and D columns, from its metadata.
fn parts_shape(info: &WeightInfo) -> Result<(usize, usize), String> {
    let nm = info.pattern().map_err(|e| e.to_string())?;
    let [n_p, k_p] = info.padded_shape;
    if info.l == 0 || k_p % nm.m as usize != 0 || n_p % info.l != 0 {
        return Err(format!(
            "padded shape {:?} does not fit {} with L={}",
            info.padded_shape, info.nm, info.l
        ));
    }
    Ok((k_p / nm.m as usize * nm.n as usize, n_p / info.l))
}

/// The output's tensors: each weight restored under its name, every other tensor copied
/// (the parts of restored weights are consumed).
fn output_tensors<'data>(
    tensors: &SafeTensors<'data>,
    weights: Vec<Pruned<'data>>,
    error: &Rc<RefCell<Option<CheckpointError>>>,
) -> Vec<(String, Entry<'data>)> {
    let parts: HashSet<String> = weights
        .iter()
        .flat_map(|w| [values_name(&w.name), indices_name(&w.name)])
        .collect();
    let mut entries: Vec<(String, Entry<'data>)> = sorted(tensors)
        .into_iter()
        .filter(|(name, _)| !parts.contains(name))
        .map(|(name, view)| (name, Entry::Copy(view)))
        .collect();
    for weight in weights {
        let name = weight.name.clone();
        entries.push((name, Entry::Dense(weight, error.clone())));
    }
    entries
}

impl Pruned<'_> {
    /// The compressed weight, B' widened to f32 (exact) and checked with D.
    fn compressed(&self) -> Result<CompressedWeight, CheckpointError> {
        let nm = self.info.pattern().map_err(|e| self.bad(e.into()))?;
        let [n_p, k_p] = self.info.padded_shape;
        CompressedWeight::from_parts(
            k_p,
            n_p,
            nm,
            self.info.l,
            self.ty.widen(self.values.data()),
            self.indices.data().to_vec(),
        )
        .map_err(|e| self.bad(e))
    }

    /// The dense [n, k] weight in B''s type.
    fn dense_bytes(&self) -> Result<Vec<u8>, CheckpointError> {
        let weight = self.compressed()?;
        let dense =
            format::decompress_nk(&weight, &self.info.padding()).map_err(|e| self.bad(e))?;
        Ok(self.ty.narrow(&dense))
    }

    fn bad(&self, e: format::FormatError) -> CheckpointError {
        CheckpointError::BadMetadata {
            path: self.path.clone(),
            name: self.name.clone(),
            detail: e.to_string(),
        }
    }
}

/// One weight of a pruned checkpoint, read back as `nmtune prune` wrote it: its metadata
/// and its compressed form, ready for the runtime (`PreparedWeight::from_compressed_padded`).
#[derive(Debug, Clone, PartialEq)]
pub struct PrunedWeight {
    pub name: String,
    pub info: WeightInfo,
    /// B' widened to f32 (exactly: pruning never computes new values) and D.
    pub weight: CompressedWeight,
}

impl PrunedWeight {
    /// How the weight was padded: its original [n, k] and the compressed weight's.
    pub fn padding(&self) -> Padding {
        self.info.padding()
    }
}

/// The names of the weights a pruned checkpoint holds, in name order.
pub fn pruned_names(path: &Path) -> Result<Vec<String>, CheckpointError> {
    let mapped = Mapped::open(path)?;
    let metadata = mapped.metadata()?;
    check_format(path, &metadata)?;
    let mut names: Vec<String> = metadata
        .keys()
        .filter_map(|key| weight_of_key(key))
        .map(str::to_string)
        .collect();
    names.sort();
    Ok(names)
}

/// Weight `name` of the pruned checkpoint at `path` (an output of `nmtune prune`), checked as
/// restoring checks it. Only this weight's parts are read from the memory-mapped file.
pub fn read_pruned(path: &Path, name: &str) -> Result<PrunedWeight, CheckpointError> {
    let mapped = Mapped::open(path)?;
    let metadata = mapped.metadata()?;
    check_format(path, &metadata)?;
    let Some(value) = metadata.get(&weight_key(name)) else {
        let mut known: Vec<&str> = metadata.keys().filter_map(|k| weight_of_key(k)).collect();
        known.sort_unstable();
        return Err(CheckpointError::NoSuchWeight {
            path: path.to_path_buf(),
            name: name.to_string(),
            known: name_list(&known),
        });
    };
    let tensors = mapped.tensors()?;
    let pruned = pruned_weight(path, name, value, &tensors)?;
    Ok(PrunedWeight {
        name: name.to_string(),
        weight: pruned.compressed()?,
        info: pruned.info,
    })
}

/// At most five names, then how many more.
fn name_list(names: &[&str]) -> String {
    const SHOWN: usize = 5;
    if names.is_empty() {
        return "none".to_string();
    }
    let mut text = names
        .iter()
        .take(SHOWN)
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

/// One tensor of the output, as the crate's writer sees it.
enum Entry<'data> {
    Copy(TensorView<'data>),
    Dense(Pruned<'data>, Rc<RefCell<Option<CheckpointError>>>),
}

impl View for Entry<'_> {
    fn dtype(&self) -> Dtype {
        match self {
            Entry::Copy(view) => view.dtype(),
            Entry::Dense(weight, _) => weight.ty.dtype(),
        }
    }

    fn shape(&self) -> &[usize] {
        match self {
            Entry::Copy(view) => view.shape(),
            Entry::Dense(weight, _) => &weight.shape,
        }
    }

    fn data(&self) -> Cow<'_, [u8]> {
        match self {
            Entry::Copy(view) => Cow::Borrowed(view.data()),
            Entry::Dense(weight, error) => {
                if error.borrow().is_some() {
                    return Cow::Owned(Vec::new());
                }
                match weight.dense_bytes() {
                    Ok(bytes) => Cow::Owned(bytes),
                    Err(e) => {
                        *error.borrow_mut() = Some(e);
                        Cow::Owned(Vec::new())
                    }
                }
            }
        }
    }

    fn data_len(&self) -> usize {
        match self {
            Entry::Copy(view) => view.data().len(),
            Entry::Dense(weight, _) => weight.shape[0] * weight.shape[1] * weight.ty.size(),
        }
    }
}
