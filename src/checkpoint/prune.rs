//! `nmtune prune`: every selected weight of a checkpoint pruned to N:M and written as B' and D,
//! every other tensor copied byte for byte.
//!
//! Memory: the input is mapped, and the output is written by the safetensors crate tensor by
//! tensor, asking each tensor for its bytes only when it writes them. A pruned weight's bytes
//! are computed at that moment ([`Job`]): W transposed to f32 (one full-size copy of this one
//! weight), then B' and D; the crate writes B' and drops it before it asks for the next
//! tensor. So at most one weight is expanded at a time, never the model. D of each weight is
//! kept from its B' until the crate writes it: the crate orders tensors by type, all float
//! tensors before every U8 one, and D is small (w·q bytes, 1/(4·L) of B' in f32).

use super::files::{check_not_input, sorted, write_atomically, Mapped};
use super::float::FloatType;
use super::layout::{
    indices_name, values_name, weight_key, WeightInfo, FORMAT_KEY, FORMAT_VERSION,
};
use super::{CheckpointError, Selection};
use crate::format::{self, CompressedWeight, Padding};
use crate::problem::{NmPattern, Problem};
use safetensors::tensor::TensorView;
use safetensors::{Dtype, View};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

/// What to prune, and to which pattern.
#[derive(Debug, Clone)]
pub struct PruneOptions {
    pub nm: NmPattern,
    /// Vector length L.
    pub l: usize,
    pub selection: Selection,
}

/// What happened to one selected weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Pruned by magnitude (`format::prune_and_compress`).
    Pruned,
    /// It already had the pattern: only checked and compressed (`format::compress_pruned`),
    /// its values unchanged.
    AlreadySparse,
}

/// What `prune_file` wrote.
#[derive(Debug, Clone)]
pub struct PruneReport {
    /// Each compressed weight (in name order): its name, metadata and outcome.
    pub weights: Vec<(String, WeightInfo, Outcome)>,
    /// Tensors copied unchanged.
    pub copied: usize,
}

/// Prune the checkpoint `input` into `output` (a new file, written atomically).
///
/// A selected tensor W is a PyTorch linear weight, [out, in] = [n, k] for `y = x·Wᵀ`;
/// nmtune's dense weight B is k×n, so B = Wᵀ, and B' (w×n_p) and D (w×q) are B's compressed
/// form, k and n padded to multiples of M and L (docs/design.md "Checkpoints").
pub fn prune_file(
    input: &Path,
    output: &Path,
    options: &PruneOptions,
) -> Result<PruneReport, CheckpointError> {
    check_not_input(input, output)?;
    let mapped = Mapped::open(input)?;
    let mut metadata = mapped.metadata()?;
    if metadata.contains_key(FORMAT_KEY) {
        return Err(CheckpointError::AlreadyPruned {
            path: input.to_path_buf(),
            key: FORMAT_KEY,
        });
    }
    let tensors = mapped.tensors()?;
    let plans = plan(&mapped, &tensors, options)?;
    metadata.insert(FORMAT_KEY.to_string(), FORMAT_VERSION.to_string());
    for plan in &plans {
        metadata.insert(weight_key(&plan.name), plan.info.to_json());
    }
    let progress = Rc::new(RefCell::new(Progress::default()));
    let (entries, copied) = output_tensors(&tensors, plans, options, &progress);
    write_atomically(output, |staging| {
        safetensors::serialize_to_file(entries, Some(metadata), staging).map_err(|e| {
            CheckpointError::Write {
                path: output.to_path_buf(),
                reason: e.to_string(),
            }
        })?;
        progress.borrow_mut().error.take().map_or(Ok(()), Err)
    })?;
    let mut weights = std::mem::take(&mut progress.borrow_mut().outcomes);
    weights.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(PruneReport { weights, copied })
}

/// One selected weight, checked: everything pruning needs, so that the write cannot fail on
/// its account.
struct Plan<'data> {
    name: String,
    view: TensorView<'data>,
    ty: FloatType,
    padding: Padding,
    info: WeightInfo,
}

/// Check every selected tensor before anything is written.
fn plan<'data>(
    mapped: &Mapped,
    tensors: &safetensors::SafeTensors<'data>,
    options: &PruneOptions,
) -> Result<Vec<Plan<'data>>, CheckpointError> {
    let mut plans = Vec::new();
    for (name, view) in sorted(tensors) {
        if !options.selection.selects(&name, view.shape()) {
            continue;
        }
        let (ty, n, k) = weight_shape(&name, &view)?;
        let padding = padding_for(&name, n, k, options.nm, options.l)?;
        for part in [values_name(&name), indices_name(&name)] {
            if tensors.tensor(&part).is_ok() {
                return Err(CheckpointError::NameClash { name: part });
            }
        }
        let info = WeightInfo::new(options.nm, options.l, &padding);
        plans.push(Plan {
            name,
            view,
            ty,
            padding,
            info,
        });
    }
    if plans.is_empty() {
        return Err(CheckpointError::NothingSelected {
            path: mapped.path().to_path_buf(),
            rule: options.selection.describe(),
        });
    }
    Ok(plans)
}

/// A selected tensor must be a 2-D float weight: its type and [n, k]. Shared with
/// `nmtune shapes --from`, which lists the same weights.
pub(super) fn weight_shape(
    name: &str,
    view: &TensorView,
) -> Result<(FloatType, usize, usize), CheckpointError> {
    let &[n, k] = view.shape() else {
        return Err(CheckpointError::NotTwoDimensional {
            name: name.to_string(),
            shape: view.shape().to_vec(),
        });
    };
    let ty = FloatType::of(view.dtype()).ok_or_else(|| CheckpointError::NotFloat {
        name: name.to_string(),
        dtype: view.dtype().to_string(),
    })?;
    Ok((ty, n, k))
}

/// The padding of an [n, k] weight, checked against what a kernel can run.
pub(super) fn padding_for(
    name: &str,
    n: usize,
    k: usize,
    nm: NmPattern,
    l: usize,
) -> Result<Padding, CheckpointError> {
    let padding = format::padded_shape(k, n, nm, l).map_err(|source| CheckpointError::Shape {
        name: name.to_string(),
        source,
    })?;
    Problem::new(1, padding.n_padded, padding.k_padded, nm, l).map_err(|source| {
        CheckpointError::Kernels {
            name: name.to_string(),
            source,
        }
    })?;
    Ok(padding)
}

/// What the write learns: each weight's outcome, and the first error (a view cannot return
/// one; the written file is then discarded).
#[derive(Default)]
struct Progress {
    outcomes: Vec<(String, WeightInfo, Outcome)>,
    error: Option<CheckpointError>,
}

/// The output's tensors: copies of the unselected ones, B' and D of each selected one.
/// Returns them with the number of copies.
fn output_tensors<'data>(
    tensors: &safetensors::SafeTensors<'data>,
    plans: Vec<Plan<'data>>,
    options: &PruneOptions,
    progress: &Rc<RefCell<Progress>>,
) -> (Vec<(String, Entry<'data>)>, usize) {
    let mut entries: Vec<(String, Entry<'data>)> = Vec::new();
    let mut planned: HashMap<String, Plan<'data>> =
        plans.into_iter().map(|p| (p.name.clone(), p)).collect();
    for (name, view) in sorted(tensors) {
        match planned.remove(&name) {
            None => entries.push((name, Entry::Copy(view))),
            Some(plan) => {
                let job = Rc::new(Job::new(plan, options, progress.clone()));
                entries.push((values_name(&name), Entry::Values(job.clone())));
                entries.push((indices_name(&name), Entry::Indices(job)));
            }
        }
    }
    let copied = entries
        .iter()
        .filter(|(_, e)| matches!(e, Entry::Copy(_)))
        .count();
    (entries, copied)
}

/// The pruning of one weight, done when the crate first asks for its bytes.
struct Job<'data> {
    plan: Plan<'data>,
    nm: NmPattern,
    l: usize,
    /// [w, n_p] of B' and [w, q] of D.
    values_shape: [usize; 2],
    indices_shape: [usize; 2],
    /// D, from the pass that wrote B' until the crate writes it.
    indices: RefCell<Option<Vec<u8>>>,
    progress: Rc<RefCell<Progress>>,
}

impl<'data> Job<'data> {
    fn new(plan: Plan<'data>, options: &PruneOptions, progress: Rc<RefCell<Progress>>) -> Self {
        let (k_p, n_p) = (plan.padding.k_padded, plan.padding.n_padded);
        let w = k_p / options.nm.m as usize * options.nm.n as usize;
        Self {
            plan,
            nm: options.nm,
            l: options.l,
            values_shape: [w, n_p],
            indices_shape: [w, n_p / options.l],
            indices: RefCell::new(None),
            progress,
        }
    }

    /// B = Wᵀ (padded), checked against the pattern and compressed as it is when it already
    /// has it, else pruned by magnitude.
    fn compress(&self) -> Result<(CompressedWeight, Outcome), CheckpointError> {
        let plan = &self.plan;
        let b = plan.ty.transposed_padded(plan.view.data(), &plan.padding);
        let (k_p, n_p) = (plan.padding.k_padded, plan.padding.n_padded);
        if let Ok(w) = format::compress_pruned(&b, k_p, n_p, self.nm, self.l) {
            return Ok((w, Outcome::AlreadySparse));
        }
        let (w, _) =
            format::prune_and_compress(&b, k_p, n_p, self.nm, self.l).map_err(|source| {
                CheckpointError::Shape {
                    name: plan.name.clone(),
                    source,
                }
            })?;
        Ok((w, Outcome::Pruned))
    }

    /// B' in the weight's own type; keeps D for [`Job::indices_bytes`].
    fn values_bytes(&self) -> Vec<u8> {
        match self.run() {
            Some((w, outcome)) => {
                self.progress.borrow_mut().outcomes.push((
                    self.plan.name.clone(),
                    self.plan.info.clone(),
                    outcome,
                ));
                // A second copy of B' (bytes beside f32) for the time of this one weight:
                // the crate writes bytes, and safe code cannot reinterpret the f32 buffer.
                let bytes = self.plan.ty.narrow(&w.values);
                *self.indices.borrow_mut() = Some(w.indices);
                bytes
            }
            None => Vec::new(),
        }
    }

    /// D; computed again only if the crate wrote it before B' (it does not).
    fn indices_bytes(&self) -> Vec<u8> {
        if let Some(indices) = self.indices.borrow_mut().take() {
            return indices;
        }
        self.run().map_or_else(Vec::new, |(w, _)| w.indices)
    }

    /// [`Job::compress`], its error recorded; nothing is computed once an error is known.
    fn run(&self) -> Option<(CompressedWeight, Outcome)> {
        if self.progress.borrow().error.is_some() {
            return None;
        }
        self.compress()
            .map_err(|e| self.progress.borrow_mut().error = Some(e))
            .ok()
    }
}

/// One tensor of the output, as the crate's writer sees it.
enum Entry<'data> {
    Copy(TensorView<'data>),
    Values(Rc<Job<'data>>),
    Indices(Rc<Job<'data>>),
}

impl View for Entry<'_> {
    fn dtype(&self) -> Dtype {
        match self {
            Entry::Copy(view) => view.dtype(),
            Entry::Values(job) => job.plan.ty.dtype(),
            Entry::Indices(_) => Dtype::U8,
        }
    }

    fn shape(&self) -> &[usize] {
        match self {
            Entry::Copy(view) => view.shape(),
            Entry::Values(job) => &job.values_shape,
            Entry::Indices(job) => &job.indices_shape,
        }
    }

    fn data(&self) -> Cow<'_, [u8]> {
        match self {
            // Straight from the map: byte-identical, never copied into memory.
            Entry::Copy(view) => Cow::Borrowed(view.data()),
            Entry::Values(job) => Cow::Owned(job.values_bytes()),
            Entry::Indices(job) => Cow::Owned(job.indices_bytes()),
        }
    }

    fn data_len(&self) -> usize {
        match self {
            Entry::Copy(view) => view.data().len(),
            Entry::Values(job) => job.values_shape[0] * job.values_shape[1] * job.plan.ty.size(),
            Entry::Indices(job) => job.indices_shape[0] * job.indices_shape[1],
        }
    }
}
