//! `nmtune lookup`: answers from the committed database without a GPU, in table and JSON
//! form; bad input is one line on stderr and a non-zero exit.

mod common;

use common::{nmtune, one_line_error};
use nmtune::codegen::template_checksum;
use nmtune::db::Database;
use predicates::prelude::*;
use std::path::Path;

const DB: &str = "tuning-db/h200.sqlite";

/// Whether the committed database was tuned with this build's templates (else every answer
/// is a default, by design).
fn committed_db_is_current() -> bool {
    let db = Database::open_read_only(Path::new(DB)).unwrap();
    let rows = db.measurements(Some("h200")).unwrap();
    rows.iter()
        .any(|m| m.template_checksum == template_checksum())
}

fn lookup_json(args: &[&str]) -> serde_json::Value {
    let out = nmtune()
        .args(["lookup", "--db", DB, "--gpu", "h200", "--format", "json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn exact_entry_matches_the_report() {
    let shape = ["--m", "256", "--n", "2048", "--k", "2048", "--nm", "4:32"];
    let answer = lookup_json(&shape);
    for field in ["kernel", "config", "rule", "from_m", "source", "median_us"] {
        assert!(answer.get(field).is_some(), "missing {field}: {answer}");
    }
    assert_eq!(
        (answer["m"].as_u64(), answer["nm"].as_str()),
        (Some(256), Some("4:32"))
    );
    if !committed_db_is_current() {
        eprintln!("NOTE: {DB} predates this build's templates: expecting a default");
        assert_eq!(answer["rule"], "default");
        assert!(answer["source"].is_null());
        return;
    }
    let db = Database::open_read_only(Path::new(DB)).unwrap();
    let p = nmtune::problem::Problem::new(
        256,
        2048,
        2048,
        nmtune::problem::NmPattern::new(4, 32).unwrap(),
        32,
    )
    .unwrap();
    let best = db.best_for("h200", &p).unwrap().unwrap();
    assert_eq!(answer["rule"], "exact");
    assert_eq!(answer["kernel"], best.config.name());
    assert_eq!(answer["source"], "measured");
    assert_eq!(answer["median_us"].as_f64(), best.median_us);
    assert_eq!(answer["cublas_us"].as_f64(), best.cublas_us);
}

#[test]
fn untuned_m_borrows_the_nearest_entry() {
    let answer = lookup_json(&["--m", "300", "--n", "4096", "--k", "4096", "--nm", "8:32"]);
    if committed_db_is_current() {
        assert_eq!(answer["rule"], "nearest_m");
        assert_eq!(answer["from_m"], 256);
    } else {
        assert_eq!(answer["rule"], "default");
    }
}

#[test]
fn untuned_weight_gets_a_default_in_table_form() {
    nmtune()
        .args([
            "lookup", "--db", DB, "--gpu", "h200", "--m", "64", "--n", "512",
        ])
        .args(["--k", "512", "--nm", "2:4", "--l", "16"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("rule      default")
                .and(predicate::str::contains("source    built-in default"))
                .and(predicate::str::contains(
                    "kernel    nm_spmm_f32_arow4_ms32_ns32_",
                )),
        );
}

#[test]
fn bad_input_is_one_line_and_non_zero() {
    let cases: [(&[&str], &'static str); 6] = [
        (
            &["--m", "256", "--n", "4096", "--k", "4096", "--nm", "33:32"],
            "N must not exceed M",
        ),
        (
            &["--m", "256", "--n", "4096", "--k", "4010", "--nm", "8:32"],
            "not a multiple of M=32",
        ),
        (
            &["--m", "0", "--n", "4096", "--k", "4096", "--nm", "8:32"],
            "at least 1",
        ),
        (
            &["--m", "x", "--n", "4096", "--k", "4096", "--nm", "8:32"],
            "--m",
        ),
        (
            &["--m", "256", "--n", "4096", "--k", "4096", "--nm", "8/32"],
            "8/32",
        ),
        (
            &[
                "--m", "256", "--n", "4096", "--k", "4096", "--nm", "8:32", "--l", "12",
            ],
            "L=12",
        ),
    ];
    for (args, what) in cases {
        nmtune()
            .args(["lookup", "--db", DB, "--gpu", "h200"])
            .args(args)
            .assert()
            .code(1)
            .stderr(one_line_error(what));
    }
}

#[test]
fn unknown_gpu_and_missing_database_are_errors() {
    let shape = ["--m", "256", "--n", "4096", "--k", "4096", "--nm", "8:32"];
    nmtune()
        .args(["lookup", "--db", DB, "--gpu", "v100"])
        .args(shape)
        .assert()
        .code(1)
        .stderr(one_line_error("unknown GPU 'v100'"));
    let dir = tempfile::tempdir().unwrap();
    nmtune()
        .args(["lookup", "--gpu", "h200", "--db"])
        .arg(dir.path().join("typo.sqlite"))
        .args(shape)
        .assert()
        .code(1)
        .stderr(one_line_error("does not exist"));
}
