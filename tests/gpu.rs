//! GPU correctness: every template family (each A copy path and so both A layouts, packing
//! on/off, every ring depth, split-K > 1, warp tiles one and two column groups wide; the
//! decode family's block shapes at m from 1 to more than a block row; the element-wise
//! families' block shapes with u8 indices at ragged m and n, and at m up to 16) against
//! the CPU reference on random data at several shapes, m, n and k off their tiles, smallest
//! and largest N:M, with alpha and beta both non-trivial. Skipped, visibly, where there is no
//! GPU.

use nmtune::codegen::{compile_key, validate, ACopy, EwShape, KernelConfig, WarpLayout};
use nmtune::format::{self, CompressedWeight};
use nmtune::gpu::{device, Gpu};
use nmtune::kernels::{IndexOperand, LaunchBuffers, LoadedKernel, Workspace};
use nmtune::problem::{ALayout, Dtype, NmPattern};
use nmtune::reference;
use nmtune::tuner::build::{build_all, BuildResult};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn gpu_or_skip() -> Option<Gpu> {
    if !device::driver_present() {
        eprintln!("SKIPPED: GPU tests (no NVIDIA driver on this machine)");
        return None;
    }
    match Gpu::open(0) {
        Ok(gpu) => Some(gpu),
        Err(e) => {
            eprintln!("SKIPPED: GPU tests ({e})");
            None
        }
    }
}

fn random(len: usize, rng: &mut SmallRng) -> Vec<f32> {
    (0..len).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

/// Block shapes of the families: the paper's medium and large tiles (warp tiles one column
/// group wide), and the large tile with a warp twice as wide, whose threads span two groups.
#[derive(Clone, Copy)]
enum Shape {
    Medium,
    Large,
    Wide,
}

fn config(
    nm: NmPattern,
    l: u32,
    a_copy: ACopy,
    packing: bool,
    stages: u32,
    split_k: u32,
    shape: Shape,
) -> KernelConfig {
    let (m_s, n_s, m_t, n_t, warp, min_blocks) = match shape {
        Shape::Medium => (32, 64, 8, 4, WarpLayout::new(4, 8), 1),
        Shape::Large => (64, 128, 8, 8, WarpLayout::new(8, 4), 2),
        Shape::Wide => (64, 128, 8, 8, WarpLayout::new(4, 8), 1),
    };
    let window = nm.m.max(32);
    KernelConfig {
        a_copy,
        m_s,
        n_s,
        // Packing with two windows per tile: the packed capacity is below k_s.
        k_s: if packing { 2 * window } else { window },
        m_t,
        n_t,
        warp,
        nm,
        l,
        packing,
        stages,
        min_blocks,
        split_k,
        row_chunk: 0,
        stream_k: false,
        tma: false,
        cluster_sum: false,
        dtype: Dtype::F32,
    }
}

/// Decode-family configurations of one pattern: every rows-per-block value (8 only in the
/// vector-wise family, with n_t = 4: the callers keep the valid ones), narrow and wide
/// blocks, one and two loads per lane, an odd unroll, one warp and many, split-K, every
/// pipeline (`validate::DECODE_STAGES`).
fn decode_configs(nm: NmPattern, l: u32) -> Vec<KernelConfig> {
    let mut out = Vec::new();
    for layout in ALayout::ALL {
        for m_s in [1, 2, 4, 8] {
            for shape in [(32, 4, 3, 1), (64, 8, 4, 8), (128, 4, 8, 16)] {
                for (split_k, stages) in [(1, 1), (3, 1), (1, 2), (3, 2), (1, 3), (3, 3)] {
                    let base = KernelConfig::decode(layout, m_s, shape, nm, l);
                    out.push(KernelConfig {
                        split_k,
                        stages,
                        ..base
                    });
                }
            }
        }
    }
    out
}

/// Run `kernel` on a random (m, n, k) instance and return the relative error against the CPU.
fn error_of(gpu: &Gpu, kernel: &LoadedKernel, shape: (usize, usize, usize), seed: u64) -> f64 {
    let (got, want) = run_random(gpu, kernel, shape, seed);
    reference::relative_error(&got, &want)
}

/// Run `kernel` on the random (m, n, k) instance of `seed`: its C and the CPU reference's.
fn run_random(
    gpu: &Gpu,
    kernel: &LoadedKernel,
    (m, n, k): (usize, usize, usize),
    seed: u64,
) -> (Vec<f32>, Vec<f32>) {
    let cfg = &kernel.config;
    let mut rng = SmallRng::seed_from_u64(seed);
    let dense = random(k * n, &mut rng);
    let (weight, _) = format::prune_and_compress(&dense, k, n, cfg.nm, cfg.l as usize).unwrap();
    let a = random(m * k, &mut rng);
    let c0 = random(m * n, &mut rng);
    let (alpha, beta) = (1.25f32, -0.5f32);
    let mut want = c0.clone();
    reference::spmm(&a, m, &weight, alpha, beta, &mut want).unwrap();
    // The reference takes A row-major; a column-major kernel gets the same A transposed.
    let a_dev = match cfg.a_layout() {
        ALayout::RowMajor => a,
        ALayout::ColMajor => (0..m * k).map(|e| a[(e % m) * k + e / m]).collect(),
    };
    let got = launch(gpu, kernel, &weight, &a_dev, &c0, (m, n, k), alpha, beta);
    (got, want)
}

/// One (configuration, shape) pair: `kernel` on a random instance of `shape` against the CPU
/// reference. A failure is recorded, not raised, so that one run lists every failing pair.
fn check_pair(
    gpu: &Gpu,
    kernel: &LoadedKernel,
    shape: (usize, usize, usize),
    seed: u64,
    failures: &mut Vec<String>,
) {
    let err = error_of(gpu, kernel, shape, seed);
    if err.is_nan() || err >= BOUND {
        let name = kernel.config.name();
        failures.push(format!("{name} at {shape:?}: rel error {err:.3e}"));
    }
}

#[allow(clippy::too_many_arguments)]
fn launch(
    gpu: &Gpu,
    kernel: &LoadedKernel,
    weight: &CompressedWeight,
    a: &[f32],
    c0: &[f32],
    shape: (usize, usize, usize),
    alpha: f32,
    beta: f32,
) -> Vec<f32> {
    let cfg = kernel.config;
    let (indices, columns, counts) = if cfg.packing {
        let info = format::build_col_info(weight, cfg.k_s as usize, cfg.n_s as usize).unwrap();
        (info.packed_indices, info.columns, info.counts)
    } else {
        (weight.indices_i32(), vec![0], vec![0])
    };
    let a_dev = gpu.upload(a).unwrap();
    let b_dev = gpu.upload(&weight.values).unwrap();
    let d_dev = gpu.upload(&indices).unwrap();
    // The element-wise family reads the stored u8 positions as they are.
    let d_bytes = gpu.upload(&weight.indices).unwrap();
    let cols_dev = gpu.upload(&columns).unwrap();
    let counts_dev = gpu.upload(&counts).unwrap();
    let indices = if cfg.reads_byte_indices() {
        IndexOperand::Bytes(&d_bytes)
    } else {
        IndexOperand::Wide {
            d: &d_dev,
            col_info: &cols_dev,
            col_count: &counts_dev,
        }
    };
    let mut c_dev = gpu.upload(c0).unwrap();
    let mut ws = Workspace::for_launch(&gpu.stream, kernel, shape).unwrap();
    let bufs = LaunchBuffers {
        a: &a_dev,
        b_values: &b_dev,
        indices,
        c: &mut c_dev,
        workspace: &mut ws,
    };
    kernel.launch(gpu, bufs, shape, alpha, beta).unwrap();
    gpu.synchronize().unwrap();
    gpu.download(&c_dev).unwrap()
}

/// The kernel `build_all` made for `cfg`, loaded; a build failure is recorded in `failures`.
fn load_built(
    gpu: &Gpu,
    cfg: &KernelConfig,
    built: &std::collections::HashMap<String, BuildResult>,
    failures: &mut Vec<String>,
) -> Option<LoadedKernel> {
    match &built[&compile_key(cfg).name()] {
        Ok(b) => Some(LoadedKernel::load(gpu, *cfg, &b.source, &b.compiled.cubin).unwrap()),
        Err(e) => {
            failures.push(format!("{}: build failed: {e}", cfg.name()));
            None
        }
    }
}

const BOUND: f64 = 1e-5;

/// Stream-K workers of the tests' kernels (the GPU would hold far more than their few tiles).
const STREAM_WORKERS: usize = 3;

#[test]
fn every_template_family_matches_the_cpu_reference() {
    let Some(gpu) = gpu_or_skip() else { return };
    let patterns = [
        (1, 4, 4),
        (2, 4, 8),
        (4, 32, 32),
        (8, 32, 32),
        (16, 32, 32),
        (32, 32, 32),
        (4, 8, 16),
    ];
    let mut configs = Vec::new();
    for (n, m, l) in patterns {
        let nm = NmPattern::new(n, m).unwrap();
        for a_copy in ACopy::ALL {
            for packing in [false, true] {
                for stages in [2, 3, 4] {
                    for split_k in [1, 3, 4] {
                        for shape in [Shape::Medium, Shape::Large, Shape::Wide] {
                            let cfg = config(nm, l, a_copy, packing, stages, split_k, shape);
                            // Row-chunk variants of the rings of two and three stages.
                            let chunks: &[u32] = if stages < 4 { &[0, 4, 8] } else { &[0] };
                            for &row_chunk in chunks {
                                let cfg = KernelConfig { row_chunk, ..cfg };
                                if validate::validate(&cfg, gpu.profile()).is_ok() {
                                    configs.push(cfg);
                                }
                            }
                            // The stream-K schedule of one ring and block shape per path.
                            let stream = KernelConfig {
                                stream_k: true,
                                tma: false,
                                dtype: Dtype::F32,
                                ..cfg
                            };
                            let sampled = stages == 2 && matches!(shape, Shape::Medium);
                            if sampled && validate::validate(&stream, gpu.profile()).is_ok() {
                                configs.push(stream);
                            }
                        }
                    }
                }
            }
        }
        for cfg in decode_configs(nm, l) {
            if validate::validate(&cfg, gpu.profile()).is_ok() {
                configs.push(cfg);
            }
        }
    }
    let cache = std::env::temp_dir().join("nmtune-gpu-test-cache");
    let built = build_all(&configs, &gpu.profile().arch(), &cache);
    let mut failures = Vec::new();
    let mut checked = 0;
    for cfg in &configs {
        let Some(mut kernel) = load_built(&gpu, cfg, &built, &mut failures) else {
            continue;
        };
        // Three stream-K workers: the shapes below then have tiles split at a worker's start
        // and at its end, beside whole tiles and data-parallel blocks.
        kernel.set_stream_workers(STREAM_WORKERS);
        // m off the tile (a multiple of 4 where a column-major A is copied, as the
        // transposing path's copy is), k off k_s, n off n_s.
        let m_off = match cfg.a_layout() {
            ALayout::RowMajor if !cfg.a_copy.transposes_a() => 1,
            _ => 4,
        };
        // Decode kernels: a single row, a few, and more rows than one block row holds.
        let shapes: [(usize, usize, usize); 3] = if cfg.a_copy.is_direct() {
            let few = if m_off == 1 { 3 } else { 8 };
            [(m_off, 128, 96), (few, 256, 256), (36 + m_off, 192, 320)]
        } else {
            [
                (36 + m_off, 128, 96),
                (100, 256, 256),
                (128 + m_off, 192, 320),
            ]
        };
        for (i, shape) in shapes.iter().enumerate() {
            let k = shape.2.div_ceil(cfg.nm.m as usize) * cfg.nm.m as usize;
            let n_cols = shape.1.div_ceil(cfg.l as usize) * cfg.l as usize;
            check_pair(&gpu, &kernel, (shape.0, n_cols, k), i as u64, &mut failures);
            checked += 1;
        }
    }
    eprintln!(
        "GPU correctness: {} configurations, {checked} (config, shape) pairs checked, {} failed",
        configs.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Large-m winners of the committed databases (before tensor copies), whose twins with tensor
/// copies the test below runs too: 128×256 tiles and the other shapes the tuner keeps.
const TMA_WINNERS: [&str; 6] = [
    "nm_spmm_f32_acol16_ms128_ns256_ks64_mt16_nt8_w8x4_n12m32l32_nopack_cp2_mb1_sk1_tma",
    "nm_spmm_f32_acol16_ms128_ns256_ks32_mt8_nt16_w16x2_n16m32l32_nopack_cp3_mb1_sk1_tma",
    "nm_spmm_f32_atrans_ms128_ns256_ks64_mt16_nt8_w8x4_n8m32l32_nopack_cp3_mb1_sk2_tma",
    "nm_spmm_f32_acol16_ms64_ns128_ks64_mt8_nt8_w8x4_n12m32l32_nopack_cp2_mb3_sk3_tma",
    "nm_spmm_f32_atrans_ms64_ns128_ks32_mt8_nt8_w8x4_n16m32l32_nopack_cp2_mb1_sk1_rc8_tma",
    "nm_spmm_f32_acol16_ms128_ns256_ks32_mt16_nt8_w8x4_n12m32l32_nopack_cp3_mb1_sk1_tma",
];

/// Stream-K workers of the tensor-copy test's kernels.
const TMA_STREAM_WORKERS: usize = 2;

/// Kernels whose interior tiles arrive by tensor copies (`tma`; sm_90 and later), against
/// the CPU reference on random data: the column-major and transposing paths of five patterns
/// at every ring depth, split-K 1 and 3, the stream-K schedule, row chunks, and
/// [`TMA_WINNERS`], each at a shape of
/// interior tiles only (its last row of tiles slid back inside C), one whose k leaves a
/// partial k-tile (every block on the cp.async path) and a small one.
#[test]
fn the_tensor_copies_match_the_cpu_reference() {
    let Some(gpu) = gpu_or_skip() else { return };
    if gpu.profile().compute_capability < (9, 0) {
        eprintln!("SKIPPED: tensor copies need sm_90");
        return;
    }
    let mut configs = Vec::new();
    for (n, m) in [(4, 32), (8, 32), (12, 32), (16, 32), (32, 32)] {
        let nm = NmPattern::new(n, m).unwrap();
        for a_copy in [ACopy::Col16, ACopy::Transposed] {
            for shape in [Shape::Medium, Shape::Large, Shape::Wide] {
                for (stages, split_k) in [(2, 1), (3, 1), (3, 3), (4, 1)] {
                    for row_chunk in [0, 4] {
                        let cfg = KernelConfig {
                            row_chunk,
                            tma: true,
                            ..config(nm, 32, a_copy, false, stages, split_k, shape)
                        };
                        if validate::validate(&cfg, gpu.profile()).is_ok() {
                            configs.push(cfg);
                        }
                        // The stream-K schedule of the unsplit ones (its own template).
                        let stream = KernelConfig {
                            stream_k: true,
                            ..cfg
                        };
                        if validate::validate(&stream, gpu.profile()).is_ok() {
                            configs.push(stream);
                        }
                    }
                }
            }
        }
    }
    configs.extend(
        TMA_WINNERS
            .iter()
            .map(|name| KernelConfig::parse_name(name).unwrap()),
    );
    assert!(configs.len() >= 40, "{} configurations", configs.len());
    let cache = std::env::temp_dir().join("nmtune-gpu-test-cache");
    let built = build_all(&configs, &gpu.profile().arch(), &cache);
    let mut failures = Vec::new();
    let mut checked = 0;
    for cfg in &configs {
        let Some(mut kernel) = load_built(&gpu, cfg, &built, &mut failures) else {
            continue;
        };
        // Two stream-K workers: at the first shape a worker then runs a split tile and a
        // whole one, so its tensor-copy barriers serve two segments.
        kernel.set_stream_workers(TMA_STREAM_WORKERS);
        let window = cfg.k_s as usize;
        let shapes = [
            (300, 3 * cfg.n_s as usize, 10 * window),
            (300, 3 * cfg.n_s as usize, 10 * window - cfg.nm.m as usize),
            (40, 128, 96),
        ];
        for (i, &(m, n, k)) in shapes.iter().enumerate() {
            let k = k.div_ceil(cfg.nm.m as usize) * cfg.nm.m as usize;
            let n = n.div_ceil(cfg.l as usize) * cfg.l as usize;
            check_pair(&gpu, &kernel, (m, n, k), i as u64, &mut failures);
            checked += 1;
        }
        if cfg.stream_k_splits_tiles_many_ways() {
            // More workers than tiles: every tile split among four or five of them, shares
            // of two or three k-tiles, some inside one tile, some across two.
            let (m, n, k) = shapes[0];
            let k = k.div_ceil(cfg.nm.m as usize) * cfg.nm.m as usize;
            let n = n.div_ceil(cfg.l as usize) * cfg.l as usize;
            kernel.set_stream_workers(4 * cfg.tiles(m, n) + 1);
            check_pair(&gpu, &kernel, (m, n, k), 7, &mut failures);
            checked += 1;
        }
    }
    eprintln!(
        "tensor copies: {} configurations, {checked} pairs checked, {} failed",
        configs.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Splits of k summed in a cluster (`cluster_sum`; sm_90 and later) against the CPU
/// reference on random data, and against their workspace twins bit for bit (the same
/// additions in the same order): every A path, packing, tensor copies, row chunks, ring
/// depths 2 and 3, every split from 2 to 8 (at 8, slices without a k-tile), a tile whose
/// sums need two passes through the ring, at shapes of interior tiles (the last row slid
/// back), a partial k-tile and a small ragged one.
#[test]
fn the_cluster_sums_match_the_cpu_reference_and_the_workspace_split() {
    let Some(gpu) = gpu_or_skip() else { return };
    if gpu.profile().compute_capability < (9, 0) {
        eprintln!("SKIPPED: clusters need sm_90");
        return;
    }
    let mut configs = Vec::new();
    for (n, m) in [(4, 32), (12, 32), (16, 32)] {
        let nm = NmPattern::new(n, m).unwrap();
        for a_copy in [
            ACopy::Col16,
            ACopy::Transposed,
            ACopy::Row4,
            ACopy::Row16,
            ACopy::RowK,
        ] {
            for (shape, packing) in [(Shape::Medium, false), (Shape::Large, true)] {
                for (stages, split_k, tma, row_chunk) in [
                    (2, 2, false, 0),
                    (3, 3, true, 0),
                    (2, 8, true, 4),
                    (3, 4, false, 0),
                ] {
                    let cfg = KernelConfig {
                        tma,
                        row_chunk,
                        cluster_sum: true,
                        ..config(nm, 32, a_copy, packing, stages, split_k, shape)
                    };
                    if validate::validate(&cfg, gpu.profile()).is_ok() {
                        configs.push(cfg);
                    }
                }
            }
        }
    }
    configs.extend(CLUSTER_SUM_WINNERS.iter().map(|name| {
        KernelConfig::parse_name(name).unwrap_or_else(|| panic!("{name} is no kernel name"))
    }));
    assert!(
        configs
            .iter()
            .any(|c| validate::cluster_sum_passes(c).unwrap() > 1),
        "no tile of two passes"
    );
    assert!(configs.len() >= 30, "{} configurations", configs.len());
    let twins: Vec<KernelConfig> = configs
        .iter()
        .map(|c| KernelConfig {
            cluster_sum: false,
            ..*c
        })
        .collect();
    let all: Vec<KernelConfig> = configs.iter().chain(&twins).copied().collect();
    let cache = std::env::temp_dir().join("nmtune-gpu-test-cache");
    let built = build_all(&all, &gpu.profile().arch(), &cache);
    let mut failures = Vec::new();
    let mut checked = 0;
    for (cfg, twin) in configs.iter().zip(&twins) {
        let (Some(kernel), Some(twin)) = (
            load_built(&gpu, cfg, &built, &mut failures),
            load_built(&gpu, twin, &built, &mut failures),
        ) else {
            continue;
        };
        let window = cfg.k_s as usize;
        let shapes = [
            (300, 3 * cfg.n_s as usize, 10 * window),
            (300, 2 * cfg.n_s as usize, 10 * window - cfg.nm.m as usize),
            (40, 96, 96),
        ];
        for (i, &(m, n, k)) in shapes.iter().enumerate() {
            let k = k.div_ceil(cfg.nm.m as usize) * cfg.nm.m as usize;
            let n = n.div_ceil(cfg.l as usize) * cfg.l as usize;
            let (got, want) = run_random(&gpu, &kernel, (m, n, k), i as u64);
            let err = reference::relative_error(&got, &want);
            if err.is_nan() || err >= BOUND {
                failures.push(format!("{cfg} at {:?}: rel error {err:.3e}", (m, n, k)));
            }
            let (split, _) = run_random(&gpu, &twin, (m, n, k), i as u64);
            if got
                .iter()
                .zip(&split)
                .any(|(a, b)| a.to_bits() != b.to_bits())
            {
                failures.push(format!(
                    "{cfg} at {:?}: differs from its workspace twin",
                    (m, n, k)
                ));
            }
            checked += 1;
        }
    }
    eprintln!(
        "cluster sums: {} configurations, {checked} shapes checked, {} failed",
        configs.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Split winners of the committed H200 database at m = 256 as cluster sums: 128×256 tiles of
/// 16×8 thread tiles (sums in two passes), eight-way and six-way splits.
const CLUSTER_SUM_WINNERS: [&str; 4] = [
    "nm_spmm_f32_acol16_ms128_ns256_ks32_mt16_nt8_w8x4_n12m32l32_nopack_cp3_mb1_sk8_tma_clsum",
    "nm_spmm_f32_acol16_ms64_ns128_ks32_mt8_nt8_w8x4_n12m32l32_nopack_cp2_mb1_sk6_clsum",
    "nm_spmm_f32_acol16_ms64_ns128_ks64_mt8_nt8_w8x4_n8m32l32_nopack_cp2_mb2_sk3_rc8_tma_clsum",
    "nm_spmm_f32_atrans_ms128_ns256_ks64_mt16_nt8_w8x4_n8m32l32_nopack_cp3_mb1_sk2_tma_clsum",
];

/// Element-wise block shapes: both lane heights, every warp width, one to eight warps, one,
/// two and four windows per stage, every ring depth, min_blocks 2.
const EW_SHAPES: [EwShape; 8] = [
    EwShape::new(4, 16, 4, 1, 3, 1),
    EwShape::new(4, 16, 4, 2, 2, 1),
    EwShape::new(8, 16, 4, 1, 2, 1),
    EwShape::new(4, 8, 8, 1, 3, 1),
    EwShape::new(8, 8, 2, 4, 4, 1),
    EwShape::new(4, 4, 1, 2, 2, 1),
    EwShape::new(8, 4, 2, 1, 3, 2),
    EwShape::new(4, 8, 2, 4, 2, 2),
];

/// The element-wise families (L = 1, u8 indices: `ewcol`, `ewtrans` and the decode family's
/// `ewdrow`, `ewdcol`) against the CPU reference on random data: each block shape of
/// [`EW_SHAPES`] at five patterns (dense included), split-K 1, 3 and 4, at m and n off the
/// block tile (any m for row-major A, a multiple of 4 for column-major), k with a partial
/// last stage, a single row, and one shape of whole tiles (the unpredicated path); the
/// decode family's shapes of [`decode_configs`] at one row, a few and 16.
#[test]
fn the_element_wise_family_matches_the_cpu_reference() {
    let Some(gpu) = gpu_or_skip() else { return };
    let mut configs = Vec::new();
    for (n, m) in [(1, 8), (4, 32), (8, 32), (16, 32), (4, 4)] {
        let nm = NmPattern::new(n, m).unwrap();
        for layout in ALayout::ALL {
            for shape in EW_SHAPES {
                for split_k in [1, 3, 4] {
                    let base = KernelConfig::element_wise(layout, shape, nm);
                    let cfg = KernelConfig { split_k, ..base };
                    if validate::validate(&cfg, gpu.profile()).is_ok() {
                        configs.push(cfg);
                    }
                }
            }
        }
        // Each element-wise decode configuration with A gathered both ways (`__ldca` and, where
        // M = 32, warp shuffles).
        for cfg in decode_configs(nm, 1) {
            let twin = cfg
                .a_copy
                .gather_twin()
                .map(|a_copy| KernelConfig { a_copy, ..cfg });
            for c in std::iter::once(cfg).chain(twin) {
                if validate::validate(&c, gpu.profile()).is_ok() {
                    configs.push(c);
                }
            }
        }
    }
    // Shuffle paths whose warp steps touch two pruning windows (8 rows a step at 4:32, and
    // 12:32, whose windows straddle steps).
    for (n, layout, m_s) in [4, 12]
        .into_iter()
        .flat_map(|n| ALayout::ALL.map(|layout| (n, layout)))
        .flat_map(|(n, layout)| [1, 2, 4].map(|m_s| (n, layout, m_s)))
    {
        for (split_k, stages) in [(1, 1), (3, 2), (1, 3)] {
            let base = KernelConfig::decode(
                layout,
                m_s,
                (32, 8, 4, 4),
                NmPattern::new(n, 32).unwrap(),
                1,
            );
            let cfg = KernelConfig {
                a_copy: base.a_copy.gather_twin().unwrap(),
                split_k,
                stages,
                ..base
            };
            assert_eq!(validate::shuffle_step_windows(&cfg), 2, "{cfg}");
            validate::validate(&cfg, gpu.profile()).unwrap();
            configs.push(cfg);
        }
    }
    let cache = std::env::temp_dir().join("nmtune-gpu-test-cache");
    let built = build_all(&configs, &gpu.profile().arch(), &cache);
    let (mut failures, mut checked) = (Vec::new(), 0);
    for cfg in &configs {
        let Some(kernel) = load_built(&gpu, cfg, &built, &mut failures) else {
            continue;
        };
        let row = cfg.a_layout() == ALayout::RowMajor;
        let window = cfg.nm.m as usize;
        // (m, n, k in windows): one row; ragged m and n with an odd number of windows; whole
        // tiles of every block shape with k a multiple of four windows. The decode family:
        // one row, a few, and the most it serves.
        let shapes = if cfg.a_copy.is_direct() {
            [
                (if row { 1 } else { 4 }, 68, 3),
                (if row { 3 } else { 8 }, 196, 11),
                (16, 256, 8),
            ]
        } else {
            [
                (if row { 1 } else { 4 }, 68, 3),
                (if row { 301 } else { 300 }, 196, 11),
                (512, 256, 8),
            ]
        };
        for (i, (m, n, windows)) in shapes.into_iter().enumerate() {
            let k = windows * window.max(8);
            let problem = nmtune::problem::Problem::new(m, n, k, cfg.nm, 1)
                .and_then(|p| p.with_layout(cfg.a_layout()))
                .unwrap();
            if validate::validate_for_problem(cfg, &problem).is_err() {
                continue; // split-K above the stages of a short k
            }
            check_pair(&gpu, &kernel, (m, n, k), 100 + i as u64, &mut failures);
            checked += 1;
        }
    }
    eprintln!(
        "element-wise GPU correctness: {} configurations, {checked} (config, shape) pairs checked, {} failed",
        configs.len(),
        failures.len()
    );
    assert!(checked > configs.len(), "too few pairs checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The decode families launch as programmatic dependents of the kernel before them (sm_90+)
/// and prefetch their weight before they wait for it: a chain of layers queued back to back,
/// each reading the previous one's output as its A, must still match the CPU reference layer
/// by layer. Square layers, row-major A (the output of one layer is the next one's row-major
/// A), both decode families, split-K 1 and 3 (the decode reduction lets the next layer launch
/// at its start), every pipeline (cp3 loads two steps before it waits). Every chain shares
/// one workspace, as a runtime layer's kernels do: tiled kernels that split k write their
/// partial sums into it, and a tiled stream-K kernel (5 workers: its schedule, not its
/// speed, at this size) must find its arrival counters zero and leave them so, six launches
/// in a row.
#[test]
fn layers_queued_back_to_back_read_each_previous_output() {
    let Some(gpu) = gpu_or_skip() else { return };
    const LAYERS: usize = 6;
    const WIDTH: usize = 1024;
    let mut configs = Vec::new();
    for (nm, l) in [((4, 32), 32), ((16, 32), 32), ((8, 32), 1)] {
        let nm = NmPattern::new(nm.0, nm.1).unwrap();
        for m_s in [1, 4] {
            for (split_k, stages) in [(1, 1), (3, 1), (1, 2), (3, 2), (1, 3), (3, 3)] {
                let base = KernelConfig::decode(ALayout::RowMajor, m_s, (64, 8, 4, 8), nm, l);
                configs.push(KernelConfig {
                    split_k,
                    stages,
                    ..base
                });
            }
        }
        if l == 32 {
            for (split_k, shape) in [(3, Shape::Medium), (2, Shape::Large), (4, Shape::Medium)] {
                configs.push(config(nm, l, ACopy::Row4, false, 2, split_k, shape));
            }
            configs.push(KernelConfig {
                stream_k: true,
                tma: false,
                dtype: Dtype::F32,
                ..config(nm, l, ACopy::Row4, false, 2, 1, Shape::Medium)
            });
        }
    }
    let cache = std::env::temp_dir().join("nmtune-gpu-test-cache");
    let built = build_all(&configs, &gpu.profile().arch(), &cache);
    let mut failures = Vec::new();
    let mut ws = Workspace::new(&gpu.stream, 0, 0).unwrap();
    for (i, cfg) in configs.iter().enumerate() {
        let Some(mut kernel) = load_built(&gpu, cfg, &built, &mut failures) else {
            continue;
        };
        // 16 tiles of 32×64 over 5 workers: 10 data-parallel, 6 shared out.
        kernel.set_stream_workers(5);
        let m = 3;
        let mut rng = SmallRng::seed_from_u64(200 + i as u64);
        let weights: Vec<CompressedWeight> = (0..LAYERS)
            .map(|_| {
                let dense = random(WIDTH * WIDTH, &mut rng);
                format::prune_and_compress(&dense, WIDTH, WIDTH, cfg.nm, cfg.l as usize)
                    .unwrap()
                    .0
            })
            .collect();
        // alpha = 1/sqrt(w) keeps every layer's output of order one.
        let alpha = 1.0 / (weights[0].values.len() as f32 / WIDTH as f32).sqrt();
        let mut want = vec![random(m * WIDTH, &mut rng)];
        for w in &weights {
            let mut next = vec![0.0f32; m * WIDTH];
            reference::spmm(want.last().unwrap(), m, w, alpha, 0.0, &mut next).unwrap();
            want.push(next);
        }
        let values: Vec<_> = weights
            .iter()
            .map(|w| gpu.upload(&w.values).unwrap())
            .collect();
        let wide: Vec<_> = weights
            .iter()
            .map(|w| gpu.upload(&w.indices_i32()).unwrap())
            .collect();
        let bytes: Vec<_> = weights
            .iter()
            .map(|w| gpu.upload(&w.indices).unwrap())
            .collect();
        let mut acts: Vec<_> = (0..=LAYERS)
            .map(|j| match j {
                0 => gpu.upload(&want[0]).unwrap(),
                _ => gpu.upload(&vec![f32::NAN; m * WIDTH]).unwrap(),
            })
            .collect();
        let shape = (m, WIDTH, WIDTH);
        gpu.synchronize().unwrap();
        ws.grow_for(&gpu.stream, &kernel, shape).unwrap();
        for layer in 0..LAYERS {
            let (done, rest) = acts.split_at_mut(layer + 1);
            let indices = if cfg.reads_byte_indices() {
                IndexOperand::Bytes(&bytes[layer])
            } else {
                IndexOperand::plain(&wide[layer])
            };
            let bufs = LaunchBuffers {
                a: &done[layer],
                b_values: &values[layer],
                indices,
                c: &mut rest[0],
                workspace: &mut ws,
            };
            kernel.launch(&gpu, bufs, shape, alpha, 0.0).unwrap();
        }
        gpu.synchronize().unwrap();
        for layer in 1..=LAYERS {
            let got = gpu.download(&acts[layer]).unwrap();
            let err = reference::relative_error(&got, &want[layer]);
            if err.is_nan() || err >= BOUND {
                failures.push(format!("{} layer {layer}: rel error {err:.3e}", cfg.name()));
            }
        }
    }
    eprintln!(
        "layer chains: {} configurations × {LAYERS} layers, {} failed",
        configs.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
