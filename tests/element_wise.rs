//! The element-wise families (L = 1: tiles, and the decode family for m ≤ 16) without a GPU: which problems it serves and the checksums
//! that leaves unchanged, its search space and validation messages, its rendered modules and
//! their compilation, the model, the pruned candidates and the runtime's default, the u8
//! indices a weight's kernels read, and `nmtune` tuning a shapes file with `L: 1` on the
//! model. The kernels themselves are checked against the CPU reference in `tests/gpu.rs`.

mod common;

use common::{nmtune, one_line_error, report_json};
use nmtune::codegen::nvrtc::compile_cached;
use nmtune::codegen::validate::{m_multiple, validate_structure};
use nmtune::codegen::{
    family_checksum, kernel_checksum, render, search_space, templates_checksum, validate,
    validate_for_problem, ACopy, CodegenError, EwShape, Family, KernelConfig,
};
use nmtune::format::MinBytes;
use nmtune::gpu_profile::GpuProfile;
use nmtune::kernels::table_one;
use nmtune::model::predict;
use nmtune::problem::{ALayout, Dtype, NmPattern, Problem};
use nmtune::runtime::{HostIndices, Lookup, PreparedWeight, Rule};
use nmtune::tuner::search::{candidates, Strategy};
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::fs;

fn nm(n: u32, m: u32) -> NmPattern {
    NmPattern::new(n, m).unwrap()
}

fn h100() -> GpuProfile {
    GpuProfile::builtin("h100").unwrap()
}

fn h200() -> GpuProfile {
    GpuProfile::builtin("h200").unwrap()
}

fn problem(m: usize, n: usize, k: usize, pattern: NmPattern, l: usize, layout: ALayout) -> Problem {
    Problem::new(m, n, k, pattern, l)
        .unwrap()
        .with_layout(layout)
        .unwrap()
}

/// The prototype's 4:32 winner (the family's default shape) for `layout`.
fn ew(layout: ALayout, pattern: NmPattern) -> KernelConfig {
    KernelConfig::element_wise(layout, table_one::EW_DEFAULT_SHAPE, pattern)
}

fn reason(cfg: KernelConfig) -> String {
    reason_on(cfg, &h100())
}

fn reason_on(cfg: KernelConfig, gpu: &GpuProfile) -> String {
    match validate(&cfg, gpu) {
        Err(CodegenError::Rejected { reason, .. }) => reason,
        other => panic!("{} must be rejected, got {other:?}", cfg.name()),
    }
}

fn problem_reason(cfg: &KernelConfig, p: &Problem) -> String {
    match validate_for_problem(cfg, p) {
        Err(CodegenError::Rejected { reason, .. }) => reason,
        other => panic!("{} must be rejected for {p}, got {other:?}", cfg.name()),
    }
}

#[test]
fn element_wise_problems_are_served_by_the_element_wise_families_alone() {
    for m in [17, 256, 4096] {
        let p = problem(m, 4096, 4096, nm(8, 32), 1, ALayout::RowMajor);
        assert_eq!(Family::serving(&p), &[Family::Ew], "m={m}");
        assert_eq!(templates_checksum(&p), family_checksum(Family::Ew));
    }
    // Decode sizes add the element-wise decode family, and their rows its template.
    for m in [1, 16] {
        let p = problem(m, 4096, 4096, nm(8, 32), 1, ALayout::RowMajor);
        assert_eq!(Family::serving(&p), &[Family::Ew, Family::EwDecode]);
        for family in [Family::Ew, Family::EwDecode] {
            assert_ne!(templates_checksum(&p), family_checksum(family), "m={m}");
        }
    }
    // Every other problem keeps its serving set, and so its checksum: the committed
    // databases' rows stay current (scripts/check-replay.sh checks them row by row).
    let vector = |m| problem(m, 4096, 4096, nm(8, 32), 32, ALayout::RowMajor);
    assert_eq!(Family::serving(&vector(256)), &[Family::Tiled]);
    assert_eq!(
        Family::serving(&vector(4)),
        &[Family::Tiled, Family::Decode]
    );
    // Above decode size the key is the tiled family's templates with both stream-K schedules
    // (with tensor copies and without); a data-parallel row stays current by its kernel's own
    // checksum, the family's, and a stream-K row by its schedule's.
    let default = table_one::default_config(&vector(256), &h100()).unwrap();
    let stream = KernelConfig {
        stream_k: true,
        tma: false,
        dtype: Dtype::F32,
        ..default
    };
    let key = templates_checksum(&vector(256));
    assert_ne!(key, kernel_checksum(&stream));
    assert_ne!(key, family_checksum(Family::Tiled));
    assert_eq!(kernel_checksum(&default), family_checksum(Family::Tiled));
    for other in [vector(256), vector(4)] {
        assert_ne!(templates_checksum(&other), family_checksum(Family::Ew));
    }
}

#[test]
fn the_search_space_of_l1_is_the_element_wise_families_and_nothing_else() {
    let gpu = h100();
    for layout in ALayout::ALL {
        let space = search_space(nm(4, 32), 1, layout, &gpu);
        assert!(
            space.len() > 500,
            "{layout}: {} configurations",
            space.len()
        );
        let names: BTreeSet<String> = space.iter().map(KernelConfig::name).collect();
        assert_eq!(names.len(), space.len(), "duplicate names");
        for cfg in &space {
            assert!(
                matches!(cfg.family(), Family::Ew | Family::EwDecode),
                "{cfg}"
            );
            assert!(cfg.reads_byte_indices());
            assert_eq!(cfg.a_layout(), layout);
            validate(cfg, &gpu).unwrap();
            assert_eq!(KernelConfig::parse_name(&cfg.name()), Some(*cfg));
        }
        let (tiles, direct): (Vec<KernelConfig>, Vec<KernelConfig>) =
            space.iter().partition(|c| c.family() == Family::Ew);
        assert!(
            direct.len() > 100,
            "{layout}: {} decode kernels",
            direct.len()
        );
        let rows: BTreeSet<u32> = direct.iter().map(|c| c.m_s).collect();
        assert_eq!(rows, BTreeSet::from([1, 2, 4]));
        let values =
            |f: fn(&KernelConfig) -> u32| -> BTreeSet<u32> { tiles.iter().map(f).collect() };
        assert_eq!(values(|c| c.m_t), BTreeSet::from([4, 8]));
        assert_eq!(values(|c| c.n_t), BTreeSet::from([4, 8, 16]));
        assert_eq!(values(|c| c.k_s), BTreeSet::from([32, 64, 128]));
        assert_eq!(values(|c| c.stages), BTreeSet::from([2, 3, 4]));
        assert!(values(|c| c.split_k).contains(&8));
        // Vector-wise spaces hold no element-wise kernel.
        assert!(search_space(nm(4, 32), 32, layout, &gpu)
            .iter()
            .all(|c| !c.reads_byte_indices()));
    }
    let names: Vec<String> = search_space(nm(8, 32), 1, ALayout::RowMajor, &gpu)
        .iter()
        .map(KernelConfig::name)
        .collect();
    let element_wise = ["ewtrans", "ewdrow", "ewsrow"].map(|t| format!("nm_spmm_f32_{t}_"));
    assert!(names
        .iter()
        .all(|n| element_wise.iter().any(|prefix| n.starts_with(prefix))));
    // Every M = 32 decode configuration has its shuffle twin in the space.
    assert!(names.iter().any(|n| n.starts_with("nm_spmm_f32_ewsrow_")));
}

#[test]
fn element_wise_validation_names_the_broken_rule() {
    let cfg = ew(ALayout::ColMajor, nm(8, 32));
    validate(&cfg, &h100()).unwrap();
    assert_eq!(
        cfg.name(),
        "nm_spmm_f32_ewcol_ms128_ns64_ks32_mt4_nt16_w4x1_n8m32l1_nopack_cp3_mb1_sk1"
    );
    let cases: [(KernelConfig, &str); 10] = [
        (KernelConfig { l: 32, ..cfg }, "serve L = 1 only, not L=32"),
        (KernelConfig { m_s: 64, ..cfg }, "m_s = 32·m_t"),
        (
            KernelConfig {
                m_t: 16,
                m_s: 512,
                ..cfg
            },
            "m_t = 4 or 8",
        ),
        (
            KernelConfig {
                n_t: 12,
                n_s: 48,
                ..cfg
            },
            "n_t = 4, 8 or 16",
        ),
        (
            KernelConfig {
                warp: nmtune::codegen::WarpLayout::new(2, 2),
                ..cfg
            },
            "w<warps>x1, not w2x2",
        ),
        (KernelConfig { n_s: 128, ..cfg }, "n_s = n_t·warps = 64"),
        (KernelConfig { k_s: 48, ..cfg }, "whole pruning windows"),
        (KernelConfig { k_s: 160, ..cfg }, "M=32 times 1 to 4"),
        (
            KernelConfig {
                packing: true,
                ..cfg
            },
            "no packing",
        ),
        (KernelConfig { stages: 5, ..cfg }, "2 to 4 stages"),
    ];
    for (bad, why) in cases {
        let got = reason(bad);
        assert!(got.contains(why), "{}: {got}", bad.name());
    }
    // Unrolling: a dense window of 32 rows at 8×16 per lane is 4096 FMAs.
    let dense = KernelConfig::element_wise(
        ALayout::ColMajor,
        EwShape {
            m_t: 8,
            n_t: 16,
            ..table_one::EW_DEFAULT_SHAPE
        },
        nm(32, 32),
    );
    assert!(reason(dense).contains("4096 FMAs per unrolled pruning window"));
    // The GPU's limits: four windows of 16:32 at 256 rows in four stages outgrow shared
    // memory; 8×16 accumulators per lane leave no room for four blocks of 256 threads.
    let big = KernelConfig::element_wise(
        ALayout::ColMajor,
        EwShape {
            m_t: 8,
            windows: 4,
            stages: 4,
            ..table_one::EW_DEFAULT_SHAPE
        },
        nm(16, 32),
    );
    assert!(
        reason(big).contains("bytes of shared memory"),
        "{}",
        reason(big)
    );
    let crowded = KernelConfig::element_wise(
        ALayout::ColMajor,
        EwShape {
            m_t: 8,
            warps: 8,
            stages: 2,
            min_blocks: 2,
            ..table_one::EW_DEFAULT_SHAPE
        },
        nm(8, 32),
    );
    assert!(
        reason(crowded).contains("registers per thread"),
        "{}",
        reason(crowded)
    );
}

#[test]
fn element_wise_kernels_run_element_wise_problems_only_and_row_major_ones_at_any_m() {
    let col = ew(ALayout::ColMajor, nm(8, 32));
    let row = ew(ALayout::RowMajor, nm(8, 32));
    // The transposed copy's padding is zeroed: any m, unlike the tiled `atrans` path.
    assert_eq!(m_multiple(&row), 1);
    for m in [1, 3, 301] {
        validate_for_problem(&row, &problem(m, 100, 96, nm(8, 32), 1, ALayout::RowMajor)).unwrap();
    }
    validate_for_problem(
        &col,
        &problem(300, 100, 96, nm(8, 32), 1, ALayout::ColMajor),
    )
    .unwrap();
    let vector = problem(256, 4096, 4096, nm(8, 32), 32, ALayout::ColMajor);
    assert!(problem_reason(&col, &vector).contains("compiled for L=1, the problem has L=32"));
    let row_problem = problem(256, 4096, 4096, nm(8, 32), 1, ALayout::RowMajor);
    assert!(problem_reason(&col, &row_problem).contains("compiled for col-major A"));
    let short = problem(256, 4096, 96, nm(8, 32), 1, ALayout::ColMajor);
    let split = KernelConfig { split_k: 4, ..col };
    assert!(problem_reason(&split, &short).contains("exceeds the 3 k-tiles"));
    assert!(validate_structure(&KernelConfig { l: 2, ..col }).is_err());
    // The tiled family refuses L = 1 and says which family takes it.
    let tiled = table_one::config(2, &vector, &h100()).unwrap();
    let tiled_l1 = KernelConfig { l: 1, ..tiled };
    assert!(reason(tiled_l1).contains("or 1 for the element-wise kernels"));
    // What no kernel runs gets a reason: n not a multiple of 4 at L = 1, L = 2 at all.
    let ragged = problem(256, 4098, 96, nm(8, 32), 1, ALayout::RowMajor);
    assert!(table_one::default_config(&ragged, &h100()).is_none());
    assert!(table_one::why_unsupported(&ragged).contains("n=4098 must be a multiple of 4"));
    let l2 = problem(256, 4096, 96, nm(8, 32), 2, ALayout::RowMajor);
    assert!(table_one::why_unsupported(&l2).contains("or 1 for the element-wise kernels"));
}

#[test]
fn element_wise_modules_render_the_element_wise_template() {
    let col = KernelConfig {
        split_k: 3,
        ..ew(ALayout::ColMajor, nm(4, 32))
    };
    let src = render(&col).unwrap();
    assert!(src.name.starts_with("nm_spmm_f32_ewcol_") && src.name.ends_with("_sk1"));
    assert_eq!(src.reduce_name, Some(format!("{}_reduce", src.name)));
    for needle in [
        "templates/nm_spmm_ew.cu.tera",
        family_checksum(Family::Ew),
        "const unsigned char* __restrict__ D",
        "constexpr int MT = 4;",
        "constexpr int NT = 16;",
        "constexpr int WARPS = 4;",
        "constexpr int KS = 32;",
        "constexpr int NN = 4;",
        "constexpr int STAGES = 3;",
        "constexpr bool A_TRANSPOSED = false;",
        "constexpr int WINDOW_UNROLL = 1;",
    ] {
        assert!(src.source.contains(needle), "missing {needle}");
    }
    assert!(!src.source.contains("_transpose("));
    assert!(
        !src.source.contains("{{"),
        "unrendered Tera left in the source"
    );
    let one = render(&KernelConfig { split_k: 1, ..col }).unwrap();
    assert_eq!(one.source, src.source, "split-K is a launch parameter");
    let row = render(&ew(ALayout::RowMajor, nm(4, 32))).unwrap();
    assert!(row.source.contains(&format!("{}_transpose(", row.name)));
    assert!(row.source.contains("constexpr bool A_TRANSPOSED = true;"));
    // Two windows of 4:32 unroll together; two of 16:32 at 8×16 per lane loop.
    let two = |m_t| EwShape {
        m_t,
        windows: 2,
        ..table_one::EW_DEFAULT_SHAPE
    };
    let small = KernelConfig::element_wise(ALayout::ColMajor, two(4), nm(4, 32));
    assert!(render(&small)
        .unwrap()
        .source
        .contains("constexpr int WINDOW_UNROLL = 2;"));
    let large = KernelConfig::element_wise(ALayout::ColMajor, two(8), nm(16, 32));
    assert!(render(&large)
        .unwrap()
        .source
        .contains("constexpr int WINDOW_UNROLL = 1;"));
}

#[test]
fn the_default_element_wise_kernels_compile_without_spilling() {
    if !common::nvrtc_or_skip() {
        return;
    }
    let cache = common::cubin_cache();
    let gpu = h100();
    // The runtime's defaults of both element-wise families, one row of A and many.
    let mut defaults = Vec::new();
    for layout in ALayout::ALL {
        for pattern in [nm(4, 32), nm(16, 32), nm(2, 4)] {
            defaults.push(ew(layout, pattern));
            let m = if layout == ALayout::RowMajor { 1 } else { 4 };
            let token = problem(m, 4096, 4096, pattern, 1, layout);
            let decode = table_one::default_config(&token, &gpu).unwrap();
            assert_eq!(decode.family(), Family::EwDecode, "{decode}");
            defaults.push(decode);
        }
    }
    // NVRTC takes most of this test's time: both cores.
    defaults.par_iter().for_each(|cfg| {
        let src = render(cfg).unwrap();
        let kernel = compile_cached(&src, "sm_90", &cache).unwrap();
        assert_eq!(kernel.spill_bytes, Some(0), "{} spills", src.name);
        assert!(kernel.registers.is_some_and(|r| r <= 255));
        for symbol in [src.name.clone(), format!("{}_reduce", src.name)] {
            let entry = format!("Compiling entry function '{symbol}'");
            assert!(kernel.log.contains(&entry), "{symbol} missing");
        }
        let transposes = kernel.log.contains(&format!("'{}_transpose'", src.name));
        assert_eq!(transposes, cfg.a_copy.transposes_a());
    });
}

#[test]
fn the_model_keeps_element_wise_kernels_under_the_shared_memory_bound() {
    let gpu = h200();
    for keep in [4, 8, 16] {
        let p = problem(4096, 4096, 4096, nm(keep, 32), 1, ALayout::ColMajor);
        // 32 useful FMAs per SM and clock at best (docs/design.md).
        let fmas = p.sparse_flops() / 2.0;
        let bound_s = fmas / (32.0 * gpu.sm_count as f64 * gpu.clock_mhz as f64 * 1e6);
        let space = search_space(p.nm, 1, p.a_layout, &gpu);
        let best = nmtune::model::best(&space, &p, &gpu).unwrap();
        let t = predict(&best, &p, &gpu).time_s;
        assert!(
            t >= bound_s && t < 1.5 * bound_s,
            "{keep}:32 {best}: {t} s, bound {bound_s} s"
        );
        for cfg in space.iter().step_by(7) {
            let t = predict(cfg, &p, &gpu).time_s;
            assert!(t.is_finite() && t >= bound_s, "{cfg}: {t}");
        }
    }
    // At m = 16 one row of 64 blocks cannot fill 132 SMs: the default splits k.
    let small = problem(16, 4096, 4096, nm(8, 32), 1, ALayout::RowMajor);
    let default = table_one::ew_default(&small, &gpu).unwrap();
    assert!(default.split_k > 1, "{default}");
    let large = problem(4096, 4096, 4096, nm(8, 32), 1, ALayout::RowMajor);
    assert_eq!(table_one::ew_default(&large, &gpu).unwrap().split_k, 1);
}

#[test]
fn element_wise_problems_get_element_wise_candidates_and_defaults() {
    let gpu = h100();
    for layout in ALayout::ALL {
        for m in [4, 16, 256, 4096] {
            let p = problem(m, 4096, 11008, nm(8, 32), 1, layout);
            let picked = candidates(&p, &gpu, Strategy::Pruned);
            // At decode sizes up to 8 of them are the shuffle twins of the decode candidates,
            // and a few the decode seeds' shared split factors (51 at m = 4, column-major).
            assert!(
                (5..=56).contains(&picked.len()),
                "{p}: {} candidates",
                picked.len()
            );
            for cfg in &picked {
                assert!(cfg.reads_byte_indices(), "{cfg}");
                assert_eq!(cfg.a_layout(), layout);
                validate(cfg, &gpu).unwrap();
                validate_for_problem(cfg, &p).unwrap();
            }
            // Decode sizes time the element-wise decode family beside the tiles.
            let direct = picked.iter().filter(|c| c.family() == Family::EwDecode);
            assert_eq!(direct.count() >= 3, m <= 16, "{p}");
            let seed = ew(layout, p.nm);
            assert!(
                picked.contains(&seed),
                "{p}: the default shape is always timed"
            );
            if m <= 16 {
                assert!(
                    picked.iter().any(|c| c.split_k > 1),
                    "{p}: a small grid splits k"
                );
            }
            // Without a database the runtime answers with a family's default: the decode
            // family's at decode sizes.
            let choice = Lookup::defaults_only(gpu.clone()).lookup(&p).unwrap();
            assert_eq!(choice.rule, Rule::Default);
            let family = if m <= 16 {
                Family::EwDecode
            } else {
                Family::Ew
            };
            assert_eq!(choice.config.family(), family);
            assert_eq!(choice.config.a_layout(), layout);
        }
    }
    // Row-major A at an m that is no multiple of 4.
    let odd = problem(301, 4096, 4096, nm(4, 32), 1, ALayout::RowMajor);
    let choice = Lookup::defaults_only(gpu.clone()).lookup(&odd).unwrap();
    assert_eq!(choice.config.a_copy, ACopy::EwTrans);
    let model = candidates(&odd, &gpu, Strategy::Model);
    assert!(!model.is_empty() && model.iter().all(|c| c.family() == Family::Ew));
    // One row of A: the element-wise decode family's default, one row per block, with A
    // gathered by shuffles where M = 32, through L1 otherwise.
    let token = problem(1, 4096, 11008, nm(4, 32), 1, ALayout::RowMajor);
    let choice = Lookup::defaults_only(gpu.clone()).lookup(&token).unwrap();
    assert_eq!(choice.config.a_copy, ACopy::EwShuffleRow);
    assert_eq!(choice.config.m_s, 1);
    let small_window = problem(1, 4096, 4096, nm(4, 16), 1, ALayout::RowMajor);
    let choice = Lookup::defaults_only(gpu.clone())
        .lookup(&small_window)
        .unwrap();
    assert_eq!(choice.config.a_copy, ACopy::EwDirectRow);
}

#[test]
fn an_element_wise_weight_goes_to_its_kernels_as_u8_indices() {
    let (k, n) = (64, 12);
    let dense: Vec<f32> = (0..k * n)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0 + 0.01)
        .collect();
    let w = PreparedWeight::from_dense_kn(&dense, k, n, nm(2, 8), 1).unwrap();
    assert_eq!((w.k(), w.n(), w.l()), (64, 12, 1), "no padding at L = 1");
    let cfg = KernelConfig::element_wise(ALayout::RowMajor, table_one::EW_DEFAULT_SHAPE, nm(2, 8));
    let bufs = w.host_buffers(&cfg).unwrap();
    let stored = &w.weight().indices;
    assert_eq!(bufs.indices, HostIndices::Bytes(stored));
    let kept_rows = k / 8 * 2;
    assert_eq!(
        bufs.indices.len(),
        kept_rows * n,
        "one index per element of B'"
    );
    assert_eq!(bufs.indices.device_bytes(), kept_rows * n, "a byte each");
    assert!((0..bufs.indices.len()).all(|i| bufs.indices.get(i).unwrap() < 8));
    assert!(bufs.col_info.is_none());
    assert_eq!(bufs.values, w.weight().values.as_slice());
    // The vector-wise families keep i32 indices: four bytes each.
    let vector = PreparedWeight::from_dense_kn(&dense, k, n, nm(2, 8), 4).unwrap();
    let tiled = table_one::default_config(&vector.problem(64).unwrap(), &h100()).unwrap();
    let wide = vector.host_buffers(&tiled).unwrap();
    assert!(matches!(wide.indices, HostIndices::Wide(_)));
    assert_eq!(wide.indices.device_bytes(), 4 * wide.indices.len());
    // The report's least traffic counts the same byte per index.
    let p = w.problem(16).unwrap();
    assert_eq!(MinBytes::of(&p).indices, (kept_rows * n) as u64);
}

#[test]
fn a_shapes_file_with_l1_tunes_on_the_model_and_reports_element_wise_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let shapes = dir.path().join("ew.yaml");
    fs::write(
        &shapes,
        "defaults: { m: [16, 256], sparsity: [\"4:32\", \"16:32\"], L: 1, a_layout: [row, col] }\n\
         layers:\n  - { model: x, name: q, n: 1000, k: 4096 }\n",
    )
    .unwrap();
    let db = dir.path().join("ew.sqlite");
    nmtune()
        .args(["--gpu", "h100", "--backend", "model", "--quiet", "--shapes"])
        .arg(&shapes)
        .arg("--db")
        .arg(&db)
        .assert()
        .success();
    let rows = report_json(&db);
    assert_eq!(rows.len(), 8);
    for row in &rows {
        assert_eq!(row["l"], 1);
        // The model picks the decode family at m = 16, the tiles at 256.
        let decode = row["m"] == 16;
        let (token, copy) = match (row["a_layout"].as_str().unwrap(), decode) {
            ("row", false) => ("_ewtrans_", "ewtrans"),
            ("row", true) => ("_ewdrow_", "ewdrow"),
            (_, false) => ("_ewcol_", "ewcol"),
            (_, true) => ("_ewdcol_", "ewdcol"),
        };
        assert!(row["kernel"].as_str().unwrap().contains(token), "{row}");
        assert_eq!(row["config"]["a_copy"], copy);
        assert_eq!(row["source"], "model");
        assert!(row["median_us"].as_f64().unwrap() > 0.0);
        let p = Problem::new(
            row["m"].as_u64().unwrap() as usize,
            1000,
            4096,
            NmPattern::parse_explicit(row["nm"].as_str().unwrap()).unwrap(),
            1,
        )
        .unwrap();
        assert_eq!(row["min_bytes"].as_u64().unwrap(), MinBytes::of(&p).total());
    }
    // The lookup answers an untuned m of the same weight with an element-wise kernel.
    let out = nmtune()
        .args([
            "lookup", "--gpu", "h100", "--m", "100", "--n", "1000", "--k", "4096",
        ])
        .args(["--nm", "4:32", "--l", "1", "--format", "json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        answer["kernel"].as_str().unwrap().contains("_ewtrans_"),
        "{answer}"
    );
    assert_eq!(answer["rule"], "nearest_m");
    // L = 2 has no family: one line, nothing stored.
    let bad = dir.path().join("l2.yaml");
    fs::write(
        &bad,
        "defaults: { m: [16], sparsity: [\"4:32\"], L: 2 }\nlayers:\n  - { model: x, name: q, n: 1000, k: 4096 }\n",
    )
    .unwrap();
    let bad_db = dir.path().join("l2.sqlite");
    nmtune()
        .args(["--gpu", "h100", "--backend", "model", "--shapes"])
        .arg(&bad)
        .arg("--db")
        .arg(&bad_db)
        .assert()
        .code(1)
        .stderr(one_line_error("or 1 for the element-wise kernels"));
    assert!(!bad_db.exists());
}

#[test]
fn the_committed_element_wise_shapes_file_loads() {
    let set = nmtune::shapes::load(std::path::Path::new("shapes/ew.yaml")).unwrap();
    assert_eq!(set.entries.len(), 42);
    assert!(set.entries.iter().all(|e| e.problem.l == 1));
}

#[test]
fn the_element_wise_decode_register_estimate_rejects_the_shapes_that_spilled() {
    let gpu = h100();
    let decode = |layout, m_s, shape| KernelConfig::decode(layout, m_s, shape, nm(8, 32), 1);
    // ptxas spilled these in the first tuning (docs/perf-log.md, session 15) ...
    for (m_s, shape) in [
        (4, (32, 8, 4, 16)),
        (1, (128, 8, 8, 16)),
        (4, (32, 4, 8, 16)),
    ] {
        let cfg = decode(ALayout::RowMajor, m_s, shape);
        assert!(reason_on(cfg, &gpu).contains("registers"), "{cfg}");
    }
    // ... and kept these without spilling: the winners of most problems.
    for (layout, m_s, shape) in [
        (ALayout::RowMajor, 1, (32, 8, 4, 16)),
        (ALayout::RowMajor, 4, (32, 8, 4, 8)),
        (ALayout::ColMajor, 4, (128, 8, 4, 16)),
    ] {
        validate(&decode(layout, m_s, shape), &gpu).unwrap();
    }
}
