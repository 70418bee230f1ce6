//! The command line's behaviour users rely on: clear one-line errors with a non-zero exit,
//! and the report of the committed tuning database.

mod common;

use common::{nmtune, one_line_error, report_json};
use predicates::prelude::*;
use std::fs;

#[test]
fn main_job_without_a_gpu_says_so() {
    if nmtune::gpu::device::driver_present() {
        eprintln!("SKIPPED: this machine has an NVIDIA driver");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    nmtune()
        .args([
            "--gpu",
            "h100",
            "--backend",
            "gpu",
            "--shapes",
            "shapes/llama.yaml",
            "--db",
        ])
        .arg(dir.path().join("t.sqlite"))
        .assert()
        .code(1)
        .stderr(one_line_error("no NVIDIA GPU"));
}

#[test]
fn malformed_yaml_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    fs::write(&file, "layers:\n  - { n: 4096, k: [4096\n").unwrap();
    nmtune()
        .args(["--gpu", "h100", "--shapes"])
        .arg(&file)
        .assert()
        .code(1)
        .stderr(one_line_error("bad.yaml:"));
}

#[test]
fn n_greater_than_m_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nm.yaml");
    fs::write(
        &file,
        "defaults: { m: [256], L: 32 }\nlayers:\n  - { model: x, name: q, n: 4096, k: 4096, sparsity: \"33:32\" }\n",
    )
    .unwrap();
    nmtune()
        .args(["--gpu", "h100", "--backend", "model", "--shapes"])
        .arg(&file)
        .assert()
        .code(1)
        .stderr(one_line_error("N must not exceed M"));
}

#[test]
fn corrupt_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("notes.sqlite");
    fs::write(&db, "these are my notes, not a database\n").unwrap();
    nmtune()
        .args([
            "--gpu",
            "h100",
            "--backend",
            "model",
            "--shapes",
            "shapes/example.yaml",
            "--db",
        ])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(one_line_error("not an nmtune tuning database"));
    assert_eq!(
        fs::read_to_string(&db).unwrap(),
        "these are my notes, not a database\n"
    );
}

#[test]
fn unknown_gpu_lists_the_profiles() {
    nmtune()
        .args(["--gpu", "v100", "--shapes", "shapes/example.yaml"])
        .assert()
        .code(1)
        .stderr(one_line_error("h100"));
}

#[test]
fn model_backend_fills_and_reports_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("model.sqlite");
    nmtune()
        .args([
            "--gpu",
            "h100",
            "--backend",
            "model",
            "--quiet",
            "--shapes",
            "shapes/example.yaml",
            "--db",
        ])
        .arg(&db)
        .assert()
        .success();
    let rows = report_json(&db);
    let expected = nmtune::shapes::load(std::path::Path::new("shapes/example.yaml"))
        .unwrap()
        .entries
        .len();
    assert_eq!(rows.len(), expected);
    assert!(rows
        .iter()
        .all(|r| r["source"] == "model" && r["median_us"].as_f64().unwrap() > 0.0));
    // A re-tune searches every problem again; the search being the same, it finds nothing new
    // to run and ends the same.
    let retune = nmtune()
        .args(["--gpu", "h100", "--backend", "model", "--retune"])
        .args(["--shapes", "shapes/example.yaml", "--db"])
        .arg(&db)
        .assert()
        .success();
    let said = String::from_utf8_lossy(&retune.get_output().stderr).to_string();
    assert!(
        said.contains(&format!("0 tuned, {expected} already done")),
        "{said}"
    );
    assert_eq!(report_json(&db), rows);
    // A replay reproduces a file; it cannot search again.
    nmtune()
        .args(["--gpu", "h100", "--backend", "replay", "--retune"])
        .args(["--measurements", "tuning-db/h100.measurements.jsonl"])
        .args(["--shapes", "shapes/example.yaml", "--db"])
        .arg(dir.path().join("replay.sqlite"))
        .assert()
        .code(1)
        .stderr(one_line_error("--retune searches again"));
    assert!(!dir.path().join("replay.sqlite").exists());
}

#[test]
fn report_of_the_committed_large_m_databases() {
    // Each holds shapes/llama.yaml (400 problems for each A layout) and
    // shapes/llama7b-between.yaml (128 for each) when tuned with this build's templates: the
    // shapes files' own counts, so that a problem dropped from either shows. A database that
    // predates the templates (awaiting its re-tune on its GPU) must say so on every entry.
    let mut current = 0;
    for gpu in ["h100", "h200"] {
        let committed = std::path::PathBuf::from(format!("tuning-db/{gpu}.sqlite"));
        let bytes = fs::read(&committed).unwrap();
        let rows = report_json(&committed);
        assert_eq!(
            fs::read(&committed).unwrap(),
            bytes,
            "the report changed {gpu}'s file"
        );
        if rows.iter().all(|r| r["current_templates"] == false) {
            eprintln!("NOTE: tuning-db/{gpu}.sqlite predates this build's templates");
            continue;
        }
        current += 1;
        check_large_m_report(&rows, gpu);
    }
    assert!(current > 0, "no committed large-m database is current");
}

fn check_large_m_report(rows: &[serde_json::Value], gpu: &str) {
    let files = ["shapes/llama.yaml", "shapes/llama7b-between.yaml"];
    let expected: std::collections::BTreeSet<String> = files
        .iter()
        .flat_map(|file| {
            nmtune::shapes::load(std::path::Path::new(file))
                .unwrap()
                .entries
        })
        .map(|entry| entry.problem.to_string())
        .collect();
    let reported: std::collections::BTreeSet<String> = rows
        .iter()
        .map(|r| {
            let layout = if r["a_layout"] == "col" { "_acol" } else { "" };
            format!(
                "m{}_n{}_k{}_{}_l{}{layout}",
                r["m"],
                r["n"],
                r["k"],
                r["nm"].as_str().unwrap(),
                r["l"]
            )
        })
        .collect();
    assert_eq!(rows.len(), 1056, "{gpu}");
    assert_eq!(reported, expected, "{gpu}");
    for layout in ["row", "col"] {
        assert_eq!(
            rows.iter().filter(|r| r["a_layout"] == layout).count(),
            528,
            "{gpu}"
        );
    }
    for r in rows {
        assert_eq!(r["current_templates"], true, "{gpu}: {}", r["kernel"]);
        assert_eq!(r["source"], "measured");
        assert_eq!(r["verified"], true);
        assert!(r["cublas_us"].as_f64().unwrap() > 0.0);
        assert!(r["speedup"].as_f64().unwrap() > 0.0);
        assert!(r["min_bytes"].as_u64().unwrap() > 0);
        assert!(r["achieved_gbps"].as_f64().unwrap() > 0.0);
        // Every entry carries the copy bandwidth timed in its own run (H100: about 3.0 TB/s,
        // H200: about 4.2 TB/s).
        let copy = r["copy_gbps"].as_f64().unwrap();
        assert!((1000.0..10_000.0).contains(&copy), "copy_gbps {copy}");
    }
}

#[test]
fn the_committed_element_wise_databases_hold_shapes_ew_yaml() {
    let expected: std::collections::BTreeSet<String> =
        nmtune::shapes::load(std::path::Path::new("shapes/ew.yaml"))
            .unwrap()
            .entries
            .iter()
            .map(|entry| entry.problem.to_string())
            .collect();
    for gpu in ["h100", "h200"] {
        let rows = report_json(std::path::Path::new(&format!("tuning-db/{gpu}-ew.sqlite")));
        assert_eq!(rows.len(), expected.len(), "{gpu}");
        for r in &rows {
            assert_eq!(r["l"], 1);
            assert_eq!(r["source"], "measured");
            assert_eq!(r["verified"], true);
            // The element-wise decode family serves m ≤ 16 beside the tiles.
            let kernel = r["kernel"].as_str().unwrap();
            let tokens: &[&str] = if r["m"].as_u64().unwrap() <= 16 {
                &["_ewcol_", "_ewtrans_", "_ewdcol_", "_ewdrow_"]
            } else {
                &["_ewcol_", "_ewtrans_"]
            };
            assert!(tokens.iter().any(|t| kernel.contains(t)), "{kernel}");
            assert_eq!(r["current_templates"], true, "{kernel}");
            assert!(r["cublas_us"].as_f64().unwrap() > 0.0);
        }
    }
}

/// A database of two H200 entries of 4096×4096 at 8:32, L = 32: m = 1 in 8 µs from a run that
/// timed a copy bandwidth of 3000 GB/s, and m = 256 in 100 µs from a run that timed none.
fn copy_bandwidth_db(dir: &std::path::Path) -> std::path::PathBuf {
    use nmtune::problem::{NmPattern, Problem};
    let h200 = nmtune::gpu::GpuProfile::builtin("h200").unwrap();
    let path = dir.join("copy.sqlite");
    let db = nmtune::db::Database::open(&path).unwrap();
    let rows: Vec<_> = [(1, 8.0, Some(3000.0)), (256, 100.0, None)]
        .into_iter()
        .map(|(m, median_us, copy_gbps)| {
            let p = Problem::new(m, 4096, 4096, NmPattern::new(8, 32).unwrap(), 32).unwrap();
            let config = nmtune::kernels::table_one::default_config(&p, &h200).unwrap();
            let mut row = common::measured_row(&p, config, median_us);
            row.copy_gbps = copy_gbps;
            row
        })
        .collect();
    db.record_all(&rows).unwrap();
    path
}

#[test]
fn report_shows_the_least_bytes_the_achieved_and_the_copy_bandwidth() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_bandwidth_db(dir.path());
    let rows = report_json(&db);
    assert_eq!(rows.len(), 2);
    // m = 1: B' 4096·1024·4 + D 128·1024·4 + A 4096·4 + C 4096·4 bytes, over 8 µs.
    assert_eq!(rows[0]["min_bytes"], 17_334_272);
    let achieved = rows[0]["achieved_gbps"].as_f64().unwrap();
    assert!((achieved - 2166.784).abs() < 1e-9, "{achieved}");
    assert_eq!(rows[0]["copy_gbps"], 3000.0);
    // m = 256: A and C grow to 256 rows each; no copy was timed.
    assert_eq!(rows[1]["min_bytes"], 16_777_216 + 524_288 + 2 * 4_194_304);
    let achieved = rows[1]["achieved_gbps"].as_f64().unwrap();
    assert!((achieved - 256.90112).abs() < 1e-9, "{achieved}");
    assert_eq!(rows[1]["copy_gbps"], serde_json::Value::Null);

    let csv = nmtune()
        .args(["report", "--format", "csv", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let csv = String::from_utf8(csv.stdout).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].contains(",min_bytes,achieved_gbps,copy_gbps,"),
        "{csv}"
    );
    assert!(lines[1].contains(",17334272,2166.8,3000.0,"), "{csv}");
    assert!(lines[2].contains(",25690112,256.9,,"), "{csv}");

    let table = nmtune().args(["report", "--db"]).arg(&db).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].contains("min_MB   GB/s copy_GB/s"), "{table}");
    assert!(lines[1].contains("  17.3   2167      3000 "), "{table}");
    assert!(lines[2].contains("  25.7    257         - "), "{table}");
}

#[test]
fn bench_rejects_a_bad_kernel_name_an_impossible_shape_and_the_warm_strategy() {
    let shape = ["bench", "--m", "64", "--n", "64", "--k"];
    let cases: [(&[&str], &str); 3] = [
        (&["64", "--kernels", "nm_spmm_bogus"], "not a kernel name"),
        (&["60", "--nm", "8:32"], "k=60"),
        // The warm strategy needs a database's earlier runs: bench has none to offer.
        (&["64", "--strategy", "warm"], "--strategy warm"),
    ];
    for (rest, expected) in cases {
        nmtune()
            .args(shape)
            .args(rest)
            .assert()
            .code(1)
            .stderr(one_line_error(expected));
    }
}

#[test]
fn bench_without_a_gpu_says_so() {
    if nmtune::gpu::device::driver_present() {
        eprintln!("SKIPPED: this machine has an NVIDIA driver");
        return;
    }
    nmtune()
        .args(["bench", "--m", "64", "--n", "64", "--k", "64"])
        .assert()
        .code(1)
        .stderr(one_line_error("no NVIDIA GPU"))
        .stderr(predicate::str::contains("nmtune kernel"))
        // bench takes no --backend: it must not suggest one.
        .stderr(predicate::str::contains("--backend").not());
}

#[test]
fn kernel_prints_the_resource_report_or_a_clear_error() {
    nmtune()
        .args(["kernel", "nm_spmm_f32_nonsense"])
        .assert()
        .code(1)
        .stderr(one_line_error("not a kernel name"));
    // A kernel the architecture cannot run is refused before the compiler's log is printed.
    let tma = "nm_spmm_f32_acol16_ms128_ns256_ks64_mt16_nt8_w8x4_n8m32l32_nopack_cp3_mb1_sk1_tma";
    nmtune()
        .args(["kernel", tma, "--arch", "sm_80"])
        .assert()
        .code(1)
        .stderr(one_line_error(
            "needs compute capability 9.0 or newer; sm_80 is 8.0",
        ));
    if nmtune::codegen::nvrtc::nvrtc_available().is_err() {
        eprintln!("SKIPPED: NVRTC not available for the kernel report");
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let name = "nm_spmm_f32_arow4_ms64_ns64_ks32_mt8_nt8_w4x8_n8m32l32_nopack_cp2_mb1_sk1";
    nmtune()
        .args(["kernel", name, "--cache-dir"])
        .arg(cache.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("registers").and(predicate::str::contains("sm_90")));
    // An architecture that is none names the kernel it could not compile.
    let message = format!("kernel {name} failed to compile for foo");
    nmtune()
        .args(["kernel", name, "--arch", "foo", "--cache-dir"])
        .arg(cache.path())
        .assert()
        .code(1)
        .stderr(one_line_error("is not a real architecture"))
        .stderr(predicate::str::contains(message));
}

#[test]
fn a_problem_no_configuration_can_run_is_an_error_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // (L, n, the file's extra defaults, flags, message): L = 12 is not a multiple of 4; the
    // tensor-core family, the only one for BF16 and FP16, takes whole 128-column blocks,
    // asked for in the file or with --dtype.
    let cases: [(usize, usize, &str, &[&str], &str); 3] = [
        (12, 4092, "", &[], "such as m256_n4092_k4096_8:32_l12"),
        (
            32,
            4064,
            ", dtype: bf16",
            &[],
            "such as m256_n4064_k4096_8:32_l32_bf16: m = 256 and n = 4064 must be multiples of 64 and 128",
        ),
        (
            32,
            4064,
            "",
            &["--dtype", "f32,f16"],
            "such as m256_n4064_k4096_8:32_l32_f16",
        ),
    ];
    for (i, (l, n, extra, flags, expected)) in cases.into_iter().enumerate() {
        let shapes = dir.path().join(format!("{i}.yaml"));
        let text = format!(
            "defaults: {{ m: [256], sparsity: [\"8:32\"], L: {l}{extra} }}\n\
             layers:\n  - {{ model: x, name: q, n: {n}, k: 4096 }}\n"
        );
        fs::write(&shapes, text).unwrap();
        let db = dir.path().join(format!("{i}.sqlite"));
        nmtune()
            .args(["--gpu", "h100", "--backend", "model", "--shapes"])
            .arg(&shapes)
            .arg("--db")
            .arg(&db)
            .args(flags)
            .assert()
            .code(1)
            .stderr(one_line_error(
                "no kernel configuration can run 1 of the problems asked for",
            ))
            .stderr(predicate::str::contains(expected));
        assert!(!db.exists(), "nothing is stored for it");
    }
}

/// BF16 and FP16 problems are tuned with the tensor-core family, at the vector lengths `--l`
/// asks for; a length the layer cannot take is one line.
#[test]
fn bf16_problems_are_tuned_with_the_tensor_core_family_at_every_l_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let shapes = dir.path().join("bf16.yaml");
    fs::write(
        &shapes,
        "defaults: { m: [256, 4096], sparsity: [\"8:32\", \"4:32\"], L: 32, a_layout: col }\n\
         layers:\n  - { model: x, name: q, n: 4096, k: 4096 }\n",
    )
    .unwrap();
    let db = dir.path().join("bf16.sqlite");
    let tune = |flags: &[&str]| {
        nmtune()
            .args(["--gpu", "h200", "--backend", "model", "--quiet", "--shapes"])
            .arg(&shapes)
            .arg("--db")
            .arg(&db)
            .args(flags)
            .assert()
    };
    tune(&["--dtype", "bf16", "--l", "128,32"]).success();
    let rows = report_json(&db);
    assert_eq!(rows.len(), 2 * 2 * 2, "m × sparsity × L");
    for row in &rows {
        assert_eq!(row["dtype"], "bf16");
        assert_eq!(row["config"]["a_copy"], "wgmma");
        assert!(row["kernel"]
            .as_str()
            .unwrap()
            .starts_with("nm_spmm_bf16_wgmma_"));
    }
    let ls: std::collections::BTreeSet<u64> =
        rows.iter().map(|r| r["l"].as_u64().unwrap()).collect();
    assert_eq!(ls.into_iter().collect::<Vec<_>>(), [32, 128]);
    tune(&["--dtype", "bf16", "--l", "12"])
        .code(1)
        .stderr(one_line_error("--l 12 for m256_n4096_k4096_8:32_l32_acol"));
}

/// Run `args`, read the first line of standard output, hang up: (status, stderr).
fn first_line_then_hang_up(args: &[&str]) -> (std::process::ExitStatus, String) {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let mut child = Command::new(common::nmtune_bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(!first.is_empty(), "{args:?} printed nothing");
    let out = child.wait_with_output().unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_reader_that_goes_away_ends_every_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let db = "tuning-db/h200.sqlite";
    let lookup = ["lookup", "--db", db, "--gpu", "h200", "--m", "256"];
    let cases: [&[&str]; 6] = [
        &["report", "--db", db],
        &["report", "--format", "json", "--db", db],
        &["report", "--format", "csv", "--db", db],
        &["export", "--db", db],
        &["model-eval", "--format", "json", "--db", db],
        &[&lookup[..], &["--n", "4096", "--k", "4096", "--nm", "8:32"]].concat(),
    ];
    for args in cases {
        let (status, stderr) = first_line_then_hang_up(args);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            status.success() || status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {status}: {stderr}"
        );
        assert!(!stderr.contains("error"), "{args:?}: {stderr}");
    }
}

#[test]
fn the_tuner_caches_kernels_where_the_runtime_looks_for_them() {
    if nmtune::codegen::nvrtc::nvrtc_available().is_err() {
        eprintln!("SKIPPED: NVRTC not available");
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let name = "nm_spmm_f32_arow4_ms64_ns64_ks32_mt8_nt8_w4x8_n8m32l32_nopack_cp2_mb1_sk1";
    nmtune()
        .args(["kernel", name])
        .env_remove("NMTUNE_CACHE_DIR")
        .env("XDG_CACHE_HOME", home.path())
        .env("HOME", home.path())
        .assert()
        .success();
    // Where nmtune::codegen::nvrtc::default_cache_dir (the runtime's default) puts it.
    let config = nmtune::codegen::KernelConfig::parse_name(name).unwrap();
    let source = nmtune::codegen::render::render(&config).unwrap();
    let runtime_dir = home.path().join("nmtune").join("cubins");
    let cubin = nmtune::codegen::nvrtc::cache_path(&source, "sm_90", &runtime_dir).unwrap();
    assert!(cubin.is_file(), "{} missing", cubin.display());
    let elsewhere: Vec<_> = std::fs::read_dir(home.path().join("nmtune"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(elsewhere, ["cubins"], "one cache folder");
}

/// A model database of the example shapes in `dir`.
fn example_model_db(dir: &std::path::Path) -> std::path::PathBuf {
    let db = dir.join("model.sqlite");
    common::model_run(std::path::Path::new("shapes/example.yaml"), &db)
        .output()
        .unwrap();
    db
}

#[test]
fn report_fields_are_flat_csv_leaves_missing_values_empty_and_predictions_are_not_failures() {
    let dir = tempfile::tempdir().unwrap();
    let db = example_model_db(dir.path());
    // JSON: every config field is a number, a boolean or a string, and the README names each.
    let readme = fs::read_to_string("README.md").unwrap();
    let documented = readme
        .lines()
        .find(|l| l.starts_with("| `config` |"))
        .unwrap();
    for row in report_json(&db) {
        let config = row["config"].as_object().unwrap();
        assert!(config.contains_key("stages") && !config.contains_key("pipeline"));
        for (key, value) in config {
            assert!(!value.is_object() && !value.is_array(), "{key}: {value}");
            assert!(
                documented.contains(&format!("`{key}`")),
                "{key} undocumented"
            );
        }
        assert_eq!(row["cublas_us"], serde_json::Value::Null);
    }
    // CSV: numbers or empty fields, never a placeholder.
    let out = nmtune()
        .args(["report", "--format", "csv", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for line in lines {
        for (name, field) in header.iter().zip(line.split(',')) {
            let numeric = [
                "median_us",
                "effective_tflops",
                "cublas_us",
                "speedup",
                "min_bytes",
                "achieved_gbps",
                "copy_gbps",
            ];
            if numeric.contains(name) || name.ends_with("ideal") {
                assert!(
                    field.is_empty() || field.parse::<f64>().is_ok(),
                    "{name} = '{field}' in {line}"
                );
            }
        }
    }
    // Table: a prediction's "verified" column says n/a, never no.
    let table = nmtune().args(["report", "--db"]).arg(&db).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.lines().next().unwrap().contains("verified"));
    for line in table.lines().filter(|l| l.contains(" model ")) {
        assert!(line.contains(" n/a ") && !line.contains(" no "), "{line}");
    }
}

#[test]
fn report_of_a_gpu_the_database_does_not_hold_names_the_ones_it_does() {
    nmtune()
        .args(["report", "--db", "tuning-db/h200.sqlite", "--gpu", "zz"])
        .assert()
        .code(1)
        .stderr(one_line_error(
            "holds no entries of GPU 'zz' (it holds: h200)",
        ));
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.sqlite");
    nmtune::db::Database::open(&empty).unwrap();
    for format in ["table", "json", "csv"] {
        nmtune()
            .args(["report", "--format", format, "--db"])
            .arg(&empty)
            .assert()
            .code(1)
            .stderr(one_line_error("holds no usable entry"));
    }
}

#[test]
fn negative_numbers_reach_their_parsers_and_errors_point_at_the_right_help() {
    let lookup = ["lookup", "--db", "tuning-db/h200.sqlite", "--gpu", "h200"];
    let shape = ["--n", "4096", "--k", "4096", "--nm", "8:32"];
    let cases: [(Vec<&str>, &'static str, &'static str); 5] = [
        (
            vec![
                "--gpu",
                "h100",
                "--shapes",
                "shapes/example.yaml",
                "--kernel-time-limit",
                "-1",
            ],
            "'-1' is not a time limit between 0.01 and 3600 seconds",
            "(see nmtune --help)",
        ),
        (
            [&lookup[..], &["--m", "-5"], &shape[..]].concat(),
            "'-5' is not a whole number of at least 1",
            "(see nmtune lookup --help)",
        ),
        (
            vec!["bench", "--m", "-5", "--n", "64", "--k", "64"],
            "'-5' is not a whole number of at least 1",
            "(see nmtune bench --help)",
        ),
        (
            vec![
                "model-eval",
                "--db",
                "tuning-db/h200.sqlite",
                "--min-configs",
                "-3",
            ],
            "'-3' is not a whole number of at least 1",
            "(see nmtune model-eval --help)",
        ),
        (
            vec!["report", "--db", "tuning-db/h200.sqlite", "--bogus"],
            "unexpected argument '--bogus'",
            "(see nmtune report --help)",
        ),
    ];
    for (args, what, help) in cases {
        nmtune()
            .args(&args)
            .assert()
            .code(1)
            .stderr(one_line_error(what))
            .stderr(predicate::str::contains(help));
    }
    nmtune()
        .args([
            "model-eval",
            "--db",
            "tuning-db/h200.sqlite",
            "--tolerance",
            "-0.1",
        ])
        .assert()
        .code(1)
        .stderr(one_line_error("--tolerance must be a fraction"));
}

#[test]
fn help_has_no_rustdoc_left_in_it() {
    let sample = format!("{} pseudo-random", nmtune::tuner::search::SAMPLE_SIZE);
    for args in [&["--help"][..], &["bench", "--help"]] {
        nmtune()
            .args(args)
            .assert()
            .success()
            .stdout(predicate::str::contains(sample.as_str()))
            .stdout(predicate::str::contains("[`").not());
    }
}

#[test]
fn plotting_into_a_missing_folder_is_one_plain_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = example_model_db(dir.path());
    let plot = dir.path().join("no-such-folder").join("r.png");
    nmtune()
        .args(["report", "--db"])
        .arg(&db)
        .arg("--plot")
        .arg(&plot)
        .assert()
        .code(1)
        .stderr(one_line_error("the folder"))
        .stderr(predicate::str::contains("Os {").not())
        .stderr(predicate::str::contains("IoError").not());
}

#[test]
fn warnings_look_like_every_other_message() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("stale.sqlite");
    let p = nmtune::problem::Problem::new(
        256,
        4096,
        4096,
        nmtune::problem::NmPattern::new(8, 32).unwrap(),
        32,
    )
    .unwrap();
    let h200 = nmtune::gpu::GpuProfile::builtin("h200").unwrap();
    let config = nmtune::tuner::search::candidates(&p, &h200, nmtune::tuner::Strategy::Pruned)[0];
    let mut row = common::timed_row(p, config, nmtune::db::Source::Measured, 50.0);
    row.template_checksum = "other-templates".into();
    nmtune::db::Database::open(&db)
        .unwrap()
        .record(&row)
        .unwrap();
    let out = nmtune()
        .args([
            "lookup", "--gpu", "h200", "--m", "256", "--n", "4096", "--k", "4096",
        ])
        .args(["--nm", "8:32", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("nmtune: warning: ") && stderr.contains("other kernel templates"),
        "{stderr}"
    );
}

#[test]
fn a_deeply_nested_shapes_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deep.yaml");
    fs::write(&file, format!("layers: {}", "[".repeat(100_000))).unwrap();
    let started = std::time::Instant::now();
    nmtune()
        .args(["--gpu", "h100", "--backend", "model", "--shapes"])
        .arg(&file)
        .arg("--db")
        .arg(dir.path().join("never.sqlite"))
        .assert()
        .code(1)
        .stderr(one_line_error("deep.yaml:1:"))
        .stderr(predicate::str::contains("nested deeper than"));
    assert!(
        started.elapsed().as_secs_f64() < 5.0,
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn tidy_refuses_a_missing_database_without_creating_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("typo.sqlite");
    nmtune()
        .args(["tidy", "--db"])
        .arg(&db)
        .assert()
        .code(1)
        .stderr(one_line_error("does not exist"));
    assert!(!db.exists());
}

#[test]
fn tidy_keeps_every_best_entry_and_leaves_nothing_for_a_second_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ew.sqlite");
    // The committed element-wise database: some of its problems were tuned twice.
    fs::copy("tuning-db/h200-ew.sqlite", &db).unwrap();
    let before = report_json(&db);
    nmtune()
        .args(["tidy", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stderr(predicate::str::contains("superseded measurements of"));
    assert_eq!(report_json(&db), before);
    nmtune()
        .args(["tidy", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "dropped 0 superseded measurements of 0 problem(s);",
        ));
}
