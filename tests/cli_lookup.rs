//! `nmtune lookup`: answers from the committed database without a GPU, in table and JSON
//! form; bad input is one line on stderr and a non-zero exit.

mod common;

use common::{json_output, nmtune, one_line_error, report_json, timed_row};
use nmtune::codegen::KernelConfig;
use nmtune::db::{Database, Source};
use nmtune::gpu::GpuProfile;
use nmtune::problem::{NmPattern, Problem};
use nmtune::runtime::{Lookup, Rule};
use nmtune::tuner::search::{candidates, Strategy};
use predicates::prelude::*;
use std::path::Path;

const DB: &str = "tuning-db/h200.sqlite";

/// Whether the committed database was tuned with this build's templates (else every answer
/// is a default, by design).
fn committed_db_is_current() -> bool {
    db_is_current(DB, "h200")
}

fn db_is_current(path: &str, gpu: &str) -> bool {
    let db = Database::open_read_only(Path::new(path)).unwrap();
    let rows = db.measurements(Some(gpu)).unwrap();
    // Current as the lookup judges it: tuned with this build's templates, or timing a kernel
    // whose own templates have not changed since.
    rows.iter().any(nmtune::db::is_current)
}

/// A committed large-m database that is current, and its GPU (a stale one's answers follow a
/// warning line, and one GPU's database may await its re-tune while the other's is done).
fn a_current_committed_db() -> [&'static str; 2] {
    [
        ["tuning-db/h200.sqlite", "h200"],
        ["tuning-db/h100.sqlite", "h100"],
    ]
    .into_iter()
    .find(|[path, gpu]| db_is_current(path, gpu))
    .expect("no committed large-m database is current")
}

fn lookup_json(args: &[&str]) -> serde_json::Value {
    lookup_json_in(Path::new(DB), args)
}

/// `nmtune lookup --gpu h200 --format json --db <db> <args>`, which must succeed, parsed.
fn lookup_json_in(db: &Path, args: &[&str]) -> serde_json::Value {
    let lookup = ["lookup", "--gpu", "h200", "--format", "json", "--db"];
    json_output(nmtune().args(lookup).arg(db).args(args))
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
    assert_eq!(answer["dtype"], "f32", "the default element type");
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

/// The nearest m below and above `m` at which the committed database holds 4096 × 4096 8:32
/// (row-major A, L = 32): the neighbours rule 2 may borrow from (the grid between
/// `shapes/llama.yaml`'s m is denser for the Llama-7B layers, so read it, not assume it).
fn tuned_neighbours_of(m: usize) -> Vec<usize> {
    let db = Database::open_read_only(Path::new(DB)).unwrap();
    let tuned: Vec<usize> = db
        .best_entries(Some("h200"))
        .unwrap()
        .into_iter()
        .map(|e| e.problem)
        .filter(|p| (p.n, p.k, p.l) == (4096, 4096, 32) && p.nm == NmPattern::new(8, 32).unwrap())
        .filter(|p| {
            p.a_layout == nmtune::problem::ALayout::RowMajor && p.dtype == Default::default()
        })
        .map(|p| p.m)
        .collect();
    let below = tuned.iter().copied().filter(|&t| t < m).max();
    let above = tuned.iter().copied().filter(|&t| t > m).min();
    below.into_iter().chain(above).collect()
}

#[test]
fn untuned_m_borrows_from_a_tuned_neighbour() {
    let answer = lookup_json(&["--m", "300", "--n", "4096", "--k", "4096", "--nm", "8:32"]);
    if committed_db_is_current() {
        assert_eq!(answer["rule"], "nearest_m");
        let from_m = answer["from_m"].as_u64().unwrap() as usize;
        assert!(tuned_neighbours_of(300).contains(&from_m), "{answer}");
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
    let cases: [(&[&str], &'static str); 8] = [
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
        (
            &[
                "--m", "256", "--n", "4096", "--k", "4096", "--nm", "8:32", "--dtype", "f64",
            ],
            "unknown data type 'f64'",
        ),
        (
            &[
                "--m", "256", "--n", "4064", "--k", "4096", "--nm", "8:32", "--dtype", "bf16",
            ],
            "m = 256 and n = 4064 must be multiples of 64 and 128",
        ),
    ];
    let [db, gpu] = a_current_committed_db();
    for (args, what) in cases {
        nmtune()
            .args(["lookup", "--db", db, "--gpu", gpu])
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

// ------------------------------------------------------------ one "best" for report and lookup

fn problem(m: usize, n: usize, k: usize, nm: &str) -> Problem {
    Problem::new(m, n, k, NmPattern::parse(nm, 32).unwrap(), 32).unwrap()
}

/// The pruned strategy's candidates for `p` on the H200: valid configurations.
fn configs(p: &Problem) -> Vec<KernelConfig> {
    let h200 = GpuProfile::builtin("h200").unwrap();
    candidates(p, &h200, Strategy::Pruned)
}

fn lookup_at(db: &Path, p: &Problem) -> serde_json::Value {
    let (m, n, k, nm) = (
        p.m.to_string(),
        p.n.to_string(),
        p.k.to_string(),
        p.nm.to_string(),
    );
    lookup_json_in(db, &["--m", &m, "--n", &n, "--k", &k, "--nm", &nm])
}

#[test]
fn report_and_lookup_name_the_same_kernel_for_a_measured_and_a_faster_replayed_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.sqlite");
    let p = problem(256, 4096, 4096, "8:32");
    let c = configs(&p);
    let db = Database::open(&path).unwrap();
    db.record(&timed_row(p, c[0], Source::Measured, 10.0))
        .unwrap();
    db.record(&timed_row(p, c[1], Source::Replay, 8.0)).unwrap();
    drop(db);
    let reported = report_json(&path);
    assert_eq!(reported.len(), 1);
    let looked_up = lookup_at(&path, &p);
    assert_eq!(reported[0]["kernel"], looked_up["kernel"]);
    assert_eq!(looked_up["rule"], "exact");
    assert_eq!(reported[0]["source"], "measured", "measured > replay");
    assert_eq!(looked_up["source"], "measured");
    assert_eq!(reported[0]["kernel"], c[0].name());
}

#[test]
fn several_databases_read_as_one_keep_the_better_entry_in_either_order() {
    let dir = tempfile::tempdir().unwrap();
    let (prefill, decode) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
    let (shared, only_prefill, only_decode) = (
        problem(256, 4096, 4096, "8:32"),
        problem(4096, 4096, 4096, "8:32"),
        problem(1, 4096, 4096, "8:32"),
    );
    let (c, d) = (configs(&shared), configs(&only_decode));
    let a = Database::open(&prefill).unwrap();
    a.record(&timed_row(shared, c[0], Source::Measured, 10.0))
        .unwrap();
    a.record(&timed_row(
        only_prefill,
        configs(&only_prefill)[0],
        Source::Measured,
        500.0,
    ))
    .unwrap();
    drop(a);
    let b = Database::open(&decode).unwrap();
    b.record(&timed_row(shared, c[1], Source::Measured, 8.0))
        .unwrap();
    b.record(&timed_row(only_decode, d[0], Source::Measured, 12.0))
        .unwrap();
    drop(b);
    for order in [[&prefill, &decode], [&decode, &prefill]] {
        let both = Lookup::open_all(&order, "h200").unwrap();
        let exact = |p: &Problem| {
            let choice = both.lookup(p).unwrap();
            assert_eq!(choice.rule, Rule::Exact, "{p}");
            choice.median_us
        };
        assert_eq!(exact(&shared), Some(8.0), "the faster of the two entries");
        assert_eq!(exact(&only_prefill), Some(500.0));
        assert_eq!(exact(&only_decode), Some(12.0));
    }
    // The CLI reads them the same way, `--db` repeated.
    let m = shared.m.to_string();
    let answer: serde_json::Value = json_output(
        nmtune()
            .args(["lookup", "--gpu", "h200", "--format", "json", "--db"])
            .arg(&prefill)
            .arg("--db")
            .arg(&decode)
            .args(["--m", &m, "--n", "4096", "--k", "4096", "--nm", "8:32"]),
    );
    assert_eq!(answer["kernel"], c[1].name());
    assert_eq!(answer["median_us"], 8.0);
}

/// Every problem of `path` (one GPU, `gpu`): the runtime launches the reported kernel exactly
/// when the reported entry is one this build generates, and never launches any other entry.
fn assert_report_and_lookup_agree(path: &Path, gpu: &str) -> usize {
    let db = Database::open_read_only(path).unwrap();
    let best = db.best_entries(Some(gpu)).unwrap();
    drop(db);
    let lookup = Lookup::open(path, gpu).unwrap();
    for b in &best {
        let choice = lookup.lookup(&b.problem).unwrap();
        let launchable =
            nmtune::db::is_current(b) && nmtune::codegen::validate(&b.config, lookup.gpu()).is_ok();
        if launchable {
            assert_eq!(
                (
                    choice.rule,
                    choice.config.name(),
                    choice.source,
                    choice.median_us
                ),
                (Rule::Exact, b.kernel_name(), Some(b.source), b.median_us),
                "{} {}",
                path.display(),
                b.problem
            );
        } else {
            assert_ne!(choice.rule, Rule::Exact, "{} {}", path.display(), b.problem);
        }
    }
    best.len()
}

#[test]
fn report_and_lookup_agree_on_every_problem_of_a_database() {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    let mut rng = SmallRng::seed_from_u64(12);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("random.sqlite");
    let db = Database::open(&path).unwrap();
    let sources = [Source::Measured, Source::Replay, Source::Model];
    let mut problems = Vec::new();
    for m in [256, 512, 1024] {
        for nm in ["16:32", "8:32", "4:32"] {
            let p = problem(m, 2048, 2048, nm);
            problems.push(p);
            for c in configs(&p).into_iter().take(8) {
                let mut row =
                    timed_row(p, c, sources[rng.gen_range(0..3)], rng.gen_range(5.0..50.0));
                if rng.gen_bool(0.3) {
                    row.template_checksum = "other-templates".into();
                }
                db.record(&row).unwrap();
            }
        }
    }
    drop(db);
    assert_eq!(
        assert_report_and_lookup_agree(&path, "h200"),
        problems.len()
    );
    // The same through the command line.
    for r in report_json(&path) {
        let p = problem(
            r["m"].as_u64().unwrap() as usize,
            r["n"].as_u64().unwrap() as usize,
            r["k"].as_u64().unwrap() as usize,
            r["nm"].as_str().unwrap(),
        );
        let answer = lookup_at(&path, &p);
        // The report says which entries the runtime launches: those of this build's templates.
        assert_eq!(
            answer["rule"] == "exact",
            r["current_templates"] == true,
            "{p}"
        );
        if answer["rule"] == "exact" {
            assert_eq!(answer["kernel"], r["kernel"], "{p}");
            assert_eq!(answer["source"], r["source"], "{p}");
        }
    }
}

#[test]
fn report_and_lookup_agree_on_every_committed_database() {
    for entry in std::fs::read_dir("tuning-db").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sqlite") {
            let gpus = Database::open_read_only(&path).unwrap().gpus().unwrap();
            for gpu in gpus {
                assert!(assert_report_and_lookup_agree(&path, &gpu) > 0);
            }
        }
    }
}

#[test]
fn a_bare_number_is_not_a_sparsity_pattern() {
    let shape = ["--m", "256", "--n", "4096", "--k", "4096", "--nm"];
    for bare in ["0", "0.75", "75"] {
        nmtune()
            .args(["lookup", "--db", DB, "--gpu", "h200"])
            .args(shape)
            .arg(bare)
            .assert()
            .code(1)
            .stderr(one_line_error("is neither N:M nor a percentage"));
    }
    let answer = lookup_json(&[&shape[..], &["75%"]].concat());
    assert_eq!(answer["nm"], "8:32");
    let dense = lookup_json(&[&shape[..], &["0%"]].concat());
    assert_eq!(dense["nm"], "32:32", "an explicit 0 % is dense, on purpose");
}
