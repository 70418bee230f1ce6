//! Which configurations the kernel template supports, and which fit a GPU and a problem.
//!
//! Every rule here mirrors an assumption of `templates/nm_spmm.cu.tera` or, for the decode
//! family, `templates/nm_spmm_decode.cu.tera`, for the element-wise family
//! `templates/nm_spmm_ew.cu.tera`, and for the element-wise decode family
//! `templates/nm_spmm_ew_decode.cu.tera` (most are repeated there as `static_assert`s). A broken rule is reported as
//! [`CodegenError::Rejected`] with a reason a human can act on; the first broken rule wins.
//!
//! Copy mappings need no divisibility rule of their own: every operand moves with
//! `gcd(vectors per row, threads)` threads along a row and the rest of the block along the
//! other dimension, and a last, partial pass is predicated at compile time.

use super::config::EW_WARP_ROWS_PER_LANE_ROW;
use super::tc::TC_COMPUTE_CAPABILITY;
use super::{nvrtc, ACopy, CodegenError, Family, KernelConfig};
use crate::gpu_profile::GpuProfile;
use crate::problem::{NmPattern, Problem, DECODE_MAX_M, ELEMENT_WISE_L};

/// Largest m_s, n_s and k_s the template is tuned for.
pub const MAX_TILE: u32 = 256;
/// Thread-tile sizes the inner kernel supports (whole 4×4 sub-tiles, read as float4).
pub const THREAD_TILES: [u32; 3] = [4, 8, 16];
/// Split-K factors the tuner may choose. Not only powers of two: 3 and 6 fill waves that 2,
/// 4 and 8 leave ragged (the template gives each split ceil(k_tiles / split_k) k-tiles).
pub const SPLIT_K_VALUES: [u32; 6] = [1, 2, 3, 4, 6, 8];
/// Depths of the cp.async ring.
pub const STAGES: std::ops::RangeInclusive<u32> = 2..=4;
/// Values of `min_blocks` (`__launch_bounds__`' second argument).
pub const MIN_BLOCKS: std::ops::RangeInclusive<u32> = 1..=4;
/// Hardware cap on registers per thread.
pub const MAX_REGISTERS_PER_THREAD: u32 = 255;
/// The inner loop over a tile's w_s rows is unrolled completely (the row indices live in
/// registers, which only compile-time indices can address); past this many FMAs per tile
/// the code outgrows the instruction cache and NVRTC compile time climbs steeply.
pub const MAX_UNROLLED_FMAS: u32 = 4096;
/// Registers a thread may spend on the indices of one tile (w_s per column group).
pub const MAX_INDEX_REGISTERS: u32 = 64;
/// Registers a thread needs beyond its tiles, fragments and indices: addresses, counters.
const REGISTER_OVERHEAD: u32 = 24;

/// Decode family: rows of C per block (m_s), at most, with two 16-byte loads of a B' row per
/// lane; up to m = this many rows the tuner times only the decode family (and the paper's
/// Table I seeds).
pub const DECODE_MAX_ROWS: u32 = 4;
/// The vector-wise decode family's blocks of 8 rows, whose lanes load one 16-byte B' segment
/// per row (n_t = 4): as many sums per lane as 4 rows with two, so that m = 5 … 8 reads the
/// weight once instead of twice (docs/perf-log.md, session 26).
pub const DECODE_WIDE_ROWS: u32 = 8;
/// Decode family: columns per lane (n_t), one or two 16-byte loads of a B' row.
pub const DECODE_LANE_COLUMNS: [u32; 2] = [4, 8];
/// Decode family: columns per block (n_s), at most; a row segment of n_s/n_t lanes must
/// divide a warp.
pub const DECODE_MAX_COLUMNS: u32 = 128;
/// Decode family: B' rows per lane in flight per step (k_s), at most.
pub const DECODE_MAX_UNROLL: u32 = 16;
/// Decode family: warps per block, at most.
pub const DECODE_MAX_WARPS: u32 = 32;
/// Decode families: how a warp streams its steps of B' and D rows (`stages`, the templates'
/// `stream_rows`): cp1 one step at a time; cp2 two, the next step's loads issued before this
/// step's FMAs; cp3 one at a time, but the first two steps' loads issued before the wait for
/// the previous grid.
pub const DECODE_STAGES: [u32; 3] = [1, 2, 3];

/// Element-wise family: rows of C per lane (m_t), one or two 16-byte A loads per column.
pub const EW_LANE_ROWS: [u32; 2] = [4, 8];
/// Element-wise family: columns of C per warp (n_t), whole 16-byte B' loads.
pub const EW_WARP_COLUMNS: [u32; 3] = [4, 8, 16];
/// Element-wise family: warps per block, at most.
pub const EW_MAX_WARPS: u32 = 16;
/// Element-wise family: pruning windows per ring stage (k_s / M), at most.
pub const EW_MAX_WINDOWS: u32 = 4;
/// Element-wise family: the N kept rows of a window are always unrolled, and past this many
/// FMAs (N·m_t·n_t) ptxas hoists so many loads that it spills and takes minutes (NVRTC 13:
/// 4096 FMAs, 58 s and 3 KB spilled; 2048 at 16:32, m_t = 8, n_t = 16: 254 registers, none).
pub const EW_MAX_WINDOW_FMAS: u32 = 2048;
/// Element-wise family: a stage whose windows hold at most this many FMAs in all is unrolled
/// whole (loads of the next window overlap the last FMAs of the one before); a larger one
/// loops over its windows (4:32 with m_t = 4, n_t = 16 and two windows already spilled
/// 1.4 KB unrolled whole, at 2048 FMAs).
pub const EW_STAGE_UNROLL_FMAS: u32 = 1024;

type Rule = Result<(), String>;

fn rule(ok: bool, reason: impl FnOnce() -> String) -> Rule {
    if ok {
        Ok(())
    } else {
        Err(reason())
    }
}

fn rejected(cfg: &KernelConfig, reason: String) -> CodegenError {
    CodegenError::Rejected {
        name: cfg.name(),
        reason,
    }
}

/// Every rule: the template's structural rules, then the GPU's limits.
pub fn validate(cfg: &KernelConfig, gpu: &GpuProfile) -> Result<(), CodegenError> {
    validate_structure(cfg)?;
    gpu_rules(cfg, gpu).map_err(|reason| rejected(cfg, reason))
}

/// The rules that hold on any GPU: what the template can be rendered and compiled for.
pub fn validate_structure(cfg: &KernelConfig) -> Result<(), CodegenError> {
    chunk_rules(cfg).map_err(|reason| rejected(cfg, reason))?;
    stream_k_rules(cfg).map_err(|reason| rejected(cfg, reason))?;
    tma_rules(cfg).map_err(|reason| rejected(cfg, reason))?;
    cluster_sum_rules(cfg).map_err(|reason| rejected(cfg, reason))?;
    match cfg.family() {
        Family::Tiled => tiled_rules(cfg),
        Family::Decode => pattern_rules(cfg)
            .and_then(|_| decode_rules(cfg))
            .and_then(|_| register_rules(cfg)),
        Family::EwDecode => decode_rules(cfg)
            .and_then(|_| shuffle_rules(cfg))
            .and_then(|_| register_rules(cfg)),
        Family::Ew => ew_rules(cfg).and_then(|_| register_rules(cfg)),
        Family::Tc => return tc_rules(cfg),
    }
    .map_err(|reason| rejected(cfg, reason))
}

/// The tensor-core family: fields as [`KernelConfig::tensor_core`] sets them, and the
/// family's own rules ([`super::TcConfig::validate_structure`]).
fn tc_rules(cfg: &KernelConfig) -> Result<(), CodegenError> {
    match cfg.as_tc() {
        Some(tc) => tc.validate_structure(),
        None => Err(rejected(
            cfg,
            "the wgmma path's fields are those of a tensor-core configuration \
             (KernelConfig::tensor_core)"
                .into(),
        )),
    }
}

fn tiled_rules(cfg: &KernelConfig) -> Rule {
    pattern_rules(cfg)
        .and_then(|_| block_tile_rules(cfg))
        .and_then(|_| thread_tile_rules(cfg))
        .and_then(|_| group_rules(cfg))
        .and_then(|_| copy_rules(cfg))
        .and_then(|_| pipeline_rules(cfg))
        .and_then(|_| unroll_rules(cfg))
        .and_then(|_| register_rules(cfg))
}

/// The m a configuration's kernel needs a multiple of: 4 where A is copied column-major 16
/// bytes at a time (column-major A, and the `Transposed` path's column-major copy), else 1.
/// (Column-major problems need it anyway: [`Problem::with_layout`].) The element-wise
/// family's transposed copy zeroes its columns' padding, so its 16-byte copies of the last
/// rows read zeros past m: every m runs.
pub fn m_multiple(cfg: &KernelConfig) -> usize {
    if cfg.a_copy == ACopy::Transposed {
        4
    } else {
        1
    }
}

/// Rules that tie a configuration to one problem: same N:M and L, and enough k-tiles and
/// grid rows.
pub fn validate_for_problem(cfg: &KernelConfig, problem: &Problem) -> Result<(), CodegenError> {
    problem_rules(cfg, problem).map_err(|reason| rejected(cfg, reason))
}

/// Column groups (distinct index columns) one thread's n_t columns span. The thread's 4-wide
/// sub-tiles sit 4·warp.cols columns apart; when the warp tile is no wider than L they all
/// lie in one group, else one group per L columns of the warp tile (or per sub-tile when
/// sub-tiles are more than L apart). Dense kernels have no indices: 1.
pub fn index_groups(cfg: &KernelConfig) -> u32 {
    let warp_width = cfg.warp.cols * cfg.n_t;
    let stride = 4 * cfg.warp.cols;
    if cfg.is_dense() || warp_width <= cfg.l {
        1
    } else if stride <= cfg.l {
        warp_width / cfg.l.max(1)
    } else {
        cfg.n_t / 4
    }
}

/// Fragment buffers of the inner loop: two alternate, and a third holds row 0 when w_s is
/// odd, so that the next tile's row 0 never lands on the last row still to be computed.
pub fn fragment_buffers(cfg: &KernelConfig) -> u32 {
    if cfg.w_s() % 2 == 1 {
        3
    } else {
        2
    }
}

/// Row chunks a tiled configuration may take (`row_chunk`; 0 unrolls each tile whole).
/// A chunked tile runs its compressed rows in a loop over chunks of this many rows that is
/// not unrolled: a quarter or half of the code of a 16-row tile, so the hot loop stays in
/// the instruction cache, and a chunk's indices in registers instead of the tile's. Whether
/// it pays depends on the kernel (docs/design.md "Row chunks").
pub const ROW_CHUNKS: [u32; 2] = [4, 8];

/// Compressed rows per pass of the template's inner loop (its RC): the row chunk, or w_s.
pub fn row_chunk(cfg: &KernelConfig) -> u32 {
    if cfg.row_chunk == 0 {
        cfg.w_s()
    } else {
        cfg.row_chunk
    }
}

/// A stream-K schedule shares out the tiled or tensor-core family's tiles: it replaces
/// split-K.
fn stream_k_rules(cfg: &KernelConfig) -> Rule {
    if !cfg.stream_k {
        return Ok(());
    }
    rule(matches!(cfg.family(), Family::Tiled | Family::Tc), || {
        "stream_k applies to the tiled and tensor-core families only".to_string()
    })?;
    rule(cfg.split_k == 1, || {
        format!(
            "a stream-K schedule shares out whole k-ranges: split_k must be 1, not {}",
            cfg.split_k
        )
    })
}

/// Tensor copies serve the tiled family's whole column-major tiles only
/// ([`KernelConfig::tma_capable`]).
fn tma_rules(cfg: &KernelConfig) -> Rule {
    if !cfg.tma {
        return Ok(());
    }
    rule(cfg.tma_capable(), || {
        "tma applies to the tiled family's column-major and transposing paths without packing, \
         with every tile side at most 256"
            .to_string()
    })
}

/// A split summed in a cluster is the tiled family's split of k (not stream-K, which shares
/// k its own way) over a portable cluster of 2 to 8 blocks, whose sums pass through the ring
/// in whole accumulator rows ([`cluster_sum_passes`]).
fn cluster_sum_rules(cfg: &KernelConfig) -> Rule {
    if !cfg.cluster_sum {
        return Ok(());
    }
    rule(cfg.family() == Family::Tiled && !cfg.stream_k, || {
        "cluster_sum applies to the tiled family's split of k, without stream-K".to_string()
    })?;
    rule((2..=MAX_CLUSTER_SPLIT).contains(&cfg.split_k), || {
        format!(
            "cluster_sum needs split_k from 2 to {MAX_CLUSTER_SPLIT} (a portable cluster), not {}",
            cfg.split_k
        )
    })?;
    rule(cluster_sum_passes(cfg).is_some(), || {
        "the block's sums do not fit its ring even one accumulator row a pass".to_string()
    })
}

/// The most blocks of a portable cluster: the most ways a split may be summed in one.
pub const MAX_CLUSTER_SPLIT: u32 = 8;

/// Passes a split summed in a cluster takes to move the block's sums through its ring
/// (`templates/nm_spmm_clsum.cu.tera`): the fewest that divide the thread tile's m_t rows
/// and leave a pass's m_s·n_s/passes floats within the ring. None where even one row a pass
/// does not fit.
pub fn cluster_sum_passes(cfg: &KernelConfig) -> Option<u32> {
    let tile_floats = cfg.m_s as u64 * cfg.n_s as u64;
    let ring_floats = cfg.stage_floats() as u64 * cfg.stages as u64;
    (1..=cfg.m_t.max(1))
        .filter(|passes| cfg.m_t % passes == 0)
        .find(|&passes| tile_floats <= ring_floats * passes as u64)
}

fn chunk_rules(cfg: &KernelConfig) -> Rule {
    let chunk = cfg.row_chunk;
    if chunk == 0 {
        return Ok(());
    }
    let w_s = cfg.w_s();
    rule(cfg.family() == Family::Tiled, || {
        "row_chunk applies to the tiled family only".to_string()
    })
    .and_then(|_| {
        rule(ROW_CHUNKS.contains(&chunk), || {
            format!("row_chunk {chunk} is not 0 or one of {ROW_CHUNKS:?}")
        })
    })
    .and_then(|_| {
        rule(!cfg.is_dense(), || {
            "a dense kernel unrolls its tiles whole: row_chunk must be 0".to_string()
        })
    })
    .and_then(|_| {
        rule(cfg.a_copy != ACopy::Row16, || {
            "the row16 path loads A at a fixed row of the tile: row_chunk must be 0".to_string()
        })
    })
    .and_then(|_| {
        rule(w_s > chunk && w_s % chunk == 0, || {
            format!("row_chunk {chunk} must divide w_s = {w_s} and be smaller")
        })
    })
}

/// Estimated 32-bit registers per thread: accumulators m_t·n_t, the fragment buffers
/// (G·m_t of A and n_t of B' each), one index per row and column group (of two chunks in a
/// chunked tile), the A blocks staged in registers by the `Row16` path, the prefetched
/// col_info entries of packing kernels, and a fixed overhead for addresses and counters.
/// ptxas's report is the final word.
pub fn estimated_registers(cfg: &KernelConfig) -> u32 {
    match cfg.family() {
        Family::Tc => {
            return cfg
                .as_tc()
                .map_or(u32::MAX, |tc| tc.estimated_registers() as u32)
        }
        // Accumulators, the k_s rows of B' in flight with their indices, overhead.
        Family::Decode => return cfg.m_s * cfg.n_t + cfg.k_s * (cfg.n_t + 1) + REGISTER_OVERHEAD,
        // The same with an index word per 4 columns of every row in flight, and part of the
        // rows' A values, which ptxas loads ahead of their FMAs: half of them when A comes
        // one float at a time, an eighth with 16-byte loads of column-major A (fitted to its
        // reports for the kernel shapes of the first tuning: the estimate rejects exactly the
        // shapes that spilled; docs/perf-log.md, session 15).
        // The shuffle paths hold instead one column of every window a step touches, m_s
        // values each, for all k_s steps (their `win` array).
        Family::EwDecode => {
            let share = if cfg.loads_a_column_as_float4() { 8 } else { 2 };
            let ahead = if cfg.a_copy.shuffles_a() {
                cfg.k_s * shuffle_step_windows(cfg) * cfg.m_s
            } else {
                cfg.k_s * cfg.n_t * cfg.m_s / share
            };
            return cfg.m_s * cfg.n_t
                + cfg.k_s * (cfg.n_t + cfg.n_t / 4 + 1)
                + ahead
                + REGISTER_OVERHEAD;
        }
        // Accumulators; two columns' operands in flight (m_t of A, a float4 of B', the index
        // word), overhead.
        Family::Ew => {
            return cfg
                .m_t
                .saturating_mul(cfg.n_t)
                .saturating_add(2 * cfg.m_t.saturating_add(5))
                .saturating_add(REGISTER_OVERHEAD)
        }
        Family::Tiled => {}
    }
    let groups = index_groups(cfg);
    let fragments = fragment_buffers(cfg) * (groups * cfg.m_t + cfg.n_t);
    // A chunked tile holds the indices of its chunk and of the next one.
    let indices = if cfg.is_dense() {
        0
    } else if cfg.row_chunk > 0 {
        2 * cfg.row_chunk * groups
    } else {
        cfg.w_s() * groups
    };
    let maps = CopyMaps::of(cfg);
    let staging = match cfg.a_copy {
        ACopy::Row16 => 16 * maps.a_units,
        _ => 0,
    };
    let col_prefetch = if cfg.packing { maps.a_units } else { 0 };
    cfg.m_t * cfg.n_t + fragments + indices + staging + col_prefetch + REGISTER_OVERHEAD
}

/// Registers per thread that `__launch_bounds__(threads, min_blocks)` leaves: the SM's
/// 64K registers over min_blocks·threads, in the allocation unit of 8, at most 255.
pub fn register_cap(cfg: &KernelConfig, regs_per_sm: u32) -> u32 {
    let per_thread = regs_per_sm / (cfg.min_blocks.max(1) * cfg.threads().max(1));
    (per_thread / 8 * 8).min(MAX_REGISTERS_PER_THREAD)
}

/// The template's global → shared copy mappings: how many copies of each operand one
/// thread issues per k-tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyMaps {
    /// A: copy units per thread. `Col16` (and `Transposed`, which copies its column-major
    /// workspace copy of A the same way): 16-byte copies of a column's m_s rows; `Row4`:
    /// 4-byte copies; `Row16`: 4×4 blocks (four 16-byte loads each); `RowK`: 16-byte copies
    /// of a row's k_s floats.
    pub a_units: u32,
    /// B': 16-byte copies per thread.
    pub b_vecs: u32,
    /// D: 4-byte copies per thread (0 when dense; the element-wise family's carry four u8
    /// indices each).
    pub d_elems: u32,
}

impl CopyMaps {
    pub fn of(cfg: &KernelConfig) -> Self {
        let threads = cfg.threads().max(32);
        let a_rows = cfg.a_rows();
        let a_units = match cfg.a_copy {
            ACopy::DirectRow
            | ACopy::DirectCol
            | ACopy::EwDirectRow
            | ACopy::EwDirectCol
            | ACopy::EwShuffleRow
            | ACopy::EwShuffleCol
            | ACopy::Wgmma
            | ACopy::WgmmaTrans => 0,
            ACopy::Col16 | ACopy::Transposed | ACopy::EwCol | ACopy::EwTrans => {
                let per_column = (cfg.m_s / 4).max(1);
                let along = gcd(per_column, threads);
                (per_column / along) * a_rows.div_ceil(threads / along)
            }
            ACopy::Row4 => {
                let along = gcd(a_rows.max(1), 8);
                (a_rows / along) * cfg.m_s.div_ceil(threads / along)
            }
            ACopy::Row16 => (cfg.m_s / 4 * cfg.k_s / 4).div_ceil(threads),
            ACopy::RowK => {
                let per_row = (cfg.k_s / 4).max(1);
                let along = gcd(per_row, threads);
                (per_row / along) * cfg.m_s.div_ceil(threads / along)
            }
        };
        let b_per_row = (cfg.n_s / 4).max(1);
        let b_along = gcd(b_per_row, threads);
        let d_words = match cfg.family() {
            Family::Ew => cfg.w_s().saturating_mul(cfg.n_s).div_ceil(4),
            _ => cfg.w_s().saturating_mul(cfg.q_s()),
        };
        let d_elems = if cfg.is_dense() {
            0
        } else {
            d_words.div_ceil(threads)
        };
        Self {
            a_units,
            b_vecs: (b_per_row / b_along) * cfg.w_s().div_ceil(threads / b_along),
            d_elems,
        }
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn pattern_rules(cfg: &KernelConfig) -> Rule {
    NmPattern::new(cfg.nm.n, cfg.nm.m).map_err(|e| e.to_string())?;
    let l = cfg.l;
    rule((4..=128).contains(&l) && l % 4 == 0, || {
        format!("L={l} must be a multiple of 4 between 4 and 128 (B' and C are accessed as float4, so n must be a multiple of 4), or 1 for the element-wise kernels")
    })?;
    rule(!cfg.packing || cfg.nm.n < cfg.nm.m, || {
        format!(
            "packing needs N < M (pattern {}): a dense tile has no columns to skip",
            cfg.nm
        )
    })
}

fn tile_dim_ok(v: u32) -> bool {
    (32..=MAX_TILE).contains(&v) && v % 32 == 0
}

fn block_tile_rules(cfg: &KernelConfig) -> Rule {
    let (m_s, n_s, k_s, m) = (cfg.m_s, cfg.n_s, cfg.k_s, cfg.nm.m);
    rule(tile_dim_ok(m_s), || {
        format!(
            "m_s={m_s} must be a multiple of 32 between 32 and {MAX_TILE} (shared-memory banks)"
        )
    })?;
    rule(tile_dim_ok(n_s), || {
        format!(
            "n_s={n_s} must be a multiple of 32 between 32 and {MAX_TILE} (shared-memory banks)"
        )
    })?;
    rule(k_s >= m && k_s % m == 0, || {
        format!("k_s={k_s} must be a positive multiple of M={m} (whole pruning windows per k-tile)")
    })?;
    rule(k_s <= MAX_TILE, || format!("k_s={k_s} exceeds {MAX_TILE}"))
}

fn thread_tile_rules(cfg: &KernelConfig) -> Rule {
    let (m_t, n_t, m_s, n_s) = (cfg.m_t, cfg.n_t, cfg.m_s, cfg.n_s);
    let (rows, cols) = (cfg.warp.rows, cfg.warp.cols);
    rule(THREAD_TILES.contains(&m_t), || {
        format!("m_t={m_t} must be one of {THREAD_TILES:?}")
    })?;
    rule(THREAD_TILES.contains(&n_t), || {
        format!("n_t={n_t} must be one of {THREAD_TILES:?}")
    })?;
    rule(rows.checked_mul(cols) == Some(32), || {
        format!("warp layout {rows}x{cols} must hold exactly 32 threads")
    })?;
    rule(m_s % (rows * m_t) == 0, || {
        format!(
            "m_s={m_s} is not a multiple of the warp tile height {rows}·m_t = {}",
            rows * m_t
        )
    })?;
    rule(n_s % (cols * n_t) == 0, || {
        format!(
            "n_s={n_s} is not a multiple of the warp tile width {cols}·n_t = {}",
            cols * n_t
        )
    })?;
    let threads = cfg.threads();
    rule((32..=1024).contains(&threads) && threads % 32 == 0, || {
        format!("(m_s/m_t)·(n_s/n_t) = {threads} threads per block must be a multiple of 32 between 32 and 1024")
    })
}

fn group_rules(cfg: &KernelConfig) -> Rule {
    let (n_s, l) = (cfg.n_s, cfg.l);
    rule(n_s % l == 0 || l % n_s == 0, || {
        format!("n_s={n_s} and L={l} must divide one another (block tiles must not split column groups unevenly)")
    })?;
    let width = cfg.warp.cols * cfg.n_t;
    let stride = 4 * cfg.warp.cols;
    rule(
        l % width == 0 || (width % l == 0 && (l % stride == 0 || stride % l == 0)),
        || {
            format!(
                "the warp tile width {}·n_t = {width} and L={l} must divide one another, and so must the sub-tile stride 4·{} = {stride} and L when the warp is wider (each thread's columns must fall in whole column groups)",
                cfg.warp.cols, cfg.warp.cols
            )
        },
    )
}

fn copy_rules(cfg: &KernelConfig) -> Rule {
    let path = cfg.a_copy.token();
    match cfg.a_copy {
        ACopy::Col16
        | ACopy::Row4
        | ACopy::Transposed
        | ACopy::DirectRow
        | ACopy::DirectCol
        | ACopy::EwCol
        | ACopy::EwTrans
        | ACopy::EwDirectRow
        | ACopy::EwDirectCol
        | ACopy::Wgmma
        | ACopy::EwShuffleRow
        | ACopy::EwShuffleCol
        | ACopy::WgmmaTrans => Ok(()),
        ACopy::Row16 | ACopy::RowK => {
            rule(!cfg.packing, || {
                format!("the {path} path copies whole k_s windows 16 bytes of a row at a time; packing gathers columns one by one (use arow4)")
            })?;
            rule(cfg.k_s % 4 == 0, || {
                format!(
                    "the {path} path copies 16 bytes of a row: k_s={} must be a multiple of 4",
                    cfg.k_s
                )
            })
        }
    }
}

fn pipeline_rules(cfg: &KernelConfig) -> Rule {
    let stages = cfg.stages;
    rule(STAGES.contains(&stages), || {
        format!(
            "the cp.async ring needs {} to {} stages, not {stages}",
            STAGES.start(),
            STAGES.end()
        )
    })?;
    let min_blocks = cfg.min_blocks;
    rule(MIN_BLOCKS.contains(&min_blocks), || {
        format!(
            "min_blocks={min_blocks} must be between {} and {}",
            MIN_BLOCKS.start(),
            MIN_BLOCKS.end()
        )
    })?;
    let split_k = cfg.split_k;
    rule(SPLIT_K_VALUES.contains(&split_k), || {
        format!("split_k={split_k} must be one of {SPLIT_K_VALUES:?}")
    })
}

fn unroll_rules(cfg: &KernelConfig) -> Rule {
    let fmas = cfg.w_s() * cfg.m_t * cfg.n_t;
    rule(fmas <= MAX_UNROLLED_FMAS, || {
        format!("w_s·m_t·n_t = {fmas} FMAs per fully unrolled tile exceed {MAX_UNROLLED_FMAS} (reduce k_s or the thread tile)")
    })?;
    let indices = if cfg.is_dense() {
        0
    } else {
        cfg.w_s() * index_groups(cfg)
    };
    rule(indices <= MAX_INDEX_REGISTERS, || {
        format!("a tile's row indices need {indices} registers per thread, more than {MAX_INDEX_REGISTERS} (reduce k_s or the warp tile width)")
    })
}

fn register_rules(cfg: &KernelConfig) -> Rule {
    let regs = estimated_registers(cfg);
    rule(regs <= MAX_REGISTERS_PER_THREAD, || {
        format!("needs about {regs} registers per thread, more than the {MAX_REGISTERS_PER_THREAD} a thread can have (reduce m_t·n_t)")
    })
}

/// The decode templates' shape: few rows, lanes that split a warp evenly, one or two stages; a
/// lane's columns in one column group (L ≥ 4), or for the element-wise decode family L = 1.
fn decode_rules(cfg: &KernelConfig) -> Rule {
    NmPattern::new(cfg.nm.n, cfg.nm.m).map_err(|e| e.to_string())?;
    let (m_s, n_s, n_t, k_s, l) = (cfg.m_s, cfg.n_s, cfg.n_t, cfg.k_s, cfg.l);
    let wide = m_s == DECODE_WIDE_ROWS && cfg.family() == Family::Decode;
    rule((matches!(m_s, 1 | 2 | 4) || wide) && cfg.m_t == m_s, || {
        format!(
            "decode kernels take m_s = m_t = 1, 2 or 4 rows of C per block ({DECODE_WIDE_ROWS} in drow and dcol), not m_s={m_s}, m_t={}",
            cfg.m_t
        )
    })?;
    rule(!wide || n_t == 4, || {
        format!("{DECODE_WIDE_ROWS}-row decode blocks give a lane n_t = 4 columns, not {n_t}")
    })?;
    rule(DECODE_LANE_COLUMNS.contains(&n_t), || {
        format!("decode kernels give a lane n_t = 4 or 8 columns (16-byte loads), not {n_t}")
    })?;
    let lanes = n_s / n_t;
    rule(
        n_s % n_t == 0 && n_s <= DECODE_MAX_COLUMNS && lanes >= 1 && 32 % lanes == 0,
        || {
            format!("decode kernels need n_s={n_s} ≤ {DECODE_MAX_COLUMNS} split into n_s/n_t lanes that divide a warp's 32 (n_t={n_t})")
        },
    )?;
    if cfg.family() == Family::EwDecode {
        rule(l as usize == ELEMENT_WISE_L, || {
            format!("element-wise decode kernels (ewdrow, ewdcol, ewsrow, ewscol) serve L = {ELEMENT_WISE_L} only, not L={l}")
        })?;
    } else {
        rule(l % n_t == 0, || {
            format!("a decode lane's n_t={n_t} columns must lie in one column group of L={l} (L = {ELEMENT_WISE_L} has the ewdrow and ewdcol kernels)")
        })?;
    }
    rule((1..=DECODE_MAX_UNROLL).contains(&k_s), || {
        format!("decode kernels keep k_s = 1 to {DECODE_MAX_UNROLL} B' rows per lane in flight, not {k_s}")
    })?;
    let warps = cfg.warp.rows;
    rule(
        cfg.warp.cols == 1 && (1..=DECODE_MAX_WARPS).contains(&warps),
        || {
            format!(
                "decode kernels arrange 1 to {DECODE_MAX_WARPS} warps as w<warps>x1, not w{}x{}",
                warps, cfg.warp.cols
            )
        },
    )?;
    rule(
        !cfg.packing && DECODE_STAGES.contains(&cfg.stages) && cfg.min_blocks == 1,
        || {
            format!(
                "decode kernels have no packing, {DECODE_STAGES:?} stages (cp1 to cp3) and min_blocks 1"
            )
        },
    )?;
    let split_k = cfg.split_k;
    rule(SPLIT_K_VALUES.contains(&split_k), || {
        format!("split_k={split_k} must be one of {SPLIT_K_VALUES:?}")
    })
}

/// The pruning window of A a lane holds one column of in the shuffle paths: a warp's 32.
pub const SHUFFLE_WINDOW_M: u32 = 32;

/// The most pruning windows one row step of a warp may touch in the shuffle paths: each is
/// one more register of A a lane and one more shuffle a value.
pub const SHUFFLE_MAX_STEP_WINDOWS: u32 = 2;

/// The windows a warp's row step touches at most in the shuffle paths (the template's `SW`):
/// its 32 / (n_s / n_t) consecutive rows start at a multiple of their count, and a window
/// holds N kept rows.
pub fn shuffle_step_windows(cfg: &KernelConfig) -> u32 {
    let rows = 32 / (cfg.n_s / cfg.n_t).max(1);
    let n = cfg.nm.n.max(1);
    if n % rows == 0 {
        1
    } else if rows % n == 0 {
        rows / n
    } else {
        rows / n + 2
    }
}

/// A by warp shuffles (`ewsrow`, `ewscol`): a pruning window of A is one value a lane, so
/// M = 32 and the pattern is sparse (dense has no window positions), and a warp step's rows
/// touch at most [`SHUFFLE_MAX_STEP_WINDOWS`] windows.
fn shuffle_rules(cfg: &KernelConfig) -> Rule {
    if !cfg.a_copy.shuffles_a() {
        return Ok(());
    }
    let (n, m) = (cfg.nm.n, cfg.nm.m);
    rule(m == SHUFFLE_WINDOW_M && n < m, || {
        format!("the shuffle paths (ewsrow, ewscol) hold a pruning window of A as one value a lane: M must be {SHUFFLE_WINDOW_M} and N below it, not {n}:{m}")
    })?;
    let windows = shuffle_step_windows(cfg);
    rule(windows <= SHUFFLE_MAX_STEP_WINDOWS, || {
        format!(
            "a warp step's {} rows touch up to {windows} pruning windows at {n}:{m}; the shuffle paths take at most {SHUFFLE_MAX_STEP_WINDOWS} (fewer lanes a row: a larger n_t or a smaller n_s)",
            32 / (cfg.n_s / cfg.n_t).max(1)
        )
    })
}

/// The element-wise template's shape: L = 1; 32 lanes × m_t rows by n_t columns per warp,
/// warps side by side along n; whole pruning windows per stage; the tiled family's ring,
/// min_blocks and split-K.
fn ew_rules(cfg: &KernelConfig) -> Rule {
    NmPattern::new(cfg.nm.n, cfg.nm.m).map_err(|e| e.to_string())?;
    let (m_s, n_s, k_s, m_t, n_t, l) = (cfg.m_s, cfg.n_s, cfg.k_s, cfg.m_t, cfg.n_t, cfg.l);
    rule(l as usize == ELEMENT_WISE_L, || {
        format!("element-wise kernels (ewcol, ewtrans) serve L = {ELEMENT_WISE_L} only, not L={l}")
    })?;
    rule(
        EW_LANE_ROWS.contains(&m_t) && m_s == EW_WARP_ROWS_PER_LANE_ROW * m_t,
        || {
            format!("element-wise kernels give a lane m_t = 4 or 8 rows and a block m_s = 32·m_t, not m_s={m_s}, m_t={m_t}")
        },
    )?;
    rule(EW_WARP_COLUMNS.contains(&n_t), || {
        format!("element-wise kernels give a warp n_t = 4, 8 or 16 columns (16-byte B' loads), not {n_t}")
    })?;
    let warps = cfg.warp.rows;
    rule(
        cfg.warp.cols == 1 && (1..=EW_MAX_WARPS).contains(&warps),
        || {
            format!(
                "element-wise kernels arrange 1 to {EW_MAX_WARPS} warps as w<warps>x1, not w{warps}x{}",
                cfg.warp.cols
            )
        },
    )?;
    rule(n_s == n_t.saturating_mul(warps), || {
        format!(
            "element-wise kernels need n_s = n_t·warps = {}, not n_s={n_s}",
            n_t.saturating_mul(warps)
        )
    })?;
    let m = cfg.nm.m;
    rule(
        k_s >= m && k_s % m == 0 && k_s / m <= EW_MAX_WINDOWS,
        || {
            format!("element-wise kernels stage 1 to {EW_MAX_WINDOWS} whole pruning windows: k_s={k_s} must be M={m} times 1 to {EW_MAX_WINDOWS}")
        },
    )?;
    rule(!cfg.packing, || {
        "element-wise kernels have no packing (every column keeps its own rows)".to_string()
    })?;
    pipeline_rules(cfg)?;
    let fmas = cfg.nm.n.saturating_mul(m_t).saturating_mul(n_t);
    rule(fmas <= EW_MAX_WINDOW_FMAS, || {
        format!("N·m_t·n_t = {fmas} FMAs per unrolled pruning window exceed {EW_MAX_WINDOW_FMAS} (a smaller m_t or n_t)")
    })
}

/// Pruning windows of an element-wise stage unrolled together: all of them up to
/// [`EW_STAGE_UNROLL_FMAS`], else one at a time.
pub fn ew_window_unroll(cfg: &KernelConfig) -> u32 {
    let fmas = cfg.w_s().saturating_mul(cfg.m_t).saturating_mul(cfg.n_t);
    if fmas <= EW_STAGE_UNROLL_FMAS {
        (cfg.k_s / cfg.nm.m.max(1)).max(1)
    } else {
        1
    }
}

fn gpu_rules(cfg: &KernelConfig, gpu: &GpuProfile) -> Rule {
    let smem = cfg.smem_bytes();
    let limit = gpu.smem_per_block_optin;
    rule(smem <= limit, || {
        format!(
            "needs {smem} bytes of shared memory, more than the {limit} a block may use on {}",
            gpu.name
        )
    })?;
    let threads = cfg.threads();
    let min_blocks = cfg.min_blocks;
    rule(threads * min_blocks <= gpu.max_threads_per_sm, || {
        format!(
            "min_blocks={min_blocks} blocks of {threads} threads exceed the {} threads of one SM of {}",
            gpu.max_threads_per_sm, gpu.name
        )
    })?;
    rule(smem * min_blocks <= gpu.smem_per_sm, || {
        format!(
            "min_blocks={min_blocks} blocks of {smem} bytes exceed the {} bytes of shared memory of one SM of {}",
            gpu.smem_per_sm, gpu.name
        )
    })?;
    let regs = estimated_registers(cfg);
    let cap = register_cap(cfg, gpu.regs_per_sm);
    rule(regs <= cap, || {
        format!(
            "needs about {regs} registers per thread; min_blocks={min_blocks} blocks of {threads} threads leave {cap} on {}",
            gpu.name
        )
    })?;
    capability_rules(cfg, &gpu.name, gpu.compute_capability)
}

/// The rules a target architecture alone decides (`nmtune kernel --arch`, where no GPU
/// profile is at hand): the instructions `cfg`'s kernel needs. `arch` is `sm_<major><minor>`
/// (a suffix such as `sm_90a` allowed); one that is no architecture passes here and is
/// refused by the compiler's own check.
pub fn validate_for_arch(cfg: &KernelConfig, arch: &str) -> Result<(), CodegenError> {
    match nvrtc::compute_capability_of(arch) {
        Some(cc) => capability_rules(cfg, arch, cc).map_err(|reason| rejected(cfg, reason)),
        None => Ok(()),
    }
}

/// First compute capability with `cp.async`, which every family's copies use.
const CP_ASYNC_COMPUTE_CAPABILITY: (u32, u32) = (8, 0);

/// First compute capability with tensor copies (`cp.async.bulk.tensor`) and mbarrier
/// transaction counts.
const TMA_COMPUTE_CAPABILITY: (u32, u32) = (9, 0);

/// First compute capability with thread block clusters and distributed shared memory.
const CLUSTER_COMPUTE_CAPABILITY: (u32, u32) = (9, 0);

/// The compute capability `cfg`'s kernel needs, against `target`'s (a GPU or an architecture).
fn capability_rules(cfg: &KernelConfig, target: &str, cc: (u32, u32)) -> Rule {
    let needs = |what: &str, (major, minor): (u32, u32)| {
        format!(
            "{what} needs compute capability {major}.{minor} or newer; {target} is {}.{}",
            cc.0, cc.1
        )
    };
    rule(cc >= CP_ASYNC_COMPUTE_CAPABILITY, || {
        needs("cp.async", CP_ASYNC_COMPUTE_CAPABILITY)
    })?;
    rule(!cfg.tma || cc >= TMA_COMPUTE_CAPABILITY, || {
        needs("a tensor copy (tma)", TMA_COMPUTE_CAPABILITY)
    })?;
    rule(!cfg.cluster_sum || cc >= CLUSTER_COMPUTE_CAPABILITY, || {
        needs(
            "a split summed in a cluster (cluster_sum)",
            CLUSTER_COMPUTE_CAPABILITY,
        )
    })?;
    rule(
        cfg.family() != Family::Tc || cc == TC_COMPUTE_CAPABILITY,
        || {
            format!(
                "wgmma runs on sm_90a alone (compute capability 9.0); {target} is {}.{}",
                cc.0, cc.1
            )
        },
    )
}

fn problem_rules(cfg: &KernelConfig, problem: &Problem) -> Rule {
    // Tiles are divisors below: a configuration that skipped `validate` must not panic here.
    rule(cfg.k_s > 0 && cfg.m_s > 0, || {
        format!("k_s={} and m_s={} must be positive", cfg.k_s, cfg.m_s)
    })?;
    rule(problem.dtype == cfg.dtype, || {
        format!(
            "computes in {} (A, B' and C), the problem is {}",
            cfg.dtype, problem.dtype
        )
    })?;
    if let Some(tc) = cfg.as_tc() {
        rule(cfg.nm == problem.nm, || {
            format!(
                "tuned for pattern {}, the problem is {}",
                cfg.nm, problem.nm
            )
        })?;
        return tc.problem_rules(problem);
    }
    rule(cfg.nm == problem.nm, || {
        format!(
            "compiled for pattern {}, the problem is {}",
            cfg.nm, problem.nm
        )
    })?;
    rule(cfg.l as usize == problem.l, || {
        format!("compiled for L={}, the problem has L={}", cfg.l, problem.l)
    })?;
    rule(!cfg.stream_k || !problem.is_decode(), || {
        format!(
            "the stream-K schedule serves problems above decode size, not m = {}",
            problem.m
        )
    })?;
    rule(cfg.a_layout() == problem.a_layout, || {
        format!(
            "compiled for {}-major A, the problem's A is {}-major",
            cfg.a_layout(),
            problem.a_layout
        )
    })?;
    rule(
        !matches!(cfg.a_copy, ACopy::Row16 | ACopy::RowK) || problem.k % 4 == 0,
        || {
            format!(
                "the {} path loads 16 bytes of a row: k={} must be a multiple of 4",
                cfg.a_copy.token(),
                problem.k
            )
        },
    )?;
    rule(problem.m % m_multiple(cfg) == 0, || {
        format!(
            "the {} path copies its column-major copy of A 16 bytes at a time: m={} must be a multiple of 4",
            cfg.a_copy.token(),
            problem.m
        )
    })?;
    rule(problem.n % 4 == 0, || {
        format!("n={} must be a multiple of 4", problem.n)
    })?;
    if cfg.a_copy.is_direct() {
        rule(problem.is_decode(), || {
            format!(
                "the decode family serves m ≤ {DECODE_MAX_M} (it reads the weight once per m_s rows), not m={}",
                problem.m
            )
        })?;
        let windows = problem.k / cfg.nm.m.max(1) as usize;
        rule(cfg.split_k as usize <= windows, || {
            format!(
                "split_k={} exceeds the {windows} pruning windows of k={}",
                cfg.split_k, problem.k
            )
        })?;
    } else {
        let k_tiles = problem.k.div_ceil(cfg.k_s as usize);
        rule(cfg.split_k as usize <= k_tiles, || {
            format!(
                "split_k={} exceeds the {k_tiles} k-tiles of k={} with k_s={}",
                cfg.split_k, problem.k, cfg.k_s
            )
        })?;
    }
    let grid_rows = problem.m.div_ceil(cfg.m_s as usize);
    rule(grid_rows <= 65_535, || {
        format!(
            "m={} needs {grid_rows} block rows with m_s={}, beyond the grid's 65535",
            problem.m, cfg.m_s
        )
    })
}
