//! The weight as the tensor-core family reads it (BF16/FP16; docs/design.md
//! "Tensor cores: the kernel family"): B' rounded to the element type and laid out tile by
//! tile as the kernel's shared memory holds it, and each group's kept rows as the rows of A
//! they multiply.

use super::{CompressedWeight, FormatError};
use crate::problem::Dtype;
use half::{bf16, f16};
use rayon::prelude::*;

/// Columns of C (and of B') a tensor-core block computes: one image tile is this wide.
pub const TC_BLOCK_COLS: usize = 128;
/// An entry of the kept-row table: the row of A a kept row multiplies.
pub type KeptRowIndex = u16;
/// Kept-row table entries are [`KeptRowIndex`]: rows of A beyond this cannot be named.
pub const TC_MAX_K: usize = 1 << 16;

/// `x` rounded to nearest (ties to even) in `dtype`, as its bits (f32: the low 16 bits
/// would lose it, so f32 is not a 16-bit type and has no bits here).
pub fn to_bits(dtype: Dtype, x: f32) -> u16 {
    match dtype {
        Dtype::Bf16 => bf16::from_f32(x).to_bits(),
        Dtype::F16 => f16::from_f32(x).to_bits(),
        Dtype::F32 => unreachable!("f32 has no 16-bit encoding"),
    }
}

/// The value a 16-bit pattern of `dtype` stands for (exact in f32).
pub fn from_bits(dtype: Dtype, bits: u16) -> f32 {
    match dtype {
        Dtype::Bf16 => bf16::from_bits(bits).to_f32(),
        Dtype::F16 => f16::from_bits(bits).to_f32(),
        Dtype::F32 => unreachable!("f32 has no 16-bit encoding"),
    }
}

/// Every value of `values` rounded to `dtype`, as bits.
pub fn encode(dtype: Dtype, values: &[f32]) -> Vec<u16> {
    values.par_iter().map(|&x| to_bits(dtype, x)).collect()
}

/// Every pattern of `bits` as the f32 it stands for.
pub fn decode(dtype: Dtype, bits: &[u16]) -> Vec<f32> {
    bits.par_iter().map(|&b| from_bits(dtype, b)).collect()
}

/// Unit roundoff of `dtype` (half its spacing at 1): 2^-8 for BF16, 2^-11 for FP16, 2^-24 for
/// FP32. The tensor-core kernels' results are within a small multiple of it of the FP32 sum
/// of the same rounded inputs (docs/design.md "Tensor cores: the kernel family").
pub fn unit_roundoff(dtype: Dtype) -> f64 {
    match dtype {
        Dtype::Bf16 => (2.0f64).powi(-8),
        Dtype::F16 => (2.0f64).powi(-11),
        Dtype::F32 => (2.0f64).powi(-24),
    }
}

/// The largest norm-wise relative error (‖C − C_ref‖₂ / ‖C_ref‖₂) a tensor-core result may
/// have against the FP32 product of the same rounded inputs: rounding C to `dtype` costs at
/// most one unit roundoff per element, and FP32 sums in another order far less at the k of
/// a layer, so twice the unit roundoff.
pub fn tolerance(dtype: Dtype) -> f64 {
    2.0 * unit_roundoff(dtype)
}

/// The weight of one (k, n, N:M, L) layer prepared for the tensor-core kernels of one stage
/// depth (`kept_rows` a stage).
#[derive(Debug, Clone, PartialEq)]
pub struct TcWeight {
    pub dtype: Dtype,
    /// Kept rows a stage of the kernels this image serves.
    pub kept_rows: usize,
    pub k: usize,
    pub n: usize,
    /// Kept rows of B' (k·N/M).
    pub w: usize,
    /// B' in `dtype`, tile by tile ([`TcWeight::image_index`]).
    pub image: Vec<u16>,
    /// q×w: `kept_k[g·w + u]` = the row of A that kept row u of column group g multiplies.
    pub kept_k: Vec<KeptRowIndex>,
}

impl TcWeight {
    /// Round B' to `dtype` and lay it out for stages of `kept_rows` rows. The kernels' blocks
    /// are [`TC_BLOCK_COLS`] wide and a stage holds whole kept rows, so n and w must divide
    /// evenly, and every row index must fit u16.
    pub fn prepare(
        weight: &CompressedWeight,
        dtype: Dtype,
        kept_rows: usize,
    ) -> Result<Self, FormatError> {
        weight.validate()?;
        let (k, n, w) = (weight.k, weight.n, weight.w());
        let invalid = |detail: String| FormatError::Invalid {
            what: "tensor-core weight",
            detail,
        };
        if dtype == Dtype::F32 {
            return Err(invalid("the tensor-core layout is for bf16 and f16".into()));
        }
        if kept_rows == 0 || kept_rows % 8 != 0 || w % kept_rows != 0 {
            return Err(invalid(format!(
                "w = {w} kept rows do not make whole stages of {kept_rows}"
            )));
        }
        if n % TC_BLOCK_COLS != 0 {
            return Err(invalid(format!(
                "n = {n} is not a multiple of {TC_BLOCK_COLS}"
            )));
        }
        if k > TC_MAX_K {
            return Err(invalid(format!(
                "k = {k} exceeds the u16 row index ({TC_MAX_K})"
            )));
        }
        // Tile by tile in parallel (a tile is one contiguous run of the image): a large
        // layer's B' has some 10⁸ values.
        let tile_len = TC_BLOCK_COLS * kept_rows;
        let stages = w / kept_rows;
        let mut image = vec![0u16; w * n];
        image
            .par_chunks_mut(tile_len)
            .enumerate()
            .for_each(|(tile, out)| {
                let (block, stage) = (tile / stages, tile % stages);
                for kk in 0..kept_rows {
                    let u = stage * kept_rows + kk;
                    for nn in 0..TC_BLOCK_COLS {
                        let col = block * TC_BLOCK_COLS + nn;
                        let at = Self::image_index(kept_rows, w, u, col) - tile * tile_len;
                        out[at] = to_bits(dtype, weight.values[u * n + col]);
                    }
                }
            });
        let q = weight.q();
        let mut kept_k = vec![0u16; q * w];
        for g in 0..q {
            for u in 0..w {
                kept_k[g * w + u] = weight.absolute_row(u, g) as u16;
            }
        }
        Ok(Self {
            dtype,
            kept_rows,
            k,
            n,
            w,
            image,
            kept_k,
        })
    }

    /// Where B'[u][col] lies in the image: tile (column block, stage) after tile, each the
    /// stage's `kept_rows`×128 values as the kernel's shared memory holds them — `wgmma`'s
    /// K-major layout without swizzle, 8×8 core matrices of 128 bytes, core matrix
    /// (column/8, row/8) at ((column/8)·kept_rows/8 + row/8)·64, row r of it at + 8·r.
    pub fn image_index(kept_rows: usize, w: usize, u: usize, col: usize) -> usize {
        let (block, nn) = (col / TC_BLOCK_COLS, col % TC_BLOCK_COLS);
        let (stage, kk) = (u / kept_rows, u % kept_rows);
        let tile = (block * (w / kept_rows) + stage) * (TC_BLOCK_COLS * kept_rows);
        tile + ((nn / 8) * (kept_rows / 8) + kk / 8) * 64 + (nn % 8) * 8 + kk % 8
    }

    /// B' (w×n row-major) as the image holds it: the compressed values rounded to `dtype`.
    pub fn values(&self) -> Vec<f32> {
        let mut out = vec![0f32; self.w * self.n];
        for u in 0..self.w {
            for col in 0..self.n {
                out[u * self.n + col] = from_bits(
                    self.dtype,
                    self.image[Self::image_index(self.kept_rows, self.w, u, col)],
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::prune_and_compress;
    use crate::problem::NmPattern;
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    fn weight(k: usize, n: usize, nm: NmPattern, l: usize, seed: u64) -> CompressedWeight {
        let mut rng = SmallRng::seed_from_u64(seed);
        let dense: Vec<f32> = (0..k * n).map(|_| rng.gen_range(-1.0..1.0)).collect();
        prune_and_compress(&dense, k, n, nm, l).unwrap().0
    }

    #[test]
    fn the_image_holds_every_kept_value_rounded_and_once() {
        let nm = NmPattern { n: 12, m: 32 };
        let w = weight(256, 256, nm, 32, 7);
        for dtype in [Dtype::Bf16, Dtype::F16] {
            let tc = TcWeight::prepare(&w, dtype, 48).unwrap();
            let rounded: Vec<f32> = w
                .values
                .iter()
                .map(|&x| from_bits(dtype, to_bits(dtype, x)))
                .collect();
            assert_eq!(tc.values(), rounded);
            let mut seen = vec![false; tc.image.len()];
            for u in 0..tc.w {
                for col in 0..tc.n {
                    let at = TcWeight::image_index(48, tc.w, u, col);
                    assert!(!seen[at], "two values at {at}");
                    seen[at] = true;
                }
            }
        }
    }

    #[test]
    fn kept_k_names_the_rows_of_a_each_group_keeps() {
        let nm = NmPattern { n: 4, m: 32 };
        let w = weight(512, 256, nm, 64, 3);
        let tc = TcWeight::prepare(&w, Dtype::Bf16, 32).unwrap();
        for g in 0..w.q() {
            for u in 0..w.w() {
                let row = tc.kept_k[g * w.w() + u] as usize;
                assert_eq!(row, w.absolute_row(u, g));
                assert_eq!(row / 32, u / 4, "kept row {u} outside its window");
            }
        }
    }

    #[test]
    fn shapes_the_kernels_cannot_take_are_refused() {
        let w = weight(256, 192, NmPattern { n: 16, m: 32 }, 32, 1);
        let err = TcWeight::prepare(&w, Dtype::Bf16, 32)
            .unwrap_err()
            .to_string();
        assert!(err.contains("multiple of 128"), "{err}");
        let w = weight(96, 128, NmPattern { n: 16, m: 32 }, 32, 1);
        let err = TcWeight::prepare(&w, Dtype::Bf16, 32)
            .unwrap_err()
            .to_string();
        assert!(err.contains("whole stages"), "{err}");
        let w = weight(256, 128, NmPattern { n: 16, m: 32 }, 32, 1);
        assert!(TcWeight::prepare(&w, Dtype::F32, 32).is_err());
    }

    #[test]
    fn rounding_is_to_nearest_and_unit_roundoff_bounds_it() {
        for dtype in [Dtype::Bf16, Dtype::F16] {
            let mut rng = SmallRng::seed_from_u64(5);
            for _ in 0..1000 {
                let x: f32 = rng.gen_range(-3.0..3.0);
                let r = from_bits(dtype, to_bits(dtype, x));
                assert!(
                    ((r - x) / x).abs() as f64 <= unit_roundoff(dtype),
                    "{dtype} {x} → {r}"
                );
            }
        }
    }
}
