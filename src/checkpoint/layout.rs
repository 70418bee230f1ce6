//! How a pruned checkpoint spells things: the names of B' and D beside the weight they
//! replace, and the metadata keys. The one home of these names (README "Checkpoints",
//! docs/design.md "Checkpoints").

use crate::format::Padding;
use crate::problem::{NmPattern, ProblemError};
use serde::{Deserialize, Serialize};

/// Metadata key that marks a pruned checkpoint; its value is [`FORMAT_VERSION`].
pub const FORMAT_KEY: &str = "nmtune.format";
/// The layout this build writes and reads; a reader refuses any other.
pub const FORMAT_VERSION: &str = "nm-vector-wise/1";
/// Every metadata key nmtune writes starts with this; restoring removes them all.
pub const KEY_PREFIX: &str = "nmtune.";
/// Per-weight metadata: `nmtune.weight.<weight name>` → [`WeightInfo`] as JSON.
const WEIGHT_KEY_PREFIX: &str = "nmtune.weight.";
/// B' of weight `<name>` is the tensor `<name>.nm_values`, D is `<name>.nm_indices`.
const VALUES_SUFFIX: &str = ".nm_values";
const INDICES_SUFFIX: &str = ".nm_indices";

/// Name of the tensor holding B' (w×n_p, the weight's own float type) of weight `name`.
pub fn values_name(name: &str) -> String {
    format!("{name}{VALUES_SUFFIX}")
}

/// Name of the tensor holding D (w×q, U8) of weight `name`.
pub fn indices_name(name: &str) -> String {
    format!("{name}{INDICES_SUFFIX}")
}

/// Metadata key of weight `name`'s [`WeightInfo`].
pub fn weight_key(name: &str) -> String {
    format!("{WEIGHT_KEY_PREFIX}{name}")
}

/// The weight a metadata key describes, if it is a [`weight_key`].
pub fn weight_of_key(key: &str) -> Option<&str> {
    key.strip_prefix(WEIGHT_KEY_PREFIX)
}

/// What the metadata says of one pruned weight: enough to rebuild the dense weight and to
/// run it (pattern, L, the original and the padded shape, both in PyTorch's [out, in] order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightInfo {
    /// The pattern, `"N:M"`.
    pub nm: String,
    /// Vector length L.
    pub l: usize,
    /// [n, k] of the original weight (out × in).
    pub shape: [usize; 2],
    /// [n, k] after padding: the compressed weight's n and k (zeros added at the ends).
    pub padded_shape: [usize; 2],
}

impl WeightInfo {
    pub fn new(nm: NmPattern, l: usize, padding: &Padding) -> Self {
        Self {
            nm: nm.to_string(),
            l,
            shape: [padding.n_original, padding.k_original],
            padded_shape: [padding.n_padded, padding.k_padded],
        }
    }

    pub fn pattern(&self) -> Result<NmPattern, ProblemError> {
        NmPattern::parse(&self.nm, 0)
    }

    pub fn padding(&self) -> Padding {
        Padding {
            k_original: self.shape[1],
            k_padded: self.padded_shape[1],
            n_original: self.shape[0],
            n_padded: self.padded_shape[0],
        }
    }

    /// The metadata value: compact JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a struct of strings and numbers serializes")
    }
}
