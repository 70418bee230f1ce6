//! Behaviour of the codegen layer: validation, names, rendering, the compile cache, and (on a
//! machine with a CUDA GPU) the numerical results of rendered kernels against a CPU
//! reference on random data.

mod common;

use nmtune::codegen::nvrtc::{compile_cached_with_outcome, CacheOutcome};
use nmtune::codegen::validate::{shuffle_step_windows, validate_structure, CopyMaps};
use nmtune::codegen::{
    compile_key, compile_set, estimated_registers, family_checksum, kernel_checksum,
    nvrtc_available, render, search_space, templates_checksum, validate, validate_for_problem,
    ACopy, CodegenError, Family, KernelConfig, WarpLayout,
};
use nmtune::gpu::GpuProfile;
use nmtune::problem::{ALayout, Dtype, NmPattern, Problem};
use std::collections::HashSet;

fn h100() -> GpuProfile {
    GpuProfile::builtin("h100").unwrap()
}

fn nm(n: u32, m: u32) -> NmPattern {
    NmPattern::new(n, m).unwrap()
}

/// Table I "large" configuration of the paper at 75 % sparsity, row-major A.
fn base() -> KernelConfig {
    KernelConfig {
        a_copy: ACopy::Row4,
        m_s: 64,
        n_s: 128,
        k_s: 64,
        m_t: 8,
        n_t: 8,
        warp: WarpLayout::new(8, 4),
        nm: nm(8, 32),
        l: 32,
        packing: false,
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

fn reason_of(result: Result<(), CodegenError>) -> String {
    match result {
        Err(CodegenError::Rejected { reason, .. }) => reason,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn base_configuration_is_valid() {
    validate(&base(), &h100()).unwrap();
}

#[test]
fn each_broken_rule_is_rejected_with_its_reason() {
    let b = base();
    let cases: Vec<(KernelConfig, &str)> = vec![
        (
            KernelConfig {
                nm: NmPattern { n: 0, m: 32 },
                ..b
            },
            "N must be at least 1",
        ),
        (KernelConfig { l: 6, ..b }, "L=6 must be a multiple of 4"),
        (KernelConfig { l: 256, ..b }, "L=256"),
        (
            KernelConfig {
                nm: nm(32, 32),
                packing: true,
                k_s: 32,
                ..b
            },
            "packing needs N < M",
        ),
        (
            KernelConfig { m_s: 48, ..b },
            "m_s=48 must be a multiple of 32",
        ),
        (KernelConfig { n_s: 512, ..b }, "n_s=512"),
        (
            KernelConfig { k_s: 48, ..b },
            "k_s=48 must be a positive multiple of M=32",
        ),
        (KernelConfig { k_s: 512, ..b }, "k_s=512 exceeds 256"),
        (KernelConfig { m_t: 2, ..b }, "m_t=2 must be one of"),
        (KernelConfig { n_t: 32, ..b }, "n_t=32 must be one of"),
        (
            KernelConfig {
                warp: WarpLayout::new(4, 4),
                ..b
            },
            "must hold exactly 32 threads",
        ),
        (
            KernelConfig {
                m_s: 32,
                m_t: 8,
                warp: WarpLayout::new(8, 4),
                ..b
            },
            "warp tile height",
        ),
        (
            KernelConfig {
                n_s: 32,
                n_t: 8,
                warp: WarpLayout::new(4, 8),
                ..b
            },
            "warp tile width",
        ),
        (
            KernelConfig {
                m_s: 256,
                n_s: 256,
                m_t: 4,
                n_t: 4,
                ..b
            },
            "threads per block must be",
        ),
        (
            KernelConfig { l: 12, ..b },
            "n_s=128 and L=12 must divide one another",
        ),
        (
            KernelConfig {
                l: 24,
                n_s: 96,
                ..b
            },
            "warp tile width 4·n_t = 32 and L=24",
        ),
        (
            KernelConfig {
                a_copy: ACopy::Row16,
                packing: true,
                ..b
            },
            "arow16 path copies whole k_s windows",
        ),
        (
            KernelConfig { min_blocks: 5, ..b },
            "min_blocks=5 must be between 1 and 4",
        ),
        (
            KernelConfig {
                min_blocks: 4,
                m_t: 16,
                m_s: 128,
                ..b
            },
            "min_blocks=4 blocks of",
        ),
        (
            KernelConfig {
                nm: nm(32, 32),
                k_s: 128,
                ..b
            },
            "FMAs per fully unrolled tile",
        ),
        (
            KernelConfig {
                l: 48,
                n_t: 16,
                n_s: 64,
                warp: WarpLayout::new(8, 4),
                ..b
            },
            "n_s=64 and L=48",
        ),
        (KernelConfig { stages: 5, ..b }, "2 to 4 stages"),
        (KernelConfig { stages: 1, ..b }, "2 to 4 stages"),
        (KernelConfig { split_k: 5, ..b }, "split_k=5 must be one of"),
        (
            KernelConfig {
                nm: nm(2, 4),
                l: 4,
                k_s: 16,
                m_t: 16,
                n_t: 16,
                m_s: 64,
                n_s: 128,
                warp: WarpLayout::new(4, 8),
                packing: true,
                stages: 2,
                ..b
            },
            "registers per thread",
        ),
        // base() is 8:32 with k_s = 64: w_s = 16.
        (
            KernelConfig { row_chunk: 2, ..b },
            "row_chunk 2 is not 0 or one of",
        ),
        (
            KernelConfig { row_chunk: 16, ..b },
            "row_chunk 16 is not 0 or one of",
        ),
        (
            KernelConfig {
                row_chunk: 8,
                stream_k: false,
                tma: false,
                dtype: Dtype::F32,
                k_s: 32,
                ..b
            },
            "row_chunk 8 must divide w_s = 8",
        ),
        (
            KernelConfig {
                row_chunk: 4,
                stream_k: false,
                tma: false,
                dtype: Dtype::F32,
                nm: nm(32, 32),
                k_s: 32,
                ..b
            },
            "a dense kernel unrolls its tiles whole",
        ),
        (
            KernelConfig {
                row_chunk: 4,
                stream_k: false,
                tma: false,
                dtype: Dtype::F32,
                a_copy: ACopy::Row16,
                ..b
            },
            "row16 path loads A at a fixed row",
        ),
    ];
    for (cfg, expected) in cases {
        let reason = reason_of(validate(&cfg, &h100()));
        assert!(
            reason.contains(expected),
            "{}: reason '{reason}' does not mention '{expected}'",
            cfg.name()
        );
    }
}

#[test]
fn problem_rules_tie_a_configuration_to_its_problem() {
    let cfg = KernelConfig {
        split_k: 4,
        ..base()
    };
    let fits = Problem::new(100, 256, 256, nm(8, 32), 32).unwrap();
    validate_for_problem(&cfg, &fits).unwrap();

    let other_pattern = Problem::new(100, 256, 256, nm(16, 32), 32).unwrap();
    assert!(reason_of(validate_for_problem(&cfg, &other_pattern)).contains("pattern 8:32"));
    let other_l = Problem::new(100, 256, 256, nm(8, 32), 64).unwrap();
    assert!(reason_of(validate_for_problem(&cfg, &other_l)).contains("L=32"));
    let col_major = fits.with_layout(ALayout::ColMajor).unwrap();
    assert!(reason_of(validate_for_problem(&cfg, &col_major)).contains("row-major A"));
    let col_cfg = KernelConfig {
        a_copy: ACopy::Col16,
        ..cfg
    };
    validate_for_problem(&col_cfg, &col_major).unwrap();
    // The 16-byte row path needs k to be a multiple of 4.
    let row16 = KernelConfig {
        a_copy: ACopy::Row16,
        k_s: 12,
        nm: nm(3, 6),
        ..cfg
    };
    let odd_k = Problem::new(100, 256, 258, nm(3, 6), 32).unwrap();
    assert!(reason_of(validate_for_problem(&row16, &odd_k)).contains("k=258"));
    // k = 192 with k_s = 64: three k-tiles, fewer than split_k = 4.
    let short_k = Problem::new(100, 256, 192, nm(8, 32), 32).unwrap();
    assert!(
        reason_of(validate_for_problem(&cfg, &short_k)).contains("split_k=4 exceeds the 3 k-tiles")
    );
    let tall = Problem::new(64 * 70_000, 256, 32, nm(8, 32), 32).unwrap();
    assert!(reason_of(validate_for_problem(&base(), &tall)).contains("65535"));
}

#[test]
fn estimated_registers_grow_with_the_thread_tile_indices_and_staging() {
    let small = KernelConfig {
        m_t: 4,
        n_t: 4,
        m_s: 32,
        n_s: 32,
        warp: WarpLayout::new(4, 8),
        ..base()
    };
    let large = KernelConfig {
        m_t: 16,
        n_t: 8,
        m_s: 128,
        n_s: 128,
        ..base()
    };
    assert!(estimated_registers(&small) < estimated_registers(&base()));
    assert!(estimated_registers(&base()) < estimated_registers(&large));
    // One register per row index: twice the rows, w_s more registers.
    let longer = KernelConfig { k_s: 128, ..base() };
    assert_eq!(
        estimated_registers(&longer) - estimated_registers(&base()),
        base().w_s()
    );
    // The 16-byte row path holds its 4×4 blocks in registers.
    let staged = KernelConfig {
        a_copy: ACopy::Row16,
        ..base()
    };
    assert_eq!(
        estimated_registers(&staged) - estimated_registers(&base()),
        16 * CopyMaps::of(&staged).a_units
    );
}

#[test]
fn copy_maps_cover_the_tiles() {
    for layout in ALayout::ALL {
        let tiled = compile_set(nm(2, 4), 8, layout, &h100())
            .into_iter()
            .filter(|cfg| !cfg.a_copy.is_direct());
        for cfg in tiled.step_by(37) {
            let cfg = &cfg;
            let maps = CopyMaps::of(cfg);
            let threads = cfg.threads();
            // Every element is covered: copies × threads × elements per copy ≥ elements.
            let a_per_unit = match cfg.a_copy {
                ACopy::Col16 | ACopy::Transposed | ACopy::EwCol | ACopy::EwTrans => 4,
                ACopy::Row4 => 1,
                ACopy::Row16 => 16,
                ACopy::RowK => 4,
                ACopy::DirectRow
                | ACopy::DirectCol
                | ACopy::EwDirectRow
                | ACopy::EwDirectCol
                | ACopy::EwShuffleRow
                | ACopy::EwShuffleCol
                | ACopy::Wgmma
                | ACopy::WgmmaTrans => unreachable!("not in the FP32 compile set"),
            };
            // The A tile holds m_s rows of A's k-tile (`RowK`) or a_rows columns of it.
            let a_elements = if cfg.a_copy.keeps_rows() {
                cfg.m_s * cfg.k_s
            } else {
                cfg.m_s * cfg.a_rows()
            };
            assert!(maps.a_units * threads * a_per_unit >= a_elements, "{cfg}");
            assert!(maps.b_vecs * threads >= cfg.w_s() * cfg.n_s / 4, "{cfg}");
            assert!(maps.d_elems * threads >= cfg.w_s() * cfg.q_s(), "{cfg}");
        }
    }
}

#[test]
fn search_space_is_valid_unique_and_named_uniquely() {
    let gpu = h100();
    for (n, m, l, layout) in [
        (8, 32, 32, ALayout::RowMajor),
        (8, 32, 32, ALayout::ColMajor),
        (2, 4, 4, ALayout::RowMajor),
        (32, 32, 32, ALayout::ColMajor),
    ] {
        let space = search_space(nm(n, m), l, layout, &gpu);
        assert!(
            space.len() > 1000,
            "{n}:{m} L={l}: only {} configurations",
            space.len()
        );
        let names: HashSet<String> = space.iter().map(KernelConfig::name).collect();
        assert_eq!(names.len(), space.len(), "duplicate names");
        for cfg in &space {
            validate(cfg, &gpu).unwrap();
            assert_eq!(KernelConfig::parse_name(&cfg.name()), Some(*cfg));
            assert!(!(cfg.packing && n == m), "packing in a dense space");
            assert_eq!(cfg.a_layout(), layout);
        }
        for stages in 2..=4 {
            assert!(
                space.iter().any(|c| c.stages == stages),
                "{stages} stages missing"
            );
        }
        // (The element-wise families run L = 1 only: tests/element_wise.rs; the tensor-core
        // family BF16 and FP16 only: src/codegen/tc.rs.)
        let fp32_vector_wise =
            |c: &ACopy| !c.family().reads_byte_indices() && c.family() != Family::Tc;
        for a_copy in ACopy::for_layout(layout).filter(fp32_vector_wise) {
            assert!(
                space.iter().any(|c| c.a_copy == a_copy),
                "{a_copy:?} missing"
            );
        }
        for min_blocks in 1..=3 {
            assert!(
                space.iter().any(|c| c.min_blocks == min_blocks),
                "min_blocks {min_blocks} missing"
            );
        }
        for split_k in [1, 2, 4, 8] {
            assert!(
                space.iter().any(|c| c.split_k == split_k),
                "split_k {split_k} missing"
            );
        }

        let kernels = compile_set(nm(n, m), l, layout, &gpu);
        assert!(kernels.iter().all(|c| c.split_k == 1));
        assert_eq!(
            kernels.len(),
            space.iter().map(compile_key).collect::<HashSet<_>>().len()
        );
        let symbols: HashSet<String> = kernels.iter().map(|c| render(c).unwrap().name).collect();
        assert_eq!(symbols.len(), kernels.len(), "kernel symbols collide");
    }
}

#[test]
fn rendered_source_names_its_entry_points_and_constants() {
    let cfg = KernelConfig {
        split_k: 2,
        packing: true,
        ..base()
    };
    let src = render(&cfg).unwrap();
    assert_eq!(src.name, compile_key(&cfg).name());
    assert_eq!(src.reduce_name, Some(format!("{}_reduce", src.name)));
    assert!(src.source.contains(&format!(
        "void __launch_bounds__(nmk::THREADS, nmk::MIN_BLOCKS)\n{}(",
        src.name
    )));
    assert!(src.source.contains(&format!("{}_reduce(", src.name)));
    for constant in [
        "constexpr int MS = 64;",
        "constexpr int NS = 128;",
        "constexpr int KS = 64;",
        "constexpr int WS = 16;",
        "constexpr int QS = 4;",
        "constexpr int NN = 8;",
        "constexpr int MM = 32;",
        "constexpr bool PACKING = true;",
        "constexpr int THREADS = 128;",
        "constexpr int A_STRIDE = 68;",
        "constexpr int A_ROWS = 64;",
        "constexpr int A_COPY = 1;",
        "constexpr int MIN_BLOCKS = 1;",
    ] {
        assert!(src.source.contains(constant), "missing {constant}");
    }
    assert!(src.source.contains(family_checksum(cfg.family())));
    // Rendering is deterministic.
    assert_eq!(render(&cfg).unwrap(), src);
}

#[test]
fn render_refuses_structurally_invalid_configurations() {
    let err = render(&KernelConfig { m_s: 48, ..base() }).unwrap_err();
    assert!(matches!(err, CodegenError::Rejected { .. }), "{err}");
}

#[test]
fn stream_k_configurations_are_named_rendered_and_kept_apart() {
    let dp = base();
    let sk = KernelConfig {
        stream_k: true,
        tma: false,
        dtype: Dtype::F32,
        ..dp
    };
    assert!(sk.name().ends_with("_sk1_streamk"), "{}", sk.name());
    assert_eq!(KernelConfig::parse_name(&sk.name()), Some(sk));
    assert_eq!(KernelConfig::parse_name(&dp.name()), Some(dp));
    let chunked = KernelConfig { row_chunk: 4, ..sk };
    assert!(chunked.name().ends_with("_sk1_rc4_streamk"));
    assert_eq!(KernelConfig::parse_name(&chunked.name()), Some(chunked));
    validate(&sk, &h100()).unwrap();
    assert!(
        reason_of(validate_structure(&KernelConfig { split_k: 3, ..sk }))
            .contains("split_k must be 1")
    );
    let decode_sk = KernelConfig {
        stream_k: true,
        tma: false,
        dtype: Dtype::F32,
        ..decode(4, ACopy::DirectRow)
    };
    assert!(
        reason_of(validate_structure(&decode_sk)).contains("tiled and tensor-core families only")
    );
    // Its module: the data-parallel kernel and the reduction as before, and the stream-K
    // entry, which launches start.
    let src = render(&sk).unwrap();
    let base_name = compile_key(&sk).name();
    assert_eq!(src.name, format!("{base_name}_stream"));
    for symbol in [&src.name, &base_name, &format!("{base_name}_reduce")] {
        assert!(src.source.contains(&format!("\n{symbol}(")), "{symbol}");
    }
    // Adding the schedule leaves the data-parallel kernels' rows current.
    assert_eq!(kernel_checksum(&dp), family_checksum(Family::Tiled));
    assert_ne!(kernel_checksum(&sk), kernel_checksum(&dp));
    let problem = |m| Problem::new(m, 4096, 4096, nm(8, 32), 32).unwrap();
    validate_for_problem(&sk, &problem(256)).unwrap();
    assert!(reason_of(validate_for_problem(&sk, &problem(8))).contains("above decode size"));
}

#[test]
fn stream_k_with_tensor_copies_renders_its_own_template() {
    let dp = KernelConfig::parse_name(
        "nm_spmm_f32_acol16_ms128_ns128_ks64_mt16_nt8_w8x4_n16m32l32_nopack_cp2_mb2_sk1_rc8_tma",
    )
    .unwrap();
    let sk = KernelConfig {
        stream_k: true,
        ..dp
    };
    assert!(sk.name().ends_with("_rc8_tma_streamk"), "{}", sk.name());
    assert_eq!(KernelConfig::parse_name(&sk.name()), Some(sk));
    validate(&sk, &GpuProfile::builtin("h200").unwrap()).unwrap();
    // Its workers take the two tensor maps after alpha and beta, as the data-parallel entry
    // of the same module does, and hand them to every tile they run.
    let src = render(&sk).unwrap().source;
    let entry = &src[src
        .find(&format!("\n{}_stream(", compile_key(&sk).name()))
        .unwrap()..];
    let params = &entry[..entry.find(')').unwrap()];
    assert!(
        params.contains("float alpha, float beta,\n    const __grid_constant__ nmk::TmaMap tma_a")
    );
    assert!(entry.contains("tile_ctx(A, B, D, col_info, m, n, k, t, &tma_a, &tma_b)"));
    // A template of its own: the stream-K kernels without tensor copies keep their checksum.
    let plain = KernelConfig { tma: false, ..sk };
    assert_ne!(kernel_checksum(&sk), kernel_checksum(&plain));
    assert!(!render(&plain).unwrap().source.contains("tma_retire"));
}

#[test]
fn cluster_sums_are_named_rendered_and_kept_apart() {
    let split = KernelConfig {
        split_k: 4,
        ..base()
    };
    let summed = KernelConfig {
        cluster_sum: true,
        ..split
    };
    assert!(summed.name().ends_with("_sk4_clsum"), "{}", summed.name());
    assert_eq!(KernelConfig::parse_name(&summed.name()), Some(summed));
    let tensor = KernelConfig::parse_name(
        "nm_spmm_f32_acol16_ms64_ns128_ks64_mt8_nt8_w8x4_n8m32l32_nopack_cp2_mb2_sk3_rc8_tma_clsum",
    )
    .unwrap();
    assert!(tensor.tma && tensor.cluster_sum && tensor.row_chunk == 8);
    // No workspace and no reduction kernel; the split is compiled in.
    assert!(!summed.launches_reduce() && split.launches_reduce());
    assert_eq!(summed.workspace_floats(300, 512, 1024), 0);
    assert_eq!(compile_key(&summed), summed);
    assert_eq!(compile_key(&split).split_k, 1);
    let src = render(&summed).unwrap();
    let base_name = compile_key(&summed).name();
    assert_eq!(src.name, format!("{base_name}_cluster"));
    assert_eq!(src.reduce_name, None);
    assert!(src.source.contains("__cluster_dims__(1, 1, 4)"));
    // A template of its own: the split kernels without it keep their rows current.
    assert_eq!(kernel_checksum(&split), family_checksum(Family::Tiled));
    assert_ne!(kernel_checksum(&summed), kernel_checksum(&split));
    // Its rules: a split of 2 to 8 of the tiled family without stream-K, on sm_90 and later.
    validate(&summed, &h100()).unwrap();
    let a100 = GpuProfile::builtin("a100").unwrap();
    assert!(reason_of(validate(&summed, &a100)).contains("needs compute capability 9.0"));
    let unsplit = KernelConfig {
        split_k: 1,
        ..summed
    };
    assert!(reason_of(validate_structure(&unsplit)).contains("split_k from 2 to 8"));
    assert!(!summed.with_split(1).cluster_sum && summed.with_split(2).cluster_sum);
    let streamed = KernelConfig {
        stream_k: true,
        split_k: 1,
        ..summed
    };
    assert!(reason_of(validate_structure(&streamed)).contains("stream-K"));
    let decode_summed = KernelConfig {
        split_k: 3,
        cluster_sum: true,
        ..decode(4, ACopy::DirectRow)
    };
    assert!(reason_of(validate_structure(&decode_summed)).contains("tiled family"));
}

#[test]
fn template_checksums_are_stable_sha256s_per_set_of_serving_families() {
    let problem = |m| Problem::new(m, 4096, 4096, nm(8, 32), 32).unwrap();
    let (large, decode) = (
        templates_checksum(&problem(256)),
        templates_checksum(&problem(4)),
    );
    for sum in [large, decode] {
        assert_eq!(sum.len(), 64);
        assert!(sum.chars().all(|c| c.is_ascii_hexdigit()));
    }
    assert_eq!(large, templates_checksum(&problem(4096)));
    assert_eq!(decode, templates_checksum(&problem(16)));
    // Above m = 16 only the tiled family serves (with its two stream-K schedules): the decode
    // template is not in the sum, so a change to it leaves those rows valid; a stream-K row
    // stays current by its own schedule's checksum.
    let stream = KernelConfig {
        stream_k: true,
        tma: false,
        dtype: Dtype::F32,
        ..base()
    };
    let stream_tma = KernelConfig::parse_name(
        "nm_spmm_f32_acol16_ms128_ns128_ks64_mt16_nt8_w8x4_n16m32l32_nopack_cp2_mb2_sk1_rc8_tma_streamk",
    )
    .unwrap();
    let sums = [
        large,
        kernel_checksum(&stream),
        kernel_checksum(&stream_tma),
    ];
    for (i, a) in sums.iter().enumerate() {
        assert!(sums[i + 1..].iter().all(|b| a != b), "{i}");
    }
    assert_ne!(large, decode);
    assert_ne!(decode, family_checksum(Family::Decode));
}

#[test]
fn compile_cache_serves_a_rerun_and_survives_corruption() {
    if !common::nvrtc_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = KernelConfig {
        m_s: 32,
        n_s: 32,
        m_t: 4,
        n_t: 4,
        k_s: 32,
        warp: WarpLayout::new(4, 8),
        ..base()
    };
    let src = render(&cfg).unwrap();
    let (first, outcome) = compile_cached_with_outcome(&src, "sm_90", dir.path()).unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    assert!(first.registers.is_some() && !first.cubin.is_empty());
    let (second, outcome) = compile_cached_with_outcome(&src, "sm_90", dir.path()).unwrap();
    assert_eq!(outcome, CacheOutcome::Hit);
    assert_eq!(second, first);
    // Another architecture is another entry.
    let (_, outcome) = compile_cached_with_outcome(&src, "sm_80", dir.path()).unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    // A damaged entry is recompiled, not trusted.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x55;
        std::fs::write(&path, bytes).unwrap();
    }
    let (third, outcome) = compile_cached_with_outcome(&src, "sm_90", dir.path()).unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    assert_eq!(third.cubin, first.cubin);
}

#[test]
fn compile_errors_carry_the_log() {
    if nvrtc_available().is_err() {
        println!("SKIPPED: NVRTC not found");
        return;
    }
    let mut src = render(&base()).unwrap();
    src.source.push_str("\nthis is not C++;\n");
    match nmtune::codegen::compile(&src, "sm_90") {
        Err(CodegenError::Compile { log, arch, .. }) => {
            assert_eq!(arch, "sm_90");
            assert!(log.contains("error"), "{log}");
        }
        other => panic!("expected a compile error, got {:?}", other.map(|k| k.name)),
    }
}

/// Numerical check of rendered kernels on a CUDA GPU (skipped without one; set
/// NMTUNE_REQUIRE_GPU=1 to make a missing GPU a failure).
mod gpu {
    use super::*;
    use cudarc::driver::sys::CUfunction_attribute_enum;
    use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
    use cudarc::nvrtc::Ptx;
    use rand::rngs::SmallRng;
    use rand::seq::index::sample;
    use rand::{Rng, SeedableRng};

    /// A random N:M vector-wise sparse problem: A, B' and D, with col_info for packing.
    struct Data {
        m: usize,
        n: usize,
        k: usize,
        nm: NmPattern,
        l: usize,
        a: Vec<f32>,
        b: Vec<f32>,
        d: Vec<i32>,
    }

    impl Data {
        fn random(m: usize, n: usize, k: usize, nm: NmPattern, l: usize, seed: u64) -> Self {
            let (nn, mm) = (nm.n as usize, nm.m as usize);
            let mut rng = SmallRng::seed_from_u64(seed);
            let w = k / mm * nn;
            let q = n / l;
            let a = (0..m * k).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
            let b = (0..w * n).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
            let mut d = vec![0i32; w * q];
            for window in 0..k / mm {
                for g in 0..q {
                    let mut kept = sample(&mut rng, mm, nn).into_vec();
                    kept.sort_unstable();
                    for (t, pos) in kept.into_iter().enumerate() {
                        d[(window * nn + t) * q + g] = pos as i32;
                    }
                }
            }
            Self {
                m,
                n,
                k,
                nm,
                l,
                a,
                b,
                d,
            }
        }

        fn w(&self) -> usize {
            self.k / self.nm.m as usize * self.nm.n as usize
        }

        /// C = alpha · A ⊗ (B', D) + beta · C0 in f64, with the magnitude of each sum.
        fn reference(&self, alpha: f32, beta: f32, c0: &[f32]) -> (Vec<f64>, Vec<f64>) {
            let (nn, mm, q) = (self.nm.n as usize, self.nm.m as usize, self.n / self.l);
            let mut c = vec![0f64; self.m * self.n];
            let mut mag = vec![0f64; self.m * self.n];
            for i in 0..self.m {
                for u in 0..self.w() {
                    for j in 0..self.n {
                        let col = (u / nn) * mm + self.d[u * q + j / self.l] as usize;
                        let t = self.a[i * self.k + col] as f64 * self.b[u * self.n + j] as f64;
                        c[i * self.n + j] += t;
                        mag[i * self.n + j] += t.abs();
                    }
                }
            }
            for idx in 0..c.len() {
                c[idx] *= alpha as f64;
                mag[idx] *= (alpha as f64).abs();
                if beta != 0.0 {
                    c[idx] += beta as f64 * c0[idx] as f64;
                    mag[idx] += (beta as f64 * c0[idx] as f64).abs();
                }
            }
            (c, mag)
        }

        /// (columns, counts, packed D) for a (k_s, n_s) tiling, as ColInfo defines them.
        fn col_info(&self, k_s: usize, n_s: usize) -> (Vec<i32>, Vec<i32>, Vec<i32>) {
            let (nn, mm) = (self.nm.n as usize, self.nm.m as usize);
            let (q, w_s) = (self.n / self.l, k_s / mm * nn);
            let k_tiles = self.k.div_ceil(k_s);
            let n_tiles = self.n.div_ceil(n_s);
            let abs_col = |u: usize, g: usize| (u / nn) * mm + self.d[u * q + g] as usize;
            let mut columns = vec![0i32; k_tiles * n_tiles * k_s];
            let mut counts = vec![0i32; k_tiles * n_tiles];
            let mut lists = vec![Vec::new(); k_tiles * n_tiles];
            for kt in 0..k_tiles {
                for nt in 0..n_tiles {
                    let g_first = nt * n_s / self.l;
                    let g_end = ((nt + 1) * n_s).min(self.n).div_ceil(self.l);
                    let mut cols: Vec<usize> = (kt * w_s..((kt + 1) * w_s).min(self.w()))
                        .flat_map(|u| (g_first..g_end).map(move |g| (u, g)))
                        .map(|(u, g)| abs_col(u, g))
                        .collect();
                    cols.sort_unstable();
                    cols.dedup();
                    assert!(cols.len() <= k_s);
                    let tile = kt * n_tiles + nt;
                    counts[tile] = cols.len() as i32;
                    for s in 0..k_s {
                        let c = cols.get(s).or(cols.last()).copied().unwrap_or(0);
                        columns[tile * k_s + s] = c as i32;
                    }
                    lists[tile] = cols;
                }
            }
            let mut packed = vec![0i32; self.d.len()];
            for u in 0..self.w() {
                for g in 0..q {
                    let tile = (u / w_s) * n_tiles + g * self.l / n_s;
                    let slot = lists[tile].binary_search(&abs_col(u, g)).unwrap();
                    packed[u * q + g] = slot as i32;
                }
            }
            (columns, counts, packed)
        }
    }

    /// (configuration, m, n, k, alpha, beta, grid z): shapes with partial tiles in every
    /// dimension, every pipeline, packing, G > 1, L > n_s, k_s not a power of two, and
    /// split-K including empty slices.
    fn cases() -> Vec<(KernelConfig, usize, usize, usize, f32, f32, u32)> {
        let b = base();
        vec![
            (b, 200, 320, 352, 1.0, 0.0, 1),
            (
                KernelConfig {
                    packing: true,
                    stages: 2,
                    min_blocks: 1,
                    ..b
                },
                200,
                320,
                352,
                0.5,
                0.75,
                4,
            ),
            (
                KernelConfig {
                    packing: true,
                    stages: 2,
                    min_blocks: 1,
                    ..b
                },
                1,
                256,
                256,
                1.0,
                0.0,
                1,
            ),
            (
                KernelConfig { packing: true, ..b },
                77,
                384,
                512,
                1.5,
                -1.0,
                2,
            ),
            (
                KernelConfig {
                    nm: nm(2, 4),
                    l: 4,
                    m_s: 32,
                    n_s: 32,
                    k_s: 16,
                    m_t: 4,
                    n_t: 8,
                    warp: WarpLayout::new(8, 4),
                    packing: true,
                    stages: 2,
                    min_blocks: 1,
                    ..b
                },
                45,
                68,
                36,
                1.0,
                0.0,
                1,
            ),
            (
                KernelConfig {
                    nm: nm(2, 4),
                    l: 8,
                    m_s: 64,
                    n_s: 64,
                    k_s: 12,
                    m_t: 4,
                    n_t: 16,
                    warp: WarpLayout::new(16, 2),
                    packing: false,
                    stages: 2,
                    min_blocks: 1,
                    ..b
                },
                130,
                136,
                100,
                1.0,
                0.5,
                2,
            ),
            (
                KernelConfig {
                    nm: nm(4, 8),
                    l: 16,
                    m_s: 128,
                    n_s: 64,
                    k_s: 32,
                    m_t: 8,
                    n_t: 4,
                    warp: WarpLayout::new(2, 16),
                    packing: true,
                    stages: 4,
                    min_blocks: 1,
                    ..b
                },
                129,
                144,
                264,
                1.0,
                0.0,
                1,
            ),
            (
                KernelConfig {
                    nm: nm(32, 32),
                    m_s: 128,
                    n_s: 128,
                    k_s: 32,
                    m_t: 16,
                    n_t: 8,
                    stages: 4,
                    min_blocks: 1,
                    ..b
                },
                160,
                256,
                96,
                1.0,
                0.0,
                8,
            ),
            (
                KernelConfig {
                    nm: nm(8, 16),
                    l: 64,
                    n_s: 32,
                    n_t: 4,
                    m_t: 4,
                    warp: WarpLayout::new(4, 8),
                    k_s: 32,
                    packing: true,
                    stages: 2,
                    min_blocks: 1,
                    ..b
                },
                70,
                192,
                80,
                2.0,
                0.0,
                1,
            ),
            (
                KernelConfig {
                    nm: nm(3, 12),
                    l: 4,
                    m_s: 32,
                    n_s: 64,
                    k_s: 24,
                    m_t: 4,
                    n_t: 4,
                    warp: WarpLayout::new(4, 8),
                    packing: true,
                    stages: 3,
                    min_blocks: 1,
                    ..b
                },
                33,
                100,
                60,
                1.0,
                1.0,
                1,
            ),
        ]
    }

    #[test]
    fn kernels_match_the_cpu_reference() {
        let Some(ctx) = gpu_context() else {
            if std::env::var_os("NMTUNE_REQUIRE_GPU").is_some() {
                panic!("NMTUNE_REQUIRE_GPU is set but no CUDA GPU and NVRTC are available");
            }
            println!("SKIPPED: no CUDA GPU (or no NVRTC)");
            return;
        };
        let (major, minor) = ctx.compute_capability().unwrap();
        let arch = format!("sm_{major}{minor}");
        let mut failures = Vec::new();
        for (i, (cfg, m, n, k, alpha, beta, splits)) in cases().into_iter().enumerate() {
            let cfg = KernelConfig {
                split_k: splits.max(1),
                ..cfg
            };
            validate_structure(&cfg).unwrap();
            let data = Data::random(m, n, k, cfg.nm, cfg.l as usize, 1000 + i as u64);
            match run_and_compare(&ctx, &arch, &cfg, &data, alpha, beta, splits) {
                Ok(max_err) => {
                    println!("ok   {cfg} m{m} n{n} k{k} z{splits}: max scaled error {max_err:.2e}")
                }
                Err(e) => failures.push(format!("{cfg} m{m} n{n} k{k} z{splits}: {e}")),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    fn gpu_context() -> Option<std::sync::Arc<CudaContext>> {
        // SAFETY: only tries to dlopen libcuda.
        if !unsafe { cudarc::driver::sys::is_culib_present() } || nvrtc_available().is_err() {
            return None;
        }
        if CudaContext::device_count().ok()? < 1 {
            return None;
        }
        CudaContext::new(0).ok()
    }

    fn run_and_compare(
        ctx: &std::sync::Arc<CudaContext>,
        arch: &str,
        cfg: &KernelConfig,
        data: &Data,
        alpha: f32,
        beta: f32,
        splits: u32,
    ) -> Result<f64, String> {
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let src = render(cfg).map_err(|e| err(&e))?;
        let kernel = nmtune::codegen::compile(&src, arch).map_err(|e| err(&e))?;
        let module = ctx
            .load_module(Ptx::from_binary(kernel.cubin))
            .map_err(|e| err(&e))?;
        let main = module.load_function(&src.name).map_err(|e| err(&e))?;
        let reduce = module
            .load_function(&format!("{}_reduce", src.name))
            .map_err(|e| err(&e))?;
        let smem = cfg.smem_bytes();
        main.set_attribute(
            CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            smem as i32,
        )
        .map_err(|e| err(&e))?;

        let (m, n) = (data.m, data.n);
        let (columns, counts, packed) = data.col_info(cfg.k_s as usize, cfg.n_s as usize);
        let d_host = if cfg.packing { packed } else { data.d.clone() };
        let mut rng = SmallRng::seed_from_u64(7);
        // beta == 0 must not read C: fill it with NaN then.
        let c0: Vec<f32> = (0..m * n)
            .map(|_| {
                if beta == 0.0 {
                    f32::NAN
                } else {
                    rng.gen_range(-1.0f32..1.0)
                }
            })
            .collect();

        let stream = ctx.default_stream();
        let a = stream.clone_htod(&data.a).map_err(|e| err(&e))?;
        let b = stream.clone_htod(&data.b).map_err(|e| err(&e))?;
        let d = stream.clone_htod(&d_host).map_err(|e| err(&e))?;
        let ci = stream.clone_htod(&columns).map_err(|e| err(&e))?;
        let cc = stream.clone_htod(&counts).map_err(|e| err(&e))?;
        let mut c = stream.clone_htod(&c0).map_err(|e| err(&e))?;
        // Poison the workspace: every slice must be fully written, empty ones with zeros.
        let mut ws = stream
            .clone_htod(&vec![f32::NAN; (splits as usize * m * n).max(1)])
            .map_err(|e| err(&e))?;
        let (mi, ni, ki) = (m as i32, n as i32, data.k as i32);
        let launch = LaunchConfig {
            grid_dim: (
                n.div_ceil(cfg.n_s as usize) as u32,
                m.div_ceil(cfg.m_s as usize) as u32,
                splits,
            ),
            block_dim: (cfg.threads(), 1, 1),
            shared_mem_bytes: smem,
        };
        let mut builder = stream.launch_builder(&main);
        builder
            .arg(&a)
            .arg(&b)
            .arg(&d)
            .arg(&ci)
            .arg(&cc)
            .arg(&mut c)
            .arg(&mut ws)
            .arg(&mi)
            .arg(&ni)
            .arg(&ki)
            .arg(&alpha)
            .arg(&beta);
        // SAFETY: the arguments follow the kernel ABI of codegen/mod.rs.
        unsafe { builder.launch(launch) }.map_err(|e| err(&e))?;
        if splits > 1 {
            let vecs = (m * n / 4) as u32;
            let reduce_launch = LaunchConfig {
                grid_dim: (vecs.div_ceil(256).max(1), 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let split_k = splits as i32;
            let mut builder = stream.launch_builder(&reduce);
            builder
                .arg(&ws)
                .arg(&mut c)
                .arg(&mi)
                .arg(&ni)
                .arg(&split_k)
                .arg(&alpha)
                .arg(&beta);
            // SAFETY: as above, for the reduction kernel.
            unsafe { builder.launch(reduce_launch) }.map_err(|e| err(&e))?;
        }
        let got = stream.clone_dtoh(&c).map_err(|e| err(&e))?;
        let (want, mag) = data.reference(alpha, beta, &c0);
        let mut worst = 0f64;
        for idx in 0..m * n {
            let scaled = (got[idx] as f64 - want[idx]).abs() / (mag[idx] + 1e-6);
            if scaled.is_nan() || scaled > 1e-4 {
                return Err(format!(
                    "C[{}][{}] = {} but the reference is {} (|terms| {})",
                    idx / n,
                    idx % n,
                    got[idx],
                    want[idx],
                    mag[idx]
                ));
            }
            worst = worst.max(scaled);
        }
        Ok(worst)
    }
}

/// A decode-family configuration (the family's default block shape).
fn decode(m_s: u32, a_copy: ACopy) -> KernelConfig {
    KernelConfig {
        a_copy,
        m_s,
        n_s: 64,
        k_s: 8,
        m_t: m_s,
        n_t: 4,
        warp: WarpLayout::new(16, 1),
        nm: nm(8, 32),
        l: 32,
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

#[test]
fn decode_configurations_are_named_validated_and_sized() {
    let cfg = decode(2, ACopy::DirectRow);
    assert_eq!(
        cfg.name(),
        "nm_spmm_f32_drow_ms2_ns64_ks8_mt2_nt4_w16x1_n8m32l32_nopack_cp1_mb1_sk1"
    );
    assert_eq!(KernelConfig::parse_name(&cfg.name()), Some(cfg));
    assert_eq!(cfg.a_layout(), ALayout::RowMajor);
    assert_eq!(decode(4, ACopy::DirectCol).a_layout(), ALayout::ColMajor);
    assert_eq!(cfg.threads(), 512);
    // The warps' partial sums: 16 warps × 2 rows × 64 columns.
    assert_eq!(cfg.smem_bytes(), 4 * 16 * 2 * 64);
    validate(&cfg, &h100()).unwrap();
    let reason = |c: KernelConfig| match validate_structure(&c) {
        Err(CodegenError::Rejected { reason, .. }) => reason,
        other => panic!("{} should be rejected, got {other:?}", c.name()),
    };
    assert!(reason(KernelConfig {
        m_s: 16,
        m_t: 16,
        ..cfg
    })
    .contains("1, 2 or 4 rows"));
    // Blocks of 8 rows: the vector-wise family only, one float4 of B' per lane and row.
    let wide = KernelConfig {
        m_s: 8,
        m_t: 8,
        ..cfg
    };
    validate(&wide, &h100()).unwrap();
    assert!(reason(KernelConfig { n_t: 8, ..wide }).contains("n_t = 4 columns"));
    let ew_wide = KernelConfig {
        a_copy: ACopy::EwDirectRow,
        l: 1,
        ..wide
    };
    assert!(reason(ew_wide).contains("1, 2 or 4 rows"));
    assert!(reason(KernelConfig { m_t: 1, ..cfg }).contains("m_t"));
    assert!(reason(KernelConfig { n_t: 16, ..cfg }).contains("n_t = 4 or 8"));
    assert!(reason(KernelConfig { n_s: 48, ..cfg }).contains("divide a warp"));
    assert!(reason(KernelConfig {
        l: 4,
        n_t: 8,
        n_s: 64,
        ..cfg
    })
    .contains("one column group"));
    assert!(reason(KernelConfig { stages: 4, ..cfg }).contains("stages (cp1 to cp3)"));
    validate(&KernelConfig { stages: 2, ..cfg }, &h100()).unwrap();
    validate(&KernelConfig { stages: 3, ..cfg }, &h100()).unwrap();
    assert!(reason(KernelConfig {
        warp: WarpLayout::new(8, 4),
        ..cfg
    })
    .contains("w<warps>x1"));
    // 32 warps of 1024 threads leave 64 registers: 8 rows of two float4 in flight do not fit.
    let heavy = KernelConfig {
        n_t: 8,
        n_s: 128,
        warp: WarpLayout::new(32, 1),
        ..cfg
    };
    assert!(validate(&heavy, &h100()).is_err());
}

#[test]
fn shuffle_paths_are_named_validated_and_leave_the_ldca_kernels_as_they_were() {
    let ldca = KernelConfig {
        l: 1,
        n_s: 32,
        n_t: 8,
        k_s: 4,
        nm: nm(16, 32),
        ..decode(1, ACopy::EwDirectRow)
    };
    let shfl = KernelConfig {
        a_copy: ACopy::EwShuffleRow,
        ..ldca
    };
    assert_eq!(
        shfl.name(),
        "nm_spmm_f32_ewsrow_ms1_ns32_ks4_mt1_nt8_w16x1_n16m32l1_nopack_cp1_mb1_sk1"
    );
    assert_eq!(KernelConfig::parse_name(&shfl.name()), Some(shfl));
    assert_eq!(ldca.a_copy.gather_twin(), Some(ACopy::EwShuffleRow));
    assert_eq!(shfl.a_copy.gather_twin(), Some(ACopy::EwDirectRow));
    assert_eq!(ACopy::EwShuffleCol.layout(), ALayout::ColMajor);
    assert_eq!(shfl.family(), Family::EwDecode);
    validate(&shfl, &h100()).unwrap();
    validate(
        &KernelConfig {
            a_copy: ACopy::EwShuffleCol,
            m_s: 4,
            m_t: 4,
            ..shfl
        },
        &h100(),
    )
    .unwrap();
    // The `__ldca` kernels keep their template and checksum (the rows that timed them stay
    // current); the shuffle kernels have their own.
    assert_eq!(kernel_checksum(&ldca), family_checksum(Family::EwDecode));
    assert_ne!(kernel_checksum(&shfl), kernel_checksum(&ldca));
    let (ldca_src, shfl_src) = (render(&ldca).unwrap().source, render(&shfl).unwrap().source);
    assert!(!ldca_src.contains("__shfl_sync(0xffffffffu, win"));
    assert!(shfl_src.contains("__shfl_sync(0xffffffffu, win"));
    assert!(shfl_src.contains("templates/nm_spmm_ew_decode_shfl.cu.tera"));
    assert!(shfl_src.contains(kernel_checksum(&shfl)));
    let reason = |c: KernelConfig| match validate_structure(&c) {
        Err(CodegenError::Rejected { reason, .. }) => reason,
        other => panic!("{} should be rejected, got {other:?}", c.name()),
    };
    assert!(reason(KernelConfig {
        nm: nm(4, 16),
        ..shfl
    })
    .contains("M must be 32"));
    assert!(reason(KernelConfig {
        nm: nm(32, 32),
        ..shfl
    })
    .contains("M must be 32"));
    // One lane a row (n_s = n_t): a step is 32 rows, eight windows at 4:32.
    let long_step = KernelConfig {
        n_s: 8,
        nm: nm(4, 32),
        ..shfl
    };
    assert_eq!(shuffle_step_windows(&long_step), 8);
    assert!(reason(long_step).contains("pruning windows"));
    assert_eq!(
        shuffle_step_windows(&KernelConfig {
            nm: nm(12, 32),
            ..shfl
        }),
        2
    );
    assert_eq!(
        shuffle_step_windows(&KernelConfig {
            nm: nm(4, 32),
            ..shfl
        }),
        2
    );
    assert_eq!(shuffle_step_windows(&shfl), 1);
}

#[test]
fn the_decode_family_serves_decode_problems_only() {
    let cfg = decode(1, ACopy::DirectRow);
    let decode_problem = Problem::new(1, 4096, 4096, nm(8, 32), 32).unwrap();
    validate_for_problem(&cfg, &decode_problem).unwrap();
    let prefill = Problem::new(256, 4096, 4096, nm(8, 32), 32).unwrap();
    match validate_for_problem(&cfg, &prefill) {
        Err(CodegenError::Rejected { reason, .. }) => {
            assert!(reason.contains("serves m ≤ 16"), "{reason}")
        }
        other => panic!("m = 256 must be rejected, got {other:?}"),
    }
    // Both families are in the search space of both layouts; the decode family renders its
    // own template, which keeps the shared reduction kernel.
    for layout in ALayout::ALL {
        let space = search_space(nm(8, 32), 32, layout, &h100());
        assert!(space.iter().any(|c| c.a_copy.is_direct()), "{layout}");
        assert!(space.iter().any(|c| !c.a_copy.is_direct()), "{layout}");
    }
    let src = render(&cfg).unwrap();
    assert!(src.source.contains("nm_spmm_decode.cu.tera"));
    assert!(src.source.contains(&format!("{}_reduce", src.name)));
}
