//! Measurements as text, replay, check-replay, model-eval, roofline plots and the no-GPU
//! default, through the `nmtune` command as users run it (and the library where the numbers
//! need checking).

mod common;

use common::{json_output, nmtune, one_line_error, report_json};
use nmtune::codegen::KernelConfig;
use nmtune::db::{Database, Measurement, Source, Status};
use nmtune::gpu::GpuProfile;
use nmtune::problem::{NmPattern, Problem};
use nmtune::tuner::search::{candidates, Strategy};
use predicates::prelude::*;
use std::fs;
use std::path::{Path, PathBuf};

const SHAPES: &str = "defaults: { m: [256, 512], sparsity: [\"8:32\"], L: 32 }\n\
                      layers:\n  - { model: t, name: q, n: 4096, k: 4096 }\n";

fn problem(m: usize) -> Problem {
    Problem::new(m, 4096, 4096, NmPattern::new(8, 32).unwrap(), 32).unwrap()
}

/// The model's ranking of the whole space for `p` on the H200, best first.
fn ranking(p: &Problem) -> Vec<KernelConfig> {
    let h200 = GpuProfile::builtin("h200").unwrap();
    candidates(p, &h200, Strategy::Exhaustive)
}

fn row(p: &Problem, config: KernelConfig, median_us: f64) -> Measurement {
    common::measured_row(p, config, median_us)
}

/// A database with two problems of six measured configurations each (the model's six best):
/// at m = 256 the model's first choice is the fastest (a hit); at m = 512 the sixth is, at
/// half the time of the first (a miss, slowdown 2). Plus a failed row and a model row.
fn synthetic_db(dir: &Path) -> PathBuf {
    synthetic_db_copying_at(dir, None)
}

/// [`synthetic_db`] whose GPU rows (not the model's) carry the copy bandwidth `copy_gbps`.
fn synthetic_db_copying_at(dir: &Path, copy_gbps: Option<f64>) -> PathBuf {
    let path = dir.join("synthetic.sqlite");
    let db = Database::open(&path).unwrap();
    db.upsert_gpu(&GpuProfile::builtin("h200").unwrap())
        .unwrap();
    let (hit, miss) = (problem(256), problem(512));
    let mut rows = Vec::new();
    for (i, cfg) in ranking(&hit).into_iter().take(6).enumerate() {
        rows.push(row(&hit, cfg, 100.0 + 10.0 * i as f64));
    }
    for (i, cfg) in ranking(&miss).into_iter().take(6).enumerate() {
        rows.push(row(
            &miss,
            cfg,
            if i == 5 { 100.0 } else { 200.0 + i as f64 },
        ));
    }
    let mut failed = row(&miss, ranking(&miss)[6], 1.0);
    failed.status = Status::WrongResult;
    failed.verified = false;
    failed.error = Some("relative error inf above 1e-3".into());
    failed.max_rel_error = Some(f64::INFINITY);
    rows.push(failed);
    for measured in &mut rows {
        measured.copy_gbps = copy_gbps;
    }
    let mut model = row(&hit, ranking(&hit)[7], 1.0);
    model.source = Source::Model;
    model.verified = false;
    rows.push(model);
    db.record_all(&rows).unwrap();
    path
}

fn export(db: &Path, out: &Path) {
    nmtune()
        .args(["export", "--db"])
        .arg(db)
        .arg("--out")
        .arg(out)
        .assert()
        .success();
}

/// The synthetic database and its export `synthetic.measurements.jsonl`, with the file's text.
fn exported_synthetic(dir: &Path) -> (PathBuf, PathBuf, String) {
    let db = synthetic_db(dir);
    let file = dir.join("synthetic.measurements.jsonl");
    export(&db, &file);
    let text = fs::read_to_string(&file).unwrap();
    (db, file, text)
}

fn write_shapes(dir: &Path) -> PathBuf {
    let shapes = dir.join("shapes.yaml");
    fs::write(&shapes, SHAPES).unwrap();
    shapes
}

/// `nmtune --backend replay --gpu h200` of `file` into `db` for the problems of `shapes`.
/// `nmtune check-replay --db <db> --measurements <file>`.
fn check_replay(db: &Path, file: &Path) -> assert_cmd::Command {
    let mut cmd = nmtune();
    cmd.args(["check-replay", "--db"])
        .arg(db)
        .arg("--measurements")
        .arg(file);
    cmd
}

fn replay_into(file: &Path, shapes: &Path, db: &Path) -> assert_cmd::Command {
    let mut cmd = nmtune();
    cmd.args(["--backend", "replay", "--gpu", "h200", "--measurements"])
        .arg(file)
        .arg("--shapes")
        .arg(shapes)
        .arg("--db")
        .arg(db);
    cmd
}

#[test]
fn export_replay_round_trip_keeps_the_best_entries() {
    let dir = tempfile::tempdir().unwrap();
    let (db, file, text) = exported_synthetic(dir.path());
    assert_eq!(
        text.lines().count(),
        14,
        "every row, failed and model ones too"
    );
    assert!(text.contains("\"max_rel_error\":\"inf\""));
    let out = dir.path().join("replayed.sqlite");
    replay_into(&file, &write_shapes(dir.path()), &out)
        .assert()
        .success()
        .stderr(predicate::str::contains("1 model rows ignored"));
    let (before, after) = (report_json(&db), report_json(&out));
    assert_eq!(before.len(), 2);
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(a["source"], "replay");
        assert_eq!(b["kernel"], a["kernel"]);
        assert_eq!(b["median_us"], a["median_us"]);
    }
    check_replay(&db, &file)
        .assert()
        .success()
        .stdout(predicate::str::contains("2 best entries identical"));
}

#[test]
fn export_and_replay_carry_the_copy_bandwidth_of_every_row() {
    let dir = tempfile::tempdir().unwrap();
    // A float whose shortest exact form takes 17 digits: kept bit for bit, or not at all.
    let copy_gbps = 20_000.0 / 7.0;
    let db = synthetic_db_copying_at(dir.path(), Some(copy_gbps));
    let file = dir.path().join("synthetic.measurements.jsonl");
    export(&db, &file);
    let text = fs::read_to_string(&file).unwrap();
    let field = format!("\"copy_gbps\":{copy_gbps}");
    for line in text.lines() {
        let is_model = line.contains("\"source\":\"model\"");
        assert_eq!(line.contains(&field), !is_model, "{line}");
        assert_eq!(
            line.contains("copy_gbps"),
            !is_model,
            "no null field: {line}"
        );
    }
    check_replay(&db, &file).assert().success();
    let replayed = dir.path().join("replayed.sqlite");
    replay_into(&file, &write_shapes(dir.path()), &replayed)
        .assert()
        .success();
    let rows = report_json(&replayed);
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(r["source"], "replay");
        assert_eq!(
            r["copy_gbps"].as_f64().unwrap().to_bits(),
            copy_gbps.to_bits()
        );
    }
    // The replayed database exports the same bandwidth again, bit for bit.
    let again = dir.path().join("again.jsonl");
    export(&replayed, &again);
    let again = fs::read_to_string(&again).unwrap();
    assert_eq!(
        again.lines().count(),
        13,
        "every GPU row, the model row not replayed"
    );
    assert!(again.lines().all(|line| line.contains(&field)), "{again}");
}

#[test]
fn replay_resumes_and_reports_problems_missing_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.jsonl");
    export(&synthetic_db(dir.path()), &file);
    let first = dir.path().join("first.yaml");
    fs::write(&first, SHAPES.replace("[256, 512]", "[256]")).unwrap();
    let out = dir.path().join("out.sqlite");
    let replay = |shapes: &Path| replay_into(&file, shapes, &out);
    replay(&first).assert().success();
    replay(&write_shapes(dir.path()))
        .assert()
        .success()
        .stderr(predicate::str::contains("replayed 1 of 2 problems (7 rows"))
        .stderr(predicate::str::contains("1 already done"));
    let wider = dir.path().join("wider.yaml");
    fs::write(&wider, SHAPES.replace("[256, 512]", "[256, 512, 1024]")).unwrap();
    replay(&wider)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "1 problems of the shapes file are not in",
        ))
        .stderr(predicate::str::contains("m1024_n4096_k4096_8:32_l32"));
}

#[test]
fn malformed_line_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.jsonl");
    export(&synthetic_db(dir.path()), &file);
    let mut lines: Vec<String> = fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines[2] = lines[2].replace("\"runs\":10", "\"runs\":\"ten\"");
    fs::write(&file, lines.join("\n")).unwrap();
    replay_into(
        &file,
        &write_shapes(dir.path()),
        &dir.path().join("out.sqlite"),
    )
    .assert()
    .code(1)
    .stderr(one_line_error("bad.jsonl:3: column"));
    nmtune()
        .args(["check-replay", "--db"])
        .arg(dir.path().join("synthetic.sqlite"))
        .arg("--measurements")
        .arg(&file)
        .assert()
        .code(1)
        .stderr(one_line_error("bad.jsonl:3:"));
}

#[test]
fn replay_argument_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let shapes = write_shapes(dir.path());
    let db = dir.path().join("out.sqlite");
    let run = |args: &[&str]| {
        let mut cmd = nmtune();
        cmd.args(args)
            .arg("--shapes")
            .arg(&shapes)
            .arg("--db")
            .arg(&db);
        cmd
    };
    run(&["--backend", "replay", "--gpu", "h200"])
        .assert()
        .code(1)
        .stderr(one_line_error("needs --measurements"));
    run(&[
        "--backend",
        "replay",
        "--gpu",
        "h200",
        "--measurements",
        "/nonexistent/m.jsonl",
    ])
    .assert()
    .code(1)
    .stderr(one_line_error("/nonexistent/m.jsonl"));
    run(&[
        "--backend",
        "model",
        "--gpu",
        "h200",
        "--measurements",
        "m.jsonl",
    ])
    .assert()
    .code(1)
    .stderr(one_line_error("only by --backend replay"));
    run(&[
        "--backend",
        "replay",
        "--gpu",
        "auto",
        "--measurements",
        "m.jsonl",
    ])
    .assert()
    .code(1)
    .stderr(one_line_error("not auto"));
    let file = dir.path().join("m.jsonl");
    export(&synthetic_db(dir.path()), &file);
    run(&["--backend", "replay", "--gpu", "h100"])
        .arg("--measurements")
        .arg(&file)
        .assert()
        .code(1)
        .stderr(one_line_error(
            "no measurements of GPU 'h100' (it holds: h200)",
        ));
    assert!(!db.exists(), "a failed replay leaves no database behind");
    nmtune()
        .args(["check-replay", "--db"])
        .arg(dir.path().join("synthetic.sqlite"))
        .assert()
        .code(1)
        .stderr(one_line_error(
            "synthetic.measurements.jsonl does not exist",
        ));
    nmtune()
        .args(["export", "--db", "/nonexistent/x.sqlite"])
        .assert()
        .code(1)
        .stderr(one_line_error("does not exist"));
}

#[test]
fn stale_measurements_file_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let (db, file, text) = exported_synthetic(dir.path());
    fs::write(
        &file,
        text.replacen("\"median_us\":100.0", "\"median_us\":99.0", 1),
    )
    .unwrap();
    check_replay(&db, &file)
        .assert()
        .code(1)
        .stderr(one_line_error("regenerate it with `nmtune export"));
}

/// A database tuned by an older nmtune: both timings of its problem carry the older build's
/// template checksum; the faster kernel's templates have changed since, the slower one's have
/// not. The older build stored the faster as best; this build ranks the current timing above
/// it, so a replay differs, and the check says why and what to do.
#[test]
fn check_replay_names_best_entries_an_older_build_chose() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("older.sqlite");
    let db = Database::open(&path).unwrap();
    db.upsert_gpu(&GpuProfile::builtin("h200").unwrap())
        .unwrap();
    let p = problem(256);
    let configs = ranking(&p);
    let mut changed = row(&p, configs[0], 50.0);
    changed.kernel_checksum = Some("older".into());
    let mut unchanged = row(&p, configs[1], 80.0);
    unchanged.kernel_checksum = Some(nmtune::codegen::kernel_checksum(&configs[1]).into());
    db.record_all(&[changed, unchanged]).unwrap();
    drop(db);
    common::point_best_at_fastest(&path);
    let file = dir.path().join("older.measurements.jsonl");
    export(&path, &file);
    let out = check_replay(&path, &file).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.trim_end().lines().last().unwrap();
    assert!(
        last.starts_with("nmtune: error:")
            && last.contains("chosen by an older nmtune: 1 of 1")
            && last.contains("--strategy warm")
            && !stderr.contains("panicked"),
        "{stderr}"
    );
}

#[test]
fn best_entries_that_differ_are_listed() {
    let (a, b) = (problem(256), problem(512));
    let configs = ranking(&a);
    let committed = vec![row(&a, configs[0], 10.0), row(&b, configs[0], 20.0)];
    let mut replayed = vec![row(&a, configs[0], 10.0), row(&b, configs[1], 20.0)];
    assert_eq!(
        nmtune::replay::check::compare_best(&committed, &committed),
        vec![]
    );
    let diffs = nmtune::replay::check::compare_best(&committed, &replayed);
    assert_eq!(diffs.len(), 1);
    assert_eq!(diffs[0].problem, b);
    replayed[0].median_us = Some(10.000001);
    replayed.push(row(&problem(1024), configs[0], 5.0));
    let diffs = nmtune::replay::check::compare_best(&committed, &replayed);
    assert_eq!(diffs.len(), 3);
    assert!(diffs[2].committed.is_none());
}

/// CI's replay check, run as the README gives it (`scripts/check-replay.sh`, with this build's
/// binary): every committed database is its measurements file's export and replay.
#[test]
fn committed_measurements_reproduce_the_committed_database() {
    let databases = fs::read_dir("tuning-db")
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension().is_some_and(|e| e == "sqlite")
                && path.with_extension("measurements.jsonl").exists()
        })
        .count();
    assert!(
        databases > 0,
        "no committed database has a measurements file"
    );
    let out = std::process::Command::new("bash")
        .arg("scripts/check-replay.sh")
        .env("NMTUNE", common::nmtune_bin())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = format!("check-replay: {databases} database(s) reproduced");
    assert!(stdout.contains(&summary), "{stdout}");
}

#[test]
fn model_eval_counts_hits_and_savings() {
    let dir = tempfile::tempdir().unwrap();
    let db = synthetic_db(dir.path());
    let evals: Vec<serde_json::Value> = json_output(
        nmtune()
            .args(["model-eval", "--top-k", "1", "--no-neighbours"])
            .args(["--format", "json", "--db"])
            .arg(&db),
    );
    let overall = &evals[0]["overall"];
    assert_eq!(overall["problems"], 2);
    assert_eq!(overall["hits"], 1);
    assert_eq!(evals[0]["problems_skipped"], 0);
    let close = |v: &serde_json::Value, x: f64| (v.as_f64().unwrap() - x).abs() < 1e-9;
    // m = 512 has 7 measured configurations (the wrong result counts as timed).
    assert!(close(&overall["candidates_saved"], 1.0 - 2.0 / 13.0));
    assert!(close(&overall["geomean_slowdown"], 2f64.sqrt()));
    assert!(close(&overall["worst_slowdown"], 2.0));
    let spent_hit: f64 = (0..6).map(|i| 100.0 + 10.0 * i as f64).sum::<f64>() * 10.0;
    let spent_miss = (200.0 + 201.0 + 202.0 + 203.0 + 204.0 + 100.0 + 1.0) * 10.0;
    let saved = 1.0 - (1000.0 + 2000.0) / (spent_hit + spent_miss);
    assert!(close(&overall["kernel_time_saved"], saved));
    let problems = evals[0]["problems"].as_array().unwrap();
    assert_eq!(problems[0]["hit"], true);
    assert_eq!(problems[1]["hit"], false);

    // With every configuration picked, every problem is a hit; above 7, none qualifies.
    nmtune()
        .args(["model-eval", "--top-k", "7", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("100.0 %"))
        .stdout(predicate::str::contains(
            "caveat: the ground truth is what was measured",
        ));
    nmtune()
        .args([
            "model-eval",
            "--min-configs",
            "8",
            "--format",
            "json",
            "--db",
        ])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("\"problems_skipped\": 2"));
}

#[test]
fn report_plots_png_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let db = synthetic_db(dir.path());
    for name in ["r.png", "r.svg"] {
        let plot = dir.path().join(name);
        nmtune()
            .args(["report", "--db"])
            .arg(&db)
            .arg("--plot")
            .arg(&plot)
            .assert()
            .success();
        let bytes = fs::read(&plot).unwrap();
        if name.ends_with("png") {
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        } else {
            let text = String::from_utf8(bytes).unwrap();
            assert!(text.contains("<svg") && text.contains("8:32 (75.0 % sparse)"));
        }
    }
    nmtune()
        .args(["report", "--db"])
        .arg(&db)
        .arg("--plot")
        .arg(dir.path().join("r.jpg"))
        .assert()
        .code(1)
        .stderr(one_line_error("use a .png or .svg"));
}

/// Whether a test that needs the machine to have no GPU may run here.
fn no_gpu_here() -> bool {
    if nmtune::gpu::device::driver_present() {
        eprintln!("SKIPPED: this machine has an NVIDIA driver");
        return false;
    }
    true
}

/// A working folder holding a copy of the committed `tuning-db/h200.sqlite`.
fn folder_with_committed_h200() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("tuning-db")).unwrap();
    let committed = dir.path().join("tuning-db/h200.sqlite");
    fs::copy("tuning-db/h200.sqlite", &committed).unwrap();
    (dir, committed)
}

fn llama_shapes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("shapes/llama.yaml")
}

#[test]
fn without_a_gpu_the_main_job_fills_a_model_database_beside_the_committed_one() {
    if !no_gpu_here() {
        return;
    }
    let (dir, committed) = folder_with_committed_h200();
    let before = fs::read(&committed).unwrap();
    let started = std::time::Instant::now();
    nmtune()
        .current_dir(dir.path())
        .args(["--gpu", "h200", "--shapes"])
        .arg(llama_shapes())
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "nmtune: no GPU found: filling tuning-db/h200-model.sqlite from the performance model of the h200 profile (source = model)",
        ));
    let elapsed = started.elapsed().as_secs_f64();
    assert!(elapsed < 60.0, "800 problems took {elapsed:.1} s");
    assert_eq!(
        fs::read(&committed).unwrap(),
        before,
        "committed database changed"
    );
    let names: Vec<String> = common::snapshot(&dir.path().join("tuning-db"))
        .into_keys()
        .collect();
    assert_eq!(names, ["h200-model.sqlite", "h200.sqlite"]);
    let rows = report_json(&dir.path().join("tuning-db/h200-model.sqlite"));
    assert_eq!(rows.len(), 800);
    assert!(rows.iter().all(|r| r["source"] == "model"));
    // The same on purpose (--backend model), and replays: never into the committed file.
    nmtune()
        .current_dir(dir.path())
        .args(["--gpu", "h200", "--backend", "model", "--quiet", "--shapes"])
        .arg(llama_shapes())
        .assert()
        .success();
    let file = dir.path().join("m.jsonl");
    export(&synthetic_db(dir.path()), &file);
    nmtune()
        .current_dir(dir.path())
        .args(["--gpu", "h200", "--backend", "replay", "--measurements"])
        .arg(&file)
        .arg("--shapes")
        .arg(write_shapes(dir.path()))
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "into tuning-db/h200-replay.sqlite",
        ));
    assert_eq!(
        fs::read(&committed).unwrap(),
        before,
        "committed database changed"
    );
}

#[test]
fn without_a_gpu_auto_models_the_default_profile_and_says_so() {
    if !no_gpu_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    nmtune()
        .current_dir(dir.path())
        .args(["--gpu", "auto", "--shapes"])
        .arg(llama_shapes())
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "nmtune: no GPU found: --gpu auto falls back to the default profile h100",
        ))
        .stderr(predicate::str::contains(
            "filling tuning-db/h100-model.sqlite",
        ));
    assert_eq!(
        report_json(&dir.path().join("tuning-db/h100-model.sqlite")).len(),
        800
    );
}

/// The first command of the README's "Two commands on a fresh machine", as `nmtune` arguments.
fn readme_first_command() -> Vec<String> {
    let readme =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("cargo run --release -- "))
        .expect("the README starts with a cargo run command");
    line.trim_start_matches("cargo run --release -- ")
        .split_whitespace()
        .map(String::from)
        .collect()
}

fn git(dir: &Path, args: &[&str]) -> Option<std::process::Output> {
    std::process::Command::new("git")
        .current_dir(dir)
        .args([
            "-c",
            "user.name=nmtune",
            "-c",
            "user.email=nmtune@localhost",
        ])
        .args(args)
        .output()
        .ok()
        .filter(|out| out.status.success())
}

#[test]
fn the_readme_first_command_runs_in_a_fresh_clone_without_a_gpu_and_changes_nothing() {
    if !no_gpu_here() {
        return;
    }
    // A fresh clone of the working tree: every tracked file, committed in a new repository.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(listing) = git(root, &["ls-files", "-z"]) else {
        eprintln!("SKIPPED: {} is not a git checkout", root.display());
        return;
    };
    let clone = tempfile::tempdir().unwrap();
    for name in listing.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = std::str::from_utf8(name).unwrap();
        let (from, to) = (root.join(name), clone.path().join(name));
        if from.is_file() {
            fs::create_dir_all(to.parent().unwrap()).unwrap();
            fs::copy(&from, &to).unwrap();
        }
    }
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-qm", "clone"],
    ] {
        git(clone.path(), args).expect("git works in the clone");
    }
    nmtune()
        .current_dir(clone.path())
        .args(readme_first_command())
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "falls back to the default profile",
        ));
    let status = git(clone.path(), &["status", "--porcelain"]).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&status.stdout),
        "",
        "the clone changed"
    );
}

#[test]
fn check_replay_never_suggests_exporting_predictions() {
    let dir = tempfile::tempdir().unwrap();
    let (db, file, _) = exported_synthetic(dir.path());
    // A model run into the committed database, named on purpose.
    nmtune()
        .args(["--gpu", "h200", "--backend", "model", "--quiet", "--shapes"])
        .arg(write_shapes(dir.path()))
        .arg("--db")
        .arg(&db)
        .assert()
        .success();
    check_replay(&db, &file)
        .assert()
        .code(1)
        .stderr(one_line_error("model predictions (source = model)"))
        .stderr(predicate::str::contains("git checkout --"))
        .stderr(predicate::str::contains("nmtune export").not());
}

#[test]
fn impossible_values_are_refused_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _, text) = exported_synthetic(dir.path());
    let at = text
        .lines()
        .position(|l| l.contains("\"median_us\":100.0"))
        .unwrap();
    let cases = [
        (
            "\"median_us\":100.0",
            "\"median_us\":-5",
            "median_us -5 is not a time",
        ),
        (
            "\"cublas_us\":180.0",
            "\"cublas_us\":1e300",
            "cublas_us 1e300 is not a time",
        ),
    ];
    for (from, to, why) in cases {
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        lines[at] = lines[at].replacen(from, to, 1);
        let file = dir.path().join("bad.jsonl");
        fs::write(&file, lines.join("\n") + "\n").unwrap();
        let out = dir.path().join("never.sqlite");
        let expected = format!("bad.jsonl:{}: {why}", at + 1);
        replay_into(&file, &write_shapes(dir.path()), &out)
            .assert()
            .code(1)
            .stderr(one_line_error("bad.jsonl:"))
            .stderr(predicate::str::contains(expected.as_str()));
        assert!(!out.exists(), "a refused replay creates no database");
        check_replay(&db, &file)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(expected.as_str()));
    }
}

#[test]
fn no_measured_point_sits_above_its_roof() {
    let mut checked = 0;
    for entry in fs::read_dir("tuning-db").unwrap() {
        let path = entry.unwrap().path();
        if !path.extension().is_some_and(|e| e == "sqlite") {
            continue;
        }
        let db = Database::open_read_only(&path).unwrap();
        for gpu in db.gpus().unwrap() {
            let profile = db.gpu_profile(&gpu).unwrap().unwrap();
            let peak = profile.peak_fp32_flops() / 1e12;
            let dram = profile.dram_bytes_per_s() / 1e12;
            let l2 = dram * nmtune::model::L2_BANDWIDTH_FACTOR;
            let best = db.best_entries(Some(&gpu)).unwrap();
            for p in nmtune::plot::roofline_points(&best, &profile) {
                let roofs = [
                    ("DRAM", (dram * p.dram_intensity).min(peak)),
                    ("L2", (l2 * p.l2_intensity).min(peak)),
                ];
                for (roof, at) in roofs {
                    assert!(
                        p.achieved_tflops <= at,
                        "{}: {} point at {:.1} TFLOP/s above the {roof} roof ({at:.1}): {p:?}",
                        path.display(),
                        p.nm,
                        p.achieved_tflops
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 800, "{checked} points");
}

#[test]
fn model_eval_judges_against_the_same_best_entry_as_the_report() {
    // One problem timed twice: with this build's templates (older) and with other templates
    // (newer, faster). The best entry, for the report and the runtime, is this build's; the
    // model evaluation's ground truth must be the set it was chosen from.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two-templates.sqlite");
    let db = Database::open(&path).unwrap();
    db.upsert_gpu(&GpuProfile::builtin("h200").unwrap())
        .unwrap();
    let p = problem(256);
    let mut rows = Vec::new();
    for (i, cfg) in ranking(&p).into_iter().take(6).enumerate() {
        let mut current = row(&p, cfg, 100.0 + i as f64);
        current.template_checksum = nmtune::codegen::templates_checksum(&p).into();
        let mut other = row(&p, cfg, 50.0 - i as f64);
        other.created_at = "2030-01-01T00:00:00Z".into();
        rows.extend([current, other]);
    }
    db.record_all(&rows).unwrap();
    drop(db);
    let reported = report_json(&path);
    let evals: Vec<serde_json::Value> = json_output(
        nmtune()
            .args(["model-eval", "--format", "json", "--db"])
            .arg(&path),
    );
    let judged = &evals[0]["problems"][0];
    assert_eq!(judged["best_kernel"], reported[0]["kernel"]);
    assert_eq!(judged["best_us"], reported[0]["median_us"]);
    assert_eq!(judged["measured"], 6, "one template's set, not both");
}

/// Replay runs the tuning loop once per template checksum of the file: each problem is done
/// per checksum, rows keep their own checksum and date, a replay killed inside a problem
/// resumes with the rows it lacks, and a finished one records nothing again.
#[test]
fn replay_through_the_loop_keeps_checksums_and_resumes_inside_a_problem() {
    use nmtune::tuner::replay::replay;
    let dir = tempfile::tempdir().unwrap();
    let (p256, p512) = (problem(256), problem(512));
    let h200 = GpuProfile::builtin("h200").unwrap();
    let mut rows = Vec::new();
    for (i, cfg) in ranking(&p256).into_iter().take(3).enumerate() {
        let mut old = row(&p256, cfg, 300.0 + i as f64);
        old.template_checksum = "old".into();
        old.created_at = "2026-01-01T00:00:00Z".into();
        rows.push(old);
        rows.push(row(&p256, cfg, 100.0 + i as f64));
    }
    for (i, cfg) in ranking(&p512).into_iter().take(4).enumerate() {
        rows.push(row(&p512, cfg, 200.0 - i as f64));
    }
    let file = dir.path().join("two-checksums.jsonl");
    fs::write(&file, nmtune::replay::jsonl::to_text(&rows)).unwrap();
    let log = nmtune::replay::MeasurementLog::read(&file).unwrap();
    let db = Database::open(&dir.path().join("replayed.sqlite")).unwrap();

    // A replay killed after the first row of m = 512: the row is there, no done mark.
    let mut first = rows[6].clone();
    first.source = Source::Replay;
    db.upsert_gpu(&h200).unwrap();
    db.record_all(&[first]).unwrap();

    let summary = replay(&log, "h200", Some(&h200), &[p256, p512], &db).unwrap();
    assert_eq!(summary.problems_replayed, 2);
    assert_eq!(summary.rows_recorded, rows.len() - 1);
    for (p, checksum) in [(&p256, "old"), (&p256, "feed"), (&p512, "feed")] {
        assert!(db
            .is_problem_done("h200", p, checksum, Source::Replay)
            .unwrap());
    }
    let stored = db.measurements(Some("h200")).unwrap();
    assert_eq!(stored.len(), rows.len());
    assert!(stored.iter().all(|r| r.source == Source::Replay));
    assert_eq!(
        stored
            .iter()
            .filter(|r| r.template_checksum == "old")
            .count(),
        3
    );
    assert!(stored
        .iter()
        .filter(|r| r.template_checksum == "old")
        .all(|r| r.created_at == "2026-01-01T00:00:00Z" && r.median_us >= Some(300.0)));
    // The best of m = 512 is its fastest row, 197 µs.
    let best = db.best_for("h200", &p512).unwrap().unwrap();
    assert_eq!(best.median_us, Some(197.0));

    let again = replay(&log, "h200", Some(&h200), &[p256, p512], &db).unwrap();
    assert_eq!((again.problems_skipped, again.rows_recorded), (2, 0));
}
