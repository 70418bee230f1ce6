//! The configuration space of one sparsity pattern on one GPU.
//!
//! [`search_space`] lists every configuration the tuner may time, every family; [`compile_set`] the
//! distinct kernels behind them (split-K is a run-time argument of the kernel, so
//! configurations that differ only in `split_k` share one compiled kernel, see
//! [`compile_key`]).

use super::render::compile_key;
use super::validate::{
    validate, DECODE_LANE_COLUMNS, DECODE_STAGES, EW_LANE_ROWS, EW_WARP_COLUMNS, MIN_BLOCKS,
    ROW_CHUNKS, SPLIT_K_VALUES, STAGES,
};
use super::{ACopy, EwShape, Family, KernelConfig, TcConfig, WarpLayout};
use crate::gpu_profile::GpuProfile;
use crate::problem::{is_element_wise, ALayout, Dtype, NmPattern};
use std::collections::BTreeSet;

/// Block tile sizes along m and n.
pub const BLOCK_TILES: [u32; 4] = [32, 64, 128, 256];
/// Thread tile sizes along m and n.
pub const THREAD_TILES: [u32; 3] = [4, 8, 16];
/// Warp layouts (rows × cols of thread tiles).
pub const WARP_LAYOUTS: [WarpLayout; 4] = [
    WarpLayout::new(4, 8),
    WarpLayout::new(8, 4),
    WarpLayout::new(2, 16),
    WarpLayout::new(16, 2),
];
/// k_s values tried per (other parameters): the largest that fits and the next smaller ones.
pub const K_S_CHOICES: usize = 3;
/// Smallest k_s worth trying when the window M allows larger ones: fewer columns per tile
/// leave too little work between barriers.
pub const MIN_USEFUL_K_S: u32 = 16;
/// Largest k_s.
pub const MAX_K_S: u32 = 256;

/// Decode family: rows of C per block (the 8-row blocks in the vector-wise family only).
pub const DECODE_ROWS: [u32; 4] = [
    1,
    2,
    super::validate::DECODE_MAX_ROWS,
    super::validate::DECODE_WIDE_ROWS,
];
/// Decode family: columns per block.
pub const DECODE_BLOCK_COLUMNS: [u32; 3] = [32, 64, 128];
/// Decode family: B' rows per lane in flight.
pub const DECODE_UNROLLS: [u32; 2] = [4, 8];
/// Decode family: warps per block.
pub const DECODE_WARPS: [u32; 3] = [8, 16, 32];
/// Decode family: split-K factors (a second kernel adds the slices).
pub const DECODE_SPLITS: [u32; 3] = [1, 2, 4];

/// Element-wise family: warps per block.
pub const EW_WARPS: [u32; 3] = [2, 4, 8];
/// Element-wise family: pruning windows per ring stage.
pub const EW_WINDOWS: [u32; 3] = [1, 2, 4];

/// k_s candidates for window M: M·2^i up to [`MAX_K_S`], ascending, without those below
/// [`MIN_USEFUL_K_S`] unless nothing else exists.
pub fn k_s_ladder(m: u32) -> Vec<u32> {
    let all: Vec<u32> = std::iter::successors(Some(m.max(1)), |k| Some(k * 2))
        .take_while(|&k| k <= MAX_K_S)
        .collect();
    let useful: Vec<u32> = all
        .iter()
        .copied()
        .filter(|&k| k >= MIN_USEFUL_K_S)
        .collect();
    if useful.is_empty() {
        all
    } else {
        useful
    }
}

/// Every valid configuration for pattern `nm`, vector length `l` and A layout `layout` on
/// `gpu`: the product of the parameter lists above, filtered by [`validate`], with the
/// [`K_S_CHOICES`] largest fitting k_s for each combination of the other parameters. Sorted
/// and free of duplicates. Element-wise N:M (L = 1) has its own two families and only them
/// (the element-wise one and its decode family): no other family runs L = 1.
pub fn search_space(nm: NmPattern, l: u32, layout: ALayout, gpu: &GpuProfile) -> Vec<KernelConfig> {
    if is_element_wise(l as usize) {
        let mut configs = ew_space(nm, layout, gpu);
        configs.extend(decode_space(nm, l, layout, gpu));
        configs.sort();
        return configs;
    }
    let mut configs = decode_space(nm, l, layout, gpu);
    for base in base_configs(nm, l, layout) {
        for k_s in fitting_k_s(&base, gpu) {
            for &split_k in &SPLIT_K_VALUES {
                for row_chunk in std::iter::once(0).chain(ROW_CHUNKS) {
                    let cfg = KernelConfig {
                        k_s,
                        split_k,
                        row_chunk,
                        ..base
                    };
                    if validate(&cfg, gpu).is_ok() {
                        configs.push(cfg);
                    }
                }
            }
        }
    }
    configs.sort();
    configs.dedup();
    configs
}

/// Every valid configuration of the families that serve problems of pattern `nm`, vector
/// length `l`, A layout `layout` and element type `dtype` on `gpu`: [`search_space`] for
/// f32, [`tc_space`] (column-major A only) for bf16 and f16.
pub fn space_for(
    nm: NmPattern,
    l: u32,
    layout: ALayout,
    dtype: Dtype,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    if dtype == Dtype::F32 {
        search_space(nm, l, layout, gpu)
    } else {
        let mut space = tc_space(dtype, nm, l, gpu);
        space.retain(|cfg| cfg.a_layout() == layout);
        space
    }
}

/// Every valid tensor-core configuration ([`super::TcConfig::search_space`]) for element
/// type `dtype`, pattern `nm` and vector length `l` on `gpu`, in [`KernelConfig`]'s fields.
/// Sorted. Its kernels serve every pattern; `nm` is the one their rows are stored for.
pub fn tc_space(dtype: Dtype, nm: NmPattern, l: u32, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let mut out: Vec<KernelConfig> = TcConfig::search_space(dtype)
        .into_iter()
        .filter(|tc| tc.l == l as usize)
        .map(|tc| KernelConfig::tensor_core(tc, nm))
        .filter(|cfg| validate(cfg, gpu).is_ok())
        .collect();
    out.sort();
    out
}

/// The distinct kernels to compile for `search_space(nm, l, layout, gpu)`: one per
/// [`compile_key`].
pub fn compile_set(nm: NmPattern, l: u32, layout: ALayout, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let keys: BTreeSet<KernelConfig> = search_space(nm, l, layout, gpu)
        .iter()
        .map(compile_key)
        .collect();
    keys.into_iter().collect()
}

/// Every combination of the parameters other than k_s and split_k (k_s = M, split_k = 1
/// placeholders).
fn base_configs(nm: NmPattern, l: u32, layout: ALayout) -> Vec<KernelConfig> {
    let mut out = Vec::new();
    let tiled_or_ew = |c: &ACopy| !c.is_direct() && c.family() != Family::Tc;
    for a_copy in ACopy::for_layout(layout).filter(tiled_or_ew) {
        for &m_s in &BLOCK_TILES {
            for &n_s in &BLOCK_TILES {
                for &m_t in &THREAD_TILES {
                    for &n_t in &THREAD_TILES {
                        for &warp in &WARP_LAYOUTS {
                            for packing in [false, true] {
                                for stages in STAGES {
                                    for min_blocks in MIN_BLOCKS {
                                        out.push(KernelConfig {
                                            a_copy,
                                            m_s,
                                            n_s,
                                            k_s: nm.m,
                                            m_t,
                                            n_t,
                                            warp,
                                            nm,
                                            l,
                                            packing,
                                            stages,
                                            min_blocks,
                                            split_k: 1,
                                            row_chunk: 0,
                                            stream_k: false,
                                            tma: false,
                                            cluster_sum: false,
                                            dtype: Dtype::F32,
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// The [`K_S_CHOICES`] largest k_s of the ladder with which `base` passes validation.
fn fitting_k_s(base: &KernelConfig, gpu: &GpuProfile) -> Vec<u32> {
    k_s_ladder(base.nm.m)
        .into_iter()
        .rev()
        .filter(|&k_s| validate(&KernelConfig { k_s, ..*base }, gpu).is_ok())
        .take(K_S_CHOICES)
        .collect()
}

/// Every valid decode-family configuration for `nm`, `l` and `layout` on `gpu` (the
/// element-wise decode family's for L = 1, each with its shuffle twin): the product of the
/// `DECODE_*` lists.
fn decode_space(nm: NmPattern, l: u32, layout: ALayout, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let mut out = Vec::new();
    for m_s in DECODE_ROWS {
        for n_s in DECODE_BLOCK_COLUMNS {
            for n_t in DECODE_LANE_COLUMNS {
                for k_s in DECODE_UNROLLS {
                    for warps in DECODE_WARPS {
                        let shape = (n_s, n_t, k_s, warps);
                        let base = KernelConfig::decode(layout, m_s, shape, nm, l);
                        for split_k in DECODE_SPLITS {
                            for stages in DECODE_STAGES {
                                let cfg = KernelConfig {
                                    split_k,
                                    stages,
                                    ..base
                                };
                                if validate(&cfg, gpu).is_ok() {
                                    out.push(cfg);
                                }
                                // The element-wise decode paths' twin that gathers A by
                                // shuffles (M = 32 only: the validation says where).
                                let twin = cfg
                                    .a_copy
                                    .gather_twin()
                                    .map(|a_copy| KernelConfig { a_copy, ..cfg });
                                if let Some(twin) = twin.filter(|t| validate(t, gpu).is_ok()) {
                                    out.push(twin);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Every valid element-wise configuration for `nm` and `layout` on `gpu`: the product of the
/// `EW_*` lists with the ring depths, `min_blocks` values and split-K factors of the tiled
/// family. Sorted.
fn ew_space(nm: NmPattern, layout: ALayout, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let mut out = Vec::new();
    for m_t in EW_LANE_ROWS {
        for n_t in EW_WARP_COLUMNS {
            for warps in EW_WARPS {
                for windows in EW_WINDOWS {
                    for stages in STAGES {
                        for min_blocks in MIN_BLOCKS {
                            let shape = EwShape::new(m_t, n_t, warps, windows, stages, min_blocks);
                            let base = KernelConfig::element_wise(layout, shape, nm);
                            out.extend(
                                SPLIT_K_VALUES
                                    .iter()
                                    .map(|&split_k| KernelConfig { split_k, ..base })
                                    .filter(|cfg| validate(cfg, gpu).is_ok()),
                            );
                        }
                    }
                }
            }
        }
    }
    out.sort();
    out
}
