//! The performance model (NM-SpMM §III-A): arithmetic intensity, CMAR, occupancy, waves and
//! the roofline give a predicted time for any (configuration, problem, GPU). It prunes the
//! search before anything is timed, and is the whole answer when no GPU is present.

use crate::codegen::{validate::estimated_registers, KernelConfig, Pipeline};
use crate::gpu::GpuProfile;
use crate::problem::Problem;

/// L2→SM bandwidth as a multiple of DRAM bandwidth (Ampere/Hopper parts measure 2.5–3×).
pub const L2_BANDWIDTH_FACTOR: f64 = 2.5;
/// Fixed cost of one kernel launch, seconds.
const LAUNCH_OVERHEAD_S: f64 = 3e-6;
/// Resident warps per SM under which latency is no longer hidden.
const WARPS_TO_HIDE_LATENCY: f64 = 8.0;

/// The model's view of one configuration on one problem.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prediction {
    pub time_s: f64,
    pub compute_s: f64,
    pub memory_s: f64,
    /// Arithmetic intensity of a block (eq. 3, packed footprint for col_info kernels), FLOP/B.
    pub block_intensity: f64,
    /// Compute-to-memory-access ratio of the inner kernel (eq. 6).
    pub cmar: f64,
    pub blocks_per_sm: u32,
    /// Fraction of the last wave's SM slots that hold work, over all waves.
    pub wave_efficiency: f64,
}

/// Expected distinct A columns per k_s window that the tile's column groups need.
pub fn expected_packed_columns(cfg: &KernelConfig) -> f64 {
    let (n, m) = (cfg.nm.n as f64, cfg.nm.m as f64);
    let groups = (cfg.n_s as f64 / cfg.l as f64).max(1.0);
    let kept_by_any = m * (1.0 - (1.0 - n / m).powf(groups));
    cfg.k_s as f64 / m * kept_by_any
}

/// A columns loaded per main-loop step: the whole window, or the packed ones.
fn a_columns_loaded(cfg: &KernelConfig) -> f64 {
    if cfg.packing {
        expected_packed_columns(cfg)
    } else {
        cfg.k_s as f64
    }
}

/// Eq. 3: 2·m_s·n_s·w_s / (4·(m_s·k_s + w_s·n_s + 2·m_s·n_s)).
pub fn block_intensity(cfg: &KernelConfig) -> f64 {
    let (ms, ns, ws) = (cfg.m_s as f64, cfg.n_s as f64, cfg.w_s() as f64);
    2.0 * ms * ns * ws / (4.0 * (ms * a_columns_loaded(cfg) + ws * ns + 2.0 * ms * ns))
}

/// Eq. 6 with α = 1 (128-bit shared loads): m_t·n_t / (m_t + n_t).
pub fn cmar(cfg: &KernelConfig) -> f64 {
    let (mt, nt) = (cfg.m_t as f64, cfg.n_t as f64);
    mt * nt / (mt + nt)
}

/// Resident blocks per SM, limited by threads, registers, shared memory and the block cap.
pub fn blocks_per_sm(cfg: &KernelConfig, gpu: &GpuProfile) -> u32 {
    let threads = cfg.threads().max(1);
    let regs_per_block = threads * estimated_registers(cfg).div_ceil(8) * 8;
    let by_threads = gpu.max_threads_per_sm / threads;
    let by_regs = gpu.regs_per_sm / regs_per_block.max(1);
    let by_smem = gpu.smem_per_sm / cfg.smem_bytes().max(1);
    by_threads
        .min(by_regs)
        .min(by_smem)
        .min(gpu.max_blocks_per_sm)
}

/// Share of issue slots the inner loop spends on FMAs: per compressed row a thread issues
/// m_t·n_t FMAs, (m_t + n_t)/4 vector shared loads per group, and an index load.
fn issue_efficiency(cfg: &KernelConfig) -> f64 {
    let (mt, nt, g) = (
        cfg.m_t as f64,
        cfg.n_t as f64,
        cfg.groups_per_thread() as f64,
    );
    let fma = mt * nt;
    fma / (fma + g * (mt / 4.0 + 1.0) + nt / 4.0 + 1.0)
}

/// How much of the load latency the pipeline hides.
fn pipeline_efficiency(pipeline: Pipeline) -> f64 {
    match pipeline {
        Pipeline::Single => 0.70,
        Pipeline::RegisterDouble => 0.88,
        Pipeline::CpAsync { stages: 2 } => 0.90,
        Pipeline::CpAsync { .. } => 0.95,
    }
}

/// Predicted time of `cfg` on `problem` on `gpu`.
pub fn predict(cfg: &KernelConfig, problem: &Problem, gpu: &GpuProfile) -> Prediction {
    let (m, n, k) = (problem.m as f64, problem.n as f64, problem.k as f64);
    let m_tiles = (problem.m as f64 / cfg.m_s as f64).ceil();
    let n_tiles = (problem.n as f64 / cfg.n_s as f64).ceil();
    let k_tiles = (problem.k as f64 / cfg.k_s as f64).ceil();
    let blocks = m_tiles * n_tiles * cfg.split_k as f64;
    let per_sm = blocks_per_sm(cfg, gpu).max(1) as f64;
    let slots = per_sm * gpu.sm_count as f64;
    let waves = (blocks / slots).ceil().max(1.0);
    let wave_efficiency = blocks / (waves * slots);

    // Compute: padded tiles do full work.
    let padded_flops =
        2.0 * m_tiles * cfg.m_s as f64 * n_tiles * cfg.n_s as f64 * problem.w() as f64;
    let resident_warps = (per_sm * cfg.threads() as f64 / 32.0)
        .min(blocks / gpu.sm_count as f64 * cfg.threads() as f64 / 32.0);
    let latency_hiding =
        (resident_warps / WARPS_TO_HIDE_LATENCY).min(1.0) * pipeline_efficiency(cfg.pipeline);
    let compute_rate =
        gpu.peak_fp32_flops() * issue_efficiency(cfg) * latency_hiding.max(0.05) * wave_efficiency;
    let compute_s = padded_flops / compute_rate;

    // Memory: every input once from DRAM; the tiles' re-reads from L2.
    let dram_bytes =
        4.0 * (m * k + problem.w() as f64 * n + problem.w() as f64 * problem.q() as f64 + m * n);
    let tile_bytes = 4.0
        * (cfg.m_s as f64 * a_columns_loaded(cfg)
            + cfg.w_s() as f64 * cfg.n_s as f64
            + cfg.w_s() as f64 * cfg.q_s() as f64);
    let l2_bytes = m_tiles * n_tiles * k_tiles * tile_bytes;
    let memory_s = (dram_bytes / gpu.dram_bytes_per_s())
        .max(l2_bytes / (L2_BANDWIDTH_FACTOR * gpu.dram_bytes_per_s()));

    let reduce_s = if cfg.split_k > 1 {
        4.0 * m * n * (cfg.split_k as f64 * 2.0 + 1.0) / gpu.dram_bytes_per_s() + LAUNCH_OVERHEAD_S
    } else {
        0.0
    };
    Prediction {
        time_s: compute_s.max(memory_s) + reduce_s + LAUNCH_OVERHEAD_S,
        compute_s,
        memory_s,
        block_intensity: block_intensity(cfg),
        cmar: cmar(cfg),
        blocks_per_sm: per_sm as u32,
        wave_efficiency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::WarpLayout;
    use crate::problem::NmPattern;

    fn large(nm: NmPattern, packing: bool) -> KernelConfig {
        KernelConfig {
            m_s: 64,
            n_s: 128,
            k_s: 32,
            m_t: 8,
            n_t: 8,
            warp: WarpLayout::new(4, 8),
            nm,
            l: 32,
            packing,
            pipeline: Pipeline::CpAsync { stages: 3 },
            split_k: 1,
        }
    }

    #[test]
    fn intensity_matches_equation_3_by_hand() {
        // 50 %: w_s = 16; 2·64·128·16 / (4·(64·32 + 16·128 + 2·64·128)) = 262144 / 81920 = 3.2
        let cfg = large(NmPattern::new(16, 32).unwrap(), false);
        assert!((block_intensity(&cfg) - 3.2).abs() < 1e-12);
        assert!((cmar(&cfg) - 4.0).abs() < 1e-12);
    }

    #[test]
    fn packing_raises_intensity_at_high_sparsity() {
        let nm = NmPattern::new(4, 32).unwrap();
        assert!(block_intensity(&large(nm, true)) > block_intensity(&large(nm, false)));
        // 4 groups each keeping 4 of 32: 32·(1 − (7/8)^4) ≈ 13.2 distinct columns.
        assert!((expected_packed_columns(&large(nm, true)) - 13.24).abs() < 0.01);
    }

    #[test]
    fn prediction_is_below_peak_and_scales_with_sparsity() {
        let gpu = GpuProfile::builtin("h100").unwrap();
        let dense = Problem::new(4096, 4096, 4096, NmPattern::new(32, 32).unwrap(), 32).unwrap();
        let half = Problem::new(4096, 4096, 4096, NmPattern::new(16, 32).unwrap(), 32).unwrap();
        let t_dense = predict(&large(dense.nm, false), &dense, &gpu).time_s;
        let t_half = predict(&large(half.nm, false), &half, &gpu).time_s;
        assert!(dense.sparse_flops() / t_dense < gpu.peak_fp32_flops());
        assert!(t_half < t_dense && t_half > t_dense / 2.5);
    }
}
