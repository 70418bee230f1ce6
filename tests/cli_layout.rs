//! The A layout through the command line, as users meet it: `--a-layout` on the main command
//! (overriding the shapes file), `report` (JSON, table, CSV, filter; the element type's filter
//! too), `lookup` (answers for one layout only), and export / replay / check-replay with
//! column-major rows. No GPU needed.

mod common;

use common::{nmtune, one_clear_error_line, one_line_error};
use nmtune::db::Database;
use nmtune::gpu::GpuProfile;
use nmtune::problem::{ALayout, NmPattern, Problem};
use nmtune::tuner::search::{candidates, Strategy};
use predicates::prelude::*;
use std::fs;
use std::path::{Path, PathBuf};

/// Layer `q` in the file's layouts (row when none), `wide` row-major only at m = 256, `col`
/// column-major at m = 256 and row-major at m = 300 and 512.
const SHAPES: &str = "\
defaults: { m: [256], sparsity: \"8:32\", L: 32 }
layers:
  - { model: t, name: q, n: 1024, k: 1024 }
  - { model: t, name: wide, n: 2048, k: 1024, a_layout: row }
  - { model: t, name: col, n: 1024, k: 2048, a_layout: col }
  - { model: t, name: col, n: 1024, k: 2048, m: [300, 512], a_layout: row }
";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path
}

/// `nmtune --gpu h100 --backend model` over `shapes` into `db`, with `extra` arguments.
fn model_run(shapes: &Path, db: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    nmtune()
        .args(["--gpu", "h100", "--backend", "model", "--quiet", "--shapes"])
        .arg(shapes)
        .arg("--db")
        .arg(db)
        .args(extra)
        .assert()
}

fn stdout_of(args: &[&str], db: &Path) -> String {
    let out = nmtune().args(args).arg("--db").arg(db).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn report_json(db: &Path, extra: &[&str]) -> Vec<serde_json::Value> {
    let args: Vec<&str> = ["report", "--format", "json"]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    serde_json::from_str(&stdout_of(&args, db)).unwrap()
}

/// `nmtune lookup --gpu h100 --format json` for (m, n, k) at 8:32 in `layout`.
fn lookup_json(db: &Path, (m, n, k): (usize, usize, usize), layout: &str) -> serde_json::Value {
    let shape = [m.to_string(), n.to_string(), k.to_string()];
    let args = [
        "lookup",
        "--gpu",
        "h100",
        "--format",
        "json",
        "--nm",
        "8:32",
        "--m",
        &shape[0],
        "--n",
        &shape[1],
        "--k",
        &shape[2],
        "--a-layout",
        layout,
    ];
    serde_json::from_str(&stdout_of(&args, db)).unwrap()
}

fn layouts(rows: &[serde_json::Value]) -> Vec<&str> {
    rows.iter()
        .map(|r| r["a_layout"].as_str().unwrap())
        .collect()
}

#[test]
fn main_command_a_layout_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let shapes = write(dir.path(), "s.yaml", SHAPES);
    let db = dir.path().join("t.sqlite");
    model_run(&shapes, &db, &["--a-layout", "diag"])
        .code(1)
        .stderr(one_line_error("unknown A layout 'diag'"));
    model_run(&shapes, &db, &["--a-layout", "row,diag"])
        .code(1)
        .stderr(one_line_error("use row (row-major) or col (column-major)"));
    // m = 300 is fine row-major, not column-major: the error names file, line and shape.
    let odd = write(
        dir.path(),
        "odd.yaml",
        &SHAPES.replace("[300, 512]", "[302]"),
    );
    model_run(&odd, &db, &["--a-layout", "row,col"])
        .code(1)
        .stderr(one_line_error(
            "odd.yaml:6: layer 'col' (t): shape m302_n1024_k2048_8:32_l32 with a_layout col (--a-layout): m=302 must be a multiple of 4",
        ));
    assert!(!db.exists(), "a refused run must not create the database");
}

#[test]
fn main_command_a_layout_overrides_the_shapes_file() {
    let dir = tempfile::tempdir().unwrap();
    let shapes = write(dir.path(), "s.yaml", SHAPES);
    let count = |db: &Path, layout: &str| {
        layouts(&report_json(db, &[]))
            .iter()
            .filter(|l| **l == layout)
            .count()
    };
    // The file's layouts: q and wide row, col once column-major and twice row-major.
    let file = dir.path().join("file.sqlite");
    model_run(&shapes, &file, &[]).success();
    assert_eq!((count(&file, "row"), count(&file, "col")), (4, 1));
    let col = dir.path().join("col.sqlite");
    model_run(&shapes, &col, &["--a-layout", "col"]).success();
    assert_eq!((count(&col, "row"), count(&col, "col")), (0, 5));
    let both = dir.path().join("both.sqlite");
    model_run(&shapes, &both, &["--a-layout", "col,row,col"]).success();
    assert_eq!((count(&both, "row"), count(&both, "col")), (5, 5));
    // Every column-major entry's kernel takes column-major A, and the other way round.
    for row in report_json(&both, &[]) {
        let copy = row["config"]["a_copy"].as_str().unwrap();
        match row["a_layout"].as_str().unwrap() {
            "col" => assert_eq!(copy, "col16", "{row}"),
            _ => assert!(copy == "row4" || copy == "row16", "{row}"),
        }
    }
}

#[test]
fn report_shows_and_filters_the_layout_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let shapes = write(dir.path(), "s.yaml", SHAPES);
    let db = dir.path().join("t.sqlite");
    model_run(&shapes, &db, &[]).success();
    let all = report_json(&db, &[]);
    assert_eq!(all.len(), 5);
    assert!(all
        .iter()
        .all(|r| r["a_layout"] == "row" || r["a_layout"] == "col"));
    let col = report_json(&db, &["--a-layout", "col"]);
    assert_eq!(layouts(&col), vec!["col"]);
    assert_eq!(
        (col[0]["m"].as_u64(), col[0]["k"].as_u64()),
        (Some(256), Some(2048))
    );
    assert!(col[0]["kernel"].as_str().unwrap().contains("_acol16_"));
    assert_eq!(layouts(&report_json(&db, &["--a-layout", "row"])).len(), 4);

    let table = stdout_of(&["report", "--a-layout", "col"], &db);
    let header = table.lines().next().unwrap();
    let columns: Vec<&str> = header.split_whitespace().collect();
    let a_column = columns.iter().position(|c| *c == "A").expect(header);
    let line = table.lines().nth(1).unwrap();
    assert_eq!(
        line.split_whitespace().nth(a_column),
        Some("col"),
        "{table}"
    );

    let csv = stdout_of(&["report", "--format", "csv"], &db);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header
        .iter()
        .position(|c| *c == "a_layout")
        .expect("column");
    let values: Vec<&str> = lines.map(|l| l.split(',').nth(at).unwrap()).collect();
    assert_eq!(values.len(), 5);
    assert_eq!(values.iter().filter(|v| **v == "col").count(), 1);
    assert!(values.iter().all(|v| *v == "col" || *v == "row"));

    nmtune()
        .args(["report", "--a-layout", "column", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(one_line_error("unknown A layout 'column'"));
}

#[test]
fn lookup_answers_one_layout_and_never_crosses_to_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let shapes = write(dir.path(), "s.yaml", SHAPES);
    let db = dir.path().join("t.sqlite");
    model_run(&shapes, &db, &[]).success();
    let kernel = |a: &serde_json::Value| a["kernel"].as_str().unwrap().to_string();

    // Exact, in each layout, with the layout in the answer.
    let col = lookup_json(&db, (256, 1024, 2048), "col");
    assert_eq!(
        (&col["rule"], &col["a_layout"]),
        (&"exact".into(), &"col".into())
    );
    assert!(kernel(&col).contains("_acol16_"), "{col}");
    let row = lookup_json(&db, (300, 1024, 2048), "row");
    assert_eq!(
        (&row["rule"], &row["a_layout"]),
        (&"exact".into(), &"row".into())
    );
    assert!(!kernel(&row).contains("_acol16_"), "{row}");

    // m = 300 column-major: the only column-major entry is at 256, although the row-major
    // one at 300 is nearer (the same m).
    let nearest = lookup_json(&db, (300, 1024, 2048), "col");
    assert_eq!(nearest["rule"], "nearest_m");
    assert_eq!(nearest["from_m"], 256);
    // The same kernel, launched with the split-K factor the model prefers at m = 300.
    let unsplit = |a: &serde_json::Value| kernel(a).rsplit_once("_sk").unwrap().0.to_string();
    assert_eq!(unsplit(&nearest), unsplit(&col));
    // Row-major at 256 is not tuned; the row entries at 300 and 512 answer, never the
    // column-major one at 256 itself.
    let below = lookup_json(&db, (256, 1024, 2048), "row");
    assert_eq!(
        (&below["rule"], &below["from_m"]),
        (&"nearest_m".into(), &300.into())
    );

    // A weight tuned only row-major: column-major gets the Table I default on its own copy
    // path; row-major keeps its exact entry.
    let default = lookup_json(&db, (256, 2048, 1024), "col");
    assert_eq!(default["rule"], "default");
    assert!(default["source"].is_null());
    assert_eq!(default["config"]["a_copy"], "col16");
    assert_eq!(lookup_json(&db, (256, 2048, 1024), "row")["rule"], "exact");
    let untuned = lookup_json(&db, (64, 512, 512), "row");
    assert_eq!(untuned["config"]["a_copy"], "row4");

    // The table form says the layout; column-major m must be a multiple of 4.
    nmtune()
        .args(["lookup", "--gpu", "h100", "--nm", "8:32", "--m", "300"])
        .args(["--n", "1024", "--k", "2048", "--a-layout", "col", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("L=32 A col-major"))
        .stdout(predicate::str::contains("nearest m (entry tuned at m=256)"));
    for (m, layout, what) in [
        (
            "302",
            "col",
            "m=302 must be a multiple of 4 for column-major A",
        ),
        ("300", "diag", "unknown A layout 'diag'"),
    ] {
        nmtune()
            .args(["lookup", "--gpu", "h100", "--nm", "8:32", "--m", m])
            .args(["--n", "1024", "--k", "2048", "--a-layout", layout, "--db"])
            .arg(&db)
            .assert()
            .code(1)
            .stderr(one_line_error(what));
    }
}

// ---------------------------------------------------------------- export and replay

/// The same weight measured in both layouts at m = 256 and 512, three candidates each; the
/// column-major entries are the faster ones.
fn measured_db(dir: &Path) -> PathBuf {
    let path = dir.join("both.sqlite");
    let db = Database::open(&path).unwrap();
    let h200 = GpuProfile::builtin("h200").unwrap();
    db.upsert_gpu(&h200).unwrap();
    let mut rows = Vec::new();
    for layout in ALayout::ALL {
        for m in [256, 512] {
            let p = Problem::new(m, 4096, 4096, NmPattern::new(8, 32).unwrap(), 32)
                .unwrap()
                .with_layout(layout)
                .unwrap();
            let base = if layout == ALayout::ColMajor {
                50.0
            } else {
                90.0
            };
            for (i, cfg) in candidates(&p, &h200, Strategy::Pruned)
                .into_iter()
                .take(3)
                .enumerate()
            {
                assert_eq!(cfg.a_layout(), layout);
                rows.push(common::measured_row(&p, cfg, base + i as f64));
            }
        }
    }
    db.record_all(&rows).unwrap();
    path
}

#[test]
fn column_major_rows_export_replay_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let db = measured_db(dir.path());
    let file = dir.path().join("both.measurements.jsonl");
    nmtune()
        .args(["export", "--db"])
        .arg(&db)
        .arg("--out")
        .arg(&file)
        .assert()
        .success();
    let text = fs::read_to_string(&file).unwrap();
    let col_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"a_layout\":\"col\""))
        .collect();
    assert_eq!((text.lines().count(), col_lines.len()), (12, 6));
    assert!(col_lines
        .iter()
        .all(|l| l.contains("\"kernel\":\"nm_spmm_f32_acol16_")));

    let shapes = write(
        dir.path(),
        "s.yaml",
        "defaults: { m: [256, 512], sparsity: \"8:32\", L: 32, a_layout: [row, col] }\n\
         layers:\n  - { model: t, name: q, n: 4096, k: 4096 }\n",
    );
    let replayed = dir.path().join("replayed.sqlite");
    nmtune()
        .args(["--backend", "replay", "--gpu", "h200", "--measurements"])
        .arg(&file)
        .arg("--shapes")
        .arg(&shapes)
        .arg("--db")
        .arg(&replayed)
        .assert()
        .success()
        .stderr(predicate::str::contains("replayed 4 of 4 problems"));
    let (before, after) = (report_json(&db, &[]), report_json(&replayed, &[]));
    assert_eq!(before.len(), 4);
    assert_eq!(layouts(&after), layouts(&before));
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(
            (&b["kernel"], &b["median_us"]),
            (&a["kernel"], &a["median_us"])
        );
        assert_eq!(a["source"], "replay");
    }
    nmtune()
        .args(["check-replay", "--db"])
        .arg(&db)
        .arg("--measurements")
        .arg(&file)
        .assert()
        .success()
        .stdout(predicate::str::contains("4 best entries identical"));

    // A column-major line whose kernel takes row-major A is refused with file:line.
    let crossed = text.replacen("\"a_layout\":\"row\"", "\"a_layout\":\"col\"", 1);
    let line = crossed
        .lines()
        .position(|l| l.contains("_arow") && l.contains("\"a_layout\":\"col\""))
        .unwrap()
        + 1;
    fs::write(&file, crossed).unwrap();
    let out = nmtune()
        .args(["check-replay", "--db"])
        .arg(&db)
        .arg("--measurements")
        .arg(&file)
        .output()
        .unwrap();
    let error = one_clear_error_line(&out);
    assert!(
        error.contains(&format!(
            "both.measurements.jsonl:{line}: kernel nm_spmm_f32_arow"
        )),
        "{error}"
    );
    assert!(
        error.contains("takes row-major A, the line's a_layout is col"),
        "{error}"
    );
}

#[test]
fn report_filters_by_element_type_and_says_when_none_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let shapes = write(dir.path(), "s.yaml", SHAPES);
    let db = dir.path().join("t.sqlite");
    model_run(&shapes, &db, &[]).success();
    let all = report_json(&db, &[]);
    let f32_rows = report_json(&db, &["--dtype", "f32"]);
    assert!(!all.is_empty());
    assert_eq!(f32_rows, all, "every entry is FP32");
    assert!(all.iter().all(|r| r["dtype"] == "f32"));
    let report = |dtype: &str| {
        nmtune()
            .args(["report", "--dtype", dtype, "--db"])
            .arg(&db)
            .assert()
    };
    report("bf16")
        .code(1)
        .stderr(one_line_error("holds no usable entry of type bf16"));
    report("f64")
        .code(1)
        .stderr(one_line_error("unknown data type 'f64'"));
}
