//! Weight preparation: a dense or already compressed weight into the buffers a kernel reads.
//!
//! [`PreparedWeight`] holds the compressed weight (B', D) on the host and says how it was
//! padded. [`PreparedWeight::host_buffers`] gives, for one kernel configuration, exactly the
//! arrays that are uploaded for it: B', and D as raw window positions (non-packing; bytes for
//! the element-wise family, L = 1) or as col_info slots with the column lists and counts
//! (packing). The device side
//! ([`super::SparseLinear`]) builds them with the same functions
//! ([`crate::kernels::upload_compressed`], [`DeviceColInfos`](crate::kernels::DeviceColInfos)).

use super::RuntimeError;
use crate::codegen::KernelConfig;
use crate::format::{self, ColInfo, CompressedWeight, Padding};
use crate::problem::{NmPattern, Problem, ProblemError};

/// A compressed N:M weight ready to be uploaded, with its padding report.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedWeight {
    weight: CompressedWeight,
    padding: Padding,
}

/// The host arrays one kernel configuration reads (what the device holds for it).
#[derive(Debug, Clone, PartialEq)]
pub struct HostBuffers<'w> {
    /// B', w×n row-major.
    pub values: &'w [f32],
    /// D, w×q: raw window positions, or col_info slots for a packing kernel.
    pub indices: HostIndices<'w>,
    /// The (k_s, n_s) tiling's column lists and counts, for a packing kernel.
    pub col_info: Option<ColInfo>,
}

/// D in the element type a kernel family reads.
#[derive(Debug, Clone, PartialEq)]
pub enum HostIndices<'w> {
    /// i32 (the tiled and decode families): the positions widened, or packed slots.
    Wide(Vec<i32>),
    /// The stored u8 positions, uploaded as they are (the element-wise family, L = 1).
    Bytes(&'w [u8]),
}

impl HostIndices<'_> {
    /// Elements of D.
    pub fn len(&self) -> usize {
        match self {
            HostIndices::Wide(d) => d.len(),
            HostIndices::Bytes(d) => d.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i`: a window position, or a packed slot.
    pub fn get(&self, i: usize) -> Option<usize> {
        match self {
            HostIndices::Wide(d) => d.get(i).map(|&v| v as usize),
            HostIndices::Bytes(d) => d.get(i).map(|&v| v as usize),
        }
    }

    /// Bytes the device holds for them.
    pub fn device_bytes(&self) -> usize {
        match self {
            HostIndices::Wide(d) => std::mem::size_of_val(d.as_slice()),
            HostIndices::Bytes(d) => d.len(),
        }
    }
}

impl PreparedWeight {
    /// Prune a dense row-major k×n weight by magnitude (NM-SpMM's vector-wise N:M, vector
    /// length `l`) and compress it. k and n are padded with zeros to multiples of M and L
    /// when needed; that is logged and reported by [`PreparedWeight::padding`].
    pub fn from_dense_kn(
        dense: &[f32],
        k: usize,
        n: usize,
        nm: NmPattern,
        l: usize,
    ) -> Result<Self, RuntimeError> {
        let (weight, padding) = format::prune_and_compress(dense, k, n, nm, l)?;
        Ok(Self::padded(weight, padding))
    }

    /// [`PreparedWeight::from_dense_kn`] for PyTorch's `nn.Linear` layout, n×k
    /// (`weight[out][in]`).
    pub fn from_dense_nk(
        dense_nk: &[f32],
        n: usize,
        k: usize,
        nm: NmPattern,
        l: usize,
    ) -> Result<Self, RuntimeError> {
        let (weight, padding) = format::prune_and_compress_nk(dense_nk, n, k, nm, l)?;
        Ok(Self::padded(weight, padding))
    }

    /// A weight compressed elsewhere; it must pass [`CompressedWeight::validate`].
    pub fn from_compressed(weight: CompressedWeight) -> Result<Self, RuntimeError> {
        weight.validate()?;
        let padding = Padding {
            k_original: weight.k,
            k_padded: weight.k,
            n_original: weight.n,
            n_padded: weight.n,
        };
        Ok(Self { weight, padding })
    }

    /// A weight compressed elsewhere from a smaller one padded as `padding` says (a pruned
    /// checkpoint's weight, whose metadata records the original shape); `padding` must
    /// describe `weight`: its padded sizes are the weight's k and n.
    pub fn from_compressed_padded(
        weight: CompressedWeight,
        padding: Padding,
    ) -> Result<Self, RuntimeError> {
        weight.validate()?;
        padding.check_describes(weight.k, weight.n)?;
        Ok(Self { weight, padding })
    }

    /// A compressed (B', D) pair: B' w×n row-major, D w×q positions inside each window.
    pub fn from_parts(
        k: usize,
        n: usize,
        nm: NmPattern,
        l: usize,
        values: Vec<f32>,
        indices: Vec<u8>,
    ) -> Result<Self, RuntimeError> {
        Self::from_compressed(CompressedWeight::from_parts(k, n, nm, l, values, indices)?)
    }

    fn padded(weight: CompressedWeight, padding: Padding) -> Self {
        if padding.is_padded() {
            log::warn!(
                "weight {}×{} padded with zeros to {}×{} (k to a multiple of M={}, n of L={}): A needs {} columns and C {} columns",
                padding.k_original, padding.n_original, padding.k_padded, padding.n_padded,
                weight.nm.m, weight.l, padding.k_padded, padding.n_padded
            );
        }
        Self { weight, padding }
    }

    pub fn weight(&self) -> &CompressedWeight {
        &self.weight
    }

    pub fn padding(&self) -> Padding {
        self.padding
    }

    /// Columns of A the kernels read (k after padding).
    pub fn k(&self) -> usize {
        self.weight.k
    }

    /// Columns of C the kernels write (n after padding).
    pub fn n(&self) -> usize {
        self.weight.n
    }

    pub fn nm(&self) -> NmPattern {
        self.weight.nm
    }

    pub fn l(&self) -> usize {
        self.weight.l
    }

    /// The problem of multiplying `m` rows of A by this weight.
    pub fn problem(&self, m: usize) -> Result<Problem, ProblemError> {
        Problem::new(m, self.n(), self.k(), self.nm(), self.l())
    }

    /// The arrays `config`'s kernel reads; col_info is built for its (k_s, n_s) tiling when
    /// it packs.
    pub fn host_buffers(&self, config: &KernelConfig) -> Result<HostBuffers<'_>, RuntimeError> {
        let w = &self.weight;
        if config.reads_byte_indices() {
            return Ok(HostBuffers {
                values: &w.values,
                indices: HostIndices::Bytes(&w.indices),
                col_info: None,
            });
        }
        if !config.packing {
            return Ok(HostBuffers {
                values: &w.values,
                indices: HostIndices::Wide(w.indices_i32()),
                col_info: None,
            });
        }
        let mut info = format::build_col_info(w, config.k_s as usize, config.n_s as usize)?;
        Ok(HostBuffers {
            values: &w.values,
            indices: HostIndices::Wide(std::mem::take(&mut info.packed_indices)),
            col_info: Some(info),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_padding_must_describe_the_weight() {
        let nm = NmPattern::new(8, 32).unwrap();
        let dense: Vec<f32> = (0..40 * 50).map(|i| (i % 7) as f32 - 3.0).collect();
        let (weight, padding) = format::prune_and_compress_nk(&dense, 40, 50, nm, 32).unwrap();
        let prepared = PreparedWeight::from_compressed_padded(weight.clone(), padding).unwrap();
        assert_eq!(prepared.padding(), padding);
        assert_eq!((prepared.n(), prepared.k()), (64, 64));
        let wrong = Padding {
            k_padded: 96,
            ..padding
        };
        let err = PreparedWeight::from_compressed_padded(weight.clone(), wrong).unwrap_err();
        assert!(
            err.to_string().contains("does not describe a 64×64 weight"),
            "{err}"
        );
        let empty = Padding {
            n_original: 0,
            ..padding
        };
        assert!(PreparedWeight::from_compressed_padded(weight, empty).is_err());
    }
}
