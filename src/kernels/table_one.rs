//! The NM-SpMM paper's fixed kernels (its Table I) as configurations of the template, and the
//! configuration a problem gets when nothing was measured for it: Table I for its size class,
//! then the other classes, then the performance model's best. The tuner times the same
//! configurations as seeds; the runtime launches them as defaults.

use crate::codegen::tc::{TC_BLOCK_COLS, TC_KEPT_ROWS, TC_STAGES, TC_WARPGROUPS};
use crate::codegen::{enumerate, validate, ACopy, EwShape, KernelConfig, TcConfig, WarpLayout};
use crate::gpu_profile::GpuProfile;
use crate::model;
use crate::problem::{ALayout, Dtype, Problem};

/// Sparsity above which packing pays (paper §III-A: the bound shifts near 70 %): the paper's
/// kernels pack above it, and the pruned search tries packing only there.
pub const PACKING_MIN_SPARSITY: f64 = 0.70;

/// Size classes of Table I: small, medium, large.
pub const CLASSES: usize = 3;

/// Table I of the paper: (m_s, n_s, m_t, n_t) of the small, medium and large kernels, with
/// the warp tiles (m_r, n_r) = (16, 32), (32, 32), (64, 32) as lane grids.
const TABLE_ONE: [(u32, u32, u32, u32, WarpLayout); CLASSES] = [
    (32, 32, 4, 4, WarpLayout::new(4, 8)),
    (32, 64, 8, 4, WarpLayout::new(4, 8)),
    (64, 128, 8, 8, WarpLayout::new(8, 4)),
];

/// The copy path the paper's kernels use: 16-byte copies of column-major A (its layout), the
/// 4-byte path for row-major A.
fn paper_copy(layout: ALayout) -> ACopy {
    match layout {
        ALayout::ColMajor => ACopy::Col16,
        ALayout::RowMajor => ACopy::Row4,
    }
}

/// Small, medium or large by the paper's Table II examples (512², 1024–2048, ≥ 2048·4096).
pub fn class_of(problem: &Problem) -> usize {
    let work = problem.m as f64 * problem.n as f64;
    if work <= 512.0 * 1024.0 {
        0
    } else if work <= 1024.0 * 2048.0 {
        1
    } else {
        2
    }
}

/// The Table I configuration of a size class for the problem's pattern and A layout (the
/// 4-byte path for row-major A), or None when the pattern's window does not fit its k_s.
pub fn config(class: usize, problem: &Problem, gpu: &GpuProfile) -> Option<KernelConfig> {
    let (m_s, n_s, m_t, n_t, warp) = TABLE_ONE[class.min(TABLE_ONE.len() - 1)];
    let packing = problem.nm.sparsity() >= PACKING_MIN_SPARSITY;
    let paper_k_s = if packing { 64 } else { 32 };
    let m_window = problem.nm.m;
    let cfg = KernelConfig {
        a_copy: paper_copy(problem.a_layout),
        m_s,
        n_s,
        k_s: paper_k_s.max(m_window) / m_window * m_window,
        m_t,
        n_t,
        warp,
        nm: problem.nm,
        l: problem.l as u32,
        packing,
        stages: 2,
        min_blocks: 1,
        split_k: 1,
        row_chunk: 0,
        stream_k: false,
        tma: false,
        cluster_sum: false,
        dtype: Dtype::F32,
    };
    (validate::validate(&cfg, gpu).is_ok() && validate::validate_for_problem(&cfg, problem).is_ok())
        .then_some(cfg)
}

/// The configuration `problem` gets without a measurement: for a BF16 or FP16 problem the
/// tensor-core default ([`tc_default`]), else the model's best tensor-core configuration;
/// for a decode problem the decode
/// family's default (the element-wise decode family's for L = 1), for another element-wise
/// problem (L = 1) the element-wise family's, else
/// Table I for its size class, the other classes, then the model's best valid configuration.
/// None only when no configuration of the template families can run the problem (an L that
/// is neither 1 nor a multiple of 4, say).
pub fn default_config(problem: &Problem, gpu: &GpuProfile) -> Option<KernelConfig> {
    if problem.dtype != Dtype::F32 {
        return tc_default(problem, gpu).or_else(|| model_best(problem, gpu));
    }
    let first = class_of(problem);
    decode_default(problem, gpu)
        .or_else(|| ew_default(problem, gpu))
        .or_else(|| {
            std::iter::once(first)
                .chain((0..CLASSES).filter(|&c| c != first))
                .find_map(|class| config(class, problem, gpu))
        })
        .or_else(|| model_best(problem, gpu))
}

/// The decode family's block shape that won most often when the H100 first tuned
/// `shapes/decode.yaml` (docs/perf-log.md, "The decode family in the tree"): 32 columns, 8
/// per lane, 4 rows in flight, 16 warps, as many rows per block as m needs (up to 4). The
/// element-wise decode family (L = 1) starts from the same shape, with A gathered by warp
/// shuffles where that path takes the pattern (M = 32: it won 384 of the H200's 400 L = 1
/// decode problems, docs/perf-log.md "Session 55"), else through L1.
pub fn decode_default(problem: &Problem, gpu: &GpuProfile) -> Option<KernelConfig> {
    if !problem.is_decode() {
        return None;
    }
    DECODE_DEFAULT_SHAPES
        .iter()
        .map(|&shape| decode_config(problem, shape))
        .flat_map(|cfg| {
            let shuffled = cfg
                .a_copy
                .gather_twin()
                .filter(|_| !cfg.a_copy.shuffles_a());
            shuffled
                .map(|a_copy| KernelConfig { a_copy, ..cfg })
                .into_iter()
                .chain([cfg])
        })
        .find(|cfg| {
            validate::validate(cfg, gpu).is_ok()
                && validate::validate_for_problem(cfg, problem).is_ok()
        })
}

/// The decode default's block shape (n_s, n_t, k_s, warps), then the same with 8 warps: the
/// element-wise decode family's 4-row blocks need more registers than 16 warps leave.
const DECODE_DEFAULT_SHAPES: [(u32, u32, u32, u32); 2] = [(32, 8, 4, 16), (32, 8, 4, 8)];

/// A decode-family configuration for `problem` with block shape (n_s, n_t, k_s, warps) and
/// as many rows per block as m needs, up to [`validate::DECODE_MAX_ROWS`]; split-K 1, not
/// validated.
pub fn decode_config(problem: &Problem, shape: (u32, u32, u32, u32)) -> KernelConfig {
    let m_s = (problem.m.next_power_of_two() as u32).min(validate::DECODE_MAX_ROWS);
    KernelConfig::decode(problem.a_layout, m_s, shape, problem.nm, problem.l as u32)
}

/// The element-wise block shape of the prototype's best kernel at 4:32, m = 4096 (the
/// sparsity at which element-wise N:M beats the dense GEMM; H200, 63 % of the shared-memory
/// bound, docs/perf-log.md "Element-wise N:M at m = 4096"): 128 rows (4 per lane) by 64
/// columns (16 per warp, 4 warps), one pruning window per stage, three stages.
pub const EW_DEFAULT_SHAPE: EwShape = EwShape {
    m_t: 4,
    n_t: 16,
    warps: 4,
    windows: 1,
    stages: 3,
    min_blocks: 1,
};

/// The element-wise family's default for an element-wise problem (L = 1): the
/// [`EW_DEFAULT_SHAPE`] with the split-K factor the model predicts fastest (1 on a tie), so
/// that a small grid still fills the GPU.
pub fn ew_default(problem: &Problem, gpu: &GpuProfile) -> Option<KernelConfig> {
    if !problem.is_element_wise() {
        return None;
    }
    let base = ew_config(problem, EW_DEFAULT_SHAPE);
    validate::SPLIT_K_VALUES
        .iter()
        .map(|&split_k| KernelConfig { split_k, ..base })
        .filter(|cfg| {
            validate::validate(cfg, gpu).is_ok()
                && validate::validate_for_problem(cfg, problem).is_ok()
        })
        .map(|cfg| (model::predict(&cfg, problem, gpu).time_s, cfg))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, cfg)| cfg)
}

/// An element-wise configuration for `problem`'s pattern and A layout with block shape
/// `shape`; split-K 1, not validated.
pub fn ew_config(problem: &Problem, shape: EwShape) -> KernelConfig {
    KernelConfig::element_wise(problem.a_layout, shape, problem.nm)
}

/// The tensor-core shapes (warpgroups, kept rows a stage, stages) that won most often on the
/// H200 in session 43 (docs/results/tc-family/session43/): 128-row blocks with 64 kept rows
/// a stage in 3 stages at L = 128, 32 in 4 at L = 32 and 64 (where the first one's ring
/// does not fit beside four groups' A tiles). One block an SM asked for.
const TC_DEFAULT_SHAPES: [(usize, usize, usize); 2] = [(2, 64, 3), (2, 32, 4)];

/// The tensor-core family's default for a BF16 or FP16 problem: the first of
/// [`TC_DEFAULT_SHAPES`] (at L below 128 the second first) that can run it.
pub fn tc_default(problem: &Problem, gpu: &GpuProfile) -> Option<KernelConfig> {
    let mut shapes = TC_DEFAULT_SHAPES;
    if problem.l < TC_BLOCK_COLS {
        shapes.reverse();
    }
    shapes
        .iter()
        .map(|&shape| tc_config(problem, shape))
        .find(|cfg| {
            validate::validate(cfg, gpu).is_ok()
                && validate::validate_for_problem(cfg, problem).is_ok()
        })
}

/// A tensor-core configuration for `problem`'s type, pattern and L with shape (warpgroups,
/// kept rows a stage, stages), one block an SM; not validated.
fn tc_config(
    problem: &Problem,
    (warpgroups, kept_rows, stages): (usize, usize, usize),
) -> KernelConfig {
    let tc = TcConfig {
        dtype: problem.dtype,
        warpgroups,
        kept_rows,
        stages,
        min_blocks: 1,
        l: problem.l,
        a_layout: problem.a_layout,
        split_k: 1,
        stream_k: false,
    };
    KernelConfig::tensor_core(tc, problem.nm)
}

/// The model's best valid configuration for `problem` over the whole space.
fn model_best(problem: &Problem, gpu: &GpuProfile) -> Option<KernelConfig> {
    let (nm, l, layout) = (problem.nm, problem.l as u32, problem.a_layout);
    let space = enumerate::space_for(nm, l, layout, problem.dtype, gpu);
    model::best(&space, problem, gpu)
}

/// Why no configuration can run `problem`: what rejects the large Table I tile with k_s = M,
/// or for an element-wise problem the element-wise default shape (the message of
/// [`default_config`]'s None).
pub fn why_unsupported(problem: &Problem) -> String {
    let (m_s, n_s, m_t, n_t, warp) = TABLE_ONE[CLASSES - 1];
    let tiled = KernelConfig {
        a_copy: paper_copy(problem.a_layout),
        m_s,
        n_s,
        k_s: problem.nm.m.max(32),
        m_t,
        n_t,
        warp,
        nm: problem.nm,
        l: problem.l as u32,
        packing: false,
        stages: 2,
        min_blocks: 1,
        split_k: 1,
        row_chunk: 0,
        stream_k: false,
        tma: false,
        cluster_sum: false,
        dtype: Dtype::F32,
    };
    let probe = if problem.dtype != Dtype::F32 {
        // The loosest tensor-core configuration (fewest rows a block, kept rows a stage and
        // stages), so that the reason names the weakest rule a shape breaks.
        tc_config(
            problem,
            (TC_WARPGROUPS[0], TC_KEPT_ROWS[0], *TC_STAGES.start()),
        )
    } else if problem.is_element_wise() {
        ew_config(problem, EW_DEFAULT_SHAPE)
    } else {
        tiled
    };
    match validate::validate_structure(&probe)
        .and_then(|_| validate::validate_for_problem(&probe, problem))
    {
        Err(crate::codegen::CodegenError::Rejected { reason, .. }) => reason,
        Err(other) => other.to_string(),
        Ok(()) => "no configuration of the search space is valid for it".to_string(),
    }
}
