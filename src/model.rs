//! The performance model (NM-SpMM §III-A): arithmetic intensity, CMAR, occupancy, waves and
//! the roofline, with the compute side counted in issued instructions per k-tile, give a
//! predicted time for any (configuration, problem, GPU). It prunes the search before anything
//! is timed, and is the whole answer when no GPU is present.

use crate::codegen::validate::{self, estimated_registers, index_groups, register_cap, CopyMaps};
use crate::codegen::{ACopy, Family, KernelConfig};
use crate::format::MinBytes;
use crate::gpu_profile::GpuProfile;
use crate::problem::Problem;

/// L2→SM bandwidth as a multiple of DRAM bandwidth (Ampere/Hopper parts measure 2.5–3×).
pub const L2_BANDWIDTH_FACTOR: f64 = 2.5;
/// Fixed cost of one kernel launch, seconds.
const LAUNCH_OVERHEAD_S: f64 = 3e-6;
/// Bytes of B' a whole GPU must have in flight for a decode kernel to stream at the DRAM
/// bandwidth (Little's law: ~3 TB/s × ~1 µs of loaded latency).
const DECODE_BYTES_IN_FLIGHT: f64 = 4.0e6;
/// Instructions a decode lane issues per B' row beside its loads and FMAs: the index, the
/// addresses, the loop.
const DECODE_ROW_OVERHEAD_INSTRUCTIONS: f64 = 6.0;
/// Share of the DRAM bandwidth a shared-memory-tiled transpose (the `Transposed` path's
/// first pass: A read once, written once) reaches.
const TRANSPOSE_BANDWIDTH_FRACTION: f64 = 0.8;
/// Bytes of shared memory one SM delivers per clock (32 banks × 4 bytes; H100, H200, A100):
/// the element-wise family's bound, since every FMA there reads its own 4-byte A value
/// (docs/design.md, "Element-wise N:M (L = 1)").
const SHARED_BYTES_PER_CLOCK: f64 = 128.0;
/// Instructions an element-wise lane issues per kept row and column beside its A loads and
/// FMAs: the index's byte taken out of its word and turned into an A-tile address.
const EW_INDEX_INSTRUCTIONS: f64 = 2.0;

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

impl Prediction {
    /// The prediction for fields no kernel of their family has: never the fastest.
    fn impossible() -> Self {
        Self {
            time_s: f64::INFINITY,
            compute_s: f64::INFINITY,
            memory_s: f64::INFINITY,
            block_intensity: 0.0,
            cmar: 0.0,
            blocks_per_sm: 0,
            wave_efficiency: 0.0,
        }
    }
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
        expected_packed_columns(cfg).min(cfg.a_rows() as f64)
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
/// Registers are ptxas's count when the kernel was compiled, else the estimate capped by
/// what `min_blocks` leaves.
pub fn blocks_per_sm(cfg: &KernelConfig, gpu: &GpuProfile, registers: Option<u32>) -> u32 {
    let threads = cfg.threads().max(1);
    let regs = registers
        .unwrap_or_else(|| estimated_registers(cfg).min(register_cap(cfg, gpu.regs_per_sm)));
    let regs_per_block = threads * regs.max(1).div_ceil(8) * 8;
    let by_threads = gpu.max_threads_per_sm / threads;
    let by_regs = gpu.regs_per_sm / regs_per_block.max(1);
    let by_smem = gpu.smem_per_sm / cfg.smem_bytes().max(1);
    by_threads
        .min(by_regs)
        .min(by_smem)
        .min(gpu.max_blocks_per_sm)
}

/// Issue cost per k-tile, in instructions of one thread, beside the FMAs: what the
/// template's main loop does once per k-tile (wait, barrier, loop and pointer updates).
const TILE_OVERHEAD_INSTRUCTIONS: f64 = 20.0;
/// Barrier cost per k-tile for each warp of the block: a block waits for its slowest warp.
const BARRIER_INSTRUCTIONS_PER_WARP: f64 = 4.0;
/// Instructions per copy beside the copy itself (its address).
const COPY_INSTRUCTIONS: f64 = 2.0;
/// Extra instructions per A copy unit of a packing kernel: its column's prefetch load and
/// the address multiply-add from it.
const PACKED_COPY_EXTRA_INSTRUCTIONS: f64 = 2.0;
/// Instructions per 4×4 block of the `Row16` path: four 16-byte loads, four 16-byte stores.
const ROW16_BLOCK_INSTRUCTIONS: f64 = 8.0;
/// Issue slots a scheduler fills at best: ncu measured 0.74 warps issued per scheduler per
/// cycle on the H100's best 16:32 kernel (docs/results/h100-ncu-v3.txt).
const PEAK_ISSUE_RATE: f64 = 0.75;
/// Warps per scheduler at which the schedulers reach that rate; below it, issue falls off as
/// the square root of the ratio (latency no longer hidden).
const WARPS_PER_SCHEDULER_TO_HIDE_LATENCY: f64 = 2.0;

/// Instructions one thread issues per k-tile. Per compressed row: m_t·n_t FMAs, m_t/4 vector
/// A loads per column group (m_t single loads when A's rows stay k-contiguous) and n_t/4
/// vector B' loads. Per tile: the row indices (a 16-byte
/// load per four rows and an address multiply-add per row and group), the thread's share of
/// the A, B' and D copies, col_info prefetches when packing, the barrier and the loop.
pub fn instructions_per_tile(cfg: &KernelConfig) -> f64 {
    if cfg.family() == Family::Ew {
        return ew_instructions_per_stage(cfg);
    }
    let (mt, nt, ws) = (cfg.m_t as f64, cfg.n_t as f64, cfg.w_s() as f64);
    let groups = index_groups(cfg) as f64;
    let threads = cfg.threads().max(1) as f64;
    let fma = mt * nt * ws;
    let a_loads = if cfg.a_copy.keeps_rows() {
        mt
    } else {
        mt / 4.0
    };
    let fragments = ws * (groups * a_loads + nt / 4.0);
    let indices = if cfg.is_dense() {
        0.0
    } else {
        groups * ((ws / 4.0).ceil() + ws)
    };
    let maps = CopyMaps::of(cfg);
    let a_units = maps.a_units as f64;
    let copy_a = match cfg.a_copy {
        ACopy::Row16 => ROW16_BLOCK_INSTRUCTIONS * a_units,
        _ => (1.0 + COPY_INSTRUCTIONS) * a_units,
    };
    let copies = copy_a + (1.0 + COPY_INSTRUCTIONS) * (maps.b_vecs as f64 + maps.d_elems as f64);
    let packing = if cfg.packing {
        PACKED_COPY_EXTRA_INSTRUCTIONS * a_units
    } else {
        0.0
    };
    let warps = threads / 32.0;
    fma + fragments
        + indices
        + copies
        + packing
        + TILE_OVERHEAD_INSTRUCTIONS
        + BARRIER_INSTRUCTIONS_PER_WARP * warps
}

/// Instructions one element-wise lane issues per ring stage: per kept row and column m_t
/// FMAs, m_t/4 A loads and the index's extraction; per kept row and four columns a B' and an
/// index load; its share of the copies, the barrier and the loop.
fn ew_instructions_per_stage(cfg: &KernelConfig) -> f64 {
    let (mt, nt, ws) = (cfg.m_t as f64, cfg.n_t as f64, cfg.w_s() as f64);
    let per_column = mt + mt / 4.0 + EW_INDEX_INSTRUCTIONS;
    let maps = CopyMaps::of(cfg);
    let copies = (1.0 + COPY_INSTRUCTIONS)
        * (maps.a_units as f64 + maps.b_vecs as f64 + maps.d_elems as f64);
    let warps = cfg.threads().max(1) as f64 / 32.0;
    ws * nt * per_column
        + ws * nt / 4.0 * 2.0
        + copies
        + TILE_OVERHEAD_INSTRUCTIONS
        + BARRIER_INSTRUCTIONS_PER_WARP * warps
}

/// Shared-memory wavefronts (128 bytes each, one per clock) an element-wise block spends per
/// ring stage: every warp's A loads (m_t/4 loads of 512 bytes per kept row and column), its
/// B' and index broadcasts (two per kept row and four columns), and the stage's copies in.
fn ew_shared_wavefronts_per_stage(cfg: &KernelConfig) -> f64 {
    let (mt, nt, ws) = (cfg.m_t as f64, cfg.n_t as f64, cfg.w_s() as f64);
    let warps = cfg.warp.rows as f64;
    let reads = warps * ws * nt * (mt + 0.5);
    let writes = 4.0 * cfg.stage_floats() as f64 / SHARED_BYTES_PER_CLOCK;
    reads + writes
}

/// Time for one SM to run `blocks` resident blocks through `k_tiles` k-tiles each: the issue
/// time ([`wave_seconds`]), and for the element-wise family at least the time shared memory
/// takes to deliver its A values.
fn sm_wave_seconds(cfg: &KernelConfig, gpu: &GpuProfile, blocks: f64, k_tiles: f64) -> f64 {
    let issue = wave_seconds(cfg, gpu, blocks, k_tiles);
    if cfg.family() != Family::Ew {
        return issue;
    }
    let shared = blocks * k_tiles * ew_shared_wavefronts_per_stage(cfg) / clock_hz(gpu);
    issue.max(shared)
}

fn clock_hz(gpu: &GpuProfile) -> f64 {
    gpu.clock_mhz as f64 * 1e6
}

/// Time for one SM to run `blocks` resident blocks through `k_tiles` k-tiles each: every
/// warp issues its instructions on one of the SM's schedulers, at a rate that falls when
/// too few warps share a scheduler to hide latency.
fn wave_seconds(cfg: &KernelConfig, gpu: &GpuProfile, blocks: f64, k_tiles: f64) -> f64 {
    let schedulers = (gpu.fp32_lanes_per_sm as f64 / 32.0).max(1.0);
    let warps = blocks * cfg.threads() as f64 / 32.0;
    let per_scheduler = warps / schedulers;
    let issue_rate = PEAK_ISSUE_RATE
        * (per_scheduler / WARPS_PER_SCHEDULER_TO_HIDE_LATENCY)
            .sqrt()
            .min(1.0);
    let instructions = warps * k_tiles * instructions_per_tile(cfg);
    instructions / (schedulers * issue_rate * gpu.clock_mhz as f64 * 1e6)
}

/// Compute time over all waves: full waves with every SM's slots busy, then a last wave
/// whose blocks spread over the SMs (fewer warps per SM: shorter, but issued less densely).
fn compute_seconds(
    cfg: &KernelConfig,
    gpu: &GpuProfile,
    per_sm: f64,
    blocks: f64,
    k_tiles: f64,
) -> f64 {
    let sms = gpu.sm_count.max(1) as f64;
    let full_waves = (blocks / (per_sm * sms)).floor();
    let left = blocks - full_waves * per_sm * sms;
    let mut seconds = full_waves * sm_wave_seconds(cfg, gpu, per_sm, k_tiles);
    if left > 0.0 {
        seconds += sm_wave_seconds(cfg, gpu, (left / sms).ceil(), k_tiles);
    }
    seconds
}

/// Predicted time of `cfg` on `problem` on `gpu`, with estimated registers.
pub fn predict(cfg: &KernelConfig, problem: &Problem, gpu: &GpuProfile) -> Prediction {
    predict_with_registers(cfg, problem, gpu, None)
}

/// [`predict`] with ptxas's register count of the compiled kernel, when known: occupancy is
/// then what the hardware will grant, not an estimate.
pub fn predict_with_registers(
    cfg: &KernelConfig,
    problem: &Problem,
    gpu: &GpuProfile,
    registers: Option<u32>,
) -> Prediction {
    match cfg.family() {
        Family::Decode | Family::EwDecode => return predict_decode(cfg, problem, gpu, registers),
        Family::Ew => return predict_ew(cfg, problem, gpu, registers),
        Family::Tc => return predict_tc(cfg, problem, gpu, registers),
        Family::Tiled => {}
    }
    let (m, n, k) = (problem.m as f64, problem.n as f64, problem.k as f64);
    let m_tiles = (problem.m as f64 / cfg.m_s as f64).ceil();
    let n_tiles = (problem.n as f64 / cfg.n_s as f64).ceil();
    let k_tiles = (problem.k as f64 / cfg.k_s as f64).ceil();
    let blocks = m_tiles * n_tiles * cfg.split_k as f64;
    let per_sm = blocks_per_sm(cfg, gpu, registers).max(1) as f64;
    let slots = per_sm * gpu.sm_count as f64;
    let waves = (blocks / slots).ceil().max(1.0);
    let wave_efficiency = blocks / (waves * slots);

    let k_tiles_per_block = (k_tiles / cfg.split_k as f64).ceil();
    let compute_s = compute_seconds(cfg, gpu, per_sm, blocks, k_tiles_per_block);

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

    let reduce_s = reduce_seconds(cfg, problem, gpu);
    let transpose_s = transpose_seconds(cfg, problem, gpu);
    Prediction {
        time_s: overlap(compute_s, memory_s) + reduce_s + transpose_s + LAUNCH_OVERHEAD_S,
        compute_s,
        memory_s,
        block_intensity: block_intensity(cfg),
        cmar: cmar(cfg),
        blocks_per_sm: per_sm as u32,
        wave_efficiency,
    }
}

/// The decode families: the weight (B' and D, [`MinBytes`]) streams from DRAM once per row
/// of blocks (ceil(m/m_s) of them), at the DRAM bandwidth scaled down when the resident
/// lanes keep fewer than [`DECODE_BYTES_IN_FLIGHT`] bytes of B' in flight; the issue side is
/// one pass of loads, indices, A loads and m_s·n_t FMAs per B' row and lane.
fn predict_decode(
    cfg: &KernelConfig,
    problem: &Problem,
    gpu: &GpuProfile,
    registers: Option<u32>,
) -> Prediction {
    let (m, n) = (problem.m as f64, problem.n as f64);
    let w = problem.w() as f64;
    let row_passes = (m / cfg.m_s as f64).ceil();
    let n_tiles = (n / cfg.n_s as f64).ceil();
    let blocks = n_tiles * row_passes * cfg.split_k as f64;
    let per_sm = blocks_per_sm(cfg, gpu, registers).max(1) as f64;
    let slots = per_sm * gpu.sm_count as f64;
    let waves = (blocks / slots).ceil().max(1.0);
    let resident = blocks.min(slots);
    let in_flight = resident * cfg.threads() as f64 * (cfg.k_s * cfg.n_t) as f64 * 4.0;
    let fill = (in_flight / DECODE_BYTES_IN_FLIGHT).min(1.0);
    let least = MinBytes::of(problem);
    let weight_bytes = least.weight() as f64;
    let dram_bytes = row_passes * weight_bytes + (least.a + least.c) as f64;
    let memory_s = dram_bytes / (gpu.dram_bytes_per_s() * fill);

    let (mt, nt) = (cfg.m_s as f64, cfg.n_t as f64);
    // Element-wise: an index word per 4 columns, and every column its own A loads.
    let (index_loads, a_loads) = if cfg.family() == Family::EwDecode {
        (nt / 4.0, nt * a_loads_per_column(cfg))
    } else {
        (1.0, mt)
    };
    let per_row = nt / 4.0 + index_loads + a_loads + mt * nt + DECODE_ROW_OVERHEAD_INSTRUCTIONS;
    let warp_instructions = row_passes * w * (n / nt) * per_row / 32.0;
    let schedulers = (gpu.fp32_lanes_per_sm as f64 / 32.0).max(1.0);
    let issue_per_s =
        gpu.sm_count as f64 * schedulers * PEAK_ISSUE_RATE * gpu.clock_mhz as f64 * 1e6;
    let compute_s = warp_instructions / issue_per_s;

    let reduce_s = reduce_seconds(cfg, problem, gpu);
    let flops = 2.0 * m * n * w;
    Prediction {
        time_s: overlap(compute_s, memory_s) + reduce_s + LAUNCH_OVERHEAD_S,
        compute_s,
        memory_s,
        block_intensity: flops / (row_passes * weight_bytes).max(1.0),
        cmar: mt * nt / (mt + nt / 4.0 + 1.0),
        blocks_per_sm: per_sm as u32,
        wave_efficiency: blocks / (waves * slots),
    }
}

/// Loads of A an element-wise decode lane issues for one column of A: one 16-byte load of
/// 4 rows of column-major A, else one per row.
fn a_loads_per_column(cfg: &KernelConfig) -> f64 {
    if cfg.loads_a_column_as_float4() {
        1.0
    } else {
        cfg.m_s as f64
    }
}

/// The element-wise family: the tiled family's grid, waves and issue count, each wave at least
/// as long as shared memory takes to deliver every FMA its A value
/// ([`SHARED_BYTES_PER_CLOCK`]: 32 useful FMAs per SM and clock at best); memory is every
/// operand once from DRAM (D as bytes, [`MinBytes`]) and the stages' re-reads from L2.
fn predict_ew(
    cfg: &KernelConfig,
    problem: &Problem,
    gpu: &GpuProfile,
    registers: Option<u32>,
) -> Prediction {
    let ceil_div = |a: usize, b: u32| a.div_ceil(b.max(1) as usize) as f64;
    let (m_tiles, n_tiles) = (ceil_div(problem.m, cfg.m_s), ceil_div(problem.n, cfg.n_s));
    let k_stages = ceil_div(problem.k, cfg.k_s);
    let blocks = m_tiles * n_tiles * cfg.split_k as f64;
    let per_sm = blocks_per_sm(cfg, gpu, registers).max(1) as f64;
    let slots = per_sm * gpu.sm_count as f64;
    let waves = (blocks / slots).ceil().max(1.0);
    let stages_per_block = (k_stages / cfg.split_k.max(1) as f64).ceil();
    let compute_s = compute_seconds(cfg, gpu, per_sm, blocks, stages_per_block);

    let dram_bytes = MinBytes::of(problem).total() as f64;
    let stage_bytes = 4.0 * cfg.stage_floats() as f64;
    let l2_bytes = m_tiles * n_tiles * k_stages * stage_bytes;
    let memory_s = (dram_bytes / gpu.dram_bytes_per_s())
        .max(l2_bytes / (L2_BANDWIDTH_FACTOR * gpu.dram_bytes_per_s()));
    let (mt, nt) = (cfg.m_t as f64, cfg.n_t as f64);
    Prediction {
        time_s: overlap(compute_s, memory_s)
            + reduce_seconds(cfg, problem, gpu)
            + transpose_seconds(cfg, problem, gpu)
            + LAUNCH_OVERHEAD_S,
        compute_s,
        memory_s,
        block_intensity: block_intensity(cfg),
        // FMAs per shared load: m_t per column, for m_t/4 A loads and half a B'/index load.
        cmar: mt * nt / (nt * (mt / 4.0 + 0.5)),
        blocks_per_sm: per_sm as u32,
        wave_efficiency: blocks / (waves * slots),
    }
}

/// The split-K reduction: split_k partial sums read and C written (and read), one launch.
/// A split summed in a cluster has none: its blocks add up through shared memory.
fn reduce_seconds(cfg: &KernelConfig, problem: &Problem, gpu: &GpuProfile) -> f64 {
    if !cfg.launches_reduce() {
        return 0.0;
    }
    let (m, n) = (problem.m as f64, problem.n as f64);
    4.0 * m * n * (cfg.split_k as f64 * 2.0 + 1.0) / gpu.dram_bytes_per_s() + LAUNCH_OVERHEAD_S
}

/// The transposing pass of `atrans` and `ewtrans` kernels: A read once and written once.
fn transpose_seconds(cfg: &KernelConfig, problem: &Problem, gpu: &GpuProfile) -> f64 {
    if !cfg.a_copy.transposes_a() {
        return 0.0;
    }
    let (m, k, element) = (
        problem.m as f64,
        problem.k as f64,
        problem.dtype.bytes() as f64,
    );
    2.0 * element * m * k / (TRANSPOSE_BANDWIDTH_FRACTION * gpu.dram_bytes_per_s())
        + LAUNCH_OVERHEAD_S
}

/// Dense BF16/FP16 tensor-core FLOP per SM per clock on sm_90: 989 TFLOP/s over 132 SMs at
/// 1.83 GHz (docs/design.md "Tensor cores: what bounds a BF16/FP16 N:M kernel (planned)").
const TENSOR_FLOP_PER_CLOCK: f64 = 4096.0;

/// Shared-memory bytes a split block's sums cost per byte of the tile: written once by their
/// block, then read through distributed shared memory, at about half the local rate.
const SPLIT_SUMS_TRAFFIC: f64 = 3.0;

/// The tensor-core family: per ring stage a block does 2·rows·KW·128 FLOP on the tensor
/// cores and moves through shared memory the gathered A (written by the copies, read by
/// `wgmma` once per group), B' (written once, read once per warpgroup); a stage costs the
/// larger of the two at [`TENSOR_FLOP_PER_CLOCK`] and [`SHARED_BYTES_PER_CLOCK`], and an
/// SM's resident blocks share both (docs/design.md "Tensor cores: what bounds a BF16/FP16 N:M kernel (planned)", its paragraph "L = 32 is bound by shared memory").
/// The time is the busiest SM's: its blocks of the full waves and its share of the last.
/// A split of k gives each tile's stages to split_k blocks, which then add up their FP32
/// sums ([`SPLIT_SUMS_TRAFFIC`]). Memory: every operand once from DRAM ([`MinBytes`]).
fn predict_tc(
    cfg: &KernelConfig,
    problem: &Problem,
    gpu: &GpuProfile,
    registers: Option<u32>,
) -> Prediction {
    let Some(tc) = cfg.as_tc() else {
        return Prediction::impossible();
    };
    let (m, n, w) = (problem.m as f64, problem.n as f64, problem.w() as f64);
    let (rows, kw, cols) = (tc.block_rows() as f64, tc.kept_rows as f64, cfg.n_s as f64);
    let (groups, split) = (tc.groups() as f64, tc.split_k as f64);
    let blocks = (m / rows).ceil() * (n / cols).ceil() * split;
    let per_sm = blocks_per_sm(cfg, gpu, registers).max(1) as f64;
    let sms = gpu.sm_count as f64;
    let slots = per_sm * sms;
    let waves = (blocks / slots).ceil().max(1.0);
    let full_waves = (blocks / slots).floor();
    // A stream-K grid shares every tile's stages evenly among the SMs.
    let busiest = match tc.stream_k {
        true => blocks / sms,
        false => full_waves * per_sm + ((blocks - full_waves * slots) / sms).ceil(),
    };
    let stage_flop = 2.0 * rows * kw * cols;
    let stage_shared_bytes =
        2.0 * (2.0 * groups * rows * kw + (1.0 + tc.warpgroups as f64) * cols * kw);
    let stage_clocks =
        (stage_flop / TENSOR_FLOP_PER_CLOCK).max(stage_shared_bytes / SHARED_BYTES_PER_CLOCK);
    let stages = ((w / kw) / split).ceil();
    let sums_clocks = match (tc.split_k, tc.stream_k) {
        (1, false) => 0.0,
        _ => SPLIT_SUMS_TRAFFIC * 4.0 * rows * cols / SHARED_BYTES_PER_CLOCK,
    };
    let compute_s = busiest * (stages * stage_clocks + sums_clocks) / clock_hz(gpu);
    let memory_s = MinBytes::of(problem).total() as f64 / gpu.dram_bytes_per_s();
    let stage_global_bytes = 2.0 * (groups * rows * kw + cols * kw);
    Prediction {
        time_s: overlap(compute_s, memory_s)
            + transpose_seconds(cfg, problem, gpu)
            + LAUNCH_OVERHEAD_S,
        compute_s,
        memory_s,
        block_intensity: stage_flop / stage_global_bytes,
        cmar: stage_flop / stage_shared_bytes,
        blocks_per_sm: per_sm as u32,
        wave_efficiency: blocks / (waves * slots),
    }
}

/// Compute and memory overlap, but not perfectly near the ridge: a smooth maximum (the
/// 4-norm) instead of max(), so that a kernel just under one bound still pays for the other.
fn overlap(compute_s: f64, memory_s: f64) -> f64 {
    (compute_s.powi(4) + memory_s.powi(4)).powf(0.25)
}

/// The model's single choice among `space` for `problem`: the first of [`ranked`] over the
/// configurations valid for the problem, found without sorting.
pub fn best(space: &[KernelConfig], problem: &Problem, gpu: &GpuProfile) -> Option<KernelConfig> {
    let mut best: Option<(f64, KernelConfig)> = None;
    for cfg in space {
        if validate::validate_for_problem(cfg, problem).is_err() {
            continue;
        }
        let time = predict(cfg, problem, gpu).time_s;
        let wins = match &best {
            None => true,
            Some((t, b)) => match time.total_cmp(t) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Equal => cfg.name() < b.name(),
                std::cmp::Ordering::Greater => false,
            },
        };
        if wins {
            best = Some((time, *cfg));
        }
    }
    best.map(|(_, cfg)| cfg)
}

/// Sort by predicted time, fastest first (name breaks ties so the order is reproducible).
pub fn ranked(
    mut configs: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    // Names are computed once: formatting them inside the comparison dominated the sort.
    let mut keyed: Vec<(f64, String, KernelConfig)> = configs
        .drain(..)
        .map(|c| (predict(&c, problem, gpu).time_s, c.name(), c))
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    keyed.into_iter().map(|(_, _, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::WarpLayout;
    use crate::problem::{Dtype, NmPattern};

    fn large(nm: NmPattern, packing: bool) -> KernelConfig {
        KernelConfig {
            a_copy: ACopy::Col16,
            m_s: 64,
            n_s: 128,
            k_s: 32,
            m_t: 8,
            n_t: 8,
            warp: WarpLayout::new(8, 4),
            nm,
            l: 32,
            packing,
            stages: 3,
            min_blocks: 1,
            split_k: 1,
            row_chunk: 0,
            stream_k: false,
            tma: false,
            cluster_sum: false,
            dtype: Dtype::F32,
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
    fn instructions_per_tile_by_hand() {
        // 128 threads (4 warps); w_s = 16, one column group. FMAs 8·8·16 = 1024; fragments
        // 16·(2 + 2) = 64; indices 4 + 16 = 20; copies 3·(A 4 + B' 4 + D 1) = 27; barrier
        // 4·4 = 16; loop 20: 1171 (ptxas's loop for it holds 1182 instructions).
        let cfg = large(NmPattern::new(16, 32).unwrap(), false);
        assert!((instructions_per_tile(&cfg) - 1171.0).abs() < 1e-9);
        // Packing at 4:32 copies the 16 slots 4 groups × 4 rows can name, not 32: two
        // column copies instead of four, each with its col_info load and multiply-add.
        let nm = NmPattern::new(4, 32).unwrap();
        let (plain, packed) = (large(nm, false), large(nm, true));
        let expected = instructions_per_tile(&plain) - 3.0 * 2.0 + 2.0 * 2.0;
        assert!((instructions_per_tile(&packed) - expected).abs() < 1e-9);
    }

    #[test]
    fn one_block_past_a_full_wave_costs_a_second_wave() {
        let gpu = GpuProfile::builtin("h100").unwrap();
        let cfg = large(NmPattern::new(16, 32).unwrap(), false);
        let slots = (blocks_per_sm(&cfg, &gpu, None) * gpu.sm_count) as usize;
        // m = 64 (one block row), n_s = 128: `slots` blocks fill one wave exactly.
        let problem = |blocks: usize| Problem::new(64, 128 * blocks, 4096, cfg.nm, 32).unwrap();
        let full = predict(&cfg, &problem(slots), &gpu);
        let over = predict(&cfg, &problem(slots + 1), &gpu);
        assert!(full.wave_efficiency > 0.999 && over.wave_efficiency < 0.51);
        assert!(over.compute_s > 1.3 * full.compute_s);
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
