//! The N:M vector-wise sparse format (docs/design.md "The operation").
//!
//! A dense k×n weight B is cut into column groups of L consecutive columns; in every window
//! of M consecutive rows of k, each group keeps the same N rows. The kept values form B'
//! (w×n, w = k·N/M, row-major) and their positions inside the window form D (w×q, q = n/L).
//! For packing kernels, [`ColInfo`] lists per (k-tile, n-tile) the A columns the tile needs.
//!
//! Submodules: [`prune`] (magnitude pruning with padding, and back to PyTorch's layout:
//! [`decompress_nk`]), [`compress`] (validated construction, accessors, decompression),
//! [`col_info`] (packing preprocessing) and [`min_bytes`] (the least traffic of one product).

mod col_info;
mod compress;
mod min_bytes;
mod prune;
pub mod tc;

pub use col_info::build_col_info;
pub use compress::{compress_pruned, decompress, try_decompress};
pub use min_bytes::{device_index_bytes, MinBytes, DEVICE_INDEX_BYTES};
pub use prune::{decompress_nk, padded_shape, prune_and_compress, prune_and_compress_nk};

/// One element of D as the tiled and decode families read it:
/// [`CompressedWeight::indices_i32`] widens the u8 window positions to this type before they
/// are uploaded.
pub type DeviceIndex = i32;

/// One element of D as the element-wise family (L = 1) reads it: the u8 window positions as
/// they are stored ([`CompressedWeight::indices`]), uploaded unchanged. At L = 1 D has as
/// many elements as B', so a byte instead of four is a fifth of the weight's bytes instead of
/// half.
pub type ElementWiseIndex = u8;

use crate::problem::{NmPattern, ProblemError};
use thiserror::Error;

/// Why a weight cannot be pruned, compressed, decompressed or preprocessed.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum FormatError {
    #[error(transparent)]
    Problem(#[from] ProblemError),
    #[error("weight has {got} elements, expected {rows}×{cols} = {expected}")]
    SizeMismatch {
        got: usize,
        rows: usize,
        cols: usize,
        expected: usize,
    },
    #[error("{what}: {detail}")]
    Invalid { what: &'static str, detail: String },
}

/// How a weight was padded so that M divides k and L divides n. Zero rows/columns are added
/// at the end; the report says so, it never happens silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Padding {
    pub k_original: usize,
    pub k_padded: usize,
    pub n_original: usize,
    pub n_padded: usize,
}

impl Padding {
    pub fn is_padded(&self) -> bool {
        self.k_original != self.k_padded || self.n_original != self.n_padded
    }

    /// Whether this padding describes a k×n weight: its padded sizes are k and n, and the
    /// original sizes lie in 1..=k and 1..=n.
    pub fn check_describes(&self, k: usize, n: usize) -> Result<(), FormatError> {
        let fits = (self.k_padded, self.n_padded) == (k, n)
            && (1..=k).contains(&self.k_original)
            && (1..=n).contains(&self.n_original);
        if fits {
            return Ok(());
        }
        Err(FormatError::Invalid {
            what: "padding",
            detail: format!(
                "{}×{} padded to {}×{} does not describe a {k}×{n} weight",
                self.k_original, self.n_original, self.k_padded, self.n_padded
            ),
        })
    }
}

/// A compressed N:M vector-wise weight: B' and D.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressedWeight {
    /// Rows of the dense weight (a multiple of M).
    pub k: usize,
    /// Columns of the dense weight (a multiple of L).
    pub n: usize,
    pub nm: NmPattern,
    pub l: usize,
    /// B', w×n row-major.
    pub values: Vec<f32>,
    /// D, w×q row-major: D[u][j] ∈ 0..M is the position of the u-th kept row in its window
    /// for column group j; kept rows are sorted by position inside each window.
    pub indices: Vec<u8>,
}

/// Offline preprocessing for packing kernels, for one (k_s, n_s) tiling.
#[derive(Debug, Clone, PartialEq)]
pub struct ColInfo {
    pub k_s: usize,
    pub n_s: usize,
    pub k_tiles: usize,
    pub n_tiles: usize,
    /// [k_tiles][n_tiles][k_s]: absolute A column of each packed slot, sorted ascending;
    /// slots at and beyond the tile's count repeat the last valid column (never read).
    pub columns: Vec<i32>,
    /// [k_tiles][n_tiles]: distinct A columns the tile needs.
    pub counts: Vec<i32>,
    /// w×q: D rewritten to the slot, inside its tile's packed list, of each kept row.
    pub packed_indices: Vec<i32>,
}
