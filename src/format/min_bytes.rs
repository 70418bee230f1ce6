//! The least memory traffic of one product `C = A ⊗ (B', D)`: the bytes every kernel must move
//! between DRAM and the SMs, whatever its tiling. The report's `min_bytes` and achieved
//! bandwidth, and the roofline's DRAM intensity, are read off this one rule.

use super::tc::KeptRowIndex;
use super::{DeviceIndex, ElementWiseIndex};
use crate::problem::{is_element_wise, Dtype, Problem};

/// Bytes of one element of D as the tiled and decode families read it ([`DeviceIndex`]): the
/// u8 window positions of [`super::CompressedWeight`] are widened before they are uploaded.
pub const DEVICE_INDEX_BYTES: u64 = std::mem::size_of::<DeviceIndex>() as u64;

/// Bytes of one element of D on the device for vector length `l`: [`DEVICE_INDEX_BYTES`],
/// except for element-wise N:M (L = 1), whose kernels read the u8 positions as stored
/// ([`ElementWiseIndex`]).
pub fn device_index_bytes(l: usize) -> u64 {
    if is_element_wise(l) {
        std::mem::size_of::<ElementWiseIndex>() as u64
    } else {
        DEVICE_INDEX_BYTES
    }
}

/// The bytes each operand of one product must cross DRAM at least: B', D and A read once, C
/// written once. C is not read (the kernels run with beta = 0), col_info is left out (a few
/// integers per tile, and only packing kernels read it), and so are split-K's partial sums
/// and a transposing pass over A: they are a kernel's choice, not the problem's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinBytes {
    /// B': w×n elements of the problem's type, w = k·N/M.
    pub values: u64,
    /// D: w×q indices, q = n/L, of [`device_index_bytes`] each; none when N = M (dense
    /// kernels read no indices).
    pub indices: u64,
    /// A: m×k elements.
    pub a: u64,
    /// C: m×n elements.
    pub c: u64,
}

impl MinBytes {
    pub fn of(problem: &Problem) -> Self {
        let (m, n, k) = (problem.m as u64, problem.n as u64, problem.k as u64);
        let (w, q) = (problem.w() as u64, problem.q() as u64);
        let index_count = if problem.nm.is_dense() { 0 } else { w * q };
        // The tensor-core family reads its kept-row table instead of D.
        let index_bytes = if problem.dtype == Dtype::F32 {
            device_index_bytes(problem.l)
        } else {
            std::mem::size_of::<KeptRowIndex>() as u64
        };
        let element = problem.dtype.bytes();
        Self {
            values: w * n * element,
            indices: index_count * index_bytes,
            a: m * k * element,
            c: m * n * element,
        }
    }

    /// The compressed weight, B' and D: what bounds a decode product's time.
    pub fn weight(&self) -> u64 {
        self.values + self.indices
    }

    /// Every operand: the `min_bytes` of `nmtune report`.
    pub fn total(&self) -> u64 {
        self.weight() + self.a + self.c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::NmPattern;

    fn bytes(m: usize, n: usize, k: usize, (keep, window): (u32, u32), l: usize) -> MinBytes {
        let nm = NmPattern::new(keep, window).unwrap();
        MinBytes::of(&Problem::new(m, n, k, nm, l).unwrap())
    }

    #[test]
    fn decode_problem_at_l32_is_almost_all_b_prime() {
        // w = 4096·8/32 = 1024, q = 4096/32 = 128.
        let b = bytes(1, 4096, 4096, (8, 32), 32);
        assert_eq!(b.values, 4096 * 1024 * 4); // 16,777,216
        assert_eq!(b.indices, 128 * 1024 * 4); // 524,288
        assert_eq!((b.a, b.c), (4096 * 4, 4096 * 4)); // 16,384 each
        assert_eq!(b.weight(), 17_301_504);
        assert_eq!(b.total(), 17_334_272);
    }

    #[test]
    fn element_wise_indices_are_a_byte_per_element_of_b_prime() {
        // L = 1: q = n, so D holds as many entries as B' holds floats, read as bytes.
        let b = bytes(16, 11008, 4096, (4, 32), 1);
        assert_eq!(b.values, 22_544_384);
        assert_eq!(b.indices, b.values / 4);
        assert_eq!((b.a, b.c), (262_144, 704_512));
        assert_eq!(b.total(), 29_147_136);
    }

    #[test]
    fn dense_pattern_reads_no_indices() {
        let b = bytes(256, 64, 64, (32, 32), 32);
        assert_eq!(b.indices, 0);
        assert_eq!(b.total(), 64 * 64 * 4 + 256 * 64 * 4 * 2); // 147,456
    }
}
