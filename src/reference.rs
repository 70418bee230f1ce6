//! The CPU reference `C = alpha * A ⊗ (B', D) + beta * C` in FP32, parallel over rows of C.
//! Every correctness test and the tuner's verification compare against it.

use crate::format::{CompressedWeight, FormatError};
use rayon::prelude::*;

/// Rows of A handled together, so that each row of B' is read once per block, not per row.
const ROW_BLOCK: usize = 8;

/// `C = alpha * A ⊗ (B', D) + beta * C`, A m×k and C m×n row-major, accumulated in f32.
/// With `beta == 0` C is write-only: whatever it held (NaN included) is ignored.
pub fn spmm(
    a: &[f32],
    m: usize,
    w: &CompressedWeight,
    alpha: f32,
    beta: f32,
    c: &mut [f32],
) -> Result<(), FormatError> {
    w.validate()?;
    check_operand("matrix A", a.len(), m, w.k)?;
    check_operand("matrix C", c.len(), m, w.n)?;
    if m == 0 {
        return Ok(());
    }
    c.par_chunks_mut(ROW_BLOCK * w.n)
        .zip(a.par_chunks(ROW_BLOCK * w.k))
        .for_each(|(c_block, a_block)| {
            let acc = accumulate_block(a_block, w);
            for (c_value, acc_value) in c_block.iter_mut().zip(&acc) {
                *c_value = if beta == 0.0 {
                    alpha * acc_value
                } else {
                    alpha * acc_value + beta * *c_value
                };
            }
        });
    Ok(())
}

/// A_block ⊗ (B', D) for a few rows of A (row-major, k columns each); returns rows × n.
fn accumulate_block(a_block: &[f32], w: &CompressedWeight) -> Vec<f32> {
    let (n, l, q) = (w.n, w.l, w.q());
    let (n_keep, m_window) = (w.nm.n as usize, w.nm.m as usize);
    let rows = a_block.len() / w.k;
    let mut acc = vec![0.0f32; rows * n];
    for u in 0..w.w() {
        let window_start = (u / n_keep) * m_window;
        let b_row = &w.values[u * n..(u + 1) * n];
        let d_row = &w.indices[u * q..(u + 1) * q];
        for r in 0..rows {
            let a_row = &a_block[r * w.k..(r + 1) * w.k];
            let acc_row = &mut acc[r * n..(r + 1) * n];
            let groups = acc_row
                .chunks_exact_mut(l)
                .zip(b_row.chunks_exact(l))
                .zip(d_row);
            for ((acc_group, b_group), &d) in groups {
                let a_value = a_row[window_start + d as usize];
                for (x, &b) in acc_group.iter_mut().zip(b_group) {
                    *x += a_value * b;
                }
            }
        }
    }
    acc
}

fn check_operand(
    what: &'static str,
    got: usize,
    rows: usize,
    cols: usize,
) -> Result<(), FormatError> {
    let expected = rows.checked_mul(cols);
    if expected != Some(got) {
        let expected =
            expected.map_or_else(|| "more than usize::MAX".to_string(), |e| e.to_string());
        return Err(FormatError::Invalid {
            what,
            detail: format!("has {got} elements, expected {rows}×{cols} = {expected}"),
        });
    }
    Ok(())
}

/// Dense `A · B` (A m×k, B k×n, both row-major) with f64 accumulation: the ground truth the
/// sparse paths are compared with.
///
/// # Panics
/// If `a` or `b` does not have m·k or k·n elements (a test helper; callers own the sizes).
pub fn dense_matmul(a: &[f32], m: usize, k: usize, b: &[f32], n: usize) -> Vec<f32> {
    assert_eq!(a.len(), m * k, "dense_matmul: A must have m·k elements");
    assert_eq!(b.len(), k * n, "dense_matmul: B must have k·n elements");
    let mut c = vec![0.0f32; m * n];
    if n == 0 {
        return c;
    }
    c.par_chunks_mut(n).enumerate().for_each(|(i, c_row)| {
        let mut acc = vec![0.0f64; n];
        for p in 0..k {
            let a_value = a[i * k + p] as f64;
            for (x, &b_value) in acc.iter_mut().zip(&b[p * n..(p + 1) * n]) {
                *x += a_value * b_value as f64;
            }
        }
        for (out, x) in c_row.iter_mut().zip(acc) {
            *out = x as f32;
        }
    });
    c
}

/// ‖got − want‖₂ / ‖want‖₂ in f64. NaN or infinity anywhere, or a length mismatch, gives
/// `f64::INFINITY` so that no comparison can pass by accident; 0 when both are all zero.
pub fn relative_error(got: &[f32], want: &[f32]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    let mut diff = 0.0f64;
    let mut norm = 0.0f64;
    for (&g, &w) in got.iter().zip(want) {
        if !g.is_finite() || !w.is_finite() {
            return f64::INFINITY;
        }
        let d = g as f64 - w as f64;
        diff += d * d;
        norm += (w as f64) * (w as f64);
    }
    if norm == 0.0 {
        return if diff == 0.0 { 0.0 } else { f64::INFINITY };
    }
    (diff / norm).sqrt()
}
