//! Validated construction of a [`CompressedWeight`], its accessors, and the way back to a
//! dense weight. Every check lives here so that pruning, decompression, the reference and
//! col_info share one definition of "a valid weight".

use super::{CompressedWeight, DeviceIndex, FormatError};
use crate::problem::{NmPattern, ProblemError};
use rayon::prelude::*;

/// Re-validate a pattern: its fields are public, so a caller may have built it by hand.
pub(super) fn check_pattern(nm: NmPattern) -> Result<NmPattern, FormatError> {
    Ok(NmPattern::new(nm.n, nm.m)?)
}

pub(super) fn check_vector_length(l: usize) -> Result<(), FormatError> {
    if l == 0 || l > 128 {
        return Err(ProblemError::LOutOfRange { l }.into());
    }
    Ok(())
}

pub(super) fn check_not_empty(k: usize, n: usize) -> Result<(), FormatError> {
    if k == 0 || n == 0 {
        return Err(FormatError::Invalid {
            what: "weight shape",
            detail: format!("k={k}, n={n}: the weight needs at least one row and one column"),
        });
    }
    Ok(())
}

/// rows·cols without overflow: huge shapes are an error, never a panic or a wrap.
pub(super) fn checked_elements(rows: usize, cols: usize) -> Result<usize, FormatError> {
    rows.checked_mul(cols).ok_or_else(|| FormatError::Invalid {
        what: "weight shape",
        detail: format!("{rows}×{cols} elements overflow the address space"),
    })
}

pub(super) fn check_len(got: usize, rows: usize, cols: usize) -> Result<(), FormatError> {
    let expected = checked_elements(rows, cols)?;
    if got != expected {
        return Err(FormatError::SizeMismatch {
            got,
            rows,
            cols,
            expected,
        });
    }
    Ok(())
}

/// k a multiple of M and n a multiple of L (the unpadded case).
pub(super) fn check_aligned(
    k: usize,
    n: usize,
    nm: NmPattern,
    l: usize,
) -> Result<(), FormatError> {
    if k % nm.m as usize != 0 {
        return Err(ProblemError::KNotMultipleOfM { k, m_window: nm.m }.into());
    }
    if n % l != 0 {
        return Err(ProblemError::NNotMultipleOfL { n, l }.into());
    }
    Ok(())
}

/// Positions of one window and group must be `< M` and strictly increasing.
fn check_window_positions(
    positions: impl Iterator<Item = u8>,
    m_window: u32,
    window: usize,
    group: usize,
) -> Result<(), FormatError> {
    let mut previous: Option<u8> = None;
    for pos in positions {
        if pos as u32 >= m_window {
            return Err(FormatError::Invalid {
                what: "index matrix D",
                detail: format!(
                    "window {window}, group {group}: position {pos} is not below M={m_window}"
                ),
            });
        }
        if previous.is_some_and(|p| p >= pos) {
            return Err(FormatError::Invalid {
                what: "index matrix D",
                detail: format!(
                    "window {window}, group {group}: positions must be strictly increasing, got {} then {pos}",
                    previous.unwrap_or_default()
                ),
            });
        }
        previous = Some(pos);
    }
    Ok(())
}

impl CompressedWeight {
    /// Build a weight from B' (w×n) and D (w×q), checking every invariant the kernels rely on.
    pub fn from_parts(
        k: usize,
        n: usize,
        nm: NmPattern,
        l: usize,
        values: Vec<f32>,
        indices: Vec<u8>,
    ) -> Result<Self, FormatError> {
        let weight = Self {
            k,
            n,
            nm,
            l,
            values,
            indices,
        };
        weight.validate()?;
        Ok(weight)
    }

    /// Check every invariant: pattern, L, shape, buffer sizes, index range and order.
    /// The fields are public, so consumers that index with D call this first.
    pub fn validate(&self) -> Result<(), FormatError> {
        let nm = check_pattern(self.nm)?;
        check_vector_length(self.l)?;
        check_not_empty(self.k, self.n)?;
        check_aligned(self.k, self.n, nm, self.l)?;
        let (w, q) = (self.w(), self.q());
        check_len(self.values.len(), w, self.n)?;
        check_len(self.indices.len(), w, q)?;
        let n_keep = nm.n as usize;
        for window in 0..self.k / nm.m as usize {
            for group in 0..q {
                let column = (0..n_keep).map(|i| self.indices[(window * n_keep + i) * q + group]);
                check_window_positions(column, nm.m, window, group)?;
            }
        }
        Ok(())
    }

    /// Rows of B': k·N/M.
    pub fn w(&self) -> usize {
        self.k / self.nm.m.max(1) as usize * self.nm.n as usize
    }

    /// Column groups of D: n/L.
    pub fn q(&self) -> usize {
        self.n / self.l.max(1)
    }

    /// D widened to [`DeviceIndex`] (i32), the element type non-packing kernels read.
    pub fn indices_i32(&self) -> Vec<DeviceIndex> {
        self.indices.iter().map(|&d| DeviceIndex::from(d)).collect()
    }

    /// Absolute row of B (the A column) that compressed row `u` holds for group `j`.
    pub fn absolute_row(&self, u: usize, j: usize) -> usize {
        let n_keep = self.nm.n as usize;
        (u / n_keep) * self.nm.m as usize + self.indices[u * self.q() + j] as usize
    }
}

/// The dense k×n weight with zeros at pruned rows, or why `w` is not a valid weight.
pub fn try_decompress(w: &CompressedWeight) -> Result<Vec<f32>, FormatError> {
    w.validate()?;
    let (n, l, q) = (w.n, w.l, w.q());
    let (n_keep, m_window) = (w.nm.n as usize, w.nm.m as usize);
    let mut dense = vec![0.0f32; w.k * n];
    dense
        .par_chunks_mut(m_window * n)
        .enumerate()
        .for_each(|(window, out)| {
            for u in window * n_keep..(window + 1) * n_keep {
                for j in 0..q {
                    let pos = w.indices[u * q + j] as usize;
                    let cols = j * l..(j + 1) * l;
                    out[pos * n + cols.start..pos * n + cols.end]
                        .copy_from_slice(&w.values[u * n + cols.start..u * n + cols.end]);
                }
            }
        });
    Ok(dense)
}

/// The dense k×n weight with zeros at pruned rows.
///
/// # Panics
/// If `w` fails [`CompressedWeight::validate`]; weights from [`super::prune_and_compress`] or
/// [`CompressedWeight::from_parts`] always pass. Use [`try_decompress`] for hand-built ones.
pub fn decompress(w: &CompressedWeight) -> Vec<f32> {
    try_decompress(w).unwrap_or_else(|e| panic!("decompress: invalid weight: {e}"))
}

/// Compress a k×n row-major weight that is already N:M vector-wise sparse (pruned by the
/// caller's own criterion). Each window and group may hold at most N non-zero rows; when it
/// holds fewer, the lowest-positioned zero rows fill the N slots. No padding is done.
pub fn compress_pruned(
    dense: &[f32],
    k: usize,
    n: usize,
    nm: NmPattern,
    l: usize,
) -> Result<CompressedWeight, FormatError> {
    let nm = check_pattern(nm)?;
    check_vector_length(l)?;
    check_not_empty(k, n)?;
    check_len(dense.len(), k, n)?;
    check_aligned(k, n, nm, l)?;
    let (n_keep, m_window, q) = (nm.n as usize, nm.m as usize, n / l);
    let w = k / m_window * n_keep;
    let mut values = vec![0.0f32; w * n];
    let mut indices = vec![0u8; w * q];
    values
        .par_chunks_mut(n_keep * n)
        .zip(indices.par_chunks_mut(n_keep * q))
        .enumerate()
        .try_for_each(|(window, (vals, idx))| -> Result<(), FormatError> {
            let rows = &dense[window * m_window * n..(window + 1) * m_window * n];
            for j in 0..q {
                let kept = kept_nonzero_rows(rows, n, l, j, n_keep).ok_or_else(|| {
                    FormatError::Invalid {
                        what: "pruned weight",
                        detail: format!(
                            "window {window} (rows {}..{}), column group {j}: more than N={n_keep} non-zero rows",
                            window * m_window,
                            (window + 1) * m_window
                        ),
                    }
                })?;
                for (i, &pos) in kept.iter().enumerate() {
                    idx[i * q + j] = pos as u8;
                    let src = &rows[pos * n + j * l..pos * n + (j + 1) * l];
                    vals[i * n + j * l..i * n + (j + 1) * l].copy_from_slice(src);
                }
            }
            Ok(())
        })?;
    Ok(CompressedWeight {
        k,
        n,
        nm,
        l,
        values,
        indices,
    })
}

/// The N positions kept for group `j` of one window (`rows`: M×n): its non-zero rows, topped
/// up with the first zero rows; `None` if more than N rows are non-zero.
fn kept_nonzero_rows(
    rows: &[f32],
    n: usize,
    l: usize,
    j: usize,
    n_keep: usize,
) -> Option<Vec<usize>> {
    let m_window = rows.len() / n;
    let is_nonzero = |pos: usize| {
        rows[pos * n + j * l..pos * n + (j + 1) * l]
            .iter()
            .any(|&v| v != 0.0)
    };
    let nonzero: Vec<usize> = (0..m_window).filter(|&p| is_nonzero(p)).collect();
    if nonzero.len() > n_keep {
        return None;
    }
    let fillers = (0..m_window)
        .filter(|&p| !is_nonzero(p))
        .take(n_keep - nonzero.len());
    let mut kept: Vec<usize> = nonzero.into_iter().chain(fillers).collect();
    kept.sort_unstable();
    Some(kept)
}
