//! `nmtune shapes --from`: the shapes file of a checkpoint's linear layers, in the schema
//! `crate::shapes` reads (README "Shapes file"), so that tuning a model needs no hand-written
//! YAML.

use super::files::{sorted, Mapped};
use super::prune::{padding_for, weight_shape};
use super::{CheckpointError, Selection};
use crate::problem::{NmPattern, Problem};
use std::fmt::Write;
use std::path::Path;

/// One distinct weight shape of a checkpoint, [n, k] = [out, in] as PyTorch stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinearShape {
    pub n: usize,
    pub k: usize,
    /// The tensors of this shape, in name order.
    pub tensors: Vec<String>,
}

/// The distinct shapes of the selected weights of `path`, in the order of their first tensor
/// by name. A selected tensor must be a 2-D float weight (as `nmtune prune` requires).
pub fn linear_shapes(
    path: &Path,
    selection: &Selection,
) -> Result<Vec<LinearShape>, CheckpointError> {
    let mapped = Mapped::open(path)?;
    let tensors = mapped.tensors()?;
    let mut shapes: Vec<LinearShape> = Vec::new();
    for (name, view) in sorted(&tensors) {
        if !selection.selects(&name, view.shape()) {
            continue;
        }
        // The padding depends on the pattern: `shapes_yaml` checks it per requested pattern.
        let (_, n, k) = weight_shape(&name, &view)?;
        match shapes.iter_mut().find(|s| (s.n, s.k) == (n, k)) {
            Some(shape) => shape.tensors.push(name),
            None => shapes.push(LinearShape {
                n,
                k,
                tensors: vec![name],
            }),
        }
    }
    if shapes.is_empty() {
        return Err(CheckpointError::NothingSelected {
            path: path.to_path_buf(),
            rule: selection.describe(),
        });
    }
    Ok(shapes)
}

/// What the shapes file asks to tune each shape for.
#[derive(Debug, Clone)]
pub struct ShapesRequest {
    /// Rows of A (tokens).
    pub ms: Vec<usize>,
    pub patterns: Vec<NmPattern>,
    /// Vector length L.
    pub l: usize,
}

/// The shapes file of `shapes` (from `linear_shapes` of the checkpoint named `model`): the
/// request as `defaults`, one layer per distinct padded (n, k). A weight that needs padding is
/// listed at the padded shape `nmtune prune` gives it, for the patterns that pad it so; every
/// problem is checked as the shapes loader checks it, so the file always loads.
pub fn shapes_yaml(
    model: &str,
    shapes: &[LinearShape],
    request: &ShapesRequest,
) -> Result<String, CheckpointError> {
    let mut layers: Vec<Layer> = Vec::new();
    for shape in shapes {
        for layer in padded_layers(shape, request)? {
            if !layers.iter().any(|l| l.same_problems(&layer)) {
                layers.push(layer);
            }
        }
    }
    let mut text = header(model, request);
    for layer in &layers {
        layer.write(&mut text, model, request);
    }
    Ok(text)
}

/// One entry of `layers:`.
struct Layer<'s> {
    shape: &'s LinearShape,
    n: usize,
    k: usize,
    /// The patterns this padded shape is for; all of the request's when equal to them.
    patterns: Vec<NmPattern>,
}

impl Layer<'_> {
    fn same_problems(&self, other: &Layer) -> bool {
        (self.n, self.k, &self.patterns) == (other.n, other.k, &other.patterns)
    }

    fn write(&self, text: &mut String, model: &str, request: &ShapesRequest) {
        let shape = self.shape;
        let first = &shape.tensors[0];
        let more = match shape.tensors.len() {
            1 => String::new(),
            count => format!(" and {} more", count - 1),
        };
        let _ = write!(text, "  # {}{more}", first.escape_debug());
        if (self.n, self.k) != (shape.n, shape.k) {
            let _ = write!(text, "; [{}, {}] padded", shape.n, shape.k);
        }
        let _ = write!(
            text,
            "\n  - {{ model: {}, name: {}, n: {}, k: {}",
            quoted(model),
            quoted(first),
            self.n,
            self.k
        );
        if self.patterns != request.patterns {
            let _ = write!(text, ", sparsity: {}", pattern_list(&self.patterns));
        }
        text.push_str(" }\n");
    }
}

/// The layers of one shape: one per distinct padded shape among the requested patterns.
fn padded_layers<'s>(
    shape: &'s LinearShape,
    request: &ShapesRequest,
) -> Result<Vec<Layer<'s>>, CheckpointError> {
    let name = &shape.tensors[0];
    let mut layers: Vec<Layer<'s>> = Vec::new();
    for &nm in &request.patterns {
        let padding = padding_for(name, shape.n, shape.k, nm, request.l)?;
        let (n, k) = (padding.n_padded, padding.k_padded);
        for &m in &request.ms {
            Problem::new(m, n, k, nm, request.l).map_err(|source| CheckpointError::Kernels {
                name: name.clone(),
                source,
            })?;
        }
        match layers.iter_mut().find(|l| (l.n, l.k) == (n, k)) {
            Some(layer) => layer.patterns.push(nm),
            None => layers.push(Layer {
                shape,
                n,
                k,
                patterns: vec![nm],
            }),
        }
    }
    Ok(layers)
}

fn header(model: &str, request: &ShapesRequest) -> String {
    let ms: Vec<String> = request.ms.iter().map(|m| m.to_string()).collect();
    format!(
        "# The linear layers of {}, written by `nmtune shapes --from`: one layer per distinct\n\
         # weight shape. n = output features, k = input features (PyTorch's weight[n][k]), padded\n\
         # to multiples of M (k) and L (n) as `nmtune prune` pads them.\n\
         defaults:\n  m: [{}]\n  sparsity: {}\n  L: {}\nlayers:\n",
        model.escape_debug(),
        ms.join(", "),
        pattern_list(&request.patterns),
        request.l
    )
}

fn pattern_list(patterns: &[NmPattern]) -> String {
    let items: Vec<String> = patterns.iter().map(|p| quoted(&p.to_string())).collect();
    format!("[{}]", items.join(", "))
}

/// A YAML double-quoted scalar: JSON's string escapes are YAML's.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"?\"".to_string())
}
