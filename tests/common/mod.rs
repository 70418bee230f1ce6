//! Helpers shared by the reliability tests (kill_resume, concurrency, hostile): running the
//! `nmtune` binary, writing shapes files, and reading a database back for comparison.
#![allow(dead_code)]

use nmtune::codegen::KernelConfig;
use nmtune::db::{Database, Measurement, Source, Status};
use nmtune::problem::Problem;
use sqlx::{ConnectOptions, Connection, Row};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test: `$NMTUNE_BIN` where set (a test binary copied to a GPU machine
/// without cargo), else the one cargo built.
pub fn nmtune_bin() -> PathBuf {
    std::env::var_os("NMTUNE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_nmtune")))
}

/// `nmtune --gpu h100 --backend model --quiet --shapes <shapes> --db <db>`, not started yet.
pub fn model_run(shapes: &Path, db: &Path) -> Command {
    let mut cmd = Command::new(nmtune_bin());
    cmd.args(["--gpu", "h100", "--backend", "model", "--quiet", "--shapes"])
        .arg(shapes)
        .arg("--db")
        .arg(db);
    cmd
}

/// Write a shapes file of `layers` (n, k) × `ms` × `sparsities`, all with L = 32.
pub fn write_shapes(path: &Path, layers: &[(usize, usize)], ms: &[usize], sparsities: &[&str]) {
    let list = |items: Vec<String>| format!("[{}]", items.join(", "));
    let mut text = format!(
        "defaults:\n  m: {}\n  sparsity: {}\n  L: 32\nlayers:\n",
        list(ms.iter().map(|m| m.to_string()).collect()),
        list(sparsities.iter().map(|s| format!("\"{s}\"")).collect()),
    );
    for (i, (n, k)) in layers.iter().enumerate() {
        text += &format!("  - {{ model: test, name: layer{i}, n: {n}, k: {k} }}\n");
    }
    std::fs::write(path, text).unwrap();
}

/// A verified H200 measurement of `config` on `p` taking `median_us`, beside a cuBLAS time of
/// 180 µs, with a fixed template checksum and date (crafted databases of the CLI tests).
pub fn measured_row(p: &Problem, config: KernelConfig, median_us: f64) -> Measurement {
    Measurement {
        gpu: "h200".into(),
        problem: *p,
        config,
        status: Status::Ok,
        error: None,
        median_us: Some(median_us),
        min_us: Some(median_us * 0.98),
        runs: 10,
        verified: true,
        max_rel_error: Some(2.5e-7),
        cublas_us: Some(180.0),
        copy_gbps: None,
        registers: Some(128),
        spill_bytes: Some(0),
        template_checksum: "feed".into(),
        kernel_checksum: None,
        source: Source::Measured,
        tool_version: "0.1.0".into(),
        created_at: "2026-01-02T03:04:05.000006Z".into(),
    }
}

/// The binary under test as an assert_cmd command.
/// The binary under test ([`nmtune_bin`]) as an assert_cmd command.
pub fn nmtune() -> assert_cmd::Command {
    assert_cmd::Command::new(nmtune_bin())
}

/// The standard output of `command`, which must succeed, parsed as JSON.
pub fn json_output<T: serde::de::DeserializeOwned>(command: &mut assert_cmd::Command) -> T {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `nmtune report --format json --db <db>`, which must succeed, parsed.
pub fn report_json(db: &Path) -> Vec<serde_json::Value> {
    json_output(
        nmtune()
            .args(["report", "--format", "json", "--db"])
            .arg(db),
    )
}

/// A successful, verified (unless a prediction) row of `config` for `p` on the H200, produced
/// with this build's templates; cuBLAS took twice the median.
pub fn timed_row(p: Problem, config: KernelConfig, source: Source, median_us: f64) -> Measurement {
    Measurement {
        gpu: "h200".into(),
        problem: p,
        config,
        status: Status::Ok,
        error: None,
        median_us: Some(median_us),
        min_us: Some(median_us),
        runs: 10,
        verified: source != Source::Model,
        max_rel_error: Some(1e-6),
        cublas_us: Some(2.0 * median_us),
        copy_gbps: None,
        registers: Some(128),
        spill_bytes: Some(0),
        template_checksum: nmtune::codegen::templates_checksum(&p).to_string(),
        kernel_checksum: None,
        source,
        tool_version: nmtune::TOOL_VERSION.into(),
        created_at: nmtune::db::now_rfc3339(),
    }
}

/// stderr is one line starting with "nmtune: error:" and naming `what`, with no panic.
pub fn one_line_error(what: &'static str) -> impl predicates::Predicate<str> {
    use predicates::prelude::*;
    predicate::str::starts_with("nmtune: error:")
        .and(predicate::str::contains(what))
        .and(predicate::function(|s: &str| {
            s.trim_end().lines().count() == 1
        }))
        .and(predicate::str::contains("panicked").not())
}

/// The stderr of a failed CLI run: exit status 1 (not a signal), exactly one line starting
/// with `nmtune: error:`, no panic. Returns the line.
pub fn one_clear_error_line(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(1),
        "expected exit status 1, got {:?}; stderr: {stderr}",
        output.status
    );
    let lines: Vec<&str> = stderr.trim_end().lines().collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got: {stderr}");
    assert!(lines[0].starts_with("nmtune: error:"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    lines[0].to_string()
}

/// Every file of a directory (not recursive) with its bytes.
pub fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect()
}

/// Measurements with their timestamps blanked, in report order.
pub fn measurement_rows(db: &Database) -> Vec<Measurement> {
    db.measurements(None)
        .unwrap()
        .into_iter()
        .map(|mut m| {
            m.created_at.clear();
            m
        })
        .collect()
}

/// Best entries with their timestamps blanked, in report order.
pub fn best_rows(db: &Database) -> Vec<Measurement> {
    db.best_entries(None)
        .unwrap()
        .into_iter()
        .map(|mut m| {
            m.created_at.clear();
            m
        })
        .collect()
}

/// The future a [`with_connection`] closure returns, borrowing the connection.
pub type ConnectionWork<'c, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'c>>;

/// Run statements on a throwaway sqlx connection (read-only unless `write`).
pub fn with_connection<T>(
    path: &Path,
    write: bool,
    work: impl for<'c> FnOnce(&'c mut sqlx::SqliteConnection) -> ConnectionWork<'c, T>,
) -> T {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .read_only(!write)
        .busy_timeout(std::time::Duration::from_secs(10));
    on_connection(options, work)
}

fn on_connection<T>(
    options: sqlx::sqlite::SqliteConnectOptions,
    work: impl for<'c> FnOnce(&'c mut sqlx::SqliteConnection) -> ConnectionWork<'c, T>,
) -> T {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut conn = options.connect().await.unwrap();
        let out = work(&mut conn).await;
        conn.close().await.unwrap();
        out
    })
}

/// `PRAGMA integrity_check` of a database file.
pub fn integrity_check(path: &Path) -> String {
    with_connection(path, false, |conn| {
        Box::pin(async move {
            // A file damaged badly enough fails the pragma itself: that is its verdict.
            match sqlx::query("PRAGMA integrity_check")
                .fetch_all(&mut *conn)
                .await
            {
                Ok(rows) => rows
                    .iter()
                    .map(|r| r.get::<String, _>(0))
                    .collect::<Vec<_>>()
                    .join("; "),
                Err(e) => e.to_string(),
            }
        })
    })
}

/// The finished-problem marks: (gpu, problem, checksum, strategy, source), sorted.
pub fn problem_runs(path: &Path) -> Vec<String> {
    with_connection(path, false, |conn| {
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT g.name, p.m, p.n, p.k, p.nm_n, p.nm_m, p.l, r.template_checksum, \
                 r.strategy, r.source FROM problem_runs r \
                 JOIN gpus g ON g.id = r.gpu_id JOIN problems p ON p.id = r.problem_id \
                 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 10",
            )
            .fetch_all(&mut *conn)
            .await
            .unwrap();
            rows.iter()
                .map(|r| {
                    let text = |i: usize| r.get::<String, _>(i);
                    let int = |i: usize| r.get::<i64, _>(i);
                    format!(
                        "{} m{}_n{}_k{}_{}:{}_l{} {} {} {}",
                        text(0),
                        int(1),
                        int(2),
                        int(3),
                        int(4),
                        int(5),
                        int(6),
                        text(7),
                        text(8),
                        text(9)
                    )
                })
                .collect()
        })
    })
}

/// Rows of one table.
pub fn count_rows(path: &Path, table: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table}");
    with_connection(path, false, move |conn| {
        Box::pin(async move {
            sqlx::query_scalar::<_, i64>(&sql)
                .fetch_one(&mut *conn)
                .await
                .unwrap()
        })
    })
}

/// The structural invariants of a model-backend database at any moment, also just after a
/// crash: a problem has a measurement exactly when it is marked done, every measurement is
/// whole (a predicted time, verified = false, status ok) and is the best of its problem, no
/// key appears twice. Returns the number of finished problems.
pub fn check_model_database_consistent(path: &Path) -> usize {
    let integrity = integrity_check(path);
    assert_eq!(integrity, "ok", "{}", path.display());
    let queries = [
        // Measurements of problems not marked done, and done problems without measurement.
        "SELECT COUNT(*) FROM measurements ms WHERE NOT EXISTS (SELECT 1 FROM problem_runs r \
         WHERE r.gpu_id = ms.gpu_id AND r.problem_id = ms.problem_id AND r.source = ms.source)",
        "SELECT COUNT(*) FROM problem_runs r WHERE NOT EXISTS (SELECT 1 FROM measurements ms \
         WHERE r.gpu_id = ms.gpu_id AND r.problem_id = ms.problem_id AND r.source = ms.source)",
        // Half-written measurement rows.
        "SELECT COUNT(*) FROM measurements WHERE median_us IS NULL OR min_us IS NULL \
         OR status <> 'ok' OR source <> 'model' OR kernel_name = '' OR config_json = ''",
        // Best entries that point nowhere, and measured problems without a best entry.
        "SELECT COUNT(*) FROM best b WHERE NOT EXISTS (SELECT 1 FROM measurements ms \
         WHERE ms.id = b.measurement_id AND ms.gpu_id = b.gpu_id AND ms.problem_id = b.problem_id)",
        "SELECT COUNT(*) FROM (SELECT DISTINCT gpu_id, problem_id FROM measurements) x \
         WHERE NOT EXISTS (SELECT 1 FROM best b WHERE b.gpu_id = x.gpu_id AND b.problem_id = x.problem_id)",
        // Duplicates of a measurement key or of a problem.
        "SELECT COUNT(*) FROM (SELECT 1 FROM measurements GROUP BY gpu_id, problem_id, \
         kernel_name, template_checksum, source HAVING COUNT(*) > 1)",
        "SELECT COUNT(*) FROM (SELECT 1 FROM problems GROUP BY m, n, k, nm_n, nm_m, l, a_layout \
         HAVING COUNT(*) > 1)",
        // The model backend stores one prediction per problem.
        "SELECT COUNT(*) FROM (SELECT 1 FROM measurements GROUP BY gpu_id, problem_id \
         HAVING COUNT(*) <> 1)",
    ];
    for sql in queries {
        let bad = with_connection(path, false, move |conn| {
            Box::pin(async move {
                sqlx::query_scalar::<_, i64>(sql)
                    .fetch_one(&mut *conn)
                    .await
                    .unwrap()
            })
        });
        assert_eq!(bad, 0, "{}: {sql}", path.display());
    }
    count_rows(path, "problem_runs") as usize
}

/// Create an SQLite file the way another program would, with sqlx directly.
pub fn foreign_sqlite(path: &Path, statements: &[&str]) {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true);
    let statements: Vec<String> = statements.iter().map(|sql| sql.to_string()).collect();
    on_connection(options, |conn| {
        Box::pin(async move {
            for sql in &statements {
                sqlx::query(sql).execute(&mut *conn).await.unwrap();
            }
        })
    });
}

/// The tests' cubin cache: `$NMTUNE_CACHE_DIR` (so that a GPU run can start from the cubins
/// compiled here), else a folder of cargo's target tmp.
pub fn cubin_cache() -> PathBuf {
    std::env::var_os("NMTUNE_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("nmtune-cubins"))
}

/// Whether NVRTC can be loaded, for tests that compile kernels: without it such a test prints
/// that it skipped and passes, unless `NMTUNE_REQUIRE_NVRTC` is set (CI sets it), where a
/// missing NVRTC is a failure.
pub fn nvrtc_or_skip() -> bool {
    match nmtune::codegen::nvrtc_available() {
        Ok(()) => true,
        Err(e) if std::env::var_os("NMTUNE_REQUIRE_NVRTC").is_some() => {
            panic!("NMTUNE_REQUIRE_NVRTC is set but NVRTC is unavailable: {e}")
        }
        Err(e) => {
            println!("SKIPPED: NVRTC not found ({e})");
            false
        }
    }
}

/// The older build's best entry: the database's fastest timing, whatever this build's rule says.
pub fn point_best_at_fastest(path: &Path) {
    let url = format!("sqlite://{}", path.display());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query(
            "UPDATE best SET measurement_id = \
             (SELECT id FROM measurements ORDER BY median_us LIMIT 1)",
        )
        .execute(&mut conn)
        .await
        .unwrap();
    });
}
