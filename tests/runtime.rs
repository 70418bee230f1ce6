//! The runtime API: every lookup rule, source preference, stale and missing databases,
//! weight preparation round trips, and (where there is a GPU) SparseLinear against the CPU
//! reference. Template checksums are read from this build, never hard-coded.

mod common;

use nmtune::codegen::{templates_checksum, validate, ACopy, KernelConfig, WarpLayout};
use nmtune::db::{Database, Measurement, Source};
use nmtune::format::{self, CompressedWeight};
use nmtune::gpu::GpuProfile;
use nmtune::kernels::table_one;
use nmtune::problem::{ALayout, Dtype, NmPattern, Problem, ProblemError};
use nmtune::runtime::{Lookup, PreparedWeight, Rule, RuntimeError};
use nmtune::tuner::search;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

// ---------------------------------------------------------------- log capture

/// Every log record of this test binary; tests pick theirs out by the path they name.
static LOGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, meta: &log::Metadata) -> bool {
        meta.level() <= log::Level::Warn
    }
    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            LOGS.lock().unwrap().push(record.args().to_string());
        }
    }
    fn flush(&self) {}
}

fn capture_logs() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        log::set_logger(&Capture).unwrap();
        log::set_max_level(log::LevelFilter::Warn);
    });
}

/// Warnings that mention `needle` (a temp path unique to one test).
fn warnings_about(needle: &Path) -> Vec<String> {
    let needle = needle.display().to_string();
    LOGS.lock()
        .unwrap()
        .iter()
        .filter(|w| w.contains(&needle))
        .cloned()
        .collect()
}

// ---------------------------------------------------------------- crafted databases

const GPU: &str = "h200";

fn h200() -> GpuProfile {
    GpuProfile::builtin(GPU).unwrap()
}

fn nm(n: u32, m: u32) -> NmPattern {
    NmPattern::new(n, m).unwrap()
}

fn problem(m: usize, n: usize, k: usize, pattern: NmPattern) -> Problem {
    Problem::new(m, n, k, pattern, 32).unwrap()
}

/// A valid H200 configuration for an L = 32 problem; `m_s` tells entries apart.
fn config(m_s: u32, pattern: NmPattern) -> KernelConfig {
    let cfg = KernelConfig {
        a_copy: ACopy::Row4,
        m_s,
        n_s: 128,
        k_s: 64,
        m_t: 8,
        n_t: 8,
        warp: WarpLayout::new(4, 8),
        nm: pattern,
        l: 32,
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
    validate(&cfg, &h200()).unwrap();
    cfg
}

fn row(p: Problem, cfg: KernelConfig, source: Source, median_us: f64) -> Measurement {
    common::timed_row(p, cfg, source, median_us)
}

fn stale(mut m: Measurement) -> Measurement {
    m.template_checksum = format!("not-{}", templates_checksum(&m.problem));
    m
}

/// A fresh database holding `rows`, in a temp folder that lives as long as the guard.
fn db_with(rows: &[Measurement]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tuned.sqlite");
    let db = Database::open(&path).unwrap();
    for r in rows {
        db.record(r).unwrap();
    }
    drop(db);
    (dir, path)
}

// ---------------------------------------------------------------- lookup rules

#[test]
fn exact_match_returns_the_stored_entry() {
    let p = problem(256, 4096, 4096, nm(8, 32));
    let (_dir, path) = db_with(&[
        row(p, config(64, p.nm), Source::Measured, 40.0),
        row(
            p.with_m(1024).unwrap(),
            config(128, p.nm),
            Source::Measured,
            90.0,
        ),
    ]);
    let lookup = Lookup::open(&path, GPU).unwrap();
    let choice = lookup.lookup(&p).unwrap();
    assert_eq!(choice.rule, Rule::Exact);
    assert_eq!(choice.config, config(64, p.nm));
    assert_eq!(choice.source, Some(Source::Measured));
    assert_eq!(
        (choice.median_us, choice.cublas_us),
        (Some(40.0), Some(80.0))
    );
    assert_eq!(lookup.stats().problems, 2);
}

#[test]
fn an_untuned_m_borrows_from_one_of_its_two_tuned_neighbours() {
    let p = problem(256, 4096, 4096, nm(8, 32));
    let stored = [(256, 32, 40.0), (1024, 64, 90.0), (4096, 128, 300.0)];
    let rows: Vec<_> = stored
        .iter()
        .map(|&(m, m_s, us)| {
            row(
                p.with_m(m).unwrap(),
                config(m_s, p.nm),
                Source::Measured,
                us,
            )
        })
        .collect();
    let (_dir, path) = db_with(&rows);
    let lookup = Lookup::open(&path, GPU).unwrap();
    let at = |m: usize| lookup.lookup(&p.with_m(m).unwrap()).unwrap();
    // A decode problem never borrows a kernel tuned at m = 256: the decode default answers.
    let decode = at(1);
    assert_eq!(decode.rule, Rule::Default);
    assert!(decode.config.a_copy.is_direct(), "{}", decode.config.name());
    for (m, neighbours) in [
        (300, &[256, 1024][..]),
        (600, &[256, 1024]),
        (3000, &[1024, 4096]),
        (20, &[256]),
        (20_000, &[4096]),
    ] {
        let choice = at(m);
        let Rule::NearestM { from_m } = choice.rule else {
            panic!("m = {m}: {:?}", choice.rule)
        };
        assert!(
            neighbours.contains(&from_m),
            "m = {m} borrowed from {from_m}"
        );
        // The entry's kernel (its split-K may change with m) and the entry's stored times.
        let &(_, m_s, us) = stored.iter().find(|s| s.0 == from_m).unwrap();
        let unsplit = KernelConfig {
            split_k: 1,
            ..choice.config
        };
        assert_eq!(unsplit, config(m_s, p.nm), "m = {m}");
        assert_eq!(choice.source, Some(Source::Measured));
        assert_eq!(
            choice.median_us,
            Some(us),
            "times are the entry's, at from_m"
        );
    }
}

#[test]
fn nearest_m_skips_kernels_invalid_for_the_requested_m() {
    // With m_s = 32 a grid of at most 65535 block rows covers m ≤ 2 097 120: the entry at
    // m = 1e6 is nearest to m = 4e6 by ratio but cannot run it, so the m = 256 entry
    // (m_s = 128) is borrowed instead.
    let p = problem(256, 256, 256, nm(8, 32));
    let big = p.with_m(1_000_000).unwrap();
    let (_dir, path) = db_with(&[
        row(p, config(128, p.nm), Source::Measured, 10.0),
        row(big, config(32, p.nm), Source::Measured, 5000.0),
    ]);
    let lookup = Lookup::open(&path, GPU).unwrap();
    let near = lookup.lookup(&p.with_m(1_500_000).unwrap()).unwrap();
    assert_eq!(near.rule, Rule::NearestM { from_m: 1_000_000 });
    let far = lookup.lookup(&p.with_m(4_000_000).unwrap()).unwrap();
    assert_eq!(far.rule, Rule::NearestM { from_m: 256 });
    assert_eq!(far.config.m_s, 128);
}

#[test]
fn unknown_weights_get_the_table_one_default_per_size_class() {
    let (_dir, path) = db_with(&[row(
        problem(256, 4096, 4096, nm(8, 32)),
        config(64, nm(8, 32)),
        Source::Measured,
        40.0,
    )]);
    let lookup = Lookup::open(&path, GPU).unwrap();
    // Small, medium and large by the paper's Table II examples.
    for (m, n, tile) in [
        (64, 256, (32, 32)),
        (1024, 1024, (32, 64)),
        (4096, 4096, (64, 128)),
    ] {
        let p = problem(m, n, 2048, nm(8, 32));
        let choice = lookup.lookup(&p).unwrap();
        assert_eq!(choice.rule, Rule::Default);
        assert_eq!((choice.source, choice.median_us), (None, None));
        assert_eq!((choice.config.m_s, choice.config.n_s), tile, "{p}");
        let class = table_one::class_of(&p);
        assert_eq!(Some(choice.config), table_one::config(class, &p, &h200()));
    }
    // Another sparsity of a tuned (n, k) is another weight: default too.
    let other = problem(256, 4096, 4096, nm(4, 32));
    assert_eq!(lookup.lookup(&other).unwrap().rule, Rule::Default);
}

#[test]
fn every_supported_problem_gets_a_kernel() {
    let lookup = Lookup::defaults_only(h200());
    let patterns = [(1, 4, 4), (2, 4, 8), (4, 8, 16), (8, 32, 32), (16, 32, 64)];
    let patterns = patterns.into_iter().chain([(16, 128, 128), (32, 32, 32)]);
    for (n_keep, window, l) in patterns {
        for m in [1, 7, 37, 300, 4096, 50_000] {
            let k = 4 * window as usize * 8;
            let p = Problem::new(m, 3 * l * 4, k, nm(n_keep, window), l).unwrap();
            let choice = lookup.lookup(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
            validate(&choice.config, &h200()).unwrap();
            nmtune::codegen::validate_for_problem(&choice.config, &p).unwrap();
        }
    }
}

#[test]
fn a_problem_no_template_supports_is_an_error_naming_the_rule() {
    let lookup = Lookup::defaults_only(h200());
    let p = Problem::new(64, 96, 64, nm(8, 32), 12).unwrap();
    match lookup.lookup(&p) {
        Err(RuntimeError::Unsupported { reason, .. }) => {
            assert!(reason.contains("L=12"), "{reason}")
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

// ---------------------------------------------------------------- sources and staleness

#[test]
fn measured_is_preferred_over_replay_and_model_for_the_same_problem() {
    let p = problem(512, 2048, 2048, nm(16, 32));
    let q = problem(1024, 2048, 2048, nm(16, 32));
    let (_dir, path) = db_with(&[
        row(p, config(32, p.nm), Source::Model, 1.0),
        row(p, config(64, p.nm), Source::Replay, 5.0),
        row(p, config(128, p.nm), Source::Measured, 100.0),
        row(q, config(32, q.nm), Source::Model, 1.0),
        row(q, config(64, q.nm), Source::Replay, 50.0),
    ]);
    let lookup = Lookup::open(&path, GPU).unwrap();
    let best = lookup.lookup(&p).unwrap();
    assert_eq!(
        (best.config.m_s, best.source),
        (128, Some(Source::Measured))
    );
    let replay = lookup.lookup(&q).unwrap();
    assert_eq!(
        (replay.config.m_s, replay.source),
        (64, Some(Source::Replay))
    );
}

#[test]
fn model_entries_serve_when_nothing_was_measured() {
    let p = problem(256, 2048, 2048, nm(12, 32));
    let (_dir, path) = db_with(&[row(p, config(64, p.nm), Source::Model, 7.0)]);
    let choice = Lookup::open(&path, GPU).unwrap().lookup(&p).unwrap();
    assert_eq!(
        (choice.rule, choice.source),
        (Rule::Exact, Some(Source::Model))
    );
}

/// A database an older build tuned: its `best` table names a timing of since-changed
/// templates although the database holds a current timing of the problem too.
#[test]
fn a_current_timing_stands_in_for_a_best_an_older_build_chose() {
    let p = problem(256, 4096, 4096, nm(8, 32));
    let mut changed = stale(row(p, config(128, p.nm), Source::Measured, 10.0));
    changed.kernel_checksum = Some("older".into());
    let current = row(p, config(64, p.nm), Source::Measured, 40.0);
    let (_dir, path) = db_with(&[changed, current]);
    common::point_best_at_fastest(&path);
    let db = Database::open_read_only(&path).unwrap();
    assert_eq!(db.best_entries(None).unwrap()[0].config.m_s, 128);
    assert_eq!(db.serving_entries(None).unwrap()[0].config.m_s, 64);
    drop(db);
    // The runtime launches the current timing's kernel, and the report names the same entry.
    let lookup = Lookup::open(&path, GPU).unwrap();
    let choice = lookup.lookup(&p).unwrap();
    assert_eq!((choice.rule, choice.config.m_s), (Rule::Exact, 64));
    assert_eq!(lookup.stats().stale_ignored, 0);
    let report = common::report_json(&path);
    assert_eq!(report.len(), 1);
    assert_eq!(report[0]["kernel"], config(64, p.nm).name());
    assert_eq!(report[0]["current_templates"], true);
}

#[test]
fn stale_template_checksums_are_ignored_with_one_warning() {
    capture_logs();
    let p = problem(256, 4096, 4096, nm(8, 32));
    let only_stale = problem(256, 2048, 2048, nm(8, 32));
    let stale_timing = problem(256, 1024, 1024, nm(8, 32));
    let (_dir, path) = db_with(&[
        // This build's templates win over faster timings of other templates...
        stale(row(p, config(128, p.nm), Source::Measured, 1.0)),
        row(p, config(64, p.nm), Source::Measured, 50.0),
        stale(row(only_stale, config(128, p.nm), Source::Measured, 1.0)),
        stale(row(
            only_stale.with_m(512).unwrap(),
            config(64, p.nm),
            Source::Measured,
            2.0,
        )),
        // ... but not over a more trusted source: a timing of other templates stays the best
        // entry (as `nmtune report` shows it) and is never launched.
        stale(row(stale_timing, config(128, p.nm), Source::Measured, 3.0)),
        row(stale_timing, config(64, p.nm), Source::Model, 1.0),
    ]);
    let lookup = Lookup::open(&path, GPU).unwrap();
    assert_eq!(lookup.stats().stale_ignored, 3);
    assert_eq!(lookup.stats().problems, 1);
    let current = lookup.lookup(&p).unwrap();
    assert_eq!(
        (current.config.m_s, current.source, current.rule),
        (64, Some(Source::Measured), Rule::Exact)
    );
    assert_eq!(lookup.lookup(&only_stale).unwrap().rule, Rule::Default);
    assert_eq!(lookup.lookup(&stale_timing).unwrap().rule, Rule::Default);
    let warnings = warnings_about(&path);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("other kernel templates"),
        "{}",
        warnings[0]
    );
}

#[test]
fn entries_invalid_on_the_gpu_are_never_used() {
    capture_logs();
    let p = problem(256, 4096, 4096, nm(8, 32));
    let mut huge = config(128, p.nm);
    (huge.k_s, huge.stages) = (256, 4);
    assert!(
        validate(&huge, &h200()).is_err(),
        "needs more shared memory than an H200 has"
    );
    let (_dir, path) = db_with(&[row(p, huge, Source::Measured, 1.0)]);
    let lookup = Lookup::open(&path, GPU).unwrap();
    assert_eq!(lookup.stats().invalid_ignored, 1);
    assert_eq!(lookup.lookup(&p).unwrap().rule, Rule::Default);
    let warnings = warnings_about(&path);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("not valid on h200"), "{}", warnings[0]);
}

#[test]
fn empty_database_gives_defaults_with_one_warning() {
    capture_logs();
    let (_dir, path) = db_with(&[]);
    let lookup = Lookup::open(&path, GPU).unwrap();
    let p = problem(256, 4096, 4096, nm(8, 32));
    assert_eq!(lookup.lookup(&p).unwrap().rule, Rule::Default);
    assert_eq!(warnings_about(&path).len(), 1);
    // A zero-byte file is an empty database too.
    let dir = tempfile::tempdir().unwrap();
    let blank = dir.path().join("blank.sqlite");
    std::fs::write(&blank, b"").unwrap();
    assert_eq!(
        Lookup::open(&blank, GPU).unwrap().lookup(&p).unwrap().rule,
        Rule::Default
    );
    assert_eq!(warnings_about(&blank).len(), 1);
    assert_eq!(std::fs::read(&blank).unwrap(), b"", "left untouched");
}

#[test]
fn missing_database_gives_defaults_with_one_warning() {
    capture_logs();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nowhere.sqlite");
    let lookup = Lookup::open(&path, "H200").unwrap();
    assert_eq!(lookup.gpu().name, "h200");
    let p = problem(300, 4096, 4096, nm(8, 32));
    assert_eq!(lookup.lookup(&p).unwrap().rule, Rule::Default);
    assert_eq!(warnings_about(&path).len(), 1);
    assert!(!path.exists(), "a lookup never creates a database");
}

#[test]
fn other_gpus_entries_are_not_used() {
    let p = problem(256, 4096, 4096, nm(8, 32));
    let mut other = row(p, config(64, p.nm), Source::Measured, 40.0);
    other.gpu = "h100".into();
    let (_dir, path) = db_with(&[other]);
    assert_eq!(
        Lookup::open(&path, GPU).unwrap().lookup(&p).unwrap().rule,
        Rule::Default
    );
    let h100 = Lookup::open(&path, "h100").unwrap();
    assert_eq!(h100.lookup(&p).unwrap().rule, Rule::Exact);
}

#[test]
fn bad_files_and_unknown_gpus_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.sqlite");
    std::fs::write(&notes, "not a database\n").unwrap();
    assert!(matches!(
        Lookup::open(&notes, GPU),
        Err(RuntimeError::Db(nmtune::db::DbError::NotNmtune { .. }))
    ));
    let missing = dir.path().join("missing.sqlite");
    let err = Lookup::open(&missing, "v100").unwrap_err();
    assert!(matches!(err, RuntimeError::UnknownGpu { .. }), "{err}");
}

#[test]
fn committed_h200_database() {
    let path = Path::new("tuning-db/h200.sqlite");
    let db = Database::open_read_only(path).unwrap();
    let rows = db.measurements(Some(GPU)).unwrap();
    let current = rows.iter().any(nmtune::db::is_current);
    let exact = problem(256, 2048, 2048, nm(4, 32));
    let stored = db.best_for(GPU, &exact).unwrap().unwrap();
    drop(db);
    let lookup = Lookup::open(path, GPU).unwrap();
    let choice = lookup.lookup(&exact).unwrap();
    let near = lookup.lookup(&problem(300, 4096, 4096, nm(8, 32))).unwrap();
    if current {
        // The 400 problems of shapes/llama.yaml and the 128 of shapes/llama7b-between.yaml,
        // for both A layouts.
        assert_eq!(lookup.stats().problems, 1056);
        let col_choice = lookup.lookup(&col(exact)).unwrap();
        assert_eq!(col_choice.rule, Rule::Exact);
        assert_eq!(col_choice.config.a_layout(), ALayout::ColMajor);
        assert_eq!(choice.rule, Rule::Exact);
        assert_eq!(choice.config, stored.config);
        assert_eq!(choice.median_us, stored.median_us);
        // Either neighbour of m = 300 (256 and, from the denser Llama-7B grid, 320) may win:
        // the lower estimate does (the rule's unit tests pin which); what the committed table
        // must give is a borrowed entry, not a default.
        assert!(
            matches!(near.rule, Rule::NearestM { from_m: 256 | 320 }),
            "{:?}",
            near.rule
        );
    } else {
        eprintln!("NOTE: tuning-db/h200.sqlite predates this build's templates: checking that it is ignored");
        assert!(lookup.stats().stale_ignored > 0);
        assert_eq!((choice.rule, near.rule), (Rule::Default, Rule::Default));
    }
}

// ---------------------------------------------------------------- A layouts

/// `config(m_s, pattern)` on the column-major copy path.
fn col_config(m_s: u32, pattern: NmPattern) -> KernelConfig {
    let cfg = KernelConfig {
        a_copy: ACopy::Col16,
        ..config(m_s, pattern)
    };
    validate(&cfg, &h200()).unwrap();
    cfg
}

fn col(p: Problem) -> Problem {
    p.with_layout(ALayout::ColMajor).unwrap()
}

#[test]
fn lookups_never_cross_layouts() {
    // One weight: row-major tuned at m = 256 and 4096, column-major at m = 1024 only.
    let p = problem(256, 4096, 4096, nm(8, 32));
    let at = |m: usize| p.with_m(m).unwrap();
    let (_dir, path) = db_with(&[
        row(at(256), config(64, p.nm), Source::Measured, 40.0),
        row(at(4096), config(128, p.nm), Source::Measured, 400.0),
        row(col(at(1024)), col_config(32, p.nm), Source::Measured, 90.0),
    ]);
    let lookup = Lookup::open(&path, GPU).unwrap();
    assert_eq!(lookup.stats().problems, 3);
    let answer = |q: Problem| {
        let choice = lookup.lookup(&q).unwrap();
        assert_eq!(choice.config.a_layout(), q.a_layout, "{q}: {choice:?}");
        nmtune::codegen::validate_for_problem(&choice.config, &q).unwrap();
        choice
    };
    // Exact in each layout.
    assert_eq!(answer(col(at(1024))).rule, Rule::Exact);
    assert_eq!(answer(col(at(1024))).config, col_config(32, p.nm));
    assert_eq!(answer(at(256)).rule, Rule::Exact);
    // Nearest m looks only at the problem's layout: column-major 256 and 4096 borrow from
    // 1024 (its kernel, with the split-K the model prefers there), though row-major entries
    // sit at those very m; row-major 1024 never borrows the column-major entry at its own m.
    let unsplit = |c: KernelConfig| KernelConfig { split_k: 1, ..c };
    for m in [256, 4096] {
        let choice = answer(col(at(m)));
        assert_eq!(choice.rule, Rule::NearestM { from_m: 1024 }, "m={m}");
        assert_eq!(unsplit(choice.config), col_config(32, p.nm));
    }
    let choice = answer(at(1024));
    let Rule::NearestM { from_m } = choice.rule else {
        panic!("{:?}", choice.rule)
    };
    let tuned = if from_m == 256 {
        config(64, p.nm)
    } else {
        config(128, p.nm)
    };
    assert!([256, 4096].contains(&from_m));
    assert_eq!(unsplit(choice.config), tuned);
    // A weight tuned only row-major: column-major gets the Table I default on the 16-byte
    // column path, row-major its entry.
    let (_dir2, path2) = db_with(&[row(p, config(64, p.nm), Source::Measured, 40.0)]);
    let lookup = Lookup::open(&path2, GPU).unwrap();
    let default = lookup.lookup(&col(p)).unwrap();
    assert_eq!(default.rule, Rule::Default);
    assert_eq!(default.config.a_copy, ACopy::Col16);
    let class = table_one::class_of(&p);
    assert_eq!(
        Some(default.config),
        table_one::config(class, &col(p), &h200())
    );
    assert_eq!(lookup.lookup(&p).unwrap().rule, Rule::Exact);
}

#[test]
fn entries_whose_kernel_takes_the_other_layout_are_never_used() {
    // A row stored under a column-major problem with a row-major kernel (a hand-edited or
    // foreign database): dropped as invalid, the problem gets its default.
    let p = col(problem(256, 4096, 4096, nm(8, 32)));
    let crossed = row(p, config(64, p.nm), Source::Measured, 1.0);
    let lookup = Lookup::from_measurements(h200(), [crossed]);
    assert_eq!(lookup.stats().invalid_ignored, 1);
    let choice = lookup.lookup(&p).unwrap();
    assert_eq!(
        (choice.rule, choice.config.a_copy),
        (Rule::Default, ACopy::Col16)
    );
}

#[test]
fn defaults_take_the_copy_path_of_the_layout() {
    let lookup = Lookup::defaults_only(h200());
    for (n_keep, window, l) in [
        (2, 4, 8),
        (4, 8, 16),
        (8, 32, 32),
        (16, 32, 64),
        (4, 32, 32),
    ] {
        for m in [4, 8, 36, 300, 4096, 50_000] {
            let k = 4 * window as usize * 8;
            let p = Problem::new(m, 3 * l * 4, k, nm(n_keep, window), l).unwrap();
            for layout in ALayout::ALL {
                let q = p.with_layout(layout).unwrap();
                let choice = lookup.lookup(&q).unwrap_or_else(|e| panic!("{q}: {e}"));
                assert_eq!(choice.rule, Rule::Default);
                // Decode-sized problems get the decode family's path of the layout.
                let want = match (layout, q.is_decode()) {
                    (ALayout::ColMajor, false) => ACopy::Col16,
                    (ALayout::RowMajor, false) => ACopy::Row4,
                    (ALayout::ColMajor, true) => ACopy::DirectCol,
                    (ALayout::RowMajor, true) => ACopy::DirectRow,
                };
                assert_eq!(choice.config.a_copy, want, "{q}");
                nmtune::codegen::validate_for_problem(&choice.config, &q).unwrap();
            }
        }
    }
}

/// A template change to one family leaves the timings of another family's kernels valid: a
/// row whose search is stale (template checksum of other templates) but whose kernel's own
/// family checksum is current is launched; one whose family changed too is not.
#[test]
fn a_row_stays_current_while_its_own_family_is_unchanged() {
    capture_logs();
    let decode = problem(1, 4096, 4096, nm(8, 32));
    let (_empty_dir, empty) = db_with(&[]);
    let cfg = Lookup::open(&empty, GPU)
        .unwrap()
        .lookup(&decode)
        .unwrap()
        .config;
    assert_eq!(cfg.a_copy, ACopy::DirectRow);
    let with_family = |family_checksum: &str| {
        let mut m = stale(row(decode, cfg, Source::Measured, 7.0));
        m.kernel_checksum = Some(family_checksum.to_string());
        m
    };
    let own = nmtune::codegen::family_checksum(cfg.family());
    let (_dir, path) = db_with(&[with_family(own)]);
    let lookup = Lookup::open(&path, GPU).unwrap();
    assert_eq!(lookup.stats().stale_ignored, 0);
    let choice = lookup.lookup(&decode).unwrap();
    assert_eq!((choice.rule, choice.median_us), (Rule::Exact, Some(7.0)));

    let (_dir2, path2) = db_with(&[with_family("an-earlier-decode-template")]);
    let lookup = Lookup::open(&path2, GPU).unwrap();
    assert_eq!(lookup.stats().stale_ignored, 1);
    assert_eq!(lookup.lookup(&decode).unwrap().rule, Rule::Default);
}

// ---------------------------------------------------------------- weight preparation

/// Uniform in ±[0.5, 1.5): never zero, so a kept value is never mistaken for a pruned one.
fn nonzero(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..len)
        .map(|_| {
            let v: f32 = rng.gen_range(0.5..1.5);
            if rng.gen_bool(0.5) {
                v
            } else {
                -v
            }
        })
        .collect()
}

/// The pruned k×n weight, computed independently of src/format: per window of M rows and
/// group of L columns, the N rows of largest Σ|v| over the group keep their values.
fn pruned(dense: &[f32], k: usize, n: usize, pattern: NmPattern, l: usize) -> Vec<f32> {
    let (window, keep) = (pattern.m as usize, pattern.n as usize);
    let mut out = vec![0.0; k * n];
    for w0 in (0..k).step_by(window) {
        for c0 in (0..n).step_by(l) {
            let score =
                |r: usize| -> f32 { (c0..(c0 + l).min(n)).map(|c| dense[r * n + c].abs()).sum() };
            let mut rows: Vec<usize> = (w0..(w0 + window).min(k)).collect();
            rows.sort_by(|&a, &b| score(b).total_cmp(&score(a)).then(a.cmp(&b)));
            for &r in rows.iter().take(keep) {
                for c in c0..(c0 + l).min(n) {
                    out[r * n + c] = dense[r * n + c];
                }
            }
        }
    }
    out
}

/// Rebuild the dense weight from the buffers one configuration reads, resolving packed
/// slots through the column lists.
fn dense_from_buffers(w: &PreparedWeight, cfg: &KernelConfig) -> Vec<f32> {
    let bufs = w.host_buffers(cfg).unwrap();
    let (k, n, l) = (w.k(), w.n(), w.l());
    let (keep, window, q) = (w.nm().n as usize, w.nm().m as usize, n / l);
    let mut dense = vec![0.0; k * n];
    for u in 0..k / window * keep {
        for j in 0..q {
            let slot = bufs.indices.get(u * q + j).unwrap();
            let row = match &bufs.col_info {
                None => u / keep * window + slot,
                Some(info) => {
                    let (kt, nt) = (u / (cfg.w_s() as usize), j * l / info.n_s);
                    info.columns[(kt * info.n_tiles + nt) * info.k_s + slot] as usize
                }
            };
            for c in j * l..(j + 1) * l {
                dense[row * n + c] = bufs.values[u * n + c];
            }
        }
    }
    dense
}

fn tiling(pattern: NmPattern, l: u32, packing: bool) -> KernelConfig {
    KernelConfig {
        a_copy: ACopy::Row4,
        m_s: 32,
        n_s: 64,
        k_s: pattern.m.max(32),
        m_t: 4,
        n_t: 4,
        warp: WarpLayout::new(8, 4),
        nm: pattern,
        l,
        packing,
        stages: 2,
        min_blocks: 1,
        split_k: 1,
        row_chunk: 0,
        stream_k: false,
        tma: false,
        cluster_sum: false,
        dtype: Dtype::F32,
    }
}

fn transpose(kn: &[f32], k: usize, n: usize) -> Vec<f32> {
    let mut nk = vec![0.0; k * n];
    for r in 0..k {
        for c in 0..n {
            nk[c * k + r] = kn[r * n + c];
        }
    }
    nk
}

#[test]
fn dense_weights_round_trip_through_prepared_buffers_in_both_layouts() {
    for (seed, (k, n, n_keep, window, l)) in [
        (256, 192, 8, 32, 32),
        (64, 96, 2, 4, 8),
        (128, 128, 4, 16, 16),
        (96, 64, 1, 8, 4),
    ]
    .into_iter()
    .enumerate()
    {
        let pattern = nm(n_keep, window);
        let dense = nonzero(k * n, seed as u64);
        let want = pruned(&dense, k, n, pattern, l);
        let kn = PreparedWeight::from_dense_kn(&dense, k, n, pattern, l).unwrap();
        let nk = PreparedWeight::from_dense_nk(&transpose(&dense, k, n), n, k, pattern, l).unwrap();
        assert_eq!(kn, nk, "k×n and n×k layouts give the same weight");
        assert!(!kn.padding().is_padded());
        for packing in [false, true] {
            let cfg = tiling(pattern, l as u32, packing);
            assert_eq!(
                dense_from_buffers(&kn, &cfg),
                want,
                "{k}×{n} {pattern} L={l} packing={packing}"
            );
        }
        let kept = want.iter().filter(|v| **v != 0.0).count();
        assert_eq!(kept * window as usize, k * n * n_keep as usize);
    }
}

#[test]
fn compressed_pairs_round_trip_and_are_validated() {
    let pattern = nm(8, 32);
    let dense = nonzero(128 * 64, 9);
    let from_dense = PreparedWeight::from_dense_kn(&dense, 128, 64, pattern, 32).unwrap();
    let w: CompressedWeight = from_dense.weight().clone();
    let from_parts =
        PreparedWeight::from_parts(w.k, w.n, w.nm, w.l, w.values.clone(), w.indices.clone())
            .unwrap();
    assert_eq!(from_parts, from_dense);
    assert_eq!(
        format::decompress(from_parts.weight()),
        pruned(&dense, 128, 64, pattern, 32)
    );
    let mut broken = w.clone();
    broken.indices[0] = 40; // not below M = 32
    assert!(matches!(
        PreparedWeight::from_compressed(broken),
        Err(RuntimeError::Format(_))
    ));
    let short = PreparedWeight::from_parts(w.k, w.n, w.nm, w.l, vec![1.0; 3], w.indices);
    assert!(short.is_err());
}

#[test]
fn padding_is_reported_and_padded_area_is_zero() {
    let (k, n, pattern, l) = (100, 90, nm(2, 4), 8);
    let dense = nonzero(k * n, 3);
    let w = PreparedWeight::from_dense_kn(&dense, k, n, pattern, l).unwrap();
    let pad = w.padding();
    assert!(pad.is_padded());
    assert_eq!(
        (pad.k_padded, pad.n_padded, w.k(), w.n()),
        (100, 96, 100, 96)
    );
    let got = dense_from_buffers(&w, &tiling(pattern, l as u32, false));
    let want = pruned(&dense, k, n, pattern, l);
    for r in 0..k {
        assert_eq!(&got[r * 96..r * 96 + n], &want[r * n..(r + 1) * n]);
        assert!(got[r * 96 + n..(r + 1) * 96].iter().all(|v| *v == 0.0));
    }
    assert_eq!(w.problem(3).unwrap().n, 96);
}

// ---------------------------------------------------------------- on the GPU

use nmtune::gpu::{device, Gpu};
use nmtune::reference;
use nmtune::runtime::{Runtime, SparseLinear};

fn gpu_or_skip() -> Option<Gpu> {
    if !device::driver_present() {
        eprintln!("SKIPPED: runtime GPU test (no NVIDIA driver on this machine)");
        return None;
    }
    match Gpu::open(0) {
        Ok(gpu) => Some(gpu),
        Err(e) => {
            eprintln!("SKIPPED: runtime GPU test ({e})");
            None
        }
    }
}

/// The committed database of the device (tuning-db/<gpu>.sqlite), defaults when none exists.
fn lookup_for(gpu: &Gpu) -> Lookup {
    let name = &gpu.profile().name;
    let path = PathBuf::from("tuning-db").join(format!("{name}.sqlite"));
    eprintln!("lookup table: {} for {name}", path.display());
    Lookup::open(&path, name).unwrap()
}

/// A runtime on the committed table of the device, with a test cubin cache.
fn tuned_runtime(gpu: &Gpu) -> std::sync::Arc<Runtime> {
    let cache = std::env::temp_dir().join("nmtune-runtime-test-cache");
    Runtime::with_cache_dir(lookup_for(gpu), &gpu.ctx, cache).unwrap()
}

/// One forward through SparseLinear against the CPU reference; returns (rule, rel error).
fn check_forward(
    gpu: &Gpu,
    layer: &mut SparseLinear,
    m: usize,
    (alpha, beta): (f32, f32),
    seed: u64,
) -> (Rule, f64) {
    let w = layer.weight().clone();
    let (k, n) = (w.k(), w.n());
    let a = nonzero(m * k, seed);
    let c0 = if beta == 0.0 {
        vec![f32::NAN; m * n]
    } else {
        nonzero(m * n, seed + 1)
    };
    // The reference takes row-major A; a column-major layer gets its transpose.
    let a_dev = match layer.layout() {
        ALayout::RowMajor => gpu.upload(&a).unwrap(),
        ALayout::ColMajor => gpu.upload(&transpose(&a, m, k)).unwrap(),
    };
    let mut c_dev = gpu.upload(&c0).unwrap();
    let choice = layer
        .forward(&gpu.stream, &a_dev, &mut c_dev, m, alpha, beta)
        .unwrap();
    assert_eq!(choice.config.a_layout(), layer.layout());
    let got = gpu.download(&c_dev).unwrap();
    let mut want = c0;
    reference::spmm(&a, m, w.weight(), alpha, beta, &mut want).unwrap();
    (choice.rule, reference::relative_error(&got, &want))
}

#[test]
fn gpu_sparse_linear_matches_the_cpu_reference() {
    let Some(gpu) = gpu_or_skip() else { return };
    let runtime = tuned_runtime(&gpu);
    // Tuned weights (packing + split-K at 4:32, non-packing at 8:32) and an untuned one.
    let weights = [
        (2048, 2048, nm(4, 32), 32),
        (2048, 2048, nm(8, 32), 32),
        (640, 512, nm(2, 8), 16),
    ];
    let mut rules = Vec::new();
    let mut failures = Vec::new();
    for (i, (n, k, pattern, l)) in weights.into_iter().enumerate() {
        let dense_nk = nonzero(n * k, 100 + i as u64);
        let w = PreparedWeight::from_dense_nk(&dense_nk, n, k, pattern, l).unwrap();
        let mut layer =
            SparseLinear::new(runtime.clone(), w, ALayout::RowMajor, &gpu.stream).unwrap();
        // m = 256 is tuned, 300 and 37 are not; 4096 after 256 grows the workspace.
        for (j, m) in [256, 300, 37, 4096].into_iter().enumerate() {
            let scale = if j % 2 == 0 { (1.25, -0.5) } else { (1.0, 0.0) };
            let (rule, err) = check_forward(&gpu, &mut layer, m, scale, (10 * i + j) as u64);
            let kernel = layer.choose(m).unwrap().config.name();
            eprintln!("{n}×{k} {pattern} L={l} m={m}: {rule}, {kernel}, rel error {err:.2e}");
            rules.push(rule);
            if err.is_nan() || err > 1e-5 {
                failures.push(format!("{n}×{k} {pattern} m={m} {kernel}: {err:.3e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(rules.contains(&Rule::Default));
    let tuned = runtime.lookup().stats().problems > 0;
    if tuned {
        assert!(rules.contains(&Rule::Exact));
        assert!(rules.iter().any(|r| matches!(r, Rule::NearestM { .. })));
    }
}

/// A 256×128 8:32 weight on a defaults-only runtime, taking A in `layout`.
fn small_layer(gpu: &Gpu, layout: ALayout) -> SparseLinear {
    let runtime = Runtime::new(Lookup::defaults_only(gpu.profile().clone()), &gpu.ctx).unwrap();
    let w = PreparedWeight::from_dense_kn(&nonzero(256 * 128, 1), 256, 128, nm(8, 32), 32).unwrap();
    SparseLinear::new(runtime, w, layout, &gpu.stream).unwrap()
}

#[test]
fn gpu_buffer_and_shape_mismatches_are_errors() {
    let Some(gpu) = gpu_or_skip() else { return };
    let mut layer = small_layer(&gpu, ALayout::RowMajor);
    assert_eq!(layer.layout(), ALayout::RowMajor);
    let a = gpu.alloc(64 * 256).unwrap();
    let mut c = gpu.alloc(64 * 128).unwrap();
    let too_many_rows = layer.forward(&gpu.stream, &a, &mut c, 65, 1.0, 0.0);
    assert!(
        matches!(too_many_rows, Err(RuntimeError::BufferTooSmall { .. })),
        "{too_many_rows:?}"
    );
    let no_rows = layer.forward(&gpu.stream, &a, &mut c, 0, 1.0, 0.0);
    assert!(
        matches!(no_rows, Err(RuntimeError::Problem(_))),
        "{no_rows:?}"
    );
    let mut wrong = layer.choose(64).unwrap().config;
    wrong.nm = nm(4, 32);
    let refused = layer.forward_with(&wrong, &gpu.stream, &a, &mut c, 64, 1.0, 0.0);
    assert!(
        matches!(refused, Err(RuntimeError::Codegen(_))),
        "{refused:?}"
    );
    assert!(layer.forward(&gpu.stream, &a, &mut c, 64, 1.0, 0.0).is_ok());
    gpu.synchronize().unwrap();
}

#[test]
fn gpu_column_major_sparse_linear_matches_the_cpu_reference() {
    let Some(gpu) = gpu_or_skip() else { return };
    let runtime = tuned_runtime(&gpu);
    let mut failures = Vec::new();
    for (i, (n, k, pattern, l)) in [
        (2048, 2048, nm(4, 32), 32),
        (2048, 2048, nm(16, 32), 32),
        (640, 512, nm(2, 8), 16),
    ]
    .into_iter()
    .enumerate()
    {
        let dense_nk = nonzero(n * k, 200 + i as u64);
        let w = PreparedWeight::from_dense_nk(&dense_nk, n, k, pattern, l).unwrap();
        let mut layer =
            SparseLinear::new(runtime.clone(), w, ALayout::ColMajor, &gpu.stream).unwrap();
        assert_eq!(layer.layout(), ALayout::ColMajor);
        // Tuned and untuned m, all multiples of 4 as column-major A needs; the edge tiles of
        // m = 36 and 300 too.
        for (j, m) in [256, 300, 36, 4096].into_iter().enumerate() {
            let scale = if j % 2 == 0 { (1.25, -0.5) } else { (1.0, 0.0) };
            let (rule, err) = check_forward(&gpu, &mut layer, m, scale, (10 * i + j) as u64);
            let kernel = layer.choose(m).unwrap().config.name();
            eprintln!("col {n}×{k} {pattern} L={l} m={m}: {rule}, {kernel}, rel error {err:.2e}");
            assert!(kernel.contains("_acol16_"), "{kernel}");
            if err.is_nan() || err > 1e-5 {
                failures.push(format!("col {n}×{k} {pattern} m={m} {kernel}: {err:.3e}"));
            }
        }
    }
    // The search's first column-major candidates (packing or not, split-K), through
    // forward_with, against the same reference.
    let p = Problem::new(256, 1024, 2048, nm(8, 32), 32)
        .unwrap()
        .with_layout(ALayout::ColMajor)
        .unwrap();
    let dense_nk = nonzero(p.n * p.k, 300);
    let w = PreparedWeight::from_dense_nk(&dense_nk, p.n, p.k, p.nm, p.l).unwrap();
    let mut layer = SparseLinear::new(runtime, w.clone(), ALayout::ColMajor, &gpu.stream).unwrap();
    let a = nonzero(p.m * p.k, 301);
    let a_dev = gpu.upload(&transpose(&a, p.m, p.k)).unwrap();
    let mut want = vec![0.0; p.m * p.n];
    reference::spmm(&a, p.m, w.weight(), 1.0, 0.0, &mut want).unwrap();
    for cfg in search::candidates(&p, gpu.profile(), search::Strategy::Pruned) {
        let mut c_dev = gpu.alloc(p.m * p.n).unwrap();
        layer
            .forward_with(&cfg, &gpu.stream, &a_dev, &mut c_dev, p.m, 1.0, 0.0)
            .unwrap();
        let err = reference::relative_error(&gpu.download(&c_dev).unwrap(), &want);
        eprintln!("col {p} {cfg}: rel error {err:.2e}");
        if err.is_nan() || err > 1e-5 {
            failures.push(format!("{p} {cfg}: {err:.3e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn gpu_layer_layouts_are_checked_never_transposed() {
    let Some(gpu) = gpu_or_skip() else { return };
    let mut layer = small_layer(&gpu, ALayout::ColMajor);
    let a = gpu.alloc(64 * 256).unwrap();
    let mut c = gpu.alloc(64 * 128).unwrap();
    // Column-major A needs m to be a multiple of 4.
    let odd = layer.forward(&gpu.stream, &a, &mut c, 62, 1.0, 0.0);
    assert!(
        matches!(
            odd,
            Err(RuntimeError::Problem(ProblemError::ColMajorRows { m: 62 }))
        ),
        "{odd:?}"
    );
    let too_many_rows = layer.forward(&gpu.stream, &a, &mut c, 68, 1.0, 0.0);
    let shown = too_many_rows.as_ref().map(|_| ()).unwrap_err().to_string();
    assert!(
        shown.contains("column-major") && shown.contains("_acol"),
        "{shown}"
    );
    // A kernel compiled for row-major A is refused, whatever else is right about it.
    let chosen = layer.choose(64).unwrap().config;
    assert_eq!(chosen.a_copy, ACopy::Col16);
    for a_copy in [ACopy::Row4, ACopy::Row16] {
        let other = KernelConfig { a_copy, ..chosen };
        let refused = layer.forward_with(&other, &gpu.stream, &a, &mut c, 64, 1.0, 0.0);
        assert!(
            matches!(refused, Err(RuntimeError::LayoutMismatch { .. })),
            "{refused:?}"
        );
    }
    assert!(layer.forward(&gpu.stream, &a, &mut c, 64, 1.0, 0.0).is_ok());
    gpu.synchronize().unwrap();
}
