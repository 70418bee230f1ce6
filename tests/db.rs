//! The tuning database as its users rely on it: what goes in comes out, the best entry follows
//! the rule, resumed runs neither duplicate nor lose work, and files that are not nmtune
//! databases are refused and left untouched.

mod common;

use common::foreign_sqlite;
use nmtune::codegen::{ACopy, KernelConfig, WarpLayout};
use nmtune::db::{Database, DbError, Measurement, Source, Status, Tidied, SCHEMA_VERSION};
use nmtune::gpu::GpuProfile;
use nmtune::problem::{Dtype, NmPattern, Problem};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;

const CHECKSUM: &str = "3f9a0c";

fn random_problem(rng: &mut SmallRng) -> Problem {
    let nm = [(16, 32), (12, 32), (8, 32), (4, 32), (2, 4)][rng.gen_range(0..5)];
    let nm = NmPattern::new(nm.0, nm.1).unwrap();
    let l = [4, 8, 16, 32][rng.gen_range(0..4)];
    let m = rng.gen_range(1..5000);
    let n = l * rng.gen_range(1..200);
    let k = nm.m as usize * rng.gen_range(1..300);
    let dtype = Dtype::ALL[rng.gen_range(0..Dtype::ALL.len())];
    Problem::new(m, n, k, nm, l).unwrap().with_dtype(dtype)
}

fn random_config(rng: &mut SmallRng, problem: &Problem) -> KernelConfig {
    let pick = |rng: &mut SmallRng, options: &[u32]| options[rng.gen_range(0..options.len())];
    KernelConfig {
        a_copy: ACopy::Row4,
        m_s: pick(rng, &[32, 64, 128]),
        n_s: pick(rng, &[32, 64, 128]),
        k_s: problem.nm.m * pick(rng, &[1, 2]),
        m_t: pick(rng, &[4, 8]),
        n_t: pick(rng, &[4, 8]),
        warp: [WarpLayout::new(4, 8), WarpLayout::new(8, 4)][rng.gen_range(0..2)],
        nm: problem.nm,
        l: problem.l as u32,
        packing: rng.gen_bool(0.5),
        stages: pick(rng, &[2, 3, 4]),
        min_blocks: pick(rng, &[1, 2, 3]),
        split_k: pick(rng, &[1, 2, 3, 4, 6]),
        row_chunk: 0,
        stream_k: false,
        tma: false,
        cluster_sum: false,
        dtype: Dtype::F32,
    }
}

/// A verified, timed measurement with random numbers everywhere.
fn random_measurement(rng: &mut SmallRng, gpu: &str, problem: Problem) -> Measurement {
    let median_us = rng.gen_range(5.0..5000.0);
    Measurement {
        gpu: gpu.to_string(),
        problem,
        config: random_config(rng, &problem),
        status: Status::Ok,
        error: None,
        median_us: Some(median_us),
        min_us: Some(median_us * rng.gen_range(0.9..1.0)),
        runs: rng.gen_range(5..100),
        verified: true,
        max_rel_error: Some(rng.gen_range(1e-7..1e-5)),
        cublas_us: Some(median_us * rng.gen_range(0.5..3.0)),
        copy_gbps: rng.gen_bool(0.5).then(|| rng.gen_range(500.0..4000.0)),
        registers: Some(rng.gen_range(32..255)),
        spill_bytes: Some(rng.gen_range(0..64)),
        template_checksum: CHECKSUM.to_string(),
        kernel_checksum: rng
            .gen_bool(0.5)
            .then(|| format!("family-{}", rng.gen_range(0..3))),
        source: Source::Measured,
        tool_version: nmtune::TOOL_VERSION.to_string(),
        created_at: format!(
            "2025-03-{:02}T10:{:02}:00.000000Z",
            rng.gen_range(1..29),
            rng.gen_range(0..60)
        ),
    }
}

/// A measurement of a random problem.
fn any_measurement(rng: &mut SmallRng, gpu: &str) -> Measurement {
    let problem = random_problem(rng);
    random_measurement(rng, gpu, problem)
}

/// `count` measurements of one problem with distinct kernel names.
fn distinct_measurements(
    rng: &mut SmallRng,
    gpu: &str,
    problem: Problem,
    count: usize,
) -> Vec<Measurement> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    while out.len() < count {
        let m = random_measurement(rng, gpu, problem);
        if seen.insert(m.kernel_name()) {
            out.push(m);
        }
    }
    out
}

fn sort_key(m: &Measurement) -> (String, String, String, &'static str) {
    (
        m.gpu.clone(),
        m.problem.to_string(),
        m.kernel_name(),
        m.source.as_str(),
    )
}

fn sorted(mut ms: Vec<Measurement>) -> Vec<Measurement> {
    ms.sort_by_key(sort_key);
    ms
}

/// Give `m` the median `us` (and the same minimum, so that the row stays possible).
fn set_median(m: &mut Measurement, us: f64) {
    (m.median_us, m.min_us) = (Some(us), Some(us));
}

fn fresh_db(dir: &tempfile::TempDir) -> Database {
    Database::open(&dir.path().join("tune.db")).unwrap()
}

/// The fastest measurement `better` would pick among verified, successful ones.
fn expected_best(ms: &[Measurement]) -> Option<Measurement> {
    ms.iter()
        .filter(|m| m.status == Status::Ok && m.verified)
        .min_by(|a, b| {
            a.median_us
                .unwrap()
                .total_cmp(&b.median_us.unwrap())
                .then_with(|| a.kernel_name().cmp(&b.kernel_name()))
        })
        .cloned()
}

#[test]
fn measurements_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_db(&dir);
    let mut rng = SmallRng::seed_from_u64(1);
    let mut written = Vec::new();
    for gpu in ["h100", "a100"] {
        for _ in 0..4 {
            let problem = random_problem(&mut rng);
            written.extend(distinct_measurements(&mut rng, gpu, problem, 6));
        }
    }
    // Failures and odd text must survive too.
    written[3].status = Status::CompileFailed;
    written[3].error = Some("nvrtc: error: identifier \"x\" is undefined — 'quoted' ü".into());
    written[3].median_us = None;
    written[3].min_us = None;
    written[3].registers = None;
    written[3].verified = false;
    written[7].source = Source::Model;
    written[7].verified = false;
    written[7].cublas_us = None;
    db.record_all(&written[..10]).unwrap();
    for m in &written[10..] {
        db.record(m).unwrap();
    }

    assert_eq!(
        sorted(db.measurements(None).unwrap()),
        sorted(written.clone())
    );
    let h100: Vec<_> = written
        .iter()
        .filter(|m| m.gpu == "h100")
        .cloned()
        .collect();
    assert_eq!(sorted(db.measurements(Some("h100")).unwrap()), sorted(h100));
    assert_eq!(
        db.gpus().unwrap(),
        vec!["a100".to_string(), "h100".to_string()]
    );

    // Reopening reads the same back.
    let path = db.path().to_path_buf();
    drop(db);
    let reopened = Database::open_read_only(&path).unwrap();
    assert_eq!(
        sorted(reopened.measurements(None).unwrap()),
        sorted(written)
    );
}

#[test]
fn gpu_profiles_are_stored_and_refreshed() {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_db(&dir);
    let mut rng = SmallRng::seed_from_u64(2);
    let problem = random_problem(&mut rng);
    db.record(&random_measurement(&mut rng, "h200", problem))
        .unwrap();
    assert_eq!(db.gpu_profile("h200").unwrap(), None, "known by name only");

    let mut profile = GpuProfile::builtin("h200").unwrap();
    db.upsert_gpu(&profile).unwrap();
    assert_eq!(db.gpu_profile("h200").unwrap(), Some(profile.clone()));
    profile.clock_mhz = rng.gen_range(1000..2000);
    db.upsert_gpu(&profile).unwrap();
    assert_eq!(db.gpu_profile("h200").unwrap(), Some(profile));
    assert_eq!(db.gpus().unwrap(), vec!["h200".to_string()]);
    assert_eq!(db.measurements(None).unwrap().len(), 1);
}

#[test]
fn best_follows_the_fastest_verified_result() {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_db(&dir);
    let mut rng = SmallRng::seed_from_u64(3);
    let problem = random_problem(&mut rng);
    let mut seen = Vec::new();
    for mut m in distinct_measurements(&mut rng, "h100", problem, 60) {
        match rng.gen_range(0..4) {
            0 => m.verified = false,
            1 => m.status = Status::WrongResult,
            _ => {}
        }
        db.record(&m).unwrap();
        seen.push(m);
        assert_eq!(db.best_for("h100", &problem).unwrap(), expected_best(&seen));
    }
    let best = db.best_entries(None).unwrap();
    assert_eq!(best.len(), 1);
    assert_eq!(Some(best[0].clone()), expected_best(&seen));
}

#[test]
fn unverified_or_failed_results_are_never_best() {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_db(&dir);
    let mut rng = SmallRng::seed_from_u64(4);
    let problem = random_problem(&mut rng);
    let mut ms = distinct_measurements(&mut rng, "h100", problem, 8).into_iter();
    let mut unverified = ms.next().unwrap();
    unverified.verified = false;
    let mut wrong = ms.next().unwrap();
    wrong.status = Status::WrongResult;
    let mut abandoned = ms.next().unwrap();
    abandoned.status = Status::Abandoned;
    db.record_all(&[unverified.clone(), wrong.clone(), abandoned])
        .unwrap();
    assert_eq!(db.best_for("h100", &problem).unwrap(), None);
    assert!(db.best_entries(None).unwrap().is_empty());

    let mut slow = ms.next().unwrap();
    set_median(&mut slow, 1000.0);
    db.record(&slow).unwrap();
    set_median(&mut unverified, 1.0);
    set_median(&mut wrong, 1.0);
    db.record_all(&[unverified, wrong]).unwrap();
    assert_eq!(db.best_for("h100", &problem).unwrap(), Some(slow));
}

#[test]
fn model_predictions_never_replace_measurements() {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_db(&dir);
    let mut rng = SmallRng::seed_from_u64(5);
    let problem = random_problem(&mut rng);
    let mut ms = distinct_measurements(&mut rng, "a100", problem, 3).into_iter();
    let as_model = |mut m: Measurement, us: f64| {
        m.source = Source::Model;
        m.verified = false;
        set_median(&mut m, us);
        m
    };

    let first_model = as_model(ms.next().unwrap(), rng.gen_range(50.0..100.0));
    db.record(&first_model).unwrap();
    assert_eq!(
        db.best_for("a100", &problem).unwrap(),
        Some(first_model),
        "a prediction is better than nothing"
    );

    let mut measured = ms.next().unwrap();
    set_median(&mut measured, rng.gen_range(500.0..900.0));
    db.record(&measured).unwrap();
    assert_eq!(
        db.best_for("a100", &problem).unwrap(),
        Some(measured.clone()),
        "a slower timing still wins"
    );

    let fast_model = as_model(ms.next().unwrap(), rng.gen_range(1.0..5.0));
    db.record(&fast_model).unwrap();
    assert_eq!(db.best_for("a100", &problem).unwrap(), Some(measured));
}

#[test]
fn recording_a_key_again_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_db(&dir);
    let mut rng = SmallRng::seed_from_u64(6);
    let problem = random_problem(&mut rng);
    let mut ms = distinct_measurements(&mut rng, "h100", problem, 2);
    set_median(&mut ms[0], 10.0);
    set_median(&mut ms[1], 20.0);
    db.record_all(&ms).unwrap();

    // The resumed run re-times kernel 0: one row, the new values.
    let mut again = ms[0].clone();
    set_median(&mut again, rng.gen_range(11.0..19.0));
    again.created_at = "2025-04-01T00:00:00Z".into();
    db.record(&again).unwrap();
    db.record(&again).unwrap();
    let rows = db.measurements(None).unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.contains(&again));
    assert_eq!(db.best_for("h100", &problem).unwrap(), Some(again.clone()));

    // The best row itself turning out wrong hands the title to the next one.
    let mut broken = again.clone();
    broken.status = Status::WrongResult;
    db.record(&broken).unwrap();
    assert_eq!(db.best_for("h100", &problem).unwrap(), Some(ms[1].clone()));

    // Another source or template is another row.
    let mut replay = ms[1].clone();
    replay.source = Source::Replay;
    let mut retemplated = ms[1].clone();
    retemplated.template_checksum = "feed01".into();
    db.record_all(&[replay, retemplated]).unwrap();
    assert_eq!(db.measurements(None).unwrap().len(), 4);
}

#[test]
fn this_builds_templates_supersede_other_timings() {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_db(&dir);
    let mut rng = SmallRng::seed_from_u64(7);
    let problem = random_problem(&mut rng);
    let mut ms = distinct_measurements(&mut rng, "h100", problem, 3);
    // Faster and newer, but from other templates: loses to this build's slower timing.
    set_median(&mut ms[0], rng.gen_range(1.0..10.0));
    ms[0].created_at = "2030-01-01T00:00:00Z".into();
    set_median(&mut ms[1], rng.gen_range(20.0..30.0));
    ms[1].template_checksum = nmtune::codegen::templates_checksum(&ms[1].problem).into();
    ms[1].created_at = "2025-06-01T00:00:00Z".into();
    db.record_all(&ms[..2]).unwrap();
    assert_eq!(db.best_for("h100", &problem).unwrap(), Some(ms[1].clone()));
    // A more trusted source still comes first: a replayed current timing does not displace a
    // measured one of other templates.
    let mut replayed = ms[2].clone();
    replayed.source = Source::Replay;
    set_median(&mut replayed, 0.5);
    replayed.template_checksum = nmtune::codegen::templates_checksum(&replayed.problem).into();
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_db(&dir);
    db.record_all(&[replayed, ms[0].clone()]).unwrap();
    assert_eq!(db.best_for("h100", &problem).unwrap(), Some(ms[0].clone()));
}

/// The rows of `ms` under another template checksum.
fn with_checksum(ms: Vec<Measurement>, checksum: &str) -> Vec<Measurement> {
    ms.into_iter()
        .map(|mut m| {
            m.template_checksum = checksum.to_string();
            m
        })
        .collect()
}

#[test]
fn tidying_keeps_each_problems_latest_completed_tuning() {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_db(&dir);
    let mut rng = SmallRng::seed_from_u64(21);
    let (old, new) = ("01d0", "4e30");
    let [p1, p2, p3, p4] = [(); 4].map(|_| random_problem(&mut rng));
    let done = |ms: &[Measurement], p: &Problem, checksum: &str| {
        db.record_and_mark_done(ms, ("h100", p), checksum, "pruned", Source::Measured)
            .unwrap()
    };
    // p1: tuned with the old templates, then with the new ones: the old rows go.
    let p1_old = with_checksum(distinct_measurements(&mut rng, "h100", p1, 4), old);
    let p1_new = with_checksum(distinct_measurements(&mut rng, "h100", p1, 3), new);
    done(&p1_old, &p1, old);
    done(&p1_new, &p1, new);
    // p2: its re-tune stopped midway: all of it stays, so that resuming loses nothing.
    let p2_old = with_checksum(distinct_measurements(&mut rng, "h100", p2, 2), old);
    let later = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339();
    let p2_new: Vec<Measurement> =
        with_checksum(distinct_measurements(&mut rng, "h100", p2, 2), new)
            .into_iter()
            .map(|m| Measurement {
                created_at: later.clone(),
                ..m
            })
            .collect();
    done(&p2_old, &p2, old);
    db.record_all(&p2_new).unwrap();
    // p4: a tuning stopped midway, then another tuned it through: the given-up rows go.
    let p4_given_up = with_checksum(distinct_measurements(&mut rng, "h100", p4, 2), "5e55");
    let p4_new = with_checksum(distinct_measurements(&mut rng, "h100", p4, 2), new);
    db.record_all(&p4_given_up).unwrap();
    done(&p4_new, &p4, new);
    // p3: tuned once; a model prediction under the old templates is not a measurement.
    let p3_new = with_checksum(distinct_measurements(&mut rng, "h100", p3, 2), new);
    done(&p3_new, &p3, new);
    let mut predicted = random_measurement(&mut rng, "h100", p3);
    (predicted.source, predicted.template_checksum) = (Source::Model, old.to_string());
    db.record(&predicted).unwrap();

    let tidied = db.drop_superseded().unwrap();
    assert_eq!(
        tidied,
        Tidied {
            rows_dropped: 6,
            problems_tidied: 2,
            problems_midway: 1
        }
    );
    let kept = [
        &p1_new[..],
        &p2_old,
        &p2_new,
        &p3_new,
        &p4_new,
        &[predicted],
    ]
    .concat();
    assert_eq!(sorted(db.measurements(None).unwrap()), sorted(kept));
    assert_eq!(db.best_for("h100", &p1).unwrap(), expected_best(&p1_new));
    assert!(db
        .is_problem_done("h100", &p1, new, Source::Measured)
        .unwrap());
    assert!(!db
        .is_problem_done("h100", &p1, old, Source::Measured)
        .unwrap());
    assert!(db
        .is_problem_done("h100", &p2, old, Source::Measured)
        .unwrap());
    // Nothing is left to drop.
    assert_eq!(
        db.drop_superseded().unwrap(),
        Tidied {
            problems_midway: 1,
            ..Tidied::default()
        }
    );
}

#[test]
fn resume_helpers_track_finished_problems_and_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_db(&dir);
    let mut rng = SmallRng::seed_from_u64(8);
    let (p1, p2) = (random_problem(&mut rng), random_problem(&mut rng));
    assert!(!db
        .is_problem_done("h100", &p1, CHECKSUM, Source::Measured)
        .unwrap());
    assert!(db
        .measured_kernels("h100", &p1, CHECKSUM, Source::Measured)
        .unwrap()
        .is_empty());
    assert!(db.gpus().unwrap().is_empty(), "asking must not create rows");

    let mut half_done = distinct_measurements(&mut rng, "h100", p1, 5);
    half_done[2].status = Status::LaunchFailed;
    db.record_all(&half_done).unwrap();
    let mut other = random_measurement(&mut rng, "h100", p2);
    other.source = Source::Model;
    db.record(&other).unwrap();

    let names: HashSet<String> = half_done.iter().map(Measurement::kernel_name).collect();
    assert_eq!(
        db.measured_kernels("h100", &p1, CHECKSUM, Source::Measured)
            .unwrap(),
        names
    );
    assert!(db
        .measured_kernels("h100", &p1, "other", Source::Measured)
        .unwrap()
        .is_empty());
    assert!(db
        .measured_kernels("h100", &p1, CHECKSUM, Source::Model)
        .unwrap()
        .is_empty());
    assert!(db
        .measured_kernels("a100", &p1, CHECKSUM, Source::Measured)
        .unwrap()
        .is_empty());

    db.mark_problem_done("h100", &p1, CHECKSUM, "exhaustive", Source::Measured)
        .unwrap();
    db.mark_problem_done("h100", &p1, CHECKSUM, "exhaustive", Source::Measured)
        .unwrap();
    assert!(db
        .is_problem_done("h100", &p1, CHECKSUM, Source::Measured)
        .unwrap());
    assert!(!db
        .is_problem_done("h100", &p1, "other", Source::Measured)
        .unwrap());
    assert!(!db
        .is_problem_done("h100", &p1, CHECKSUM, Source::Model)
        .unwrap());
    assert!(!db
        .is_problem_done("h100", &p2, CHECKSUM, Source::Measured)
        .unwrap());
    assert!(!db
        .is_problem_done("a100", &p1, CHECKSUM, Source::Measured)
        .unwrap());

    // A problem finished before any measurement still counts, and creates its GPU.
    db.mark_problem_done("4090", &p2, CHECKSUM, "model", Source::Model)
        .unwrap();
    assert!(db
        .is_problem_done("4090", &p2, CHECKSUM, Source::Model)
        .unwrap());
    assert_eq!(
        db.gpus().unwrap(),
        vec!["4090".to_string(), "h100".to_string()]
    );
}

#[test]
fn best_entries_come_in_report_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_db(&dir);
    let mut rng = SmallRng::seed_from_u64(9);
    let mut all = Vec::new();
    for _ in 0..12 {
        let gpu = ["h100", "a100", "3090"][rng.gen_range(0..3)];
        all.push(any_measurement(&mut rng, gpu));
    }
    db.record_all(&all).unwrap();
    let best = db.best_entries(None).unwrap();
    let keys: Vec<_> = best
        .iter()
        .map(|m| {
            (
                m.gpu.clone(),
                m.problem.m,
                m.problem.n,
                m.problem.k,
                m.problem.nm,
                m.problem.l,
            )
        })
        .collect();
    let mut expected = keys.clone();
    expected.sort();
    expected.dedup();
    assert_eq!(keys, expected);
    let a100 = db.best_entries(Some("a100")).unwrap();
    assert!(a100.iter().all(|m| m.gpu == "a100"));
    assert_eq!(a100.len(), best.iter().filter(|m| m.gpu == "a100").count());
}

fn assert_one_line(err: &DbError) {
    let text = err.to_string();
    assert!(!text.contains('\n'), "{text}");
}

#[test]
fn a_text_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.db");
    let bytes: Vec<u8> = (0..5000).map(|i| b"nmtune notes\n"[i % 13]).collect();
    std::fs::write(&path, &bytes).unwrap();
    for result in [Database::open(&path), Database::open_read_only(&path)] {
        let err = result.unwrap_err();
        assert!(matches!(err, DbError::NotNmtune { .. }), "{err}");
        assert!(err.to_string().contains("is not an nmtune tuning database"));
        assert_one_line(&err);
    }
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no -wal or -shm left behind"
    );
}

#[test]
fn another_programs_sqlite_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[&str]); 3] = [
        (
            "foo.db",
            &[
                "CREATE TABLE foo (x INTEGER)",
                "INSERT INTO foo VALUES (42)",
            ],
        ),
        (
            "meta.db",
            &[
                "CREATE TABLE meta (key TEXT, value TEXT)",
                "INSERT INTO meta VALUES ('application', 'other')",
            ],
        ),
        (
            "appid.db",
            &["PRAGMA application_id = 7", "CREATE TABLE bar (y)"],
        ),
    ];
    for (name, statements) in cases {
        let path = dir.path().join(name);
        foreign_sqlite(&path, statements);
        let before = std::fs::read(&path).unwrap();
        for result in [Database::open(&path), Database::open_read_only(&path)] {
            let err = result.unwrap_err();
            assert!(matches!(err, DbError::NotNmtune { .. }), "{name}: {err}");
        }
        assert_eq!(std::fs::read(&path).unwrap(), before, "{name} was modified");
    }
}

#[test]
fn empty_files_and_missing_directories_become_databases() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let nested = dir.path().join("a/b/tune.db");
    let mut rng = SmallRng::seed_from_u64(10);
    for path in [&empty, &nested] {
        let db = Database::open(path).unwrap();
        let m = any_measurement(&mut rng, "h100");
        db.record(&m).unwrap();
        drop(db);
        let db = Database::open(path).unwrap();
        assert_eq!(db.measurements(None).unwrap(), vec![m]);
    }
    // A 0-byte file is not a database to read.
    let other_empty = dir.path().join("other.db");
    std::fs::write(&other_empty, b"").unwrap();
    assert!(matches!(
        Database::open_read_only(&other_empty),
        Err(DbError::NotNmtune { .. })
    ));
}

#[test]
fn a_truncated_database_gives_a_clean_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tune.db");
    let db = Database::open(&path).unwrap();
    let mut rng = SmallRng::seed_from_u64(11);
    for _ in 0..10 {
        let problem = random_problem(&mut rng);
        db.record_all(&distinct_measurements(&mut rng, "h100", problem, 30))
            .unwrap();
    }
    drop(db);
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let e = e.unwrap();
        println!("{:?} {}", e.path(), e.metadata().unwrap().len());
    }
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(
        len > 16 * 4096,
        "test needs a multi-page file, got {len} bytes"
    );
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(len / 2).unwrap();
    drop(file);
    let truncated = std::fs::read(&path).unwrap();

    for result in [Database::open(&path), Database::open_read_only(&path)] {
        let err = result.unwrap_err();
        assert!(matches!(err, DbError::Corrupt { .. }), "{err}");
        assert_one_line(&err);
    }
    assert_eq!(std::fs::read(&path).unwrap(), truncated);
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tune.db");
    drop(Database::open(&path).unwrap());
    let newer = SCHEMA_VERSION + 1;
    foreign_sqlite(
        &path,
        &[&format!(
            "UPDATE meta SET value = '{newer}' WHERE key = 'schema_version'"
        )],
    );
    for result in [Database::open(&path), Database::open_read_only(&path)] {
        match result.unwrap_err() {
            DbError::NewerSchema {
                found, supported, ..
            } => {
                assert_eq!((found, supported), (newer, SCHEMA_VERSION));
            }
            other => panic!("expected NewerSchema, got {other}"),
        }
    }
}

/// A copy of a committed database in `dir`: every committed one was written at schema 1.
fn committed_schema_1_copy(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let path = dir.path().join("h100-sweep.sqlite");
    std::fs::copy("tuning-db/h100-sweep.sqlite", &path).unwrap();
    path
}

#[test]
fn a_schema_1_database_is_read_as_it_is_without_a_copy_bandwidth() {
    let dir = tempfile::tempdir().unwrap();
    let path = committed_schema_1_copy(&dir);
    let bytes = std::fs::read(&path).unwrap();
    let reader = Database::open_read_only(&path).unwrap();
    assert_eq!(reader.schema_version(), 1);
    let rows = reader.measurements(None).unwrap();
    let best = reader.best_entries(None).unwrap();
    assert!(
        rows.len() > 1000 && best.len() == 20,
        "{} {}",
        rows.len(),
        best.len()
    );
    assert!(rows.iter().all(|m| m.copy_gbps.is_none()));
    let first = &best[0];
    let found = reader.best_for(&first.gpu, &first.problem).unwrap();
    assert_eq!(found.as_ref(), Some(first));
    drop(reader);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "reading changed the file"
    );
    let beside: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(beside.len(), 1, "no -wal or -shm left beside it");
}

#[test]
fn opening_a_schema_1_database_for_writing_upgrades_it_and_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = committed_schema_1_copy(&dir);
    let before = Database::open_read_only(&path)
        .unwrap()
        .measurements(None)
        .unwrap();
    let db = Database::open(&path).unwrap();
    assert_eq!(db.schema_version(), SCHEMA_VERSION);
    assert_eq!(db.measurements(None).unwrap(), before);
    // A row recorded now keeps its bandwidth; the old rows keep none.
    let mut refreshed = before[0].clone();
    refreshed.copy_gbps = Some(3050.5);
    db.record(&refreshed).unwrap();
    drop(db);
    let reader = Database::open_read_only(&path).unwrap();
    assert_eq!(reader.schema_version(), SCHEMA_VERSION);
    let after = reader.measurements(None).unwrap();
    assert_eq!(after.len(), before.len());
    let with_copy: Vec<&Measurement> = after.iter().filter(|m| m.copy_gbps.is_some()).collect();
    assert_eq!(with_copy, [&refreshed]);
}

/// A copy of a database written at schema 2 (before the element type): the committed
/// `tuning-db/h100-ew.sqlite` as it was until session 25 re-tuned it (which upgraded it).
fn committed_schema_2_copy(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let path = dir.path().join("h100-ew.sqlite");
    std::fs::copy("tests/fixtures/schema2-h100-ew.sqlite", &path).unwrap();
    path
}

#[test]
fn a_schema_2_database_is_read_as_fp32_and_upgraded_by_the_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = committed_schema_2_copy(&dir);
    let bytes = std::fs::read(&path).unwrap();
    let reader = Database::open_read_only(&path).unwrap();
    assert_eq!(reader.schema_version(), 2);
    let before = reader.measurements(None).unwrap();
    let best = reader.best_entries(None).unwrap();
    assert!(before.len() > 1000 && best.len() > 40, "{}", before.len());
    assert!(before.iter().all(|m| m.problem.dtype == Dtype::F32));
    let first = best[0].clone();
    assert_eq!(
        reader
            .best_for(&first.gpu, &first.problem)
            .unwrap()
            .as_ref(),
        Some(&first)
    );
    // The same shape in BF16 is another problem, which an older file cannot hold.
    let bf16 = first.problem.with_dtype(Dtype::Bf16);
    assert_eq!(reader.best_for(&first.gpu, &bf16).unwrap(), None);
    drop(reader);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "reading changed the file"
    );

    // The first write rebuilds the problems table with the type in its key: same rows, same
    // best entries, and both types of one shape side by side.
    let db = Database::open(&path).unwrap();
    assert_eq!(db.schema_version(), SCHEMA_VERSION);
    assert_eq!(db.measurements(None).unwrap(), before);
    let mut typed = first.clone();
    typed.problem = bf16;
    set_median(&mut typed, first.median_us.unwrap() * 0.5);
    db.record(&typed).unwrap();
    assert_eq!(db.best_for(&first.gpu, &bf16).unwrap(), Some(typed.clone()));
    assert_eq!(
        db.best_for(&first.gpu, &first.problem).unwrap(),
        Some(first)
    );
    assert_eq!(db.measurements(None).unwrap().len(), before.len() + 1);
    db.check_integrity().unwrap();
}

#[test]
fn a_schema_3_database_reads_without_kernel_checksums_and_upgrades_on_the_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h100.sqlite");
    // The first 32 problems of tuning-db/h100.sqlite as v4.14 committed it (schema 3), every
    // other row deleted: the committed databases are schema 4 since their v4.15 re-tune.
    std::fs::copy("tests/fixtures/schema3-h100.sqlite", &path).unwrap();
    let reader = Database::open_read_only(&path).unwrap();
    assert_eq!(reader.schema_version(), 3);
    let before = reader.measurements(None).unwrap();
    assert!(before.len() > 400);
    assert!(before.iter().all(|m| m.kernel_checksum.is_none()));
    drop(reader);
    let db = Database::open(&path).unwrap();
    assert_eq!(db.schema_version(), SCHEMA_VERSION);
    assert_eq!(db.measurements(None).unwrap(), before);
    let mut newer = before[0].clone();
    newer.kernel_checksum = Some("family".into());
    db.record(&newer).unwrap();
    let stored = db.measurements(None).unwrap();
    assert_eq!(stored.len(), before.len());
    assert!(stored.contains(&newer));
    db.check_integrity().unwrap();
}

#[test]
fn read_only_opens_create_nothing_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("sub/tune.db");
    let err = Database::open_read_only(&missing).unwrap_err();
    assert!(matches!(err, DbError::Missing { .. }), "{err}");
    assert!(!missing.exists());
    assert!(!dir.path().join("sub").exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    let path = dir.path().join("tune.db");
    let mut rng = SmallRng::seed_from_u64(12);
    let m = any_measurement(&mut rng, "h100");
    Database::open(&path).unwrap().record(&m).unwrap();
    let reader = Database::open_read_only(&path).unwrap();
    assert!(reader.is_read_only());
    assert_eq!(reader.best_entries(Some("h100")).unwrap(), vec![m.clone()]);
    let err = reader.record(&m).unwrap_err();
    assert!(matches!(err, DbError::ReadOnly { .. }), "{err}");
    assert!(matches!(
        reader.mark_problem_done("h100", &m.problem, CHECKSUM, "x", Source::Measured),
        Err(DbError::ReadOnly { .. })
    ));
}

#[test]
fn two_handles_on_one_file_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tune.db");
    let (first, second) = (
        Database::open(&path).unwrap(),
        Database::open(&path).unwrap(),
    );
    let mut rng = SmallRng::seed_from_u64(13);
    let problem = random_problem(&mut rng);
    let ms = distinct_measurements(&mut rng, "h100", problem, 40);
    for (i, m) in ms.iter().enumerate() {
        let db = if i % 2 == 0 { &first } else { &second };
        db.record(m).unwrap();
    }
    assert_eq!(
        sorted(first.measurements(None).unwrap()),
        sorted(ms.clone())
    );
    assert_eq!(
        second.best_for("h100", &problem).unwrap(),
        expected_best(&ms)
    );
}

#[test]
fn writers_on_threads_queue_instead_of_failing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tune.db");
    drop(Database::open(&path).unwrap());
    let mut rng = SmallRng::seed_from_u64(14);
    let problem = random_problem(&mut rng);
    let ms = distinct_measurements(&mut rng, "h100", problem, 120);
    std::thread::scope(|scope| {
        for chunk in ms.chunks(30) {
            let path = &path;
            scope.spawn(move || {
                let db = Database::open(path).unwrap();
                for m in chunk {
                    db.record(m).unwrap();
                }
            });
        }
    });
    let db = Database::open_read_only(&path).unwrap();
    assert_eq!(sorted(db.measurements(None).unwrap()), sorted(ms.clone()));
    assert_eq!(db.best_for("h100", &problem).unwrap(), expected_best(&ms));
}

#[test]
fn usable_from_inside_an_async_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tune.db");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rng = SmallRng::seed_from_u64(15);
    let m = any_measurement(&mut rng, "h100");
    let read_back = runtime.block_on(async {
        let db = Database::open(&path).unwrap();
        db.record(&m).unwrap();
        db.measurements(None).unwrap()
    });
    assert_eq!(read_back, vec![m]);
}

#[test]
fn simultaneous_first_opens_of_a_new_file_all_succeed() {
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tune.db");
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| Database::open(&path).map(drop)))
                .collect();
            for handle in handles {
                handle.join().unwrap().unwrap();
            }
        });
        assert!(Database::open_read_only(&path)
            .unwrap()
            .gpus()
            .unwrap()
            .is_empty());
    }
}

#[test]
fn impossible_values_are_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = fresh_db(&dir);
    let mut rng = SmallRng::seed_from_u64(13);
    let good = any_measurement(&mut rng, "h100");
    let mut cases = Vec::new();
    for (median, cublas) in [(-5.0, 10.0), (f64::NAN, 10.0), (10.0, 1e300), (0.0, 10.0)] {
        let mut m = good.clone();
        set_median(&mut m, median);
        m.cublas_us = Some(cublas);
        cases.push(m);
    }
    let mut above = good.clone();
    above.min_us = above.median_us.map(|t| t * 2.0);
    cases.push(above);
    for copy_gbps in [0.0, -3000.0, f64::NAN, f64::INFINITY] {
        let mut m = good.clone();
        m.copy_gbps = Some(copy_gbps);
        cases.push(m);
    }
    for bad in cases {
        let err = db.record_all(&[good.clone(), bad]).unwrap_err();
        assert!(matches!(err, DbError::Impossible { .. }), "{err}");
        assert!(db.measurements(None).unwrap().is_empty(), "all or nothing");
    }
}
