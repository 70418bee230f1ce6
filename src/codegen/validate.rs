//! Which configurations the kernel template supports, and which fit a GPU and a problem.
//!
//! Every rule here mirrors an assumption of `templates/nm_spmm.cu.tera` (most are repeated
//! there as `static_assert`s). A broken rule is reported as
//! [`CodegenError::Rejected`] with a reason a human can act on; the first broken rule wins.
//!
//! Load mappings need no divisibility rule of their own (see [`LoadMaps`]): A moves with
//! `gcd(k_s, 8)` threads along k and `threads/gcd(k_s, 8)` along rows, B' as float4 with
//! `gcd(n_s/4, threads)` threads along a row, D as ints; a last, partial row pass of any of
//! them is predicated at compile time.

use super::{CodegenError, KernelConfig, Pipeline};
use crate::gpu::GpuProfile;
use crate::problem::{NmPattern, Problem};

/// Largest m_s, n_s and k_s the template is tuned for (register-staged loads and code size
/// grow with them).
pub const MAX_TILE: u32 = 256;
/// Thread-tile sizes the inner kernel supports (float4 reads of A and B').
pub const THREAD_TILES: [u32; 3] = [4, 8, 16];
/// Split-K factors the tuner may choose.
pub const SPLIT_K_VALUES: [u32; 4] = [1, 2, 4, 8];
/// Hardware cap on registers per thread.
pub const MAX_REGISTERS_PER_THREAD: u32 = 255;
/// Registers a thread needs beyond its tiles: indices, addresses, loop counters.
const REGISTER_OVERHEAD: u32 = 32;

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
    pattern_rules(cfg)
        .and_then(|_| block_tile_rules(cfg))
        .and_then(|_| thread_tile_rules(cfg))
        .and_then(|_| group_rules(cfg))
        .and_then(|_| pipeline_rules(cfg))
        .and_then(|_| register_rules(cfg))
        .map_err(|reason| rejected(cfg, reason))
}

/// Rules that tie a configuration to one problem: same N:M and L, and enough k-tiles and
/// grid rows.
pub fn validate_for_problem(cfg: &KernelConfig, problem: &Problem) -> Result<(), CodegenError> {
    problem_rules(cfg, problem).map_err(|reason| rejected(cfg, reason))
}

/// Estimated 32-bit registers per thread: accumulators m_t·n_t, A fragments G·m_t (G
/// column groups), B' fragment n_t, the register staging of a tile (single and register
/// double buffer), the prefetched col_info entries (packing with a two-buffer pipeline),
/// the row pointers of the tile loads and a fixed overhead for indices and addresses.
pub fn estimated_registers(cfg: &KernelConfig) -> u32 {
    let tiles = cfg.m_t * cfg.n_t + cfg.groups_per_thread() * cfg.m_t + cfg.n_t;
    let maps = LoadMaps::of(cfg);
    // Register-staged pipelines hold a whole tile in flight: the double buffer during
    // compute, the single buffer between its loads and stores (alongside the accumulators).
    let staging = match cfg.pipeline {
        Pipeline::RegisterDouble | Pipeline::Single => {
            maps.a_elems() + 4 * maps.b_vecs() + maps.d_iters
        }
        Pipeline::CpAsync { .. } => 0,
    };
    let col_prefetch = match (cfg.packing, cfg.pipeline) {
        (true, Pipeline::Single) | (false, _) => 0,
        (true, _) => maps.a_ksteps,
    };
    let row_pointers = 2 * (maps.a_rpasses + maps.b_rpasses);
    tiles + staging + col_prefetch + row_pointers + REGISTER_OVERHEAD
}

/// The template's global → shared load mappings (A_*, B_*, D_* constants): how many loads
/// of each operand one thread issues per k-tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadMaps {
    /// A: column steps × row passes of 4-byte loads.
    pub a_ksteps: u32,
    pub a_rpasses: u32,
    /// B': column steps × row passes of 16-byte loads.
    pub b_csteps: u32,
    pub b_rpasses: u32,
    /// D: 4-byte loads.
    pub d_iters: u32,
}

impl LoadMaps {
    pub fn of(cfg: &KernelConfig) -> Self {
        let threads = cfg.threads().max(32);
        let a_tk = gcd(cfg.k_s.max(1), 8);
        let a_rows_per_pass = threads / a_tk;
        let b_vecs_per_row = (cfg.n_s / 4).max(1);
        let b_tcol = gcd(b_vecs_per_row, threads);
        let b_rows_per_pass = threads / b_tcol;
        Self {
            a_ksteps: cfg.k_s / a_tk,
            a_rpasses: cfg.m_s.div_ceil(a_rows_per_pass),
            b_csteps: b_vecs_per_row / b_tcol,
            b_rpasses: cfg.w_s().div_ceil(b_rows_per_pass),
            d_iters: (cfg.w_s() * cfg.q_s()).div_ceil(threads),
        }
    }

    pub fn a_elems(&self) -> u32 {
        self.a_ksteps * self.a_rpasses
    }

    pub fn b_vecs(&self) -> u32 {
        self.b_csteps * self.b_rpasses
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
        format!("L={l} must be a multiple of 4 between 4 and 128 (B' and C are accessed as float4, so n must be a multiple of 4)")
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
    let (n_t, n_s, l) = (cfg.n_t, cfg.n_s, cfg.l);
    rule(n_t % l == 0 || l % n_t == 0, || {
        format!("n_t={n_t} and L={l} must divide one another (a thread tile row spans whole column groups or lies inside one)")
    })?;
    rule(n_s % l == 0 || l % n_s == 0, || {
        format!("n_s={n_s} and L={l} must divide one another (block tiles must not split column groups unevenly)")
    })
}

fn pipeline_rules(cfg: &KernelConfig) -> Rule {
    if let Pipeline::CpAsync { stages } = cfg.pipeline {
        rule((2..=4).contains(&stages), || {
            format!("cp.async pipeline needs 2 to 4 stages, not {stages}")
        })?;
    }
    let split_k = cfg.split_k;
    rule(SPLIT_K_VALUES.contains(&split_k), || {
        format!("split_k={split_k} must be one of {SPLIT_K_VALUES:?}")
    })
}

fn register_rules(cfg: &KernelConfig) -> Rule {
    let regs = estimated_registers(cfg);
    rule(regs <= MAX_REGISTERS_PER_THREAD, || {
        format!("needs about {regs} registers per thread, more than the {MAX_REGISTERS_PER_THREAD} a thread can have (reduce m_t·n_t)")
    })
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
    rule(threads <= gpu.max_threads_per_sm, || {
        format!(
            "{threads} threads per block exceed the {} per SM of {}",
            gpu.max_threads_per_sm, gpu.name
        )
    })?;
    let block_regs = threads * estimated_registers(cfg);
    rule(block_regs <= gpu.regs_per_sm, || {
        format!(
            "a block needs about {block_regs} registers, more than the {} of one SM of {}: not one block fits",
            gpu.regs_per_sm, gpu.name
        )
    })?;
    if matches!(cfg.pipeline, Pipeline::CpAsync { .. }) {
        let cc = gpu.compute_capability;
        rule(cc >= (8, 0), || {
            format!(
                "cp.async needs compute capability 8.0 or newer; {} is {}.{}",
                gpu.name, cc.0, cc.1
            )
        })?;
    }
    Ok(())
}

fn problem_rules(cfg: &KernelConfig, problem: &Problem) -> Rule {
    // Tiles are divisors below: a configuration that skipped `validate` must not panic here.
    rule(cfg.k_s > 0 && cfg.m_s > 0, || {
        format!("k_s={} and m_s={} must be positive", cfg.k_s, cfg.m_s)
    })?;
    rule(cfg.nm == problem.nm, || {
        format!(
            "compiled for pattern {}, the problem is {}",
            cfg.nm, problem.nm
        )
    })?;
    rule(cfg.l as usize == problem.l, || {
        format!("compiled for L={}, the problem has L={}", cfg.l, problem.l)
    })?;
    rule(problem.n % 4 == 0, || {
        format!("n={} must be a multiple of 4", problem.n)
    })?;
    let k_tiles = problem.k.div_ceil(cfg.k_s as usize);
    rule(cfg.split_k as usize <= k_tiles, || {
        format!(
            "split_k={} exceeds the {k_tiles} k-tiles of k={} with k_s={}",
            cfg.split_k, problem.k, cfg.k_s
        )
    })?;
    let grid_rows = problem.m.div_ceil(cfg.m_s as usize);
    rule(grid_rows <= 65_535, || {
        format!(
            "m={} needs {grid_rows} block rows with m_s={}, beyond the grid's 65535",
            problem.m, cfg.m_s
        )
    })
}
