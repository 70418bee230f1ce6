//! Search strategies: which configurations to time for a problem.

use crate::codegen::validate::SPLIT_K_VALUES;
use crate::codegen::{enumerate, validate, ACopy, EwShape, Family, KernelConfig, WarpLayout};
use crate::gpu_profile::GpuProfile;
use crate::kernels::table_one::{self, PACKING_MIN_SPARSITY};
use crate::model::{predict, ranked};
use crate::problem::{ALayout, Dtype, Problem};
use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// How candidates are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// The paper's rules prune the space, the model ranks what is left, Table I seeds join.
    #[default]
    Pruned,
    /// Every valid configuration (slow candidates abandoned early).
    Exhaustive,
    /// Only the model's best few and their neighbours.
    Model,
    /// The pruned candidates plus a fixed pseudo-random sample of [`SAMPLE_SIZE`] valid
    /// configurations: a ground-truth sweep within a GPU budget that an exhaustive one exceeds.
    Sample,
    /// The configurations that won the earlier runs stored for the problem, timed again with
    /// this build's templates ([`super::warm`]); the pruned candidates where none is stored.
    Warm,
    /// What `Warm` offers, and every configuration one parameter away from the problem's
    /// fastest earlier one ([`neighbours`]): one step of a hill climb from the stored winner.
    Local,
}

impl Strategy {
    pub fn as_str(&self) -> &'static str {
        match self {
            Strategy::Pruned => "pruned",
            Strategy::Exhaustive => "exhaustive",
            Strategy::Model => "model",
            Strategy::Sample => "sample",
            Strategy::Warm => "warm",
            Strategy::Local => "local",
        }
    }
}

/// Candidates the pruned strategy keeps after the model ranks them (beside the seeds).
const PRUNED_TOP: usize = 3;
/// Candidates the model strategy keeps before adding neighbours.
pub const MODEL_TOP: usize = 3;

/// Configurations the sample strategy draws besides the pruned candidates.
pub const SAMPLE_SIZE: usize = 256;

/// Configurations to time for `problem` on `gpu`, best predicted first: only kernels of the
/// families that serve it ([`Family::serving`]), whose templates its rows' checksum covers.
/// The warm strategy's candidates come from a database ([`super::warm`]); without one, or for
/// a problem with no earlier rows, they are the pruned strategy's.
pub fn candidates(problem: &Problem, gpu: &GpuProfile, strategy: Strategy) -> Vec<KernelConfig> {
    let serving = Family::serving(problem);
    let (nm, l, layout) = (problem.nm, problem.l as u32, problem.a_layout);
    let space: Vec<KernelConfig> = enumerate::space_for(nm, l, layout, problem.dtype, gpu)
        .into_iter()
        .filter(|cfg| serving.contains(&cfg.family()))
        .filter(|cfg| validate::validate_for_problem(cfg, problem).is_ok())
        .collect();
    if serving.contains(&Family::Tc) {
        // A few dozen configurations a problem (33 on average over shapes/llama.yaml):
        // every strategy times them all, splits of k only where the unsplit grid leaves SMs
        // idle, stream-K only where it evens out a partial last wave.
        let space = space
            .into_iter()
            .filter(|cfg| cfg.split_k == 1 || tc_grid_leaves_sms_idle(cfg, problem, gpu))
            .filter(|cfg| !cfg.stream_k || tc_stream_k_balances(cfg, problem, gpu))
            .collect();
        return ranked(space, problem, gpu);
    }
    match strategy {
        Strategy::Exhaustive => {
            let picked = ranked(space, problem, gpu);
            let all = picked.len();
            with_tma_twins(picked, problem, gpu, all)
        }
        Strategy::Sample => {
            let mut picked = candidates(problem, gpu, Strategy::Pruned);
            for cfg in sample(space, SAMPLE_SIZE) {
                if !picked.contains(&cfg) {
                    picked.push(cfg);
                }
            }
            picked
        }
        // The model predicts a row-chunk variant as its whole-tile kernel: the ranking
        // strategies rank whole tiles, then time the chunked variants of their first picks.
        Strategy::Warm | Strategy::Local | Strategy::Pruned => {
            let picked = pruned_candidates(whole_tiles(space), problem, gpu);
            let picked = with_transposed_twins(picked, problem, gpu);
            let picked = with_tma_twins(picked, problem, gpu, TMA_TWINS_TOP);
            let picked = with_stream_k(with_row_chunks(picked, problem, gpu), problem, gpu);
            with_cluster_sums(picked, problem, gpu)
        }
        Strategy::Model => {
            let picked = model_picks(&ranked(whole_tiles(space), problem, gpu), MODEL_TOP, true);
            with_row_chunks(picked, problem, gpu)
        }
    }
}

/// Whether `cfg`'s kernel, unsplit, would have fewer blocks for `problem` than `gpu` runs at
/// once (by the model's blocks an SM): only then can a split of k (a tensor-core cluster's
/// blocks sharing a tile's stages) put more SMs to work.
fn tc_grid_leaves_sms_idle(cfg: &KernelConfig, problem: &Problem, gpu: &GpuProfile) -> bool {
    let unsplit = KernelConfig { split_k: 1, ..*cfg };
    let resident = crate::model::blocks_per_sm(&unsplit, gpu, None) * gpu.sm_count;
    unsplit.tiles(problem.m, problem.n) < resident as usize
}

/// Whether `cfg`'s stream-K schedule (tensor-core family) can even out what its tile grid
/// leaves unbalanced on `problem`: the tiles are not a whole number of waves of its workers,
/// and the workers (`min_blocks` an SM) are resident at once with the problem's kept-row
/// table.
fn tc_stream_k_balances(cfg: &KernelConfig, problem: &Problem, gpu: &GpuProfile) -> bool {
    let Some(tc) = cfg.as_tc() else {
        return false;
    };
    let workers = tc.stream_workers(gpu.sm_count as usize);
    let resident = tc.min_blocks * tc.smem_bytes(problem.w()) <= gpu.smem_per_sm as usize;
    resident && tc.tiles(problem.m, problem.n) % workers != 0
}

fn whole_tiles(space: Vec<KernelConfig>) -> Vec<KernelConfig> {
    space.into_iter().filter(|cfg| cfg.row_chunk == 0).collect()
}

/// Candidates whose row-chunk variants ([`validate::ROW_CHUNKS`]) the ranking strategies time
/// too (docs/design.md "Row chunks": a chunked loop wins for some kernels and loses for
/// others, and no rule or model term tells which yet).
pub const CHUNKED_TOP: usize = 3;

/// `picked` followed by the valid row-chunk variants of its first [`CHUNKED_TOP`]
/// whole-tile configurations.
pub fn with_row_chunks(
    picked: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let firsts = |cfg: &KernelConfig| cfg.row_chunk == 0;
    with_variants(picked, problem, gpu, (firsts, CHUNKED_TOP), |cfg| {
        validate::ROW_CHUNKS.map(|row_chunk| KernelConfig { row_chunk, ..cfg })
    })
}

/// Decode candidates whose twins in the other pipelines ([`validate::DECODE_STAGES`]) the
/// warm strategy times too: which pipeline wins depends on the layer (docs/perf-log.md,
/// sessions 17 and 24), and the earlier winners of a problem are mostly one pipeline's.
pub const PIPELINE_TWINS_TOP: usize = 2;

/// `picked` followed by the valid twins in the other decode pipelines of its first
/// [`PIPELINE_TWINS_TOP`] decode configurations.
pub fn with_pipeline_twins(
    picked: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let firsts = |cfg: &KernelConfig| cfg.a_copy.is_direct();
    with_variants(picked, problem, gpu, (firsts, PIPELINE_TWINS_TOP), |cfg| {
        validate::DECODE_STAGES.map(|stages| KernelConfig { stages, ..cfg })
    })
}

/// Tiled candidates whose stream-K variants ([`KernelConfig::stream_k`]) the timing
/// strategies time too: the schedule recovers the idle part of a last partial wave (about
/// 2–3 % at m = 4096 with 128×256 tiles on the H100, docs/perf-log.md, session 26) and costs
/// a fix-up of the split tiles, so which wins depends on the grid.
pub const STREAM_K_TOP: usize = 3;

/// `picked` followed by the valid stream-K variants of its first [`STREAM_K_TOP`] tiled
/// configurations that do not split k or that take tensor copies (none for decode-sized
/// problems), and of its first tensor-core ones whose schedule evens out a partial last wave
/// ([`tc_stream_k_balances`]). A variant does not split k: the schedule shares k out itself.
pub fn with_stream_k(
    picked: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let variant = |cfg: KernelConfig| KernelConfig {
        stream_k: true,
        ..cfg.with_split(1)
    };
    // A split pick with tensor copies has a stream-K variant worth timing: that schedule
    // shares a grid of fewer tiles than workers out whole, where split-K's grid fills the
    // GPU in whole slices only and adds a second kernel (the m = 256 winners split k).
    let firsts = |cfg: &KernelConfig| {
        !cfg.stream_k
            && match cfg.family() {
                Family::Tiled => {
                    cfg.split_k == 1 || variant(*cfg).stream_k_splits_tiles_many_ways()
                }
                Family::Tc => {
                    cfg.split_k == 1 && tc_stream_k_balances(&variant(*cfg), problem, gpu)
                }
                _ => false,
            }
    };
    // A pick with tensor copies keeps them: its stream-K schedule has its own template
    // (on the H200's m = 4096 layers of 6,656 columns, 1.04–1.08× faster than the
    // data-parallel twin, docs/perf-log.md session 56).
    with_variants(picked, problem, gpu, (firsts, STREAM_K_TOP), |cfg| {
        [variant(cfg)]
    })
}

/// Row-major tiled candidates copying A's rows directly (`Row4`, `Row16`, `RowK`) whose
/// twins on the transposing path ([`ACopy::Transposed`]: the column-major main loop behind a
/// transposing pass) the timing strategies time too. The model ranks the two paths apart, so
/// a search could time a row-copy winner without ever timing its twin: on the H200, 37 of 42
/// row-major problems whose committed winner copied rows directly ran faster as its
/// transposing twin, by 3.8 % in geometric mean and up to 13 % (docs/perf-log.md, session 33).
pub const TRANSPOSED_TWINS_TOP: usize = 3;

/// `picked` followed by the valid transposing twins of its first [`TRANSPOSED_TWINS_TOP`]
/// tiled configurations that copy row-major A directly.
pub fn with_transposed_twins(
    picked: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let firsts = |cfg: &KernelConfig| {
        cfg.family() == Family::Tiled
            && matches!(cfg.a_copy, ACopy::Row4 | ACopy::Row16 | ACopy::RowK)
    };
    with_variants(
        picked,
        problem,
        gpu,
        (firsts, TRANSPOSED_TWINS_TOP),
        |cfg| {
            [KernelConfig {
                a_copy: ACopy::Transposed,
                ..cfg
            }]
        },
    )
}

/// Tiled candidates whose twins with tensor copies ([`KernelConfig::tma`]) the timing
/// strategies time too. The model predicts a twin as its cp.async kernel, and which of the
/// two wins depends on the kernel: at 4096³ on the H100 the twin of the 8:32 winner was 3 %
/// faster, that of the 16:32 winner 1 % slower, and twins of candidates ranked 7th and 8th
/// won 12:32 (docs/perf-log.md, session 37).
pub const TMA_TWINS_TOP: usize = 4;

/// `picked` followed by the valid tensor-copy twins of its first `top` configurations that
/// can take them (none on a GPU before sm_90).
pub fn with_tma_twins(
    picked: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
    top: usize,
) -> Vec<KernelConfig> {
    let firsts = |cfg: &KernelConfig| cfg.tma_capable() && !cfg.tma;
    with_variants(picked, problem, gpu, (firsts, top), |cfg| {
        [KernelConfig { tma: true, ..cfg }]
    })
}

/// Vector-wise decode candidates of 4-row blocks whose 8-row variants
/// ([`validate::DECODE_WIDE_ROWS`], one float4 of B' per lane and row) are timed too at
/// m > 4: a block of 8 rows reads the weight once where two blocks of 4 read it twice.
pub const WIDE_ROWS_TOP: usize = 3;

/// `picked` followed by the valid 8-row variants of its first [`WIDE_ROWS_TOP`] vector-wise
/// decode configurations of 4-row blocks (same columns per block, unroll, warps, split and
/// pipeline; n_t = 4).
pub fn with_wide_rows(
    picked: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let firsts =
        |cfg: &KernelConfig| cfg.family() == Family::Decode && cfg.m_s == validate::DECODE_MAX_ROWS;
    let rows = validate::DECODE_WIDE_ROWS;
    with_variants(picked, problem, gpu, (firsts, WIDE_ROWS_TOP), |cfg| {
        [KernelConfig {
            m_s: rows,
            m_t: rows,
            n_t: 4,
            ..cfg
        }]
    })
}

/// Element-wise decode candidates whose twins with the other lane width
/// ([`validate::DECODE_LANE_COLUMNS`]) the pruned and warm strategies time too: its seeds are the
/// vector-wise decode shapes, mostly of 8 columns a lane, and a sample of the H200's m = 1,
/// L = 1 problems found faster kernels of 4 columns a lane for five (docs/perf-log.md,
/// session 40).
pub const LANE_TWINS_TOP: usize = 3;

/// `picked` followed by the valid twins with the other lane widths of its first
/// [`LANE_TWINS_TOP`] element-wise decode configurations.
pub fn with_lane_twins(
    picked: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let firsts = |cfg: &KernelConfig| cfg.family() == Family::EwDecode;
    with_variants(picked, problem, gpu, (firsts, LANE_TWINS_TOP), |cfg| {
        validate::DECODE_LANE_COLUMNS.map(|n_t| KernelConfig { n_t, ..cfg })
    })
}

/// Element-wise decode candidates whose twins with A gathered the other way
/// ([`ACopy::gather_twin`]: by warp shuffles instead of `__ldca`) the pruned and warm
/// strategies time too: the shuffle paths' loop ran 9–15 % faster on the H200's m = 1,
/// L = 1 layers (docs/perf-log.md, session 55), but not on every block shape.
pub const SHUFFLE_TWINS_TOP: usize = 8;

/// `picked` followed by the valid twins with the other gather of A of its first
/// [`SHUFFLE_TWINS_TOP`] element-wise decode configurations.
pub fn with_shuffle_twins(
    picked: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let firsts = |cfg: &KernelConfig| cfg.a_copy.gather_twin().is_some();
    with_variants(picked, problem, gpu, (firsts, SHUFFLE_TWINS_TOP), |cfg| {
        [KernelConfig {
            a_copy: cfg.a_copy.gather_twin().unwrap_or(cfg.a_copy),
            ..cfg
        }]
    })
}

/// Tiled split candidates whose twins summed in a cluster ([`KernelConfig::cluster_sum`])
/// the timing strategies time too. The model predicts a twin without the reduction kernel
/// and its workspace traffic, but a cluster's blocks must be resident together, and that
/// decides: on the H200 the twins split 3 to 8 ways ran 1.3–2.2× slower than their
/// workspace splits at m = 256 (a grid sized to fill the GPU lost SMs to the clusters'
/// placement and ran a second wave), while pairs won 86 of the 1,056 problems
/// (docs/perf-log.md, session 59).
pub const CLUSTER_SUM_TOP: usize = 4;

/// The blocks of the clusters a search times: pairs.
pub const CLUSTER_SUM_SPLIT: u32 = 2;

/// `picked` followed by the valid cluster-summed pair splits ([`CLUSTER_SUM_SPLIT`]) of its
/// first [`CLUSTER_SUM_TOP`] tiled configurations that split k through a workspace (none on
/// a GPU before sm_90).
pub fn with_cluster_sums(
    picked: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let firsts = |cfg: &KernelConfig| cfg.family() == Family::Tiled && cfg.launches_reduce();
    with_variants(picked, problem, gpu, (firsts, CLUSTER_SUM_TOP), |cfg| {
        [KernelConfig {
            cluster_sum: true,
            ..cfg.with_split(CLUSTER_SUM_SPLIT)
        }]
    })
}

/// Tiled candidates whose other splits of k ([`SPLIT_K_VALUES`]) the warm strategy times too.
/// A search times each shape with the model's few best splits ([`SEED_SPLITS`]), so a shape
/// that won with one split was often never timed with the others.
pub const SPLIT_TWINS_TOP: usize = 3;

/// `picked` followed by the other splits of k, where the split-K rule allows them
/// ([`split_k_allowed`]), of its first [`SPLIT_TWINS_TOP`] tiled configurations without the
/// stream-K schedule (which splits k its own way).
pub fn with_split_twins(
    mut picked: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let twins = split_twin_bases(&picked)
        .into_iter()
        .flat_map(|cfg| SPLIT_K_VALUES.map(|split_k| cfg.with_split(split_k)));
    for twin in twins {
        if seed_allowed(&twin, problem, gpu) && !picked.contains(&twin) {
            picked.push(twin);
        }
    }
    picked
}

/// The configurations of `picked` whose other splits [`with_split_twins`] adds: its first
/// [`SPLIT_TWINS_TOP`] tiled ones without the stream-K schedule.
fn split_twin_bases(picked: &[KernelConfig]) -> Vec<KernelConfig> {
    picked
        .iter()
        .filter(|cfg| cfg.family() == Family::Tiled && !cfg.stream_k)
        .take(SPLIT_TWINS_TOP)
        .copied()
        .collect()
}

/// `picked` followed by the variants `vary` makes of its first `top` configurations that
/// `first` accepts, those valid for `problem` on `gpu` and not yet picked, in order.
fn with_variants<const V: usize>(
    mut picked: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
    (first, top): (impl Fn(&KernelConfig) -> bool, usize),
    vary: impl Fn(KernelConfig) -> [KernelConfig; V],
) -> Vec<KernelConfig> {
    let firsts: Vec<KernelConfig> = picked
        .iter()
        .filter(|c| first(c))
        .take(top)
        .copied()
        .collect();
    // A set beside the list: the exhaustive strategy varies all of some 30,000 candidates,
    // and a scan of the list per variant took 20 s a problem.
    let mut seen: HashSet<KernelConfig> = picked.iter().copied().collect();
    for variant in firsts.into_iter().flat_map(vary) {
        let valid = validate::validate(&variant, gpu).is_ok()
            && validate::validate_for_problem(&variant, problem).is_ok();
        if valid && seen.insert(variant) {
            picked.push(variant);
        }
    }
    picked
}

/// The pruned strategy's candidates from `space` (whole-tile configurations).
fn pruned_candidates(
    space: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    if problem.is_element_wise() {
        let decode = decode_candidates(&space, problem, gpu);
        let mut picked = if problem.is_decode() {
            // The element-wise decode family won all 800 L = 1 problems of
            // shapes/decode.yaml on the H100 and the H200 (docs/perf-log.md, session 15):
            // of the tiles, only the default shape is timed there.
            let shape = table_one::EW_DEFAULT_SHAPE;
            with_splits(table_one::ew_config(problem, shape), problem, gpu)
        } else {
            let tiles = space
                .into_iter()
                .filter(|c| !c.a_copy.is_direct())
                .collect();
            ew_candidates(tiles, problem, gpu)
        };
        for seed in decode {
            if !picked.contains(&seed) {
                picked.push(seed);
            }
        }
        picked
    } else {
        let decode = decode_candidates(&space, problem, gpu);
        // Up to m = 4 rows per block the decode family won every problem of the first
        // H100 decode tuning: the tiled family keeps only its Table I seeds there.
        let tiled_search = problem.m > validate::DECODE_MAX_ROWS as usize;
        let kept: Vec<_> = space
            .into_iter()
            .filter(|c| tiled_search && paper_rules(c, problem, gpu))
            .collect();
        let mut picked: Vec<_> = ranked(kept, problem, gpu)
            .into_iter()
            .take(PRUNED_TOP)
            .collect();
        let sweep = if tiled_search {
            sweep_seeds(problem, gpu)
        } else {
            Vec::new()
        };
        for seed in table_one_seeds(problem, gpu)
            .into_iter()
            .chain(sweep)
            .chain(decode)
        {
            if !picked.contains(&seed) {
                picked.push(seed);
            }
        }
        picked
    }
}

/// Decode-family candidates the pruned strategy adds to a decode problem's: the model's
/// best few beside the seeds.
const DECODE_TOP: usize = 3;

/// Decode block shapes (n_s, n_t, k_s, warps) that won most often when the H100 first tuned
/// `shapes/decode.yaml` with the prototype's shapes and the model's picks as candidates
/// (docs/perf-log.md, "The decode family in the tree"): m_s follows m.
const DECODE_SEEDS: [(u32, u32, u32, u32); 6] = [
    (32, 8, 4, 16),
    (64, 8, 4, 16),
    (32, 8, 4, 8),
    (128, 8, 4, 16),
    (64, 8, 4, 8),
    (32, 4, 8, 16),
];

/// The decode family's candidates for a decode problem (none for larger m; the element-wise
/// decode family's for L = 1): the seeds with the split factors the model prefers, each with
/// one and two stages, and the model's [`DECODE_TOP`] of `space`, then the 8-row variants, the
/// lane twins ([`with_lane_twins`]) and the shuffle twins ([`with_shuffle_twins`]) of the
/// first few.
fn decode_candidates(
    space: &[KernelConfig],
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    if !Family::serving(problem).iter().any(Family::is_direct) {
        return Vec::new();
    }
    let mut picked: Vec<KernelConfig> = Vec::new();
    for shape in DECODE_SEEDS {
        for seed in with_splits(table_one::decode_config(problem, shape), problem, gpu) {
            picked.push(seed);
            // Its twins in the other pipelines: register double buffering (cp2) is faster where
            // few warps share an SM, slower where its registers cost a block per SM
            // (docs/perf-log.md, session 17); two steps before the wait (cp3) pays on layers
            // whose grid is short next to the previous layer's drain (session 24). Twins that
            // spill are rejected by ptxas's report before timing.
            for stages in validate::DECODE_STAGES
                .into_iter()
                .filter(|&s| s != seed.stages)
            {
                let twin = KernelConfig { stages, ..seed };
                if seed_allowed(&twin, problem, gpu) {
                    picked.push(twin);
                }
            }
        }
    }
    let mut picked = with_shared_splits(picked, problem, gpu);
    // The model does not tell the stages apart: ranking both would let a shape's twin take the
    // place of another shape among the top few (it did, session 17).
    let decode: Vec<KernelConfig> = space
        .iter()
        .filter(|c| c.a_copy.is_direct() && c.stages == 1)
        .copied()
        .collect();
    picked.extend(ranked(decode, problem, gpu).into_iter().take(DECODE_TOP));
    let picked = with_lane_twins(with_wide_rows(picked, problem, gpu), problem, gpu);
    with_shuffle_twins(picked, problem, gpu)
}

/// `seeds` and, for each, its twins with every split factor another seed of the same block
/// (rows and columns) was given. The model picks a seed's splits from its grid, not from the
/// blocks an SM holds: at 1 × 5120 × 5120 12:32 on the H200 it split the 8-warp 64-column seed
/// three ways and left the 16-warp one unsplit, whose three-way split (never timed) ran 4 %
/// faster than the stored winner (docs/perf-log.md, session 60).
fn with_shared_splits(
    seeds: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let mut out = seeds.clone();
    for seed in &seeds {
        for other in seeds
            .iter()
            .filter(|o| o.m_s == seed.m_s && o.n_s == seed.n_s)
        {
            let twin = KernelConfig {
                split_k: other.split_k,
                ..*seed
            };
            if !out.contains(&twin) && seed_allowed(&twin, problem, gpu) {
                out.push(twin);
            }
        }
    }
    out
}

/// Element-wise block shapes timed for every element-wise problem (with the split-K factors
/// the model prefers where the grid is small): the prototype's fastest shapes at m = 4096
/// on the H200 (docs/perf-log.md, "Element-wise N:M at m = 4096": the default, best at 4:32;
/// two windows per stage, best at 8:32; 8 rows per lane, best at 16:32; 8 columns per warp,
/// best at 16:32 in the first version; 8 warps at 4:32), and two narrower blocks, whose
/// grids fill the GPU at smaller n.
const EW_SEEDS: [EwShape; 7] = [
    table_one::EW_DEFAULT_SHAPE,
    EwShape::new(4, 16, 4, 2, 2, 1),
    EwShape::new(8, 16, 4, 1, 2, 1),
    EwShape::new(4, 8, 4, 1, 2, 1),
    EwShape::new(4, 8, 8, 1, 3, 1),
    EwShape::new(8, 8, 2, 1, 2, 1),
    EwShape::new(4, 4, 2, 1, 3, 1),
];

/// The pruned candidates of an element-wise problem among the element-wise family's
/// (`space` holds no other): the model's [`PRUNED_TOP`] among those the split-K rule allows, then the
/// [`EW_SEEDS`] with their split-K factors.
fn ew_candidates(
    space: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let kept: Vec<_> = space
        .into_iter()
        .filter(|c| split_k_allowed(c, problem, gpu))
        .collect();
    let mut picked: Vec<_> = ranked(kept, problem, gpu)
        .into_iter()
        .take(PRUNED_TOP)
        .collect();
    for shape in EW_SEEDS {
        for seed in with_splits(table_one::ew_config(problem, shape), problem, gpu) {
            if !picked.contains(&seed) {
                picked.push(seed);
            }
        }
    }
    picked
}

/// `count` configurations of `space` chosen by the SHA-256 of their names: the same kernels
/// for every problem of a pattern (compiled once, as N, M, L are the only compile-time shape
/// facts), reproducible on any machine, and unrelated to any parameter's order.
fn sample(mut space: Vec<KernelConfig>, count: usize) -> Vec<KernelConfig> {
    use sha2::{Digest, Sha256};
    space.sort_by_cached_key(|cfg| Sha256::digest(cfg.name().as_bytes()));
    space.truncate(count);
    space
}

/// What the model strategy times out of `ranked` (best predicted first): the `top` best and,
/// with `neighbours`, every configuration of `ranked` one parameter away from one of them.
/// `nmtune model-eval` runs the same selection on a measured set.
pub fn model_picks(ranked: &[KernelConfig], top: usize, neighbours: bool) -> Vec<KernelConfig> {
    let mut picked: Vec<KernelConfig> = ranked.iter().take(top).copied().collect();
    if !neighbours {
        return picked;
    }
    let close: Vec<KernelConfig> = ranked
        .iter()
        .filter(|c| picked.iter().any(|p| is_neighbour(p, c)))
        .copied()
        .collect();
    for cfg in close {
        if !picked.contains(&cfg) {
            picked.push(cfg);
        }
    }
    picked
}

/// The paper's pruning rules: packing only at high sparsity, split-K only when the grid
/// cannot fill the GPU (or fills its waves poorly), thread tiles of at least 4×8.
fn paper_rules(cfg: &KernelConfig, problem: &Problem, gpu: &GpuProfile) -> bool {
    let sparse = problem.nm.sparsity() >= PACKING_MIN_SPARSITY;
    if cfg.packing && !sparse {
        return false;
    }
    split_k_allowed(cfg, problem, gpu) && cfg.m_t * cfg.n_t >= 32
}

/// Below this predicted wave efficiency of the unsplit grid, split-K may even out the waves
/// (m = 256 layers: 128 blocks on 3 × 132 slots fill 32 % of the only wave, 384 fill 97 %).
const SPLIT_K_BELOW_WAVE_EFFICIENCY: f64 = 0.9;
/// k-tiles every split keeps at least: fewer leave the cp.async ring's prologue unhidden.
const MIN_K_TILES_PER_SPLIT: usize = 4;

/// Split-K only when the grid cannot fill the GPU twice over (the paper's rule) or when it
/// leaves its last wave poorly filled, and never into splits of fewer than
/// [`MIN_K_TILES_PER_SPLIT`] k-tiles.
fn split_k_allowed(cfg: &KernelConfig, problem: &Problem, gpu: &GpuProfile) -> bool {
    if cfg.split_k == 1 {
        return true;
    }
    let k_tiles = problem.k.div_ceil(cfg.k_s as usize);
    if k_tiles < MIN_K_TILES_PER_SPLIT * cfg.split_k as usize {
        return false;
    }
    let tiles = problem.m.div_ceil(cfg.m_s as usize) * problem.n.div_ceil(cfg.n_s as usize);
    let unsplit = KernelConfig { split_k: 1, ..*cfg };
    tiles < 2 * gpu.sm_count as usize
        || predict(&unsplit, problem, gpu).wave_efficiency < SPLIT_K_BELOW_WAVE_EFFICIENCY
}

/// Split-K factors timed per seed shape besides 1: the model's fastest allowed ones.
const SEED_SPLITS: usize = 2;

/// A seed is timed when it is valid for the problem on `gpu` and its split-K is allowed.
fn seed_allowed(cfg: &KernelConfig, problem: &Problem, gpu: &GpuProfile) -> bool {
    validate::validate(cfg, gpu).is_ok()
        && validate::validate_for_problem(cfg, problem).is_ok()
        && split_k_allowed(cfg, problem, gpu)
}

/// A seed shape with split-K 1 and the [`SEED_SPLITS`] allowed factors the model predicts
/// fastest for `problem` among those it predicts faster than no split.
fn with_splits(base: KernelConfig, problem: &Problem, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let unsplit = KernelConfig { split_k: 1, ..base };
    let unsplit_s = predict(&unsplit, problem, gpu).time_s;
    let split: Vec<KernelConfig> = SPLIT_K_VALUES
        .iter()
        .filter(|&&s| s > 1)
        .map(|&split_k| KernelConfig { split_k, ..base })
        .filter(|cfg| seed_allowed(cfg, problem, gpu))
        .filter(|cfg| predict(cfg, problem, gpu).time_s < unsplit_s)
        .collect();
    std::iter::once(unsplit)
        .filter(|cfg| seed_allowed(cfg, problem, gpu))
        .chain(ranked(split, problem, gpu).into_iter().take(SEED_SPLITS))
        .collect()
}

/// The configurations for `problem` on `gpu` one parameter away from `best` ([`is_neighbour`]:
/// the A copy, a tile size, the thread tile, the warps, packing, the pipeline, the blocks an
/// SM or the split of k), each with `best`'s row chunk, tensor copies and stream-K schedule
/// where it can take them (else with its own row chunk, else as enumerated): the local
/// strategy's step from a stored winner, which no ranking of the model reaches when the
/// winner is a variant the model ranks as its plain kernel.
pub fn neighbours(best: &KernelConfig, problem: &Problem, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let mut out: Vec<KernelConfig> = Vec::new();
    let space = enumerate::space_for(
        problem.nm,
        problem.l as u32,
        problem.a_layout,
        problem.dtype,
        gpu,
    );
    for cfg in space.iter().filter(|cfg| is_neighbour(best, cfg)) {
        let like_best = KernelConfig {
            row_chunk: best.row_chunk,
            tma: best.tma,
            cluster_sum: best.cluster_sum && cfg.split_k > 1,
            stream_k: best.stream_k && cfg.split_k == 1,
            ..*cfg
        };
        // Where `best`'s row chunk does not fit the neighbour (a longer tile that runs only
        // chunked, or a chunk that does not divide its rows), the neighbour's own.
        let fallbacks = [
            like_best,
            KernelConfig {
                row_chunk: cfg.row_chunk,
                ..like_best
            },
            KernelConfig {
                tma: false,
                ..like_best
            },
            *cfg,
        ];
        if let Some(pick) = fallbacks.into_iter().find(|c| runs(c, problem, gpu)) {
            if pick != *best && !out.contains(&pick) {
                out.push(pick);
            }
        }
    }
    out
}

/// Whether this build can run `cfg` for `problem` on `gpu`: a family that serves the problem,
/// and every rule of the configuration, the problem and the GPU.
pub fn runs(cfg: &KernelConfig, problem: &Problem, gpu: &GpuProfile) -> bool {
    Family::serving(problem).contains(&cfg.family())
        && validate::validate_for_problem(cfg, problem).is_ok()
        && validate::validate(cfg, gpu).is_ok()
}

/// Differs from `a` in exactly one parameter.
fn is_neighbour(a: &KernelConfig, b: &KernelConfig) -> bool {
    let diffs = [
        a.a_copy != b.a_copy,
        a.m_s != b.m_s,
        a.n_s != b.n_s,
        a.k_s != b.k_s,
        a.m_t != b.m_t,
        a.n_t != b.n_t,
        a.warp != b.warp,
        a.packing != b.packing,
        a.stages != b.stages,
        a.min_blocks != b.min_blocks,
        a.split_k != b.split_k,
    ];
    diffs.iter().filter(|d| **d).count() == 1
}

/// NM-SpMM Table I as the paper and its authors' kernels use it: per size class the block,
/// thread tile and warp arrangement of the table; k_s = 32 without packing at moderate
/// sparsity, k_s = 64 with packing above [`PACKING_MIN_SPARSITY`]; two stages. Every class
/// whose configuration is valid for the problem is a seed of every search (with split-K 2
/// and 4, as the authors' kernels run, and the model's best factors where the split-K rule
/// allows them), so that the tuned kernel is never slower than the paper's fixed kernels.
pub fn table_one_seeds(problem: &Problem, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let mut seeds = Vec::new();
    for class in 0..table_one::CLASSES {
        let Some(base) = table_one::config(class, problem, gpu) else {
            continue;
        };
        let papers = [2, 4].map(|split_k| KernelConfig { split_k, ..base });
        let allowed = papers.into_iter().filter(|c| seed_allowed(c, problem, gpu));
        for cfg in with_splits(base, problem, gpu).into_iter().chain(allowed) {
            if !seeds.contains(&cfg) {
                seeds.push(cfg);
            }
        }
    }
    seeds
}

/// A block shape that won the sampled sweep of template v4 (docs/perf-log.md, "v4"): used for
/// problems of its A layout whose density N/M is at most `max_density` and above the band
/// below, with k_s as written (problems whose window M does not divide it skip it).
struct Seed {
    layout: ALayout,
    max_density: f64,
    a_copy: ACopy,
    m_s: u32,
    n_s: u32,
    k_s: u32,
    m_t: u32,
    n_t: u32,
    warp: WarpLayout,
    packing: bool,
    stages: u32,
    min_blocks: u32,
}

/// Shorthand for the seed table.
#[allow(clippy::too_many_arguments)]
const fn seed(
    layout: ALayout,
    max_density: f64,
    a_copy: ACopy,
    (m_s, n_s, k_s): (u32, u32, u32),
    (m_t, n_t): (u32, u32),
    (rows, cols): (u32, u32),
    packing: bool,
    stages: u32,
    min_blocks: u32,
) -> Seed {
    Seed {
        layout,
        max_density,
        a_copy,
        m_s,
        n_s,
        k_s,
        m_t,
        n_t,
        warp: WarpLayout::new(rows, cols),
        packing,
        stages,
        min_blocks,
    }
}

/// The winners of the v4 sweep on the H100 (`shapes/sweep-v4.yaml` with `--strategy
/// sample`: the pruned candidates and 256 pseudo-random valid configurations per pattern and
/// layout at m = 256 and 4096, 4096², then targeted timings of the best shapes with the
/// other copy paths; docs/results/v4/): per A layout and density band, the fastest shapes
/// at m = 4096 and the fastest at m = 256. Split-K 2 and 4 join where the grid is small.
/// The `RowK` path came after the sweep: its seeds are the fastest of the non-packing
/// column-major winners' shapes with warps of at most 8 lane rows (its scalar A reads reach
/// 8 bank groups) timed at 4096³ and m = 256 on the H100 (docs/results/v4.5/h100-time.txt);
/// none for dense, where it lost to `Row16`. The column-major shapes are row-major problems'
/// seeds too, behind the `Transposed` path's pass ([`Seed::copy_for`]).
#[rustfmt::skip]
const SWEEP_SEEDS: [Seed; 43] = {
    use ACopy::{Col16, Row16, Row4, RowK};
    use ALayout::{ColMajor as C, RowMajor as R};
    [
        //    layout  N/M ≤   copy    (m_s, n_s, k_s)   (m_t, n_t) warp     pack  stages min_blocks
        seed(C, 0.125, Col16, (256, 32, 128), (16, 4), (4, 8), true, 4, 3),
        seed(C, 0.125, Col16, (64, 128, 64), (8, 8), (8, 4), false, 3, 2),
        seed(C, 0.125, Col16, (128, 256, 32), (8, 16), (16, 2), false, 3, 1),
        seed(C, 0.125, Col16, (128, 32, 256), (4, 8), (16, 2), true, 2, 2),
        seed(C, 0.25, Col16, (128, 256, 64), (16, 8), (8, 4), false, 3, 1),
        seed(C, 0.25, Col16, (128, 256, 32), (8, 16), (16, 2), false, 3, 1),
        seed(C, 0.25, Col16, (64, 64, 64), (16, 4), (4, 8), false, 2, 2),
        seed(C, 0.375, Col16, (128, 256, 64), (8, 16), (16, 2), false, 3, 1),
        seed(C, 0.375, Col16, (128, 256, 32), (16, 8), (8, 4), false, 3, 1),
        seed(C, 0.375, Col16, (64, 256, 64), (4, 16), (16, 2), false, 2, 1),
        seed(C, 0.5, Col16, (128, 256, 32), (8, 16), (16, 2), false, 3, 1),
        seed(C, 0.5, Col16, (128, 256, 64), (16, 8), (8, 4), false, 2, 1),
        seed(C, 1.0, Col16, (64, 128, 32), (8, 8), (2, 16), false, 3, 2),
        seed(C, 1.0, Col16, (128, 64, 32), (8, 8), (16, 2), false, 3, 2),
        seed(C, 1.0, Col16, (256, 128, 32), (16, 4), (8, 4), false, 2, 1),
        seed(R, 0.125, Row4, (128, 256, 32), (8, 16), (16, 2), false, 3, 1),
        seed(R, 0.125, Row4, (128, 256, 32), (8, 8), (16, 2), false, 3, 1),
        seed(R, 0.125, Row16, (64, 256, 64), (8, 8), (8, 4), false, 4, 1),
        seed(R, 0.125, Row16, (64, 128, 32), (8, 8), (8, 4), false, 2, 3),
        seed(R, 0.25, Row16, (128, 256, 32), (16, 8), (8, 4), false, 3, 1),
        seed(R, 0.25, Row4, (128, 256, 32), (8, 16), (16, 2), false, 3, 1),
        seed(R, 0.25, Row16, (64, 128, 32), (8, 8), (8, 4), false, 2, 3),
        seed(R, 0.375, Row16, (128, 256, 32), (16, 8), (8, 4), false, 3, 1),
        seed(R, 0.375, Row16, (64, 128, 32), (8, 8), (8, 4), false, 3, 3),
        seed(R, 0.375, Row4, (128, 256, 32), (8, 16), (16, 2), false, 3, 1),
        seed(R, 0.5, Row16, (128, 256, 32), (8, 16), (16, 2), false, 3, 1),
        seed(R, 0.5, Row16, (128, 256, 32), (16, 8), (8, 4), false, 3, 1),
        seed(R, 0.5, Row16, (64, 128, 32), (8, 8), (8, 4), false, 2, 3),
        seed(R, 1.0, Row4, (64, 128, 32), (8, 8), (8, 4), false, 2, 1),
        seed(R, 1.0, Row16, (64, 128, 32), (8, 8), (8, 4), false, 2, 1),
        seed(R, 1.0, Row4, (128, 128, 32), (8, 8), (2, 16), false, 2, 2),
        seed(R, 0.125, RowK, (128, 256, 64), (16, 8), (8, 4), false, 3, 1),
        seed(R, 0.125, RowK, (32, 256, 128), (8, 4), (4, 8), false, 2, 2),
        seed(R, 0.125, RowK, (64, 256, 64), (8, 8), (8, 4), false, 4, 1),
        seed(R, 0.125, RowK, (64, 128, 32), (8, 8), (8, 4), false, 3, 3),
        seed(R, 0.25, RowK, (64, 128, 32), (8, 8), (8, 4), false, 2, 1),
        seed(R, 0.25, RowK, (128, 256, 64), (16, 8), (8, 4), false, 3, 1),
        seed(R, 0.25, RowK, (128, 256, 32), (16, 8), (8, 4), false, 3, 1),
        seed(R, 0.375, RowK, (64, 128, 32), (8, 8), (8, 4), false, 2, 1),
        seed(R, 0.375, RowK, (128, 256, 64), (16, 8), (8, 4), false, 3, 1),
        seed(R, 0.375, RowK, (128, 256, 32), (16, 8), (8, 4), false, 3, 1),
        seed(R, 0.5, RowK, (64, 128, 32), (8, 8), (8, 4), false, 3, 3),
        seed(R, 0.5, RowK, (64, 128, 32), (8, 8), (8, 4), false, 2, 1),
    ]
};

impl Seed {
    /// The copy path the seed's shape takes for `problem`: its own for its layout; for a
    /// row-major problem, a column-major seed's shape also runs behind the transposing pass
    /// (its main loop is the column-major one the seed won with).
    fn copy_for(&self, problem: &Problem) -> Option<ACopy> {
        match (self.layout, problem.a_layout) {
            (own, wanted) if own == wanted => Some(self.a_copy),
            (ALayout::ColMajor, ALayout::RowMajor) => Some(ACopy::Transposed),
            _ => None,
        }
    }

    /// The seed's configuration for `problem`'s pattern and L, with `split_k` and `a_copy`.
    fn config(&self, problem: &Problem, a_copy: ACopy, split_k: u32) -> KernelConfig {
        KernelConfig {
            a_copy,
            m_s: self.m_s,
            n_s: self.n_s,
            k_s: self.k_s,
            m_t: self.m_t,
            n_t: self.n_t,
            warp: self.warp,
            nm: problem.nm,
            l: problem.l as u32,
            packing: self.packing,
            stages: self.stages,
            min_blocks: self.min_blocks,
            split_k,
            row_chunk: 0,
            stream_k: false,
            tma: false,
            cluster_sum: false,
            dtype: Dtype::F32,
        }
    }
}

/// Density bands of [`SWEEP_SEEDS`], ascending.
const DENSITY_BANDS: [f64; 5] = [0.125, 0.25, 0.375, 0.5, 1.0];

/// The [`SWEEP_SEEDS`] of the problem's density band that have a copy path for its layout
/// ([`Seed::copy_for`]), each [`with_splits`], valid for it on `gpu` and allowed by the
/// paper's rules.
pub fn sweep_seeds(problem: &Problem, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let density = problem.nm.density();
    let band = DENSITY_BANDS
        .into_iter()
        .find(|upper| density <= upper + 1e-9)
        .unwrap_or(1.0);
    SWEEP_SEEDS
        .iter()
        .filter(|s| s.max_density == band)
        .filter_map(|s| Some(s.config(problem, s.copy_for(problem)?, 1)))
        .flat_map(|cfg| with_splits(cfg, problem, gpu))
        .filter(|cfg| paper_rules(cfg, problem, gpu))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::compile_key;
    use crate::problem::NmPattern;
    use std::collections::BTreeSet;

    #[test]
    fn sweep_seeds_follow_the_layout_the_density_band_and_the_split_k_rule() {
        let gpu = GpuProfile::builtin("h100").unwrap();
        let problem = |m, n: u32, layout| {
            Problem::new(m, 4096, 4096, NmPattern::new(n, 32).unwrap(), 32)
                .unwrap()
                .with_layout(layout)
                .unwrap()
        };
        let large = sweep_seeds(&problem(4096, 4, ALayout::ColMajor), &gpu);
        assert!(!large.is_empty());
        assert!(large
            .iter()
            .all(|c| c.a_copy == ACopy::Col16 && c.split_k == 1));
        let small = sweep_seeds(&problem(256, 8, ALayout::RowMajor), &gpu);
        assert!(small.iter().any(|c| c.split_k > 1));
        assert!(small.iter().all(|c| c.a_layout() == ALayout::RowMajor));
        // Row-major problems also time the column-major shapes behind the transposing pass.
        assert!(small.iter().any(|c| c.a_copy == ACopy::Transposed));
        assert!(small.iter().any(|c| c.a_copy == ACopy::RowK));
        let dense = sweep_seeds(&problem(4096, 32, ALayout::RowMajor), &gpu);
        assert!(!dense.is_empty() && dense.iter().all(|c| c.nm.n == 32));
        // Every seed of the table is valid for its band's pattern at M = 32 on an H100.
        for s in &SWEEP_SEEDS {
            let n = (s.max_density * 32.0).round() as u32;
            let p = problem(4096, n, s.layout);
            let cfg = s.config(&p, s.a_copy, 1);
            validate::validate(&cfg, &gpu).unwrap();
            validate::validate_for_problem(&cfg, &p).unwrap();
        }
    }

    #[test]
    fn table_one_is_among_the_candidates_of_every_layout() {
        let gpu = GpuProfile::builtin("h100").unwrap();
        for layout in ALayout::ALL {
            for n in [16, 4] {
                let nm = NmPattern::new(n, 32).unwrap();
                let problem = Problem::new(4096, 4096, 4096, nm, 32)
                    .unwrap()
                    .with_layout(layout)
                    .unwrap();
                let large = table_one::config(2, &problem, &gpu).unwrap();
                assert_eq!(
                    (large.m_s, large.n_s, large.m_t, large.n_t),
                    (64, 128, 8, 8)
                );
                assert_eq!(large.packing, n == 4);
                assert_eq!(large.k_s, if n == 4 { 64 } else { 32 });
                assert_eq!(large.a_layout(), layout);
                let picked = candidates(&problem, &gpu, Strategy::Pruned);
                for seed in table_one_seeds(&problem, &gpu) {
                    assert!(picked.contains(&seed), "{seed} missing");
                }
            }
        }
    }

    #[test]
    fn decode_problems_time_each_seed_in_both_stages_and_the_models_distinct_shapes() {
        let gpu = GpuProfile::builtin("h100").unwrap();
        for l in [32, 1] {
            let problem = Problem::new(4, 11008, 4096, NmPattern::new(8, 32).unwrap(), l).unwrap();
            let space: Vec<KernelConfig> =
                enumerate::search_space(problem.nm, problem.l as u32, problem.a_layout, &gpu)
                    .into_iter()
                    .filter(|c| validate::validate_for_problem(c, &problem).is_ok())
                    .collect();
            let picked = decode_candidates(&space, &problem, &gpu);
            let seed = KernelConfig {
                split_k: 1,
                ..table_one::decode_config(&problem, DECODE_SEEDS[2])
            };
            assert!(picked.contains(&seed));
            assert!(picked.contains(&KernelConfig { stages: 2, ..seed }));
            // The model's picks: its best one-stage shapes, not a shape and its twin.
            let ranked_shapes: Vec<KernelConfig> = ranked(
                space
                    .iter()
                    .filter(|c| c.a_copy.is_direct() && c.stages == 1)
                    .copied()
                    .collect(),
                &problem,
                &gpu,
            );
            for best in ranked_shapes.iter().take(DECODE_TOP) {
                assert!(picked.contains(best), "{} missing (L = {l})", best.name());
            }
        }
    }

    #[test]
    fn decode_seeds_of_one_block_width_share_their_splits() {
        let gpu = GpuProfile::builtin("h200").unwrap();
        let problem = Problem::new(1, 5120, 5120, NmPattern::new(12, 32).unwrap(), 32).unwrap();
        let picked = candidates(&problem, &gpu, Strategy::Pruned);
        let names: Vec<String> = picked.iter().map(|c| c.name()).collect();
        // Session 60's H200 measurement: the 16-warp seed split three ways, as the 8-warp
        // one of the same 64 columns is, beat the stored winner.
        for name in [
            "nm_spmm_f32_drow_ms1_ns64_ks4_mt1_nt8_w8x1_n12m32l32_nopack_cp3_mb1_sk3",
            "nm_spmm_f32_drow_ms1_ns64_ks4_mt1_nt8_w16x1_n12m32l32_nopack_cp1_mb1_sk3",
        ] {
            assert!(names.iter().any(|n| n == name), "{name} missing: {names:?}");
        }
        // In each of its pipelines.
        for stages in validate::DECODE_STAGES {
            let twin = KernelConfig {
                stages,
                ..KernelConfig::parse_name(
                    "nm_spmm_f32_drow_ms1_ns64_ks4_mt1_nt8_w16x1_n12m32l32_nopack_cp1_mb1_sk3",
                )
                .unwrap()
            };
            assert!(picked.contains(&twin), "{} missing", twin.name());
        }
    }

    #[test]
    fn sample_keeps_the_pruned_picks_and_shares_kernels_across_problems() {
        let gpu = GpuProfile::builtin("h100").unwrap();
        let nm = NmPattern::new(8, 32).unwrap();
        let mut kernels = BTreeSet::new();
        for (m, n, k) in [(256, 4096, 4096), (4096, 11008, 4096), (4096, 4096, 11008)] {
            let problem = Problem::new(m, n, k, nm, 32).unwrap();
            let sampled = candidates(&problem, &gpu, Strategy::Sample);
            let pruned = candidates(&problem, &gpu, Strategy::Pruned);
            assert!(pruned.iter().all(|c| sampled.contains(c)));
            assert!(sampled.len() <= pruned.len() + SAMPLE_SIZE);
            assert!(sampled.len() >= SAMPLE_SIZE);
            assert_eq!(sampled, candidates(&problem, &gpu, Strategy::Sample));
            kernels.extend(sampled.iter().map(|c| compile_key(c).name()));
        }
        // Split-K variants share a kernel, and the sample is the same for every problem.
        assert!(kernels.len() < 2 * SAMPLE_SIZE, "{} kernels", kernels.len());
    }

    #[test]
    fn the_ranking_strategies_time_the_row_chunks_of_their_first_picks() {
        let gpu = GpuProfile::builtin("h100").unwrap();
        let mut chunked_problems = 0;
        for (n, layout) in [
            (4, ALayout::ColMajor),
            (4, ALayout::RowMajor),
            (16, ALayout::ColMajor),
        ] {
            let nm = NmPattern::new(n, 32).unwrap();
            let problem = Problem::new(4096, 4096, 4096, nm, 32)
                .unwrap()
                .with_layout(layout)
                .unwrap();
            for strategy in [Strategy::Pruned, Strategy::Model] {
                // The stream-K variants and cluster-summed twins come last (their own tests).
                let picked: Vec<_> = candidates(&problem, &gpu, strategy)
                    .into_iter()
                    .filter(|c| !c.stream_k && !c.cluster_sum)
                    .collect();
                let (whole, chunked): (Vec<_>, Vec<_>) =
                    picked.iter().partition(|c| c.row_chunk == 0);
                chunked_problems += usize::from(!chunked.is_empty());
                // Every chunked candidate is a valid variant of one of the first whole tiles,
                // and the variants follow the whole tiles, which keep the strategy's order.
                let firsts = &whole[..CHUNKED_TOP.min(whole.len())];
                for cfg in &chunked {
                    validate::validate(cfg, &gpu).unwrap();
                    let base = KernelConfig {
                        row_chunk: 0,
                        stream_k: false,
                        tma: false,
                        dtype: Dtype::F32,
                        ..*cfg
                    };
                    assert!(
                        firsts.contains(&base),
                        "{cfg} is no variant of a first pick"
                    );
                }
                let whole_count = whole.len();
                assert!(picked[whole_count..].iter().all(|c| c.row_chunk > 0));
            }
        }
        assert!(chunked_problems > 0, "no strategy timed a chunked kernel");
    }

    #[test]
    fn the_timing_strategies_time_tensor_copy_twins_on_sm_90_only() {
        let nm = NmPattern::new(12, 32).unwrap();
        let problem = Problem::new(4096, 4096, 4096, nm, 32)
            .unwrap()
            .with_layout(ALayout::ColMajor)
            .unwrap();
        let h100 = GpuProfile::builtin("h100").unwrap();
        let picked = candidates(&problem, &h100, Strategy::Pruned);
        let twins: Vec<_> = picked.iter().filter(|c| c.tma).collect();
        assert!(!twins.is_empty() && twins.len() <= TMA_TWINS_TOP);
        for twin in twins {
            let plain = KernelConfig {
                tma: false,
                dtype: Dtype::F32,
                ..*twin
            };
            assert!(picked.contains(&plain), "{twin} has no cp.async twin");
        }
        let a100 = GpuProfile::builtin("a100").unwrap();
        assert!(!candidates(&problem, &a100, Strategy::Pruned)
            .iter()
            .any(|c| c.tma));
    }

    #[test]
    fn tensor_core_splits_are_timed_only_where_the_unsplit_grid_leaves_sms_idle() {
        let gpu = GpuProfile::builtin("h200").unwrap();
        let bf16 = |m, n, k| {
            Problem::new(m, n, k, NmPattern::new(8, 32).unwrap(), 128)
                .unwrap()
                .with_dtype(Dtype::Bf16)
                .with_layout(ALayout::ColMajor)
                .unwrap()
        };
        // 256 × 2048: 16 or 32 tiles for 132 SMs.
        let small = candidates(&bf16(256, 2048, 5632), &gpu, Strategy::Pruned);
        let splits: Vec<_> = small.iter().filter(|c| c.split_k > 1).collect();
        assert!(!splits.is_empty());
        for cfg in &splits {
            let unsplit = KernelConfig {
                split_k: 1,
                ..**cfg
            };
            assert!(small.contains(&unsplit), "{cfg} without its unsplit twin");
        }
        // 4096 × 4096: 512 tiles and more.
        let large = candidates(&bf16(4096, 4096, 4096), &gpu, Strategy::Pruned);
        assert!(!large.is_empty());
        assert!(large.iter().all(|c| c.split_k == 1));
    }

    #[test]
    fn searches_time_the_other_lane_widths_of_their_first_element_wise_decode_picks() {
        let gpu = GpuProfile::builtin("h200").unwrap();
        let problem = Problem::new(1, 5120, 5120, NmPattern::new(12, 32).unwrap(), 1).unwrap();
        let picked = candidates(&problem, &gpu, Strategy::Pruned);
        let firsts: Vec<KernelConfig> = picked
            .iter()
            .filter(|c| c.family() == Family::EwDecode)
            .take(LANE_TWINS_TOP)
            .copied()
            .collect();
        assert!(
            !firsts.is_empty(),
            "an m = 1, L = 1 problem gets element-wise decode kernels"
        );
        let mut twins = 0;
        for cfg in &firsts {
            for n_t in validate::DECODE_LANE_COLUMNS {
                let twin = KernelConfig { n_t, ..*cfg };
                if n_t != cfg.n_t && seed_allowed(&twin, &problem, &gpu) {
                    assert!(picked.contains(&twin), "{twin} missing");
                    twins += 1;
                }
            }
        }
        assert!(twins > 0, "no lane twin among {firsts:?}");
        // The warm strategy's pass over the same list adds nothing more.
        assert_eq!(with_lane_twins(picked.clone(), &problem, &gpu), picked);
    }

    #[test]
    fn neighbours_differ_in_one_parameter_and_keep_the_winners_variants_where_they_fit() {
        let gpu = GpuProfile::builtin("h200").unwrap();
        let nm = NmPattern::new(12, 32).unwrap();
        let problem = Problem::new(4096, 6656, 6656, nm, 32)
            .unwrap()
            .with_layout(ALayout::ColMajor)
            .unwrap();
        let name = "nm_spmm_f32_acol16_ms128_ns128_ks64_mt16_nt8_w8x4_n12m32l32_nopack_cp2_mb1_sk1_rc8_tma_streamk";
        let best = KernelConfig::parse_name(name).unwrap();
        let near = neighbours(&best, &problem, &gpu);
        let names = || near.iter().map(|c| c.name()).collect::<Vec<_>>();
        assert!(near.iter().all(|c| is_neighbour(&best, c)), "{:?}", names());
        // A deeper pipeline keeps the winner's chunks, tensor copies and stream-K schedule.
        let deeper = KernelConfig { stages: 3, ..best };
        assert!(validate::validate(&deeper, &gpu).is_ok());
        assert!(near.contains(&deeper), "{:?}", names());
        // At k_s = 32 a tile has 12 rows, which chunks of 8 do not divide: the neighbour
        // keeps its own chunks (4, or none) with the winner's tensor copies and stream-K.
        let shorter = KernelConfig { k_s: 32, ..best };
        assert!(validate::validate(&shorter, &gpu).is_err());
        for row_chunk in [0, 4] {
            let cfg = KernelConfig {
                row_chunk,
                ..shorter
            };
            assert!(near.contains(&cfg), "{}: {:?}", cfg.name(), names());
        }
    }

    #[test]
    fn split_twins_are_the_allowed_other_splits_of_the_first_tiled_picks() {
        let gpu = GpuProfile::builtin("h200").unwrap();
        let nm = NmPattern::new(8, 32).unwrap();
        // m = 256: a few tiles, so the split-K rule allows splits; m = 4096 fills the GPU.
        for m in [256, 4096] {
            let problem = Problem::new(m, 4096, 4096, nm, 32).unwrap();
            let picked = candidates(&problem, &gpu, Strategy::Pruned);
            let twinned = with_split_twins(picked.clone(), &problem, &gpu);
            assert_eq!(twinned[..picked.len()], picked[..], "the twins come last");
            let firsts = split_twin_bases(&picked);
            assert!(!firsts.is_empty() && firsts.len() <= SPLIT_TWINS_TOP);
            let unsplit = |c: &KernelConfig| KernelConfig { split_k: 1, ..*c };
            let bases: Vec<KernelConfig> = firsts.iter().map(unsplit).collect();
            let added = &twinned[picked.len()..];
            for twin in added {
                assert!(seed_allowed(twin, &problem, &gpu), "{twin}");
                assert!(
                    bases.contains(&unsplit(twin)),
                    "{twin} is no split of a first pick"
                );
            }
            for split_k in SPLIT_K_VALUES {
                let twin = KernelConfig {
                    split_k,
                    ..firsts[0]
                };
                if seed_allowed(&twin, &problem, &gpu) {
                    assert!(twinned.contains(&twin), "{twin} missing");
                }
            }
            if m == 256 {
                assert!(!added.is_empty(), "m = 256 gets other splits");
            } else {
                assert!(added.iter().all(|c| c.split_k == 1), "{added:?}");
            }
        }
    }

    #[test]
    fn the_timing_strategies_time_the_stream_k_schedule_of_their_first_tiled_picks() {
        let gpu = GpuProfile::builtin("h100").unwrap();
        let problem = |m| Problem::new(m, 4096, 4096, NmPattern::new(8, 32).unwrap(), 32).unwrap();
        // The cluster-summed twins come after the stream-K variants (their own test).
        let picked: Vec<_> = candidates(&problem(4096), &gpu, Strategy::Pruned)
            .into_iter()
            .filter(|c| !c.cluster_sum)
            .collect();
        let first = picked
            .iter()
            .position(|c| c.stream_k)
            .expect("a stream-K variant");
        let (plain, stream) = picked.split_at(first);
        assert!(stream.iter().all(|c| c.stream_k), "the variants come last");
        assert!(!stream.is_empty() && stream.len() <= STREAM_K_TOP);
        let firsts: Vec<_> = plain
            .iter()
            .filter(|c| c.family() == Family::Tiled && (c.split_k == 1 || c.tma))
            .take(STREAM_K_TOP)
            .collect();
        for cfg in stream {
            assert_eq!(cfg.split_k, 1, "{cfg}");
            assert!(
                firsts.iter().any(|base| KernelConfig {
                    stream_k: true,
                    split_k: 1,
                    ..**base
                } == *cfg),
                "{cfg} is no variant of a first pick"
            );
        }
        // Decode-sized problems get none; the model strategy (no GPU) none either.
        assert!(!candidates(&problem(8), &gpu, Strategy::Pruned)
            .iter()
            .any(|c| c.stream_k));
        assert!(!candidates(&problem(4096), &gpu, Strategy::Model)
            .iter()
            .any(|c| c.stream_k));
    }

    #[test]
    fn a_split_pick_with_tensor_copies_gets_its_unsplit_stream_k_variant() {
        // An H200 winner at m = 256: 52 tiles of 128×256, k split in two.
        let gpu = GpuProfile::builtin("h200").unwrap();
        let nm = NmPattern::new(8, 32).unwrap();
        let problem = Problem::new(256, 6656, 6656, nm, 32)
            .and_then(|p| p.with_layout(ALayout::ColMajor))
            .unwrap();
        let split = KernelConfig::parse_name(
            "nm_spmm_f32_acol16_ms128_ns256_ks64_mt16_nt8_w8x4_n8m32l32_nopack_cp3_mb1_sk2_tma",
        )
        .unwrap();
        let twinned = with_stream_k(vec![split], &problem, &gpu);
        let stream = KernelConfig {
            stream_k: true,
            split_k: 1,
            ..split
        };
        assert_eq!(twinned, [split, stream]);
        // Without tensor copies a split pick has none: that schedule would run the grid
        // data-parallel.
        let plain = KernelConfig {
            tma: false,
            ..split
        };
        assert_eq!(with_stream_k(vec![plain], &problem, &gpu), [plain]);
    }

    #[test]
    fn split_picks_get_their_cluster_summed_pair_on_sm_90_only() {
        let nm = NmPattern::new(8, 32).unwrap();
        let problem = Problem::new(256, 4096, 4096, nm, 32)
            .unwrap()
            .with_layout(ALayout::ColMajor)
            .unwrap();
        let h100 = GpuProfile::builtin("h100").unwrap();
        let picked = candidates(&problem, &h100, Strategy::Pruned);
        let first = picked.iter().position(|c| c.cluster_sum).expect("a twin");
        let summed = &picked[first..];
        assert!(summed.iter().all(|c| c.cluster_sum), "the twins come last");
        assert!(summed.len() <= CLUSTER_SUM_TOP);
        for twin in summed {
            assert_eq!(twin.split_k, CLUSTER_SUM_SPLIT, "{twin}");
            let of_a_split_pick = picked.iter().any(|c| {
                c.launches_reduce()
                    && KernelConfig {
                        cluster_sum: true,
                        ..c.with_split(CLUSTER_SUM_SPLIT)
                    } == *twin
            });
            assert!(of_a_split_pick, "{twin} is no twin of a split pick");
        }
        let a100 = GpuProfile::builtin("a100").unwrap();
        let picked = candidates(&problem, &a100, Strategy::Pruned);
        assert!(picked.iter().all(|c| !c.cluster_sum));
    }

    #[test]
    fn row_major_searches_time_the_transposing_twins_of_their_row_copying_picks() {
        let gpu = GpuProfile::builtin("h200").unwrap();
        let nm = NmPattern::new(12, 32).unwrap();
        let row = Problem::new(320, 4096, 11008, nm, 32).unwrap();
        let twins_of = |picked: &[KernelConfig]| {
            let row_copying: Vec<_> = picked
                .iter()
                .filter(|c| matches!(c.a_copy, ACopy::Row4 | ACopy::Row16 | ACopy::RowK))
                .take(TRANSPOSED_TWINS_TOP)
                .collect();
            assert!(!row_copying.is_empty(), "no row-copying pick to pair");
            for cfg in row_copying {
                let twin = KernelConfig {
                    a_copy: ACopy::Transposed,
                    ..*cfg
                };
                let valid = validate::validate(&twin, &gpu).is_ok()
                    && validate::validate_for_problem(&twin, &row).is_ok();
                assert_eq!(picked.contains(&twin), valid, "{cfg}: twin {twin}");
            }
        };
        twins_of(&candidates(&row, &gpu, Strategy::Pruned));
        // The committed H200 database's m = 320 winner (a `RowK` copy) and its faster twin.
        let rowk = KernelConfig::parse_name(
            "nm_spmm_f32_arowk_ms64_ns128_ks32_mt8_nt8_w8x4_n12m32l32_nopack_cp2_mb1_sk4",
        )
        .unwrap();
        let picked = with_transposed_twins(vec![rowk], &row, &gpu);
        assert_eq!(picked.len(), 2);
        assert_eq!(picked[1].a_copy, ACopy::Transposed);
        // Column-major problems have no such twins.
        let col = row.with_layout(ALayout::ColMajor).unwrap();
        let acol = KernelConfig {
            a_copy: ACopy::Col16,
            ..rowk
        };
        assert_eq!(with_transposed_twins(vec![acol], &col, &gpu), vec![acol]);
    }
}
