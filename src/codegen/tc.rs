//! The tensor-core family (BF16/FP16 on Hopper's warpgroup MMA, `sm_90a`): its
//! configurations, their rules and their rendering (`templates/nm_spmm_tc.cu.tera`).
//!
//! A configuration fixes the block's rows (64 per warpgroup), the kept rows a stage, the
//! stages of the ring, the blocks per SM `__launch_bounds__` asks for, the group width L,
//! the element type and the split of k (the blocks of a cluster that share one tile's
//! stages). N and M are not part of it: the kernel reads them only through w (the
//! kept rows) and the weight's kept-row table, so one module serves every N:M.
//!
//! # Kernel ABI
//!
//! ```text
//! extern "C" __global__ void <name>(
//!     const T* A,            // m×k column-major (element (i, kk) at A[kk·m + i])
//!     const T* image,        // B' tile by tile (format::tc::TcWeight::image)
//!     const u16* kept_k,     // q×w: the row of A kept row u of group g multiplies
//!     T* C,                  // m×n row-major
//!     int m, int n, int w)
//! grid = (n / 128, m / block_rows, split_k), block = (threads, 1, 1),
//! dynamic shared memory = smem_bytes(w) (opt in above 48 KiB).
//! ```
//! A split configuration (`split_k` 2 or 4, `_sk<split>` in its name) is compiled with
//! `__cluster_dims__(1, 1, split_k)`: the split_k blocks along z of one tile of C form a
//! cluster and add up their sums through distributed shared memory, so C is written once,
//! by one launch, with no workspace.
//! `T` is the configuration's element type (`unsigned short` holding BF16 or FP16 bits).
//! A row-major configuration's module also defines
//! `<name>_transpose(const T* A, T* At, int m, int k)` (`templates/transpose_a16.cu.tera`,
//! grid (ceil(k/64), ceil(m/64)), 256 threads), which writes row-major A column-major into
//! the workspace `At` (m·k elements) that the main kernel then reads as its A.
//! The design: docs/design.md "Tensor cores: the kernel family".

use super::CodegenError;
pub use crate::format::tc::{TC_BLOCK_COLS, TC_MAX_K};
use crate::gpu_profile::GpuProfile;
use crate::problem::{ALayout, Dtype, Problem};
use serde::{Deserialize, Serialize};
use std::fmt;

pub(super) const TEMPLATE_NAME: &str = "nm_spmm_tc.cu.tera";
pub(super) const TEMPLATE: &str = include_str!("../../templates/nm_spmm_tc.cu.tera");

/// The architecture the family compiles for: `wgmma` exists only in `sm_90a`'s SASS.
pub const TC_ARCH: &str = "sm_90a";

/// Rows of C one warpgroup computes (`wgmma`'s m64).
pub const TC_WARPGROUP_ROWS: u32 = 64;

/// Warps in a warpgroup.
pub const TC_WARPS_PER_WARPGROUP: u32 = 4;

/// The compute capability the family's kernels run on (sm_90a code runs on 9.0 alone).
pub const TC_COMPUTE_CAPABILITY: (u32, u32) = (9, 0);

/// Dynamic shared memory a block may opt into on every sm_90 GPU (H100, H200, GH200).
pub const TC_SMEM_OPTIN: usize = 227 * 1024;

/// The transposing pass of row-major A reads its rows 16 bytes (8 elements) at a time.
pub const TC_TRANSPOSE_K_MULTIPLE: usize = 8;

/// The transposing pass's tiles: this many rows by this many columns of A a block.
pub const TC_TRANSPOSE_TILE: usize = 64;

/// Threads of a block of the transposing pass.
pub const TC_TRANSPOSE_THREADS: usize = 256;

/// The splits of k the family compiles: blocks of a cluster (a portable cluster has at most 8).
pub const TC_SPLITS: [usize; 3] = [1, 2, 4];

/// Warpgroups a block (64 rows of C each). One gives small-m problems more, smaller blocks
/// (m = 256 is four of them where 128-row blocks make two).
pub const TC_WARPGROUPS: [usize; 3] = [1, 2, 4];

/// Kept rows a ring stage holds (multiples of wgmma's k16). Sixteen were measured and left
/// out: 0.4 % at m = 256 on top of one-warpgroup blocks, none alone (docs/perf-log.md,
/// "Session 47"), for a third more kernels to compile.
pub const TC_KEPT_ROWS: [usize; 2] = [32, 64];

/// Stages of the ring the search tries; at least the first (one stage of `wgmma` stays in
/// flight while the copies run ahead).
pub const TC_STAGES: std::ops::RangeInclusive<usize> = 3..=6;

/// Shared memory of a stream-K worker's flag beside the kept-row table (the template's
/// `last_here`, one u32, 16 bytes kept).
const STREAM_FLAG_BYTES: usize = 16;

/// Padding of a row of a split block's FP32 sums, in floats (the template's `ROW32`).
const SUMS_ROW_PAD: usize = 8;

/// Registers a thread needs beside its accumulators: ptxas needs some 30 (the 128-column
/// kernels at 64 registers a thread did not compile).
pub const TC_REGISTER_OVERHEAD: usize = 32;

/// One point of the tensor-core family's parameter space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub struct TcConfig {
    /// Element type of A, B' and C (BF16 or FP16; sums in FP32).
    pub dtype: Dtype,
    /// Warpgroups a block, 64 rows of C each (2 or 4).
    pub warpgroups: usize,
    /// Kept rows a stage (a multiple of 16: one `wgmma` k-step each).
    pub kept_rows: usize,
    /// Stages of the shared-memory ring (at least 3: one stage of `wgmma` stays in flight).
    pub stages: usize,
    /// Blocks per SM that `__launch_bounds__` asks for.
    pub min_blocks: usize,
    /// Columns of a group (vector length L): 32, 64 or 128.
    pub l: usize,
    /// The layout of A the kernel takes. Row-major A goes through a first kernel that
    /// writes it column-major into a workspace ([`TcConfig::transposes_a`]); the main loop
    /// then reads that copy.
    pub a_layout: ALayout,
    /// Blocks of a cluster that share one tile's stages ([`TC_SPLITS`]); 1: k unsplit.
    pub split_k: usize,
    /// Stream-K: a grid of [`TcConfig::stream_workers`] blocks shares out every tile's
    /// stages evenly (`_streamk` in the name; split_k 1). Its launch needs a workspace
    /// ([`TcConfig::stream_floats`], [`TcConfig::counters`]).
    #[serde(default)]
    pub stream_k: bool,
}

impl TcConfig {
    /// Rows of C a block computes.
    pub fn block_rows(&self) -> usize {
        (TC_WARPGROUP_ROWS as usize).saturating_mul(self.warpgroups)
    }

    pub fn threads(&self) -> usize {
        (32 * TC_WARPS_PER_WARPGROUP as usize).saturating_mul(self.warpgroups)
    }

    /// Column groups a block.
    pub fn groups(&self) -> usize {
        // (`max(1)`: sizes are asked for before the rules have bounded the fields.)
        TC_BLOCK_COLS / self.l.max(1)
    }

    /// Bytes of the ring: each stage holds one A tile per group and the B' tile.
    /// (Saturating, as [`TcConfig::smem_bytes`]: fields outside the rules must not overflow.)
    pub fn ring_bytes(&self) -> usize {
        let a = self.groups().saturating_mul(self.block_rows());
        let elements = a
            .saturating_add(TC_BLOCK_COLS)
            .saturating_mul(self.kept_rows);
        self.stages.saturating_mul(elements).saturating_mul(2)
    }

    /// Bytes of a split block's FP32 sums (none unsplit), which take the ring's place after
    /// the last stage.
    pub fn sums_bytes(&self) -> usize {
        if self.split_k <= 1 {
            return 0;
        }
        let row = (TC_BLOCK_COLS + SUMS_ROW_PAD).saturating_mul(4);
        self.block_rows().saturating_mul(row)
    }

    /// Bytes of the region the ring and then a split block's sums occupy.
    pub fn region_bytes(&self) -> usize {
        self.ring_bytes().max(self.sums_bytes())
    }

    /// Dynamic shared memory for a problem with `w` kept rows: the ring (or a split block's
    /// sums), its two mbarriers a stage, the block's kept-row table (u16), and a stream-K
    /// worker's word saying whether it stores a split tile.
    pub fn smem_bytes(&self, w: usize) -> usize {
        let flag = if self.stream_k { STREAM_FLAG_BYTES } else { 0 };
        self.region_bytes()
            .saturating_add(self.stages.saturating_mul(16))
            .saturating_add(self.groups().saturating_mul(w).saturating_mul(2))
            .saturating_add(flag)
    }

    /// The workers of a stream-K grid on a GPU of `sm_count` SMs: the blocks an SM that
    /// `__launch_bounds__` asks for, on every SM.
    pub fn stream_workers(&self, sm_count: usize) -> usize {
        sm_count.saturating_mul(self.min_blocks).max(1)
    }

    /// Tiles of C a problem of m×n has.
    pub fn tiles(&self, m: usize, n: usize) -> usize {
        (m / self.block_rows().max(1)).saturating_mul(n / TC_BLOCK_COLS)
    }

    /// FP32 workspace of a stream-K launch with `workers` workers: two tile-sized slots a
    /// worker (the sums of its first and of its last tile); none otherwise.
    pub fn stream_floats(&self, workers: usize) -> usize {
        match self.stream_k {
            true => 2 * workers * self.block_rows() * TC_BLOCK_COLS,
            false => 0,
        }
    }

    /// Arrival counters (u32, zero before and after every launch) of a stream-K launch on
    /// an m×n C: one a tile; none otherwise.
    pub fn counters(&self, m: usize, n: usize) -> usize {
        match self.stream_k {
            true => self.tiles(m, n),
            false => 0,
        }
    }

    /// The name the kernel and the database know it by (`_sk<split>` for a split of k,
    /// `_arow` at the end for row-major A).
    pub fn name(&self) -> String {
        let split = match self.split_k {
            1 => String::new(),
            s => format!("_sk{s}"),
        };
        let schedule = if self.stream_k { "_streamk" } else { "" };
        format!(
            "tc_{}_wg{}_kw{}_st{}_mb{}_l{}{split}{schedule}{}",
            self.dtype,
            self.warpgroups,
            self.kept_rows,
            self.stages,
            self.min_blocks,
            self.l,
            if self.transposes_a() { "_arow" } else { "" }
        )
    }

    /// Stages of the kept rows a problem with `w` of them has (a split shares them out, each
    /// block at least one).
    pub fn stages_of(&self, w: usize) -> usize {
        w / self.kept_rows.max(1)
    }

    /// Whether a launch first writes row-major A column-major into its workspace (the
    /// module's `<name>_transpose` kernel), one pass over A at memory bandwidth.
    pub fn transposes_a(&self) -> bool {
        self.a_layout == ALayout::RowMajor
    }

    /// Elements of workspace a launch on an m×k A needs: the column-major copy of row-major
    /// A, none for column-major A.
    pub fn workspace_elements(&self, m: usize, k: usize) -> usize {
        if self.transposes_a() {
            m * k
        } else {
            0
        }
    }

    /// The rules every configuration obeys, whatever the problem.
    pub fn validate_structure(&self) -> Result<(), CodegenError> {
        let reject = |reason: String| {
            Err(CodegenError::Rejected {
                name: self.name(),
                reason,
            })
        };
        if !matches!(self.dtype, Dtype::Bf16 | Dtype::F16) {
            return reject(format!(
                "the tensor-core family takes bf16 or f16, not {}",
                self.dtype
            ));
        }
        if !TC_WARPGROUPS.contains(&self.warpgroups) {
            return reject(format!(
                "{} warpgroups: one of {TC_WARPGROUPS:?}",
                self.warpgroups
            ));
        }
        if !matches!(self.l, 32 | 64 | 128) {
            return reject(format!("L = {}: 32, 64 or 128", self.l));
        }
        if !TC_KEPT_ROWS.contains(&self.kept_rows) {
            return reject(format!(
                "{} kept rows a stage: one of {TC_KEPT_ROWS:?}",
                self.kept_rows
            ));
        }
        let fewest = *TC_STAGES.start();
        if self.stages < fewest {
            return reject(format!("{} stages: at least {fewest}", self.stages));
        }
        if !matches!(self.min_blocks, 1 | 2) {
            return reject(format!("{} blocks an SM: 1 or 2", self.min_blocks));
        }
        if !TC_SPLITS.contains(&self.split_k) {
            return reject(format!("split-K {}: one of {TC_SPLITS:?}", self.split_k));
        }
        if self.stream_k && self.split_k != 1 {
            return reject(format!(
                "stream-K shares out whole tiles' stages: split-K must be 1, not {}",
                self.split_k
            ));
        }
        let registers = (65536 / (self.threads() * self.min_blocks)).min(255);
        if self.estimated_registers() > registers {
            return reject(format!(
                "{} sums a thread do not fit {registers} registers",
                self.groups() * self.l / 2
            ));
        }
        if (self.kept_rows * self.block_rows() / 8) % self.threads() != 0 {
            return reject("A's 16-byte copies do not share out evenly".into());
        }
        // C leaves through the ring, rows padded by 8 elements.
        if self.block_rows() * (TC_BLOCK_COLS + 8) * 2 > self.ring_bytes() {
            return reject("the C tile does not fit the ring".into());
        }
        Ok(())
    }

    /// Whether this configuration's kernel can compute `problem` on `gpu`: the problem's
    /// rules ([`TcConfig::problem_rules`]), then sm_90a and the GPU's opt-in shared memory.
    pub fn validate_for_problem(
        &self,
        problem: &Problem,
        gpu: &GpuProfile,
    ) -> Result<(), CodegenError> {
        self.validate_structure()?;
        let reject = |reason: String| CodegenError::Rejected {
            name: self.name(),
            reason,
        };
        self.problem_rules(problem).map_err(reject)?;
        if gpu.compute_capability != TC_COMPUTE_CAPABILITY {
            return Err(reject(format!(
                "needs sm_90a (Hopper), the GPU is sm_{}{}",
                gpu.compute_capability.0, gpu.compute_capability.1
            )));
        }
        let smem = self.smem_bytes(problem.w());
        if smem > gpu.smem_per_block_optin as usize {
            return Err(reject(format!(
                "{smem} bytes of shared memory, the GPU allows {}",
                gpu.smem_per_block_optin
            )));
        }
        Ok(())
    }

    /// The rules that tie the configuration to one problem on any sm_90a GPU: the
    /// problem's type and layout, whole blocks and stages, u16 row indices, 32-bit offsets
    /// into A, and shared memory (the ring and the problem's kept-row table) within
    /// [`TC_SMEM_OPTIN`].
    pub fn problem_rules(&self, problem: &Problem) -> Result<(), String> {
        let (m, n, k) = (problem.m, problem.n, problem.k);
        let w = problem.w();
        if problem.dtype != self.dtype {
            return Err(format!(
                "built for {}, the problem is {}",
                self.dtype, problem.dtype
            ));
        }
        if problem.a_layout != self.a_layout {
            return Err(format!(
                "built for {}-major A, the problem's A is {}-major",
                self.a_layout, problem.a_layout
            ));
        }
        if self.transposes_a() && k % TC_TRANSPOSE_K_MULTIPLE != 0 {
            return Err(format!(
                "the transposing pass reads rows of A {TC_TRANSPOSE_K_MULTIPLE} elements at a \
                 time: k = {k} must be a multiple of {TC_TRANSPOSE_K_MULTIPLE}"
            ));
        }
        if problem.l != self.l {
            return Err(format!(
                "built for L = {}, the problem has L = {}",
                self.l, problem.l
            ));
        }
        if m % self.block_rows() != 0 || n % TC_BLOCK_COLS != 0 {
            return Err(format!(
                "m = {m} and n = {n} must be multiples of {} and {TC_BLOCK_COLS}",
                self.block_rows()
            ));
        }
        if w % self.kept_rows != 0 {
            return Err(format!(
                "w = {w} kept rows is not a multiple of {}",
                self.kept_rows
            ));
        }
        let stages = self.stages_of(w);
        if stages < self.split_k {
            return Err(format!(
                "{stages} stages of {} kept rows cannot be split {} ways",
                self.kept_rows, self.split_k
            ));
        }
        let units = self.tiles(m, n).saturating_mul(stages);
        if self.stream_k && units > i32::MAX as usize {
            return Err(format!(
                "{units} stream-K units (tiles × stages): a worker counts them in 32 bits"
            ));
        }
        // (Problem::new keeps m·k within i32, so 32-bit offsets into A hold.)
        if k > TC_MAX_K {
            return Err(format!(
                "k = {k}: kept-row indices are u16 (k ≤ {TC_MAX_K})"
            ));
        }
        let smem = self.smem_bytes(w);
        if smem > TC_SMEM_OPTIN {
            return Err(format!(
                "{smem} bytes of shared memory, an sm_90 block may have {TC_SMEM_OPTIN}"
            ));
        }
        Ok(())
    }

    /// Registers a thread needs: its FP32 accumulators (G·L/2) and [`TC_REGISTER_OVERHEAD`]
    /// (a stream-K worker fits the same: `tests/compile_tc.rs`).
    pub fn estimated_registers(&self) -> usize {
        self.groups() * self.l / 2 + TC_REGISTER_OVERHEAD
    }

    /// The configurations the search tries for `dtype`: every structurally valid point of
    /// the grid, for each layout of A (the problem's rules prune it further).
    pub fn search_space(dtype: Dtype) -> Vec<TcConfig> {
        let mut out = Vec::new();
        for a_layout in ALayout::ALL {
            for l in [32, 64, 128] {
                for warpgroups in TC_WARPGROUPS {
                    for kept_rows in TC_KEPT_ROWS {
                        for stages in TC_STAGES {
                            for min_blocks in [1, 2] {
                                // (Stream-K with a split of k is refused below.)
                                for (split_k, stream_k) in
                                    TC_SPLITS.into_iter().flat_map(|s| [(s, false), (s, true)])
                                {
                                    let cfg = TcConfig {
                                        dtype,
                                        warpgroups,
                                        kept_rows,
                                        stages,
                                        min_blocks,
                                        l,
                                        a_layout,
                                        split_k,
                                        stream_k,
                                    };
                                    if cfg.validate_structure().is_ok() && cfg.fits_blocks_per_sm()
                                    {
                                        out.push(cfg);
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

    /// Whether `min_blocks` blocks of the ring (or a split block's sums) fit the 228 KiB an
    /// H100/H200 SM holds (the kept-row table comes on top, per problem).
    fn fits_blocks_per_sm(&self) -> bool {
        const SMEM_PER_SM: usize = 228 * 1024;
        self.min_blocks * (self.region_bytes() + 1024) <= SMEM_PER_SM
    }
}

impl fmt::Display for TcConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Render the CUDA module of `cfg` (its structural rules checked first).
pub fn render_tc(cfg: &TcConfig) -> Result<super::KernelSource, CodegenError> {
    cfg.validate_structure()?;
    let name = cfg.name();
    let mut ctx = tera::Context::new();
    ctx.insert("name", &name);
    ctx.insert("checksum", super::family_checksum(super::Family::Tc));
    ctx.insert("dtype", cfg.dtype.as_str());
    ctx.insert("ptx_type", cfg.dtype.as_str());
    ctx.insert("wg", &cfg.warpgroups);
    ctx.insert("ms", &cfg.block_rows());
    ctx.insert("kw", &cfg.kept_rows);
    ctx.insert("stages", &cfg.stages);
    ctx.insert("min_blocks", &cfg.min_blocks);
    ctx.insert("split_k", &cfg.split_k);
    ctx.insert("stream", &cfg.stream_k);
    ctx.insert("l", &cfg.l);
    ctx.insert("acc_regs", &(cfg.l / 2));
    ctx.insert("transpose_tile", &TC_TRANSPOSE_TILE);
    ctx.insert("transpose_threads", &TC_TRANSPOSE_THREADS);
    let tera = super::render::parsed_templates()?;
    let render = |template: &str| {
        tera.render(template, &ctx)
            .map_err(|e| CodegenError::Template(e.to_string()))
    };
    let mut source = render(TEMPLATE_NAME)?;
    if cfg.transposes_a() {
        source.push_str(&render(super::render::TC_TRANSPOSE_TEMPLATE)?);
    }
    Ok(super::KernelSource {
        name,
        reduce_name: None,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::NmPattern;

    fn cfg() -> TcConfig {
        TcConfig {
            dtype: Dtype::Bf16,
            warpgroups: 4,
            kept_rows: 64,
            stages: 4,
            min_blocks: 1,
            l: 128,
            a_layout: ALayout::ColMajor,
            split_k: 1,
            stream_k: false,
        }
    }

    #[test]
    fn renders_the_constants_and_one_entry_point() {
        let src = render_tc(&cfg()).unwrap();
        assert_eq!(src.name, "tc_bf16_wg4_kw64_st4_mb1_l128");
        assert!(src.source.contains("\n    tc_bf16_wg4_kw64_st4_mb1_l128("));
        assert!(src.source.contains("constexpr int KW = 64;"));
        assert!(src.source.contains("m64n128k16.f32.bf16.bf16"));
        assert!(src.source.contains("%62, %63 }, "));
        assert!(src.source.contains("%64, %65, p, 1, 1, 1, 0;"));
        assert!(!src.source.contains("{{") && !src.source.contains("{%"));
        let f16 = render_tc(&TcConfig {
            dtype: Dtype::F16,
            l: 32,
            ..cfg()
        })
        .unwrap();
        assert!(f16.source.contains("m64n32k16.f32.f16.f16"));
        assert!(f16.source.contains("cvt.rn.f16x2.f32"));
    }

    #[test]
    fn a_tensor_core_configuration_travels_as_a_kernel_config() {
        use crate::codegen::{compile_key, render, validate, Family, KernelConfig};
        let nm = NmPattern { n: 8, m: 32 };
        let kc = KernelConfig::tensor_core(cfg(), nm);
        assert_eq!(kc.family(), Family::Tc);
        assert_eq!(kc.as_tc(), Some(cfg()));
        assert_eq!(kc.threads() as usize, cfg().threads());
        let name = kc.name();
        assert!(name.starts_with("nm_spmm_bf16_wgmma_ms256_"), "{name}");
        assert_eq!(KernelConfig::parse_name(&name), Some(kc));
        let json = serde_json::to_string(&kc).unwrap();
        assert!(json.contains("\"dtype\":\"bf16\""), "{json}");
        assert_eq!(serde_json::from_str::<KernelConfig>(&json).unwrap(), kc);
        // One module serves every pattern.
        let other = KernelConfig::tensor_core(cfg(), NmPattern { n: 16, m: 32 });
        assert_eq!(compile_key(&kc), compile_key(&other));
        assert_eq!(render(&kc).unwrap(), render_tc(&cfg()).unwrap());
        // Fields no tensor-core configuration has are refused, not rendered.
        let odd = KernelConfig { m_t: 32, ..kc };
        assert_eq!(odd.as_tc(), None);
        assert!(validate::validate_structure(&odd).is_err());
        let h100 = GpuProfile::builtin("h100").unwrap();
        validate::validate(&kc, &h100).unwrap();
        assert!(validate::validate_for_arch(&kc, "sm_80")
            .unwrap_err()
            .to_string()
            .contains("sm_90a"));
    }

    #[test]
    fn bf16_problems_get_tensor_core_candidates_and_a_default() {
        use crate::codegen::{enumerate, validate, Family};
        let h200 = GpuProfile::builtin("h200").unwrap();
        let nm = NmPattern { n: 4, m: 32 };
        let problem = Problem::new(4096, 4096, 11008, nm, 128)
            .unwrap()
            .with_dtype(Dtype::Bf16)
            .with_layout(ALayout::ColMajor)
            .unwrap();
        assert_eq!(Family::serving(&problem), &[Family::Tc]);
        let space = enumerate::space_for(nm, 128, ALayout::ColMajor, Dtype::Bf16, &h200);
        assert!(!space.is_empty());
        for kc in &space {
            assert_eq!(
                (kc.family(), kc.dtype, kc.l),
                (Family::Tc, Dtype::Bf16, 128)
            );
        }
        // w = 1376 is no multiple of 64: only the 32-row stages can run it.
        let runnable: Vec<_> = space
            .iter()
            .filter(|kc| validate::validate_for_problem(kc, &problem).is_ok())
            .collect();
        assert!(!runnable.is_empty());
        assert!(runnable.iter().all(|kc| kc.k_s == 32));
        let row = enumerate::space_for(nm, 128, ALayout::RowMajor, Dtype::Bf16, &h200);
        assert_eq!(
            row.len(),
            space.len(),
            "every configuration for each layout"
        );
        assert!(row
            .iter()
            .all(|kc| kc.a_copy == crate::codegen::ACopy::WgmmaTrans));
        assert!(
            enumerate::space_for(nm, 128, ALayout::ColMajor, Dtype::F32, &h200)
                .iter()
                .all(|kc| kc.dtype == Dtype::F32 && kc.family() != Family::Tc)
        );
    }

    #[test]
    fn a_row_major_configuration_adds_its_transposing_pass() {
        let row = TcConfig {
            a_layout: ALayout::RowMajor,
            ..cfg()
        };
        let src = render_tc(&row).unwrap();
        assert_eq!(src.name, "tc_bf16_wg4_kw64_st4_mb1_l128_arow");
        assert!(src
            .source
            .contains("tc_bf16_wg4_kw64_st4_mb1_l128_arow_transpose("));
        assert!(!render_tc(&cfg()).unwrap().source.contains("_transpose("));
        assert_eq!(
            (
                row.workspace_elements(256, 1024),
                cfg().workspace_elements(256, 1024)
            ),
            (256 * 1024, 0)
        );
        let kc = crate::codegen::KernelConfig::tensor_core(row, NmPattern { n: 8, m: 32 });
        assert_eq!(kc.a_layout(), ALayout::RowMajor);
        assert_eq!(kc.as_tc(), Some(row));
        // Adding the pass left the column-major kernels' checksum as it was.
        let col = crate::codegen::KernelConfig::tensor_core(cfg(), NmPattern { n: 8, m: 32 });
        assert_eq!(
            crate::codegen::kernel_checksum(&col),
            crate::codegen::family_checksum(crate::codegen::Family::Tc)
        );
        assert_ne!(
            crate::codegen::kernel_checksum(&kc),
            crate::codegen::kernel_checksum(&col)
        );
    }

    #[test]
    fn a_split_configuration_is_its_own_kernel_a_cluster_of_blocks() {
        use crate::codegen::{compile_key, render, KernelConfig};
        let split = TcConfig {
            split_k: 2,
            ..cfg()
        };
        assert_eq!(split.name(), "tc_bf16_wg4_kw64_st4_mb1_l128_sk2");
        let src = render_tc(&split).unwrap();
        assert!(src.source.contains("__cluster_dims__(1, 1, SPLIT)"));
        assert!(src.source.contains("constexpr int SPLIT = 2;"));
        assert!(src.source.contains("ld.shared::cluster.v4.f32"));
        let unsplit = render_tc(&cfg()).unwrap();
        assert!(!unsplit.source.contains("__cluster_dims__(1"));
        assert!(!unsplit.source.contains("cluster_sync();"));
        // The compile key keeps the split: the kernel serving a split configuration is the
        // split one (a key without it launched the unsplit kernel on a deeper grid, every
        // slice computing the whole product).
        let nm = NmPattern { n: 8, m: 32 };
        let kc = KernelConfig::tensor_core(split, nm);
        assert_eq!((kc.split_k, kc.as_tc()), (2, Some(split)));
        assert!(kc.name().ends_with("_sk2"), "{}", kc.name());
        assert_eq!(KernelConfig::parse_name(&kc.name()), Some(kc));
        assert_eq!(compile_key(&kc).split_k, 2);
        assert_ne!(
            compile_key(&kc),
            compile_key(&KernelConfig::tensor_core(cfg(), nm))
        );
        assert_eq!(render(&kc).unwrap(), src);
        // A split block's FP32 sums (256 rows of 136 floats) outgrow a small ring.
        let small = TcConfig {
            warpgroups: 2,
            kept_rows: 32,
            stages: 3,
            l: 128,
            ..split
        };
        assert_eq!(small.sums_bytes(), 128 * 136 * 4);
        assert!(small.ring_bytes() < small.sums_bytes());
        assert_eq!(small.smem_bytes(0), small.sums_bytes() + 3 * 16);
        assert_eq!(
            TcConfig {
                split_k: 1,
                ..small
            }
            .sums_bytes(),
            0
        );
        assert!(TcConfig {
            split_k: 3,
            ..cfg()
        }
        .validate_structure()
        .is_err());
    }

    #[test]
    fn a_split_needs_a_stage_for_every_block() {
        let gpu = GpuProfile::builtin("h200").unwrap();
        let problem = |k| {
            Problem::new(256, 2048, k, NmPattern { n: 4, m: 32 }, 128)
                .unwrap()
                .with_dtype(Dtype::Bf16)
                .with_layout(ALayout::ColMajor)
                .unwrap()
        };
        let four = TcConfig {
            split_k: 4,
            ..cfg()
        };
        // k = 2048 at 4:32: 256 kept rows, 4 stages of 64: one a block.
        four.validate_for_problem(&problem(2048), &gpu).unwrap();
        assert_eq!(four.stages_of(256), 4);
        // k = 1024: 2 stages for 4 blocks.
        let err = four
            .validate_for_problem(&problem(1024), &gpu)
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot be split 4 ways"), "{err}");
    }

    #[test]
    fn the_search_space_is_valid_and_rejects_what_cannot_run() {
        let space = TcConfig::search_space(Dtype::Bf16);
        assert!(space.len() >= 20, "{} configurations", space.len());
        assert!(space.contains(&cfg()));
        assert!(TcConfig { stages: 2, ..cfg() }
            .validate_structure()
            .is_err());
        assert!(TcConfig {
            dtype: Dtype::F32,
            ..cfg()
        }
        .validate_structure()
        .is_err());
        assert!(TcConfig::search_space(Dtype::F32).is_empty());
    }

    /// A BF16 problem (m, n, k) at N:M and L with A in `layout`.
    fn bf16_problem(
        (m, n, k): (usize, usize, usize),
        (n_kept, m_window): (u32, u32),
        l: usize,
        layout: ALayout,
    ) -> Problem {
        let pattern = NmPattern {
            n: n_kept,
            m: m_window,
        };
        Problem::new(m, n, k, pattern, l)
            .unwrap()
            .with_dtype(Dtype::Bf16)
            .with_layout(layout)
            .unwrap()
    }

    #[test]
    fn problems_outside_the_kernels_reach_are_rejected_with_a_reason() {
        let gpu = GpuProfile::builtin("h100").unwrap();
        let problem = bf16_problem((4096, 4096, 4096), (16, 32), 128, ALayout::ColMajor);
        cfg().validate_for_problem(&problem, &gpu).unwrap();
        let reason_for =
            |c: &TcConfig, p: &Problem| c.validate_for_problem(p, &gpu).unwrap_err().to_string();
        let reason = |p: &Problem| reason_for(&cfg(), p);
        assert!(reason(&problem.with_layout(ALayout::RowMajor).unwrap())
            .contains("built for col-major A"));
        assert!(reason(&problem.with_dtype(Dtype::F16)).contains("built for bf16"));
        let ragged = bf16_problem((4000, 4096, 4096), (16, 32), 128, ALayout::ColMajor);
        assert!(reason(&ragged).contains("multiples of 256"));
        // Llama-65B's mlp_down at L = 32: four groups' kept-row tables (88 KB) beside the ring.
        let wide = bf16_problem((4096, 8192, 22016), (16, 32), 32, ALayout::ColMajor);
        let deep = TcConfig {
            l: 32,
            warpgroups: 2,
            kept_rows: 32,
            stages: 6,
            ..cfg()
        };
        let err = reason_for(&deep, &wide);
        assert!(err.contains("bytes of shared memory"), "{err}");
        TcConfig { stages: 3, ..deep }
            .validate_for_problem(&wide, &gpu)
            .unwrap();
        // The transposing pass moves 16-byte pieces of A's rows.
        let odd_k = bf16_problem((4096, 4096, 4100), (2, 4), 128, ALayout::RowMajor);
        let row = TcConfig {
            a_layout: ALayout::RowMajor,
            ..cfg()
        };
        let err = reason_for(&row, &odd_k);
        assert!(err.contains("k = 4100 must be a multiple of 8"), "{err}");
        let ampere = GpuProfile::builtin("a100").unwrap();
        assert!(cfg()
            .validate_for_problem(&problem, &ampere)
            .unwrap_err()
            .to_string()
            .contains("sm_90a"));
    }
}
