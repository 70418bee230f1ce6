//! Random problem instances on the GPU: one weight per (n, k, N:M, L) shared by every m, and
//! rotating activation sets so that small problems are not timed from L2.

use crate::format::{CompressedWeight, FormatError};
use crate::gpu::Gpu;
use crate::kernels::{
    upload_compressed, DeviceColInfo, DeviceColInfos, DeviceIndices, OperandError, Workspace,
};
use crate::problem::{NmPattern, Problem};
use cudarc::driver::CudaSlice;
use rand::rngs::SmallRng;
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};

/// A random N:M weight, on the host (indices, for col_info) and on the device.
pub struct DeviceWeight {
    pub host: CompressedWeight,
    pub values: CudaSlice<f32>,
    /// D as the family that serves the weight's L reads it (u8 at L = 1, else i32).
    pub indices: DeviceIndices,
    /// The decompressed k×n weight: cuBLAS's operand, and the verification reference.
    pub dense: CudaSlice<f32>,
    col_infos: DeviceColInfos,
    /// Further copies of (B', dense weight) that decode problems rotate through while they
    /// are timed, so that every launch finds its weight in DRAM, as a layer of a model's
    /// forward pass does. D and col_info are shared: at L = 32 they are at most 1/32 of B'.
    rotation: Vec<(CudaSlice<f32>, CudaSlice<f32>)>,
}

/// Random kept-row positions: N distinct sorted positions per window and column group.
pub fn random_indices(k: usize, n: usize, nm: NmPattern, l: usize, seed: u64) -> Vec<u8> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let (windows, q) = (k / nm.m as usize, n / l);
    let mut indices = vec![0u8; windows * nm.n as usize * q];
    for window in 0..windows {
        for group in 0..q {
            let mut kept: Vec<usize> = sample(&mut rng, nm.m as usize, nm.n as usize).into_vec();
            kept.sort_unstable();
            for (slot, pos) in kept.into_iter().enumerate() {
                indices[(window * nm.n as usize + slot) * q + group] = pos as u8;
            }
        }
    }
    indices
}

/// A random weight for `problem`'s (n, k, N:M, L) on the host: random kept rows
/// ([`random_indices`]), values uniform in [-1, 1).
pub fn random_weight(problem: &Problem, seed: u64) -> Result<CompressedWeight, FormatError> {
    let (k, n, nm, l) = (problem.k, problem.n, problem.nm, problem.l);
    let indices = random_indices(k, n, nm, l, seed);
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x5eed);
    let values: Vec<f32> = (0..problem.w() * n)
        .map(|_| rng.gen_range(-1.0..1.0))
        .collect();
    CompressedWeight::from_parts(k, n, nm, l, values, indices)
}

impl DeviceWeight {
    /// A random weight for `problem`'s (n, k, N:M, L); values uniform in [-1, 1).
    pub fn random(gpu: &Gpu, problem: &Problem, seed: u64) -> Result<Self, OperandError> {
        Self::upload(gpu, random_weight(problem, seed)?)
    }

    /// Put an existing compressed weight on the device.
    pub fn upload(gpu: &Gpu, host: CompressedWeight) -> Result<Self, OperandError> {
        let (values, indices) = upload_compressed(&gpu.stream, &host)?;
        let mut dense = gpu.alloc(host.k * host.n)?;
        // The decompressing support kernel reads i32 positions: u8 ones are widened for it.
        let widened;
        let wide = match indices.wide() {
            Some(d) => d,
            None => {
                widened = gpu.upload(&host.indices_i32())?;
                &widened
            }
        };
        gpu.decompress(&values, wide, &mut dense, host.w(), host.n, host.nm, host.l)?;
        Ok(Self {
            host,
            values,
            indices,
            dense,
            col_infos: DeviceColInfos::default(),
            rotation: Vec::new(),
        })
    }

    /// Make the weight rotate over `copies` copies in all (the original included).
    pub fn ensure_rotation(&mut self, gpu: &Gpu, copies: usize) -> Result<(), OperandError> {
        while self.rotation.len() + 1 < copies {
            let values = gpu.duplicate(&self.values)?;
            let dense = gpu.duplicate(&self.dense)?;
            self.rotation.push((values, dense));
        }
        Ok(())
    }

    /// Copies the weight rotates over (1 unless [`DeviceWeight::ensure_rotation`] made more).
    pub fn copies(&self) -> usize {
        1 + self.rotation.len()
    }

    /// B' of copy `set % copies()`.
    pub fn values_of(&self, set: usize) -> &CudaSlice<f32> {
        match set % self.copies() {
            0 => &self.values,
            i => &self.rotation[i - 1].0,
        }
    }

    /// The dense weight of copy `set % copies()`.
    pub fn dense_of(&self, set: usize) -> &CudaSlice<f32> {
        match set % self.copies() {
            0 => &self.dense,
            i => &self.rotation[i - 1].1,
        }
    }

    /// Bytes of B' and D: what a launch streams from DRAM at least.
    pub fn sparse_bytes(&self) -> u64 {
        4 * self.values.len() as u64 + self.indices.bytes()
    }

    /// Build col_info for a (k_s, n_s) tiling unless it exists.
    pub fn prepare_col_info(&mut self, gpu: &Gpu, k_s: u32, n_s: u32) -> Result<(), OperandError> {
        self.col_infos
            .prepare(&gpu.stream, &self.host, (k_s, n_s))
            .map(|_| ())
    }

    /// col_info of a tiling prepared earlier.
    pub fn col_info(&self, k_s: u32, n_s: u32) -> Option<&DeviceColInfo> {
        self.col_infos.get(k_s, n_s)
    }
}

/// Rotating activation sets: enough copies of A and C that one pass over them exceeds L2.
pub struct Activations {
    pub a_sets: Vec<CudaSlice<f32>>,
    pub c_sets: Vec<CudaSlice<f32>>,
    pub reference: CudaSlice<f32>,
    pub workspace: Workspace,
}

impl Activations {
    pub fn random(
        gpu: &Gpu,
        problem: &Problem,
        (workspace_floats, split_counters): (usize, usize),
        seed: u32,
    ) -> Result<Self, OperandError> {
        let (a_len, c_len) = (problem.m * problem.k, problem.m * problem.n);
        let bytes_per_set = 4 * (a_len + c_len) as u64;
        let sets = rotation_sets(bytes_per_set, gpu.profile().l2_bytes);
        let mut a_sets = Vec::with_capacity(sets);
        let mut c_sets = Vec::with_capacity(sets);
        for set in 0..sets {
            let mut a = gpu.alloc(a_len)?;
            gpu.fill_uniform(&mut a, seed.wrapping_add(set as u32 * 7919))?;
            a_sets.push(a);
            c_sets.push(gpu.alloc(c_len)?);
        }
        Ok(Self {
            a_sets,
            c_sets,
            reference: gpu.alloc(c_len)?,
            workspace: Workspace::new(&gpu.stream, workspace_floats, split_counters)?,
        })
    }

    pub fn sets(&self) -> usize {
        self.a_sets.len()
    }
}

/// Copies needed so that cycling through them touches at least 3× the L2 size (at most 16).
pub fn rotation_sets(bytes_per_set: u64, l2_bytes: u64) -> usize {
    (3 * l2_bytes).div_ceil(bytes_per_set.max(1)).clamp(1, 16) as usize
}

/// Weight copies a decode problem rotates over: enough that cycling through them touches
/// 3× the L2 size, at most [`MAX_WEIGHT_COPIES`].
pub fn weight_copies(weight_bytes: u64, l2_bytes: u64) -> usize {
    (3 * l2_bytes)
        .div_ceil(weight_bytes.max(1))
        .clamp(1, MAX_WEIGHT_COPIES as u64) as usize
}

/// Cap on weight copies: 2048² at 4:32 (2 MB of B') needs 75 to cover 3× a 50 MB L2.
pub const MAX_WEIGHT_COPIES: usize = 96;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_indices_are_valid_nm_patterns() {
        let nm = NmPattern::new(3, 8).unwrap();
        let idx = random_indices(32, 16, nm, 4, 7);
        let values = vec![1.0f32; 12 * 16];
        assert!(CompressedWeight::from_parts(32, 16, nm, 4, values, idx).is_ok());
    }

    #[test]
    fn rotation_covers_three_l2s() {
        assert_eq!(rotation_sets(1 << 20, 50 << 20), 16);
        assert_eq!(rotation_sets(100 << 20, 50 << 20), 2);
        assert_eq!(rotation_sets(1 << 30, 50 << 20), 1);
    }
}
