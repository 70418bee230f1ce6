//! A kernel configuration: the point of the parameter space one compiled kernel implements.

use super::tc::{TcConfig, TC_BLOCK_COLS, TC_WARPGROUP_ROWS, TC_WARPS_PER_WARPGROUP};
use crate::gpu_profile::GpuProfile;
use crate::problem::{ALayout, Dtype, NmPattern, Problem};
use serde::{Deserialize, Serialize};
use std::fmt;

/// How a k-tile of A travels from global to shared memory, where it is stored k-major (one
/// row of the tile per column of A, so that a thread reads its m_t rows as float4), except by
/// `RowK`, which keeps row-major A as it is. The path fixes the A layout the kernel takes
/// ([`ACopy::layout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum ACopy {
    /// Column-major A: each needed column is contiguous along m and moves with 16-byte
    /// `cp.async` copies, in the cp.async ring.
    Col16,
    /// Row-major A: 4-byte `cp.async` copies that transpose element by element, in the ring.
    Row4,
    /// Row-major A: 16-byte global loads of 4×4 blocks into registers one k-tile ahead,
    /// transposed in registers and stored as 16-byte shared-memory writes (non-packing only).
    Row16,
    /// Row-major A: 16-byte `cp.async` copies of whole rows of the k-tile, kept k-contiguous
    /// in shared memory (non-packing only); a thread reads its m_t rows of one column as
    /// m_t single floats. The cheapest copy, dearer fragment reads.
    RowK,
    /// Row-major A: a first kernel writes A column-major into the workspace (columns padded to
    /// [`TRANSPOSED_ALIGN_FLOATS`]; one pass over A at memory bandwidth), then the `Col16`
    /// main loop runs on that copy.
    /// Measured as one kernel: the pass is in every timing of it.
    Transposed,
    /// The decode family (few rows of C): no A tile and no shared-memory ring; every lane
    /// reads the A values its B' rows need straight from global memory (A is m·k floats,
    /// small enough to stay in L1/L2), and the block's warps stream B' rows at memory
    /// bandwidth. Row-major A.
    DirectRow,
    /// The decode family on column-major A: a kept row's m_s values of A are contiguous.
    DirectCol,
    /// The element-wise family (L = 1) on column-major A: a k-row of the A tile is a
    /// contiguous 16-byte `cp.async` copy, as `Col16`'s.
    EwCol,
    /// The element-wise family on row-major A: a first kernel writes A column-major into the
    /// workspace (as `Transposed` does, with the columns' padding zeroed, so every m runs),
    /// then the `EwCol` main loop runs on that copy. Its timings include the pass.
    EwTrans,
    /// The element-wise decode family (L = 1, few rows of C): the decode family's scheme with
    /// one u8 index beside every B' value, so every column of a lane reads its own A value
    /// straight from global memory. Row-major A.
    EwDirectRow,
    /// The element-wise decode family on column-major A.
    EwDirectCol,
    /// The element-wise decode family (M = 32) with A gathered by warp shuffles: a lane holds
    /// one column of each pruning window its warp step touches, and a value's A comes from the
    /// lane its D byte names (`templates/nm_spmm_ew_decode_shfl.cu.tera`). Row-major A.
    EwShuffleRow,
    /// The same on column-major A.
    EwShuffleCol,
    /// The tensor-core family (BF16/FP16, `wgmma`, sm_90a) on column-major A: each stage
    /// gathers the kept rows of A per column group with 16-byte `cp.async` copies
    /// ([`super::tc`]).
    Wgmma,
    /// The tensor-core family on row-major A: a first kernel writes A column-major into the
    /// workspace, then the `Wgmma` main loop runs on that copy. Its timings include the pass.
    WgmmaTrans,
}

/// The kernel templates: which one renders a configuration follows from its A path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Block tiles of C through a cp.async ring of shared-memory stages (NM-SpMM's scheme):
    /// `templates/nm_spmm.cu.tera`.
    Tiled,
    /// Few rows of C, the weight streamed once at memory bandwidth:
    /// `templates/nm_spmm_decode.cu.tera`.
    Decode,
    /// Element-wise N:M (L = 1): every column has its own kept rows, so every FMA reads its
    /// own A value from the shared-memory tile: `templates/nm_spmm_ew.cu.tera`.
    Ew,
    /// Element-wise N:M for few rows of C: the weight and its u8 indices streamed once, as
    /// the decode family streams B': `templates/nm_spmm_ew_decode.cu.tera`.
    EwDecode,
    /// BF16/FP16 on Hopper's tensor cores (`wgmma`), the kept rows of A gathered per column
    /// group: `templates/nm_spmm_tc.cu.tera` ([`super::tc`]).
    Tc,
}

impl Family {
    /// The families whose kernels may serve `problem`, so the ones the tuner tries for it:
    /// the element-wise families for L = 1 (no other family reads one index per column),
    /// else the tiled family; and for decode-sized problems (m ≤ `DECODE_MAX_M`) the decode
    /// family of the same kind too; for a BF16 or FP16 problem the tensor-core family alone
    /// (the others compute in FP32). A problem's rows are valid while these families'
    /// templates are unchanged ([`crate::codegen::templates_checksum`]).
    pub fn serving(problem: &Problem) -> &'static [Family] {
        if problem.dtype != Dtype::F32 {
            &[Family::Tc]
        } else if problem.is_element_wise() && problem.is_decode() {
            &[Family::Ew, Family::EwDecode]
        } else if problem.is_element_wise() {
            &[Family::Ew]
        } else if problem.is_decode() {
            &[Family::Tiled, Family::Decode]
        } else {
            &[Family::Tiled]
        }
    }

    /// Whether the family streams the weight with no A tile (the decode families), reading
    /// the configuration's fields as [`KernelConfig::decode`] sets them.
    pub fn is_direct(&self) -> bool {
        matches!(self, Family::Decode | Family::EwDecode)
    }

    /// Whether the family's kernels read D as the stored u8 window positions (element-wise
    /// N:M, whose D is as long as B') instead of widened i32 ones (codegen's kernel ABI).
    pub fn reads_byte_indices(&self) -> bool {
        matches!(self, Family::Ew | Family::EwDecode)
    }
}

impl ACopy {
    /// Every path, in key order.
    pub const ALL: [ACopy; 15] = [
        ACopy::Col16,
        ACopy::Row4,
        ACopy::Row16,
        ACopy::RowK,
        ACopy::Transposed,
        ACopy::DirectRow,
        ACopy::DirectCol,
        ACopy::EwCol,
        ACopy::EwTrans,
        ACopy::EwDirectRow,
        ACopy::EwDirectCol,
        ACopy::EwShuffleRow,
        ACopy::EwShuffleCol,
        ACopy::Wgmma,
        ACopy::WgmmaTrans,
    ];

    /// The template family a kernel with this path belongs to.
    pub fn family(&self) -> Family {
        match self {
            ACopy::DirectRow | ACopy::DirectCol => Family::Decode,
            ACopy::EwCol | ACopy::EwTrans => Family::Ew,
            ACopy::EwDirectRow | ACopy::EwDirectCol | ACopy::EwShuffleRow | ACopy::EwShuffleCol => {
                Family::EwDecode
            }
            ACopy::Wgmma | ACopy::WgmmaTrans => Family::Tc,
            _ => Family::Tiled,
        }
    }

    /// Whether this path belongs to a decode family (no A tile: [`Family::is_direct`]).
    pub fn is_direct(&self) -> bool {
        self.family().is_direct()
    }

    /// The A layout a kernel with this copy path takes.
    pub fn layout(&self) -> ALayout {
        match self {
            ACopy::Col16
            | ACopy::DirectCol
            | ACopy::EwCol
            | ACopy::EwDirectCol
            | ACopy::EwShuffleCol
            | ACopy::Wgmma => ALayout::ColMajor,
            ACopy::Row4
            | ACopy::Row16
            | ACopy::RowK
            | ACopy::Transposed
            | ACopy::DirectRow
            | ACopy::EwTrans
            | ACopy::EwDirectRow
            | ACopy::EwShuffleRow
            | ACopy::WgmmaTrans => ALayout::RowMajor,
        }
    }

    /// The path of the same family that reads A in the other layout and runs the same main
    /// loop where there is one: a column-major path and its transposing twin (which copies A
    /// into a column-major workspace first), the decode families' row and column paths;
    /// the row-major paths that copy A directly map to `Col16`.
    pub fn layout_twin(&self) -> ACopy {
        match self {
            ACopy::Col16 => ACopy::Transposed,
            ACopy::Row4 | ACopy::Row16 | ACopy::RowK | ACopy::Transposed => ACopy::Col16,
            ACopy::DirectRow => ACopy::DirectCol,
            ACopy::DirectCol => ACopy::DirectRow,
            ACopy::EwCol => ACopy::EwTrans,
            ACopy::EwTrans => ACopy::EwCol,
            ACopy::EwDirectRow => ACopy::EwDirectCol,
            ACopy::EwDirectCol => ACopy::EwDirectRow,
            ACopy::EwShuffleRow => ACopy::EwShuffleCol,
            ACopy::EwShuffleCol => ACopy::EwShuffleRow,
            ACopy::Wgmma => ACopy::WgmmaTrans,
            ACopy::WgmmaTrans => ACopy::Wgmma,
        }
    }

    /// Whether A reaches the FMAs by warp shuffles (the element-wise decode family's
    /// `EwShuffleRow` / `EwShuffleCol`), rendered by their own template.
    pub fn shuffles_a(&self) -> bool {
        matches!(self, ACopy::EwShuffleRow | ACopy::EwShuffleCol)
    }

    /// The element-wise decode path on the same layout of A that gathers A the other way:
    /// a shuffle path's `__ldca` twin and the reverse; `None` for every other path.
    pub fn gather_twin(&self) -> Option<ACopy> {
        match self {
            ACopy::EwDirectRow => Some(ACopy::EwShuffleRow),
            ACopy::EwDirectCol => Some(ACopy::EwShuffleCol),
            ACopy::EwShuffleRow => Some(ACopy::EwDirectRow),
            ACopy::EwShuffleCol => Some(ACopy::EwDirectCol),
            _ => None,
        }
    }

    /// Whether a transposing pass turns row-major A into a column-major workspace copy
    /// before the main kernel, which then copies its tiles as `Col16` does.
    pub fn transposes_a(&self) -> bool {
        matches!(self, ACopy::Transposed | ACopy::EwTrans | ACopy::WgmmaTrans)
    }

    /// Whether the A tile in shared memory keeps A's rows k-contiguous (`RowK`) instead of
    /// being k-major.
    pub fn keeps_rows(&self) -> bool {
        *self == ACopy::RowK
    }

    /// The copy paths that read `layout`.
    pub fn for_layout(layout: ALayout) -> impl Iterator<Item = ACopy> {
        Self::ALL.into_iter().filter(move |c| c.layout() == layout)
    }

    /// Token in kernel names: `acol16`, `arow4`, `arow16`, `arowk`, `atrans`, the decode
    /// family's `drow`, `dcol`, the element-wise family's `ewcol`, `ewtrans`, the
    /// element-wise decode family's `ewdrow`, `ewdcol` and (A by shuffles) `ewsrow`,
    /// `ewscol`, and the tensor-core family's `wgmma` and `wgmmatrans`.
    pub fn token(&self) -> &'static str {
        match self {
            ACopy::Col16 => "acol16",
            ACopy::Row4 => "arow4",
            ACopy::Row16 => "arow16",
            ACopy::RowK => "arowk",
            ACopy::Transposed => "atrans",
            ACopy::DirectRow => "drow",
            ACopy::DirectCol => "dcol",
            ACopy::EwCol => "ewcol",
            ACopy::EwTrans => "ewtrans",
            ACopy::EwDirectRow => "ewdrow",
            ACopy::EwDirectCol => "ewdcol",
            ACopy::EwShuffleRow => "ewsrow",
            ACopy::EwShuffleCol => "ewscol",
            ACopy::Wgmma => "wgmma",
            ACopy::WgmmaTrans => "wgmmatrans",
        }
    }

    fn from_token(token: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.token() == token)
    }

    /// The number the template's `A_COPY` constant takes: the path that fills the main
    /// loop's A tiles (`Transposed` reads its column-major copy as `Col16`).
    /// (The decode and element-wise templates have no such constant: 0.)
    pub fn template_id(&self) -> u32 {
        match self {
            ACopy::Col16
            | ACopy::Transposed
            | ACopy::DirectRow
            | ACopy::DirectCol
            | ACopy::EwCol
            | ACopy::EwTrans
            | ACopy::EwDirectRow
            | ACopy::EwDirectCol
            | ACopy::EwShuffleRow
            | ACopy::EwShuffleCol
            | ACopy::Wgmma
            | ACopy::WgmmaTrans => 0,
            ACopy::Row4 => 1,
            ACopy::Row16 => 2,
            ACopy::RowK => 3,
        }
    }
}

/// Arrangement of a warp's 32 threads over its tile of C: `rows × cols` thread tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub struct WarpLayout {
    pub rows: u32,
    pub cols: u32,
}

impl WarpLayout {
    pub const fn new(rows: u32, cols: u32) -> Self {
        Self { rows, cols }
    }
}

/// Every parameter of one generated kernel. N, M and L are compile-time constants of the
/// kernel; m, n and k are run-time arguments, so one configuration serves every shape of
/// its sparsity pattern and A layout.
///
/// The decode families (`a_copy` `DirectRow` / `DirectCol`, and for L = 1 `EwDirectRow` /
/// `EwDirectCol`) read the fields their own way: m_s
/// rows of C per block (m_t = m_s), n_s columns per block, n_t columns per lane (4 or 8:
/// one or two 16-byte loads of a B' row), k_s B' rows per lane in flight per step, `warp` =
/// warps × 1 (the warps share the block's B' rows), one stage, no packing, min_blocks 1.
///
/// The element-wise family (`a_copy` `EwCol` / `EwTrans`, L = 1) reads them as: m_t = 4 or 8
/// rows of C per lane (one or two 16-byte A loads, 128 rows apart), m_s = 32·m_t rows per
/// block, n_t columns per warp (every lane of a warp has the same ones), `warp` = warps × 1,
/// n_s = n_t·warps, k_s = the k rows of the pruning windows one ring stage holds (a multiple
/// of M), no packing; stages, min_blocks and split_k as in the tiled family.
///
/// The tensor-core family (`a_copy` `Wgmma`, `dtype` bf16 or f16) is a [`TcConfig`] spelled
/// in these fields ([`KernelConfig::tensor_core`]): m_s = 64 rows per warpgroup × warpgroups,
/// n_s = n_t = 128 (one block's columns, all of them a warpgroup's), m_t = 64, k_s = the kept
/// rows a ring stage holds, `warp` = 4·warpgroups × 1, no packing; stages, min_blocks,
/// split_k (the blocks of a cluster sharing a tile's stages) and L as the configuration has
/// them. Its kernel ignores N and M (one module
/// serves every pattern: [`super::compile_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(from = "StoredConfig")]
pub struct KernelConfig {
    /// How A's tiles reach shared memory; fixes the A layout.
    pub a_copy: ACopy,
    /// Block tile of C: m_s rows × n_s columns.
    pub m_s: u32,
    pub n_s: u32,
    /// Columns of A (rows of dense B) per main-loop step; a multiple of M.
    pub k_s: u32,
    /// Thread tile of C held in registers, read as 4×4 sub-tiles strided across the warp tile.
    pub m_t: u32,
    pub n_t: u32,
    pub warp: WarpLayout,
    pub nm: NmPattern,
    /// Vector length L.
    pub l: u32,
    /// Load only the A columns a tile needs (col_info) instead of the whole k_s window.
    pub packing: bool,
    /// Depth of the cp.async ring of shared-memory buffers (2..=4); in the decode families,
    /// how a warp streams its steps of B' and D rows (`validate::DECODE_STAGES`).
    pub stages: u32,
    /// Blocks per SM the compiler must leave room for (`__launch_bounds__`' second
    /// argument): caps registers per thread at 64K / (min_blocks · threads).
    pub min_blocks: u32,
    /// Slices of the reduction run by separate blocks, summed by a second kernel.
    pub split_k: u32,
    /// Tiled family: compressed rows per pass of the inner loop's rolled chunk loop (4 or 8),
    /// or 0 for a tile unrolled whole (see `validate::row_chunk`). Absent from stored rows
    /// and from the name when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub row_chunk: u32,
    /// Tiled family: the tiles of the last two waves shared out evenly as k-tiles among one
    /// worker per resident block (`templates/nm_spmm_sk.cu.tera`), so that no SM idles in a
    /// last partial wave; split_k is then 1. Absent from stored rows and from the name when
    /// false, `_streamk` at the end of the name when true.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stream_k: bool,
    /// Tiled family on sm_90+: the interior blocks' A and B' tiles arrive by one tensor copy
    /// each (`cp.async.bulk.tensor`, issued by one thread, completing on the stage's
    /// mbarrier) instead of every thread's 16-byte `cp.async` ([`KernelConfig::tma_capable`]
    /// says where). Absent from stored rows and from the name when false, `_tma` at the end
    /// of the name when true.
    #[serde(default, skip_serializing_if = "is_false")]
    pub tma: bool,
    /// Tiled family on sm_90+, with split_k > 1: the split_k blocks of a tile form a cluster
    /// and add up their slices' sums through distributed shared memory
    /// (`templates/nm_spmm_clsum.cu.tera`) instead of a workspace and the `<name>_reduce`
    /// kernel. Absent from stored rows and from the name when false, `_clsum` after `_tma`
    /// when true.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cluster_sum: bool,
    /// Element type of A, B' and C: f32 for the FP32 families, bf16 or f16 for the
    /// tensor-core family. The name's first token; absent from stored rows when f32 (rows
    /// older than the field are FP32).
    #[serde(default, skip_serializing_if = "is_f32")]
    pub dtype: Dtype,
}

fn is_f32(dtype: &Dtype) -> bool {
    *dtype == Dtype::F32
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Shared-memory bytes after the ring for the tensor copies' mbarriers (one per stage, 8
/// bytes each, room for 8).
const TMA_BARRIER_BYTES: u32 = 8 * 8;

/// The longest side of a tensor copy's box, in elements (`cuTensorMapEncodeTiled`).
const TMA_BOX_MAX: u32 = 256;

/// The name suffix of a configuration with tensor copies ([`KernelConfig::tma`]).
const TMA_SUFFIX: &str = "_tma";

/// The name suffix of a split summed in a cluster ([`KernelConfig::cluster_sum`]).
const CLUSTER_SUM_SUFFIX: &str = "_clsum";

/// The name suffix of a stream-K configuration ([`KernelConfig::stream_k`]).
const STREAM_K_SUFFIX: &str = "_streamk";

/// The `Transposed` path's column-major copy of A starts every column on a 128-byte line:
/// its columns are m rounded up to this many floats apart. With columns m floats apart, a
/// 64-row tile's 256-byte column segment spans three lines at most m (not a multiple of 32)
/// and the copy's L2 traffic grows by half (measured: docs/perf-log.md, "The runtime at
/// untuned m, all Llama-7B layer shapes").
pub const TRANSPOSED_ALIGN_FLOATS: usize = 32;

/// Floats between consecutive columns of the `Transposed` path's copy of an m-row A.
pub fn transposed_lda(m: usize) -> usize {
    m.div_ceil(TRANSPOSED_ALIGN_FLOATS) * TRANSPOSED_ALIGN_FLOATS
}

impl KernelConfig {
    /// A decode-family configuration for A in `layout`: m_s rows of C per block (m_t = m_s),
    /// block shape (n_s, n_t, k_s, warps), one stage, split-K 1; the element-wise decode
    /// family's for L = 1. Not validated.
    pub fn decode(
        layout: ALayout,
        m_s: u32,
        (n_s, n_t, k_s, warps): (u32, u32, u32, u32),
        nm: NmPattern,
        l: u32,
    ) -> Self {
        let element_wise = crate::problem::is_element_wise(l as usize);
        Self {
            a_copy: match (layout, element_wise) {
                (ALayout::RowMajor, false) => ACopy::DirectRow,
                (ALayout::ColMajor, false) => ACopy::DirectCol,
                (ALayout::RowMajor, true) => ACopy::EwDirectRow,
                (ALayout::ColMajor, true) => ACopy::EwDirectCol,
            },
            m_s,
            n_s,
            k_s,
            m_t: m_s,
            n_t,
            warp: WarpLayout::new(warps, 1),
            nm,
            l,
            packing: false,
            stages: 1,
            min_blocks: 1,
            split_k: 1,
            row_chunk: 0,
            stream_k: false,
            tma: false,
            cluster_sum: false,
            dtype: Dtype::F32,
        }
    }

    /// An element-wise configuration for A in `layout` ([`EwShape`]), L = 1, split-K 1. Not
    /// validated.
    pub fn element_wise(layout: ALayout, shape: EwShape, nm: NmPattern) -> Self {
        Self {
            a_copy: match layout {
                ALayout::RowMajor => ACopy::EwTrans,
                ALayout::ColMajor => ACopy::EwCol,
            },
            m_s: EW_WARP_ROWS_PER_LANE_ROW.saturating_mul(shape.m_t),
            n_s: shape.n_t.saturating_mul(shape.warps),
            k_s: nm.m.saturating_mul(shape.windows),
            m_t: shape.m_t,
            n_t: shape.n_t,
            warp: WarpLayout::new(shape.warps, 1),
            nm,
            l: crate::problem::ELEMENT_WISE_L as u32,
            packing: false,
            stages: shape.stages,
            min_blocks: shape.min_blocks,
            split_k: 1,
            row_chunk: 0,
            stream_k: false,
            tma: false,
            cluster_sum: false,
            dtype: Dtype::F32,
        }
    }

    /// A tensor-core configuration ([`TcConfig`]) for pattern `nm`, in this struct's fields
    /// as [`KernelConfig`] describes them. Not validated.
    pub fn tensor_core(tc: TcConfig, nm: NmPattern) -> Self {
        let wg = tc.warpgroups as u32;
        Self {
            a_copy: match tc.a_layout {
                ALayout::ColMajor => ACopy::Wgmma,
                ALayout::RowMajor => ACopy::WgmmaTrans,
            },
            m_s: tc.block_rows() as u32,
            n_s: TC_BLOCK_COLS as u32,
            k_s: tc.kept_rows as u32,
            m_t: TC_WARPGROUP_ROWS,
            n_t: TC_BLOCK_COLS as u32,
            warp: WarpLayout::new(TC_WARPS_PER_WARPGROUP * wg, 1),
            nm,
            l: tc.l as u32,
            packing: false,
            stages: tc.stages as u32,
            min_blocks: tc.min_blocks as u32,
            split_k: tc.split_k as u32,
            row_chunk: 0,
            stream_k: tc.stream_k,
            tma: false,
            cluster_sum: false,
            dtype: tc.dtype,
        }
    }

    /// The tensor-core configuration this one spells, if it is of that family and its
    /// fields are those [`KernelConfig::tensor_core`] sets.
    pub fn as_tc(&self) -> Option<TcConfig> {
        if self.family() != Family::Tc || self.m_s % TC_WARPGROUP_ROWS != 0 {
            return None;
        }
        let tc = TcConfig {
            dtype: self.dtype,
            warpgroups: (self.m_s / TC_WARPGROUP_ROWS) as usize,
            kept_rows: self.k_s as usize,
            stages: self.stages as usize,
            min_blocks: self.min_blocks as usize,
            l: self.l as usize,
            a_layout: self.a_layout(),
            split_k: self.split_k as usize,
            stream_k: self.stream_k,
        };
        (Self::tensor_core(tc, self.nm) == *self).then_some(tc)
    }

    /// The A layout this kernel takes.
    pub fn a_layout(&self) -> ALayout {
        self.a_copy.layout()
    }

    /// Dense GEMM (N = M): no index matrix, a plain SGEMM loop.
    pub fn is_dense(&self) -> bool {
        self.nm.is_dense()
    }

    /// Compressed rows per main-loop step: k_s·N/M.
    pub fn w_s(&self) -> u32 {
        // `max(1)` and saturation: the fields are public, and validation asks for derived
        // sizes before it has bounded the fields; a nonsense configuration must neither divide
        // by zero nor overflow (the sizes below saturate the same way).
        (self.k_s / self.nm.m.max(1)).saturating_mul(self.nm.n)
    }

    /// Index columns per block: n_s/L, at least one.
    pub fn q_s(&self) -> u32 {
        self.n_s.div_ceil(self.l.max(1))
    }

    /// Which template renders this configuration.
    pub fn family(&self) -> Family {
        self.a_copy.family()
    }

    /// Whether a decode lane reads the m_s values of A in one column with one 16-byte load:
    /// column-major A and 4 rows per block (the decode templates' `load_a`), else one load
    /// per row.
    pub fn loads_a_column_as_float4(&self) -> bool {
        self.a_copy.is_direct() && self.a_layout() == ALayout::ColMajor && self.m_s == 4
    }

    /// Whether the kernel reads D as the stored u8 window positions ([`Family::reads_byte_indices`]).
    pub fn reads_byte_indices(&self) -> bool {
        self.family().reads_byte_indices()
    }

    /// Threads per block: (m_s/m_t)·(n_s/n_t); decode and element-wise: 32 per warp.
    pub fn threads(&self) -> u32 {
        match self.family() {
            Family::Tiled => {
                (self.m_s / self.m_t.max(1)).saturating_mul(self.n_s / self.n_t.max(1))
            }
            Family::Decode | Family::Ew | Family::EwDecode | Family::Tc => 32u32
                .saturating_mul(self.warp.rows)
                .saturating_mul(self.warp.cols),
        }
    }

    /// Rows of the A tile in shared memory: the k_s window, or with packing at most the
    /// distinct columns the tile's w_s·q_s kept rows can name; `RowK`: the block's m_s rows
    /// of A.
    pub fn a_rows(&self) -> u32 {
        if self.a_copy.keeps_rows() {
            self.m_s
        } else if self.packing {
            self.k_s.min(self.w_s().saturating_mul(self.q_s()))
        } else {
            self.k_s
        }
    }

    /// Row stride of the A tile in shared memory, in floats. Column-major copies land whole
    /// rows and need no padding; the transposing row-major paths pad by 4 so that their
    /// stores spread over all banks (and rows stay 16-byte aligned); `RowK` pads its k_s
    /// floats by 4 so that the lanes reading one column of consecutive rows hit distinct
    /// banks.
    pub fn a_stride(&self) -> u32 {
        match self.a_copy {
            ACopy::Col16 | ACopy::Transposed | ACopy::EwCol | ACopy::EwTrans => self.m_s,
            ACopy::DirectRow
            | ACopy::DirectCol
            | ACopy::EwDirectRow
            | ACopy::EwDirectCol
            | ACopy::EwShuffleRow
            | ACopy::EwShuffleCol => 0,
            ACopy::Row4 | ACopy::Row16 => self.m_s.saturating_add(4),
            ACopy::RowK => self.k_s.saturating_add(4),
            // The tensor-core family's tiles are described by its own configuration.
            ACopy::Wgmma | ACopy::WgmmaTrans => 0,
        }
    }

    /// Row length of the transposed index tile D_s[q_s][w_s] in ints, padded to a multiple of
    /// 4 so that a thread reads four rows' indices with one 16-byte load.
    pub fn d_row(&self) -> u32 {
        round_up_to_4(self.w_s())
    }

    /// Floats of one pipeline stage: A_s, B_s and D_s (none when dense), padded to 16 bytes.
    /// The element-wise family's D_s holds one byte per element of B_s.
    pub fn stage_floats(&self) -> u32 {
        let d = if self.is_dense() {
            0
        } else if self.family() == Family::Ew {
            self.w_s().saturating_mul(self.n_s).div_ceil(4)
        } else {
            self.q_s().saturating_mul(self.d_row())
        };
        let a = self.a_rows().saturating_mul(self.a_stride());
        let b = self.w_s().saturating_mul(self.n_s);
        let floats = round_up_to_4(a.saturating_add(b).saturating_add(d));
        // Tensor copies land on 128-byte boundaries: every stage starts on one.
        if self.tma {
            floats.div_ceil(32).saturating_mul(32)
        } else {
            floats
        }
    }

    /// Dynamic shared memory per block, bytes: every stage of the ring (the design
    /// document's shared-memory constraint, with the padding counted).
    /// Decode: the warps' partial sums, warps·m_s·n_s floats, added in a fixed order.
    pub fn smem_bytes(&self) -> u32 {
        match self.family() {
            Family::Tiled | Family::Ew => 4u32
                .saturating_mul(self.stage_floats())
                .saturating_mul(self.stages)
                .saturating_add(if self.tma { TMA_BARRIER_BYTES } else { 0 }),
            Family::Decode | Family::EwDecode => (self.threads() / 32)
                .saturating_mul(4)
                .saturating_mul(self.m_s)
                .saturating_mul(self.n_s),
            // The ring and its mbarriers; a launch adds its problem's kept-row table
            // (`TcConfig::smem_bytes`).
            Family::Tc => self.as_tc().map_or(u32::MAX, |tc| {
                tc.smem_bytes(0).min(u32::MAX as usize) as u32
            }),
        }
    }

    /// Whether this configuration could take tensor copies ([`KernelConfig::tma`]): the tiled
    /// family on column-major A or its transposed copy, no packing (a packed tile's columns
    /// are gathered), every box side within the tensor copy's 256 elements.
    pub fn tma_capable(&self) -> bool {
        self.family() == Family::Tiled
            && matches!(self.a_copy, ACopy::Col16 | ACopy::Transposed)
            && !self.packing
            && [self.m_s, self.n_s, self.k_s, self.w_s()]
                .iter()
                .all(|&d| d <= TMA_BOX_MAX)
    }

    /// Device workspace floats a launch on an m×k A and an m×n C needs: the column-major
    /// copy of A first ([`KernelConfig::transposed_floats`]), then the split-K partial
    /// products of C.
    pub fn workspace_floats(&self, m: usize, n: usize, k: usize) -> usize {
        self.transposed_floats(m, k) + self.partial_floats(m, n)
    }

    /// Floats of the column-major copy of A at the workspace's start (`Transposed`:
    /// [`transposed_lda`]`(m)`·k).
    /// (The tensor-core family's copy is 16-bit and its own: `TcConfig::workspace_elements`.)
    pub fn transposed_floats(&self, m: usize, k: usize) -> usize {
        if self.a_copy.transposes_a() && self.family() != Family::Tc {
            transposed_lda(m) * k
        } else {
            0
        }
    }

    /// Floats of the split-K partial products of C: split_k·m·n when split_k > 1 and the
    /// slices are not summed in a cluster.
    pub fn partial_floats(&self, m: usize, n: usize) -> usize {
        if self.launches_reduce() {
            self.split_k as usize * m * n
        } else {
            0
        }
    }

    /// This configuration with k split `split_k` ways: summed in a cluster as before where it
    /// still splits, and never unsplit ([`KernelConfig::cluster_sum`] needs a split).
    pub fn with_split(&self, split_k: u32) -> Self {
        Self {
            split_k,
            cluster_sum: self.cluster_sum && split_k > 1,
            ..*self
        }
    }

    /// Whether a launch runs the `<name>_reduce` kernel after the main one (split-K).
    pub fn launches_reduce(&self) -> bool {
        self.split_k > 1 && !self.cluster_sum
    }

    /// Block tiles of an m×n C.
    pub fn tiles(&self, m: usize, n: usize) -> usize {
        m.div_ceil(self.m_s as usize) * n.div_ceil(self.n_s as usize)
    }

    /// Whether this configuration's stream-K schedule shares a tile among any number of
    /// workers (the tensor-copy template: a grid of fewer tiles than workers is shared out
    /// whole), not two at most (the other template, whose kernels the H100's databases
    /// timed; the two become one when an H100 re-tunes them).
    pub fn stream_k_splits_tiles_many_ways(&self) -> bool {
        self.stream_k && self.tma
    }

    /// Arrival counters (u32, zero before and after every launch) a launch on an m×n C
    /// needs: one per tile for a stream-K schedule (the last of a split tile's workers adds
    /// their sums up), none otherwise.
    pub fn counters(&self, m: usize, n: usize) -> usize {
        if self.stream_k {
            self.tiles(m, n)
        } else {
            0
        }
    }

    /// Workspace floats of a stream-K schedule's `workers` workers: two tile-sized slots
    /// each (the partial sums of its first and its last tile); none otherwise.
    pub fn stream_floats(&self, workers: usize) -> usize {
        if self.stream_k {
            2 * workers * (self.m_s as usize) * (self.n_s as usize)
        } else {
            0
        }
    }

    /// The most stream-K workers (resident blocks) `gpu` can hold of this configuration,
    /// whatever its registers: the bound the tuner sizes a shared workspace by.
    pub fn stream_workers_at_most(&self, gpu: &GpuProfile) -> usize {
        let by_threads = gpu.max_threads_per_sm / self.threads().max(1);
        let by_smem = gpu.smem_per_sm / self.smem_bytes().max(1);
        let per_sm = by_threads.min(by_smem).min(gpu.max_blocks_per_sm).max(1);
        gpu.sm_count as usize * per_sm as usize
    }

    /// Kernel name that spells the configuration, e.g.
    /// `nm_spmm_f32_acol16_ms64_ns128_ks32_mt8_nt8_w8x4_n8m32l32_pack_cp3_mb2_sk1`, with
    /// `_rc4` appended for a row chunk of 4.
    pub fn name(&self) -> String {
        let chunk = if self.row_chunk == 0 {
            String::new()
        } else {
            format!("_rc{}", self.row_chunk)
        };
        let schedule = if self.stream_k { STREAM_K_SUFFIX } else { "" };
        let copies = if self.tma { TMA_SUFFIX } else { "" };
        let sum = if self.cluster_sum {
            CLUSTER_SUM_SUFFIX
        } else {
            ""
        };
        format!(
            "nm_spmm_{}_{}_ms{}_ns{}_ks{}_mt{}_nt{}_w{}x{}_n{}m{}l{}_{}_cp{}_mb{}_sk{}{}{}{}{}",
            self.dtype,
            self.a_copy.token(),
            self.m_s,
            self.n_s,
            self.k_s,
            self.m_t,
            self.n_t,
            self.warp.rows,
            self.warp.cols,
            self.nm.n,
            self.nm.m,
            self.l,
            if self.packing { "pack" } else { "nopack" },
            self.stages,
            self.min_blocks,
            self.split_k,
            chunk,
            copies,
            sum,
            schedule
        )
    }

    /// Inverse of [`KernelConfig::name`]: only names it spells are accepted (no `+64`,
    /// no leading zeros), so one configuration has exactly one name.
    pub fn parse_name(name: &str) -> Option<Self> {
        Self::parse_name_loosely(name).filter(|cfg| cfg.name() == name)
    }

    fn parse_name_loosely(name: &str) -> Option<Self> {
        let (dtype, rest) = name.strip_prefix("nm_spmm_")?.split_once('_')?;
        let dtype = Dtype::parse(dtype)?;
        let (rest, stream_k) = match rest.strip_suffix(STREAM_K_SUFFIX) {
            Some(rest) => (rest, true),
            None => (rest, false),
        };
        let (rest, cluster_sum) = match rest.strip_suffix(CLUSTER_SUM_SUFFIX) {
            Some(rest) => (rest, true),
            None => (rest, false),
        };
        let (rest, tma) = match rest.strip_suffix(TMA_SUFFIX) {
            Some(rest) => (rest, true),
            None => (rest, false),
        };
        let parts: Vec<&str> = rest.split('_').collect();
        let (row_chunk, parts) = match parts[..] {
            [ref head @ .., last] if last.starts_with("rc") => {
                (last.strip_prefix("rc")?.parse().ok()?, head)
            }
            _ => (0, &parts[..]),
        };
        let [copy, ms, ns, ks, mt, nt, warp, nml, pack, cp, mb, sk] = parts[..] else {
            return None;
        };
        let num = |s: &str, prefix: &str| s.strip_prefix(prefix)?.parse::<u32>().ok();
        let (wr, wc) = warp.strip_prefix('w')?.split_once('x')?;
        let (n, ml) = nml.strip_prefix('n')?.split_once('m')?;
        let (m, l) = ml.split_once('l')?;
        Some(Self {
            a_copy: ACopy::from_token(copy)?,
            m_s: num(ms, "ms")?,
            n_s: num(ns, "ns")?,
            k_s: num(ks, "ks")?,
            m_t: num(mt, "mt")?,
            n_t: num(nt, "nt")?,
            warp: WarpLayout::new(wr.parse().ok()?, wc.parse().ok()?),
            nm: NmPattern {
                n: n.parse().ok()?,
                m: m.parse().ok()?,
            },
            l: l.parse().ok()?,
            packing: match pack {
                "pack" => true,
                "nopack" => false,
                _ => return None,
            },
            stages: num(cp, "cp")?,
            min_blocks: num(mb, "mb")?,
            split_k: num(sk, "sk")?,
            row_chunk,
            stream_k,
            tma,
            cluster_sum,
            dtype,
        })
    }
}

/// A configuration as databases hold it: this version's fields, or those of template v3 and
/// earlier (no A path, no `min_blocks`, a `pipeline` object instead of `stages`), which old
/// databases keep under their own template checksum and which must stay readable.
#[derive(Deserialize)]
struct StoredConfig {
    a_copy: Option<ACopy>,
    m_s: u32,
    n_s: u32,
    k_s: u32,
    m_t: u32,
    n_t: u32,
    warp: WarpLayout,
    nm: NmPattern,
    l: u32,
    packing: bool,
    stages: Option<u32>,
    pipeline: Option<serde_json::Value>,
    min_blocks: Option<u32>,
    split_k: u32,
    #[serde(default)]
    row_chunk: u32,
    #[serde(default)]
    stream_k: bool,
    #[serde(default)]
    tma: bool,
    #[serde(default)]
    cluster_sum: bool,
    #[serde(default)]
    dtype: Dtype,
}

impl From<StoredConfig> for KernelConfig {
    fn from(s: StoredConfig) -> Self {
        // v3 spelled the ring as {"CpAsync": {"stages": n}}; its register-staged pipelines
        // used two buffers.
        let old_stages = s
            .pipeline
            .as_ref()
            .and_then(|p| p.get("CpAsync")?.get("stages")?.as_u64())
            .map_or(2, |n| n as u32);
        Self {
            a_copy: s.a_copy.unwrap_or(ACopy::Row4),
            m_s: s.m_s,
            n_s: s.n_s,
            k_s: s.k_s,
            m_t: s.m_t,
            n_t: s.n_t,
            warp: s.warp,
            nm: s.nm,
            l: s.l,
            packing: s.packing,
            stages: s.stages.unwrap_or(old_stages),
            min_blocks: s.min_blocks.unwrap_or(1),
            split_k: s.split_k,
            row_chunk: s.row_chunk,
            stream_k: s.stream_k,
            tma: s.tma,
            cluster_sum: s.cluster_sum,
            dtype: s.dtype,
        }
    }
}

impl fmt::Display for KernelConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Rows of C an element-wise block holds per row of a lane: its 32 lanes take consecutive
/// rows, so a lane's m_t rows are m_t/4 runs of 4, 128 rows apart, and m_s = 32·m_t.
pub const EW_WARP_ROWS_PER_LANE_ROW: u32 = 32;

/// The block shape of an element-wise configuration ([`KernelConfig::element_wise`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EwShape {
    /// Rows of C per lane (4 or 8).
    pub m_t: u32,
    /// Columns of C per warp.
    pub n_t: u32,
    /// Warps per block, side by side along n.
    pub warps: u32,
    /// Pruning windows (M rows of k each) per ring stage.
    pub windows: u32,
    pub stages: u32,
    pub min_blocks: u32,
}

impl EwShape {
    /// A shape from its six numbers, in the field order (for tables of shapes).
    pub const fn new(
        m_t: u32,
        n_t: u32,
        warps: u32,
        windows: u32,
        stages: u32,
        min_blocks: u32,
    ) -> Self {
        Self {
            m_t,
            n_t,
            warps,
            windows,
            stages,
            min_blocks,
        }
    }
}

/// `x` rounded up to a multiple of 4 (16 bytes of floats or ints), saturating.
fn round_up_to_4(x: u32) -> u32 {
    x.saturating_add(3) / 4 * 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_round_trips() {
        let cfg = KernelConfig {
            a_copy: ACopy::Col16,
            m_s: 64,
            n_s: 128,
            k_s: 32,
            m_t: 8,
            n_t: 8,
            warp: WarpLayout::new(8, 4),
            nm: NmPattern { n: 8, m: 32 },
            l: 32,
            packing: true,
            stages: 3,
            min_blocks: 2,
            split_k: 1,
            row_chunk: 0,
            stream_k: false,
            tma: false,
            cluster_sum: false,
            dtype: Dtype::F32,
        };
        assert_eq!(
            cfg.name(),
            "nm_spmm_f32_acol16_ms64_ns128_ks32_mt8_nt8_w8x4_n8m32l32_pack_cp3_mb2_sk1"
        );
        assert_eq!(KernelConfig::parse_name(&cfg.name()), Some(cfg));
        assert_eq!(cfg.threads(), 128);
        assert_eq!(cfg.w_s(), 8);
        // Packing: at most w_s·q_s = 32 distinct columns of the 32-wide window.
        assert_eq!(cfg.a_rows(), 32);
        assert_eq!(cfg.smem_bytes(), 3 * 4 * (32 * 64 + 8 * 128 + 4 * 8));
        let row = KernelConfig {
            a_copy: ACopy::Row4,
            ..cfg
        };
        assert_eq!(row.a_stride(), 68);
        assert_eq!(row.a_layout(), ALayout::RowMajor);
    }

    #[test]
    fn a_layout_twin_reads_the_other_layout_in_the_same_family() {
        for copy in ACopy::ALL {
            let twin = copy.layout_twin();
            assert_eq!(twin.layout(), copy.layout().other(), "{copy:?}");
            assert_eq!(twin.family(), copy.family(), "{copy:?}");
            // A path and its twin run the same main loop, so the twin's twin is the path
            // itself, except for the row-major paths without a column-major loop of their own.
            if !matches!(copy, ACopy::Row4 | ACopy::Row16 | ACopy::RowK) {
                assert_eq!(twin.layout_twin(), copy, "{copy:?}");
            }
        }
    }

    #[test]
    fn tensor_copies_are_spelled_after_the_row_chunk_and_stored_only_when_set() {
        let plain = KernelConfig::parse_name(
            "nm_spmm_f32_acol16_ms128_ns256_ks32_mt16_nt8_w8x4_n12m32l32_nopack_cp3_mb1_sk1_rc4",
        )
        .unwrap();
        assert!(!plain.tma && plain.tma_capable());
        let tensor = KernelConfig { tma: true, ..plain };
        assert_eq!(tensor.name(), format!("{}_tma", plain.name()));
        assert_eq!(KernelConfig::parse_name(&tensor.name()), Some(tensor));
        // Rows stored before the field existed read as cp.async kernels.
        let json = serde_json::to_string(&plain).unwrap();
        assert!(!json.contains("tma"));
        assert_eq!(serde_json::from_str::<KernelConfig>(&json).unwrap(), plain);
        let json = serde_json::to_string(&tensor).unwrap();
        assert_eq!(serde_json::from_str::<KernelConfig>(&json).unwrap(), tensor);
        // A tensor copy's stages start on 128-byte lines, and its mbarriers follow the ring.
        assert_eq!(tensor.stage_floats() % 32, 0);
        assert!(tensor.smem_bytes() > tensor.stages * tensor.stage_floats() * 4);
        // Packing gathers columns; the stream-K schedule has a template of its own for them.
        assert!(!KernelConfig {
            packing: true,
            ..plain
        }
        .tma_capable());
        assert!(KernelConfig {
            stream_k: true,
            ..plain
        }
        .tma_capable());
    }

    #[test]
    fn a_row_chunk_is_spelled_last_and_stored_only_when_set() {
        let whole = KernelConfig::parse_name(
            "nm_spmm_f32_acol16_ms256_ns32_ks128_mt16_nt8_w16x2_n4m32l32_pack_cp2_mb1_sk1",
        )
        .unwrap();
        assert_eq!(whole.row_chunk, 0);
        let chunked = KernelConfig {
            row_chunk: 4,
            stream_k: false,
            tma: false,
            dtype: Dtype::F32,
            ..whole
        };
        assert_eq!(
            chunked.name(),
            "nm_spmm_f32_acol16_ms256_ns32_ks128_mt16_nt8_w16x2_n4m32l32_pack_cp2_mb1_sk1_rc4"
        );
        assert_eq!(KernelConfig::parse_name(&chunked.name()), Some(chunked));
        // One spelling per configuration: no `_rc0`, no leading zeros.
        assert_eq!(
            KernelConfig::parse_name(&format!("{}_rc0", whole.name())),
            None
        );
        assert_eq!(
            KernelConfig::parse_name(&format!("{}_rc04", whole.name())),
            None
        );
        // Rows stored before the field existed read as whole tiles, and whole tiles are
        // stored as before.
        let json = serde_json::to_string(&whole).unwrap();
        assert!(!json.contains("row_chunk"));
        let back: KernelConfig = serde_json::from_str(&json).unwrap();
        assert_eq!(back, whole);
        let json = serde_json::to_string(&chunked).unwrap();
        assert_eq!(
            serde_json::from_str::<KernelConfig>(&json).unwrap(),
            chunked
        );
    }
}
