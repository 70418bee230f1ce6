//! Magnitude pruning of a dense weight into the N:M vector-wise format, padding k up to a
//! multiple of M and n up to a multiple of L with zeros; and the way back to PyTorch's layout.

use super::compress::{
    check_len, check_not_empty, check_pattern, check_vector_length, checked_elements,
    try_decompress,
};
use super::{CompressedWeight, FormatError, Padding};
use crate::problem::NmPattern;
use rayon::prelude::*;
use std::cmp::Ordering;

/// Prune a k×n row-major weight: in every window of M rows and every group of L columns keep
/// the N rows with the largest sum of |value| over the group (ties: lower row first), then
/// compress. k and n are padded with zeros as needed; the returned [`Padding`] says how.
pub fn prune_and_compress(
    dense: &[f32],
    k: usize,
    n: usize,
    nm: NmPattern,
    l: usize,
) -> Result<(CompressedWeight, Padding), FormatError> {
    let nm = check_pattern(nm)?;
    check_vector_length(l)?;
    check_not_empty(k, n)?;
    check_len(dense.len(), k, n)?;
    let padding = padded_shape(k, n, nm, l)?;
    let (k_p, n_p) = (padding.k_padded, padding.n_padded);
    let (n_keep, m_window) = (nm.n as usize, nm.m as usize);
    let (w, q) = (k_p / m_window * n_keep, n_p / l);
    let mut values = vec![0.0f32; checked_elements(w, n_p)?];
    let mut indices = vec![0u8; checked_elements(w, q)?];
    let source = Source { dense, k, n, l };
    values
        .par_chunks_mut(n_keep * n_p)
        .zip(indices.par_chunks_mut(n_keep * q))
        .enumerate()
        .for_each(|(window, (vals, idx))| {
            let rows: Vec<Option<&[f32]>> = (window * m_window..(window + 1) * m_window)
                .map(|r| source.row(r))
                .collect();
            prune_window(&rows, &source, n_keep, q, n_p, vals, idx);
        });
    let weight = CompressedWeight {
        k: k_p,
        n: n_p,
        nm,
        l,
        values,
        indices,
    };
    Ok((weight, padding))
}

/// [`prune_and_compress`] for PyTorch's n×k layout (`weight[out][in]`): same result as
/// transposing to k×n first.
pub fn prune_and_compress_nk(
    dense_nk: &[f32],
    n: usize,
    k: usize,
    nm: NmPattern,
    l: usize,
) -> Result<(CompressedWeight, Padding), FormatError> {
    check_pattern(nm)?;
    check_vector_length(l)?;
    check_not_empty(k, n)?;
    check_len(dense_nk.len(), n, k)?;
    prune_and_compress(&transpose(dense_nk, n, k), k, n, nm, l)
}

/// The inverse of [`prune_and_compress_nk`]: the dense n×k weight in PyTorch's layout
/// (`weight[out][in]`), zeros at pruned positions, with the padding `padding` reports removed.
/// `padding` must describe `w` (its padded sizes are `w`'s k and n).
pub fn decompress_nk(w: &CompressedWeight, padding: &Padding) -> Result<Vec<f32>, FormatError> {
    padding.check_describes(w.k, w.n)?;
    let dense_kn = try_decompress(w)?;
    let (k, n) = (padding.k_original, padding.n_original);
    let mut dense_nk = vec![0.0f32; checked_elements(n, k)?];
    dense_nk
        .par_chunks_mut(k.max(1))
        .enumerate()
        .for_each(|(i, row)| {
            for (r, v) in row.iter_mut().enumerate() {
                *v = dense_kn[r * w.n + i];
            }
        });
    Ok(dense_nk)
}

/// How a k×n weight is padded for pattern `nm` and vector length `l`: k rounded up to a
/// multiple of M, n to a multiple of L. The one home of that rule: pruning applies it, and
/// so do the checkpoint writer and `nmtune shapes --from`, which must name the padded shape.
pub fn padded_shape(k: usize, n: usize, nm: NmPattern, l: usize) -> Result<Padding, FormatError> {
    let nm = check_pattern(nm)?;
    check_vector_length(l)?;
    check_not_empty(k, n)?;
    let overflow = || FormatError::Invalid {
        what: "weight shape",
        detail: format!(
            "padding {k}×{n} to multiples of M={} and L={l} overflows",
            nm.m
        ),
    };
    let k_padded = k
        .checked_next_multiple_of(nm.m as usize)
        .ok_or_else(overflow)?;
    let n_padded = n.checked_next_multiple_of(l).ok_or_else(overflow)?;
    checked_elements(k_padded, n_padded)?;
    Ok(Padding {
        k_original: k,
        k_padded,
        n_original: n,
        n_padded,
    })
}

/// The unpadded weight, read as if it were padded with zeros.
struct Source<'a> {
    dense: &'a [f32],
    k: usize,
    n: usize,
    l: usize,
}

impl<'a> Source<'a> {
    /// Row r, or None for a padding row.
    fn row(&self, r: usize) -> Option<&'a [f32]> {
        (r < self.k).then(|| &self.dense[r * self.n..(r + 1) * self.n])
    }

    /// The unpadded columns of group j (empty for a group made only of padding).
    fn group_columns(&self, j: usize) -> std::ops::Range<usize> {
        let start = (j * self.l).min(self.n);
        start..((j + 1) * self.l).min(self.n)
    }
}

/// Select and copy the kept rows of one window (`rows`: M rows, None = padding) into its N
/// rows of B' (`vals`, N×n_p) and D (`idx`, N×q).
fn prune_window(
    rows: &[Option<&[f32]>],
    source: &Source,
    n_keep: usize,
    q: usize,
    n_p: usize,
    vals: &mut [f32],
    idx: &mut [u8],
) {
    let scores = group_scores(rows, source.l, q);
    let mut order: Vec<usize> = Vec::with_capacity(rows.len());
    for j in 0..q {
        select_largest(&scores, q, j, n_keep, &mut order);
        let cols = source.group_columns(j);
        for (i, &pos) in order.iter().enumerate() {
            idx[i * q + j] = pos as u8;
            if let Some(row) = rows[pos] {
                vals[i * n_p + cols.start..i * n_p + cols.end].copy_from_slice(&row[cols.clone()]);
            }
        }
    }
}

/// scores[pos·q + j] = Σ |value| of row `pos` over group j's columns (0 for padding).
fn group_scores(rows: &[Option<&[f32]>], l: usize, q: usize) -> Vec<f32> {
    let mut scores = vec![0.0f32; rows.len() * q];
    for (pos, row) in rows.iter().enumerate() {
        if let Some(row) = row {
            for (j, chunk) in row.chunks(l).enumerate() {
                scores[pos * q + j] = chunk.iter().map(|v| v.abs()).sum();
            }
        }
    }
    scores
}

/// Fill `order` with the N positions of largest score for group j (ties: lower position
/// first), sorted by position. `total_cmp` keeps NaN input from panicking.
fn select_largest(scores: &[f32], q: usize, j: usize, n_keep: usize, order: &mut Vec<usize>) {
    let m_window = scores.len() / q;
    let score = |pos: usize| scores[pos * q + j];
    let rank =
        |a: &usize, b: &usize| -> Ordering { score(*b).total_cmp(&score(*a)).then(a.cmp(b)) };
    order.clear();
    order.extend(0..m_window);
    if n_keep < m_window {
        order.select_nth_unstable_by(n_keep - 1, rank);
        order.truncate(n_keep);
    }
    order.sort_unstable();
}

/// Row-major rows×cols → cols×rows, in blocks of output rows so writes stay cache-local.
fn transpose(input: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    const BLOCK: usize = 32;
    let mut out = vec![0.0f32; input.len()];
    out.par_chunks_mut(BLOCK * rows)
        .enumerate()
        .for_each(|(block, chunk)| {
            let first = block * BLOCK;
            let count = chunk.len() / rows;
            for r in 0..rows {
                let src = &input[r * cols + first..r * cols + first + count];
                for (c, &v) in src.iter().enumerate() {
                    chunk[c * rows + r] = v;
                }
            }
        });
    out
}
