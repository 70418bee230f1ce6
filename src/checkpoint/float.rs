//! The float types a checkpoint's weights come in, and the conversions pruning needs.
//!
//! safetensors data is little-endian and not necessarily aligned in the file, so values are
//! decoded from bytes, never cast in place. Widening F16 or BF16 to f32 is exact, and so is
//! narrowing back a value that came from them: pruning selects values and never computes new
//! ones, so B' can keep the input's type without losing anything.

use crate::format::Padding;
use half::{bf16, f16};
use rayon::prelude::*;
use safetensors::Dtype;

/// A float type nmtune prunes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatType {
    F32,
    F16,
    BF16,
}

impl FloatType {
    pub fn of(dtype: Dtype) -> Option<Self> {
        match dtype {
            Dtype::F32 => Some(Self::F32),
            Dtype::F16 => Some(Self::F16),
            Dtype::BF16 => Some(Self::BF16),
            _ => None,
        }
    }

    pub fn dtype(self) -> Dtype {
        match self {
            Self::F32 => Dtype::F32,
            Self::F16 => Dtype::F16,
            Self::BF16 => Dtype::BF16,
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::F32 => 4,
            Self::F16 | Self::BF16 => 2,
        }
    }

    /// Every element of `bytes` as f32 (exact).
    pub fn widen(self, bytes: &[u8]) -> Vec<f32> {
        let chunks = bytes.chunks_exact(self.size());
        match self {
            Self::F32 => chunks.map(decode_f32).collect(),
            Self::F16 => chunks.map(decode_f16).collect(),
            Self::BF16 => chunks.map(decode_bf16).collect(),
        }
    }

    /// `values` as little-endian bytes of this type; exact for values widened from it.
    pub fn narrow(self, values: &[f32]) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(values.len() * self.size());
        match self {
            Self::F32 => values.iter().for_each(|v| bytes.extend(v.to_le_bytes())),
            Self::F16 => values
                .iter()
                .for_each(|v| bytes.extend(f16::from_f32(*v).to_le_bytes())),
            Self::BF16 => values
                .iter()
                .for_each(|v| bytes.extend(bf16::from_f32(*v).to_le_bytes())),
        }
        bytes
    }

    /// nmtune's dense weight B = Wᵀ from the bytes of a PyTorch weight W ([n, k], out × in):
    /// k_p×n_p f32 row-major, the padding rows and columns zero. One pass, one allocation:
    /// the only full-size copy of a weight that pruning makes.
    pub fn transposed_padded(self, bytes: &[u8], padding: &Padding) -> Vec<f32> {
        match self {
            Self::F32 => transpose_with(bytes, 4, padding, decode_f32),
            Self::F16 => transpose_with(bytes, 2, padding, decode_f16),
            Self::BF16 => transpose_with(bytes, 2, padding, decode_bf16),
        }
    }
}

fn decode_f32(b: &[u8]) -> f32 {
    f32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn decode_f16(b: &[u8]) -> f32 {
    f16::from_le_bytes([b[0], b[1]]).to_f32()
}

fn decode_bf16(b: &[u8]) -> f32 {
    bf16::from_le_bytes([b[0], b[1]]).to_f32()
}

/// Rows of B written per task: each reads a contiguous run of every row of W.
const BLOCK: usize = 32;

/// [`FloatType::transposed_padded`] for one element decoder (monomorphised, so the decoder
/// inlines into the loop).
fn transpose_with(
    bytes: &[u8],
    size: usize,
    padding: &Padding,
    decode: impl Fn(&[u8]) -> f32 + Sync,
) -> Vec<f32> {
    let (k, n) = (padding.k_original, padding.n_original);
    let n_p = padding.n_padded;
    let mut b = vec![0.0f32; padding.k_padded * n_p];
    b.par_chunks_mut(BLOCK * n_p)
        .enumerate()
        .for_each(|(block, rows)| {
            let first = block * BLOCK;
            // Padding rows (r ≥ k) stay zero.
            let real = (rows.len() / n_p).min(k.saturating_sub(first));
            for i in 0..n {
                let run = &bytes[(i * k + first) * size..(i * k + first + real) * size];
                for (r, element) in run.chunks_exact(size).enumerate() {
                    rows[r * n_p + i] = decode(element);
                }
            }
        });
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_what_was_widened_is_exact() {
        let values = [1.0f32, -0.0, 3.140625, 65504.0, -1.5e-5, 0.1];
        for ty in [FloatType::F32, FloatType::F16, FloatType::BF16] {
            let bytes = ty.narrow(&values);
            let widened = ty.widen(&bytes);
            assert_eq!(ty.narrow(&widened), bytes, "{ty:?}");
        }
        assert_eq!(
            FloatType::F32.widen(&FloatType::F32.narrow(&values)),
            values
        );
    }

    #[test]
    fn transposition_pads_with_zeros() {
        // W = [[1, 2, 3], [4, 5, 6]]: n = 2, k = 3; padded to k_p = 4, n_p = 4.
        let w: Vec<f32> = (1..=6).map(|v| v as f32).collect();
        let padding = Padding {
            k_original: 3,
            k_padded: 4,
            n_original: 2,
            n_padded: 4,
        };
        let b = FloatType::F32.transposed_padded(&FloatType::F32.narrow(&w), &padding);
        #[rustfmt::skip]
        let expected = [
            1.0, 4.0, 0.0, 0.0,
            2.0, 5.0, 0.0, 0.0,
            3.0, 6.0, 0.0, 0.0,
            0.0, 0.0, 0.0, 0.0,
        ];
        assert_eq!(b, expected);
    }
}
