//! Hostile and stale files, seen from the command line: a truncated database, another
//! program's SQLite file, a newer schema, a read-only location, a file-size limit reached in
//! the middle of a run, and damaged kernel-cache files. Each refusal is one clear line on
//! stderr with exit status 1, and leaves what was there byte for byte (tests/db.rs covers the
//! same files at the library level).
//!
//! ```sh
//! source scripts/nvrtc-env.sh   # for the kernel-cache test; skipped visibly without NVRTC
//! cargo test --release --test hostile -- --nocapture
//! ```

mod common;

use common::{
    check_model_database_consistent, foreign_sqlite, measurement_rows, model_run, nmtune_bin,
    one_clear_error_line, snapshot, with_connection,
};
use nmtune::codegen::nvrtc::{self, CacheOutcome};
use nmtune::codegen::KernelSource;
use nmtune::db::{Database, SCHEMA_VERSION};
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EXAMPLE_SHAPES: &str = "shapes/example.yaml";

/// A tuning database filled by the model backend from the example shapes (8 problems).
fn example_db(dir: &Path) -> PathBuf {
    let db = dir.join("tune.sqlite");
    let out = model_run(Path::new(EXAMPLE_SHAPES), &db).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    db
}

fn run(args: &[&OsStr]) -> Output {
    Command::new(nmtune_bin()).args(args).output().unwrap()
}

/// The files of a directory that hold data: SQLite's shared-memory index (`-shm`) and an
/// empty write-ahead log, which a read-only connection to a WAL-mode file may leave behind,
/// are left out.
fn data_files(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = snapshot(dir);
    files.retain(|name, bytes| {
        let side_file = name.ends_with("-shm") || (name.ends_with("-wal") && bytes.is_empty());
        !side_file
    });
    files
}

/// The main job (model backend) and the report, both on `db`: each must refuse it with one
/// line containing `what`, and leave every data file of the directory byte for byte.
fn every_command_refuses(db: &Path, what: &str) {
    let dir = db.parent().unwrap();
    let before = data_files(dir);
    let shapes = OsStr::new(EXAMPLE_SHAPES);
    let tune: [&OsStr; 9] = [
        "--gpu".as_ref(),
        "h100".as_ref(),
        "--backend".as_ref(),
        "model".as_ref(),
        "--quiet".as_ref(),
        "--shapes".as_ref(),
        shapes,
        "--db".as_ref(),
        db.as_os_str(),
    ];
    let report: [&OsStr; 3] = ["report".as_ref(), "--db".as_ref(), db.as_os_str()];
    for args in [&tune[..], &report[..]] {
        let line = one_clear_error_line(&run(args));
        assert!(line.contains(what), "expected '{what}' in: {line}");
        eprintln!("hostile: {line}");
        assert!(data_files(dir) == before, "{line}: the directory changed");
    }
}

#[test]
fn a_truncated_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = example_db(dir.path());
    let len = std::fs::metadata(&db).unwrap().len();
    assert!(
        len >= 8 * 4096,
        "need a file of several pages, got {len} bytes"
    );
    let file = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
    file.set_len(len / 2).unwrap();
    drop(file);
    every_command_refuses(&db, "truncated");
    // Cut inside the 100-byte SQLite header.
    let file = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
    file.set_len(60).unwrap();
    drop(file);
    every_command_refuses(&db, "truncated inside the SQLite header");
}

#[test]
fn another_programs_database_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &'static [&'static str]); 2] = [
        (
            "inventory.sqlite",
            &[
                "CREATE TABLE items (id INTEGER, name TEXT)",
                "INSERT INTO items VALUES (1, 'x')",
            ],
        ),
        (
            "lookalike.sqlite",
            &[
                "CREATE TABLE meta (key TEXT, value TEXT)",
                "INSERT INTO meta VALUES ('application', 'other'), ('schema_version', '1')",
                "CREATE TABLE measurements (id INTEGER)",
            ],
        ),
    ];
    for (name, statements) in cases {
        let path = dir.path().join(name);
        foreign_sqlite(&path, statements);
        every_command_refuses(&path, "is not an nmtune tuning database");
    }
}

#[test]
fn a_newer_schema_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = example_db(dir.path());
    let newer = (SCHEMA_VERSION + 1).to_string();
    with_connection(&db, true, move |conn| {
        Box::pin(async move {
            sqlx::query("UPDATE meta SET value = ? WHERE key = 'schema_version'")
                .bind(newer)
                .execute(&mut *conn)
                .await
                .unwrap();
        })
    });
    every_command_refuses(&db, "newer than");
}

#[test]
fn a_directory_or_garbage_in_place_of_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let as_dir = dir.path().join("db-is-a-dir");
    std::fs::create_dir(&as_dir).unwrap();
    every_command_refuses(&as_dir, "is a directory");
    let garbage = dir.path().join("garbage.sqlite");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend((0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    std::fs::write(&garbage, &bytes).unwrap();
    every_command_refuses(&garbage, "damaged");

    // Shapes files that are not text, or not files.
    let binary = dir.path().join("binary.yaml");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x9f, 0x92, 0x96, b'\n', 0x00]).unwrap();
    for shapes in [binary.as_path(), dir.path()] {
        let out = model_run(shapes, &dir.path().join("never.sqlite"))
            .output()
            .unwrap();
        let line = one_clear_error_line(&out);
        assert!(line.contains(&*shapes.to_string_lossy()), "{line}");
        eprintln!("hostile: {line}");
    }
    assert!(!dir.path().join("never.sqlite").exists());
}

/// How the CLI can be made to run without write permission where the test needs it.
enum Permissions {
    /// This process is subject to file permissions: run the CLI directly.
    Apply,
    /// Running as root: drop to `nobody` with setpriv for the CLI.
    DropToNobody,
}

/// `None` when permissions cannot be made to apply (the reason is printed).
fn permissions_mode(probe_dir: &Path, shapes: &Path) -> Option<Permissions> {
    let probe = probe_dir.join("probe");
    std::fs::create_dir(&probe).unwrap();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o555)).unwrap();
    let ignored = std::fs::write(probe.join("x"), b"x").is_ok();
    std::fs::set_permissions(&probe, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_dir_all(&probe).unwrap();
    if !ignored {
        return Some(Permissions::Apply);
    }
    let as_nobody = |program: &OsStr, args: &[&OsStr]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(program)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !as_nobody("true".as_ref(), &[]) {
        eprintln!("SKIPPED: read-only location tests: running as root without a working setpriv");
        return None;
    }
    // nobody must reach the binary and the test directory (a checkout under /root may not).
    let reachable = as_nobody(nmtune_bin().as_os_str(), &["--version".as_ref()])
        && as_nobody("test".as_ref(), &["-r".as_ref(), shapes.as_os_str()]);
    if !reachable {
        eprintln!(
            "SKIPPED: read-only location tests: running as root, and user nobody cannot reach {} \
             or {}",
            nmtune_bin().display(),
            shapes.display()
        );
        return None;
    }
    Some(Permissions::DropToNobody)
}

fn cli_as(mode: &Permissions, args: &[&OsStr]) -> Output {
    let mut cmd = match mode {
        Permissions::Apply => Command::new(nmtune_bin()),
        Permissions::DropToNobody => {
            let mut cmd = Command::new("setpriv");
            cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(nmtune_bin());
            cmd
        }
    };
    cmd.args(args).output().unwrap()
}

#[test]
fn a_read_only_location_gives_one_line_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let shapes = dir.path().join("shapes.yaml");
    std::fs::copy(EXAMPLE_SHAPES, &shapes).unwrap();
    std::fs::set_permissions(&shapes, std::fs::Permissions::from_mode(0o644)).unwrap();

    // A location no one can create files in, root included: the /proc file system.
    let proc_db = Path::new("/proc/nmtune-test/tune.sqlite");
    if Path::new("/proc/self").exists()
        && std::fs::create_dir_all(proc_db.parent().unwrap()).is_err()
    {
        let out = model_run(&shapes, proc_db).output().unwrap();
        eprintln!("hostile: {}", one_clear_error_line(&out));
    }

    let Some(mode) = permissions_mode(dir.path(), &shapes) else {
        return;
    };
    if let Permissions::DropToNobody = mode {
        eprintln!("hostile: running as root: the CLI runs as nobody (setpriv) for these cases");
    }
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    let existing = example_db(&locked);
    std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    let before = snapshot(&locked);
    let tune = |db: &Path| {
        let args: [&OsStr; 9] = [
            "--gpu".as_ref(),
            "h100".as_ref(),
            "--backend".as_ref(),
            "model".as_ref(),
            "--quiet".as_ref(),
            "--shapes".as_ref(),
            shapes.as_os_str(),
            "--db".as_ref(),
            db.as_os_str(),
        ];
        cli_as(&mode, &args)
    };
    // A new database in a directory without write permission.
    let line = one_clear_error_line(&tune(&locked.join("new.sqlite")));
    eprintln!("hostile: {line}");
    // An existing, read-only database in it: nothing to do would still be a write.
    let line = one_clear_error_line(&tune(&existing));
    eprintln!("hostile: {line}");
    assert!(
        snapshot(&locked) == before,
        "the read-only directory changed"
    );
    // Reading it needs no write access.
    let report: [&OsStr; 3] = ["report".as_ref(), "--db".as_ref(), existing.as_os_str()];
    let out = cli_as(&mode, &report);
    assert!(
        out.status.success(),
        "report of a read-only database: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        snapshot(&locked) == before,
        "reading changed the read-only directory"
    );
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_file_size_limit_mid_run_is_an_error_and_keeps_the_data() {
    if !Command::new("prlimit")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("SKIPPED: file-size limit test: prlimit (util-linux) is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = example_db(dir.path());
    // 48 more problems, of other shapes than the example's.
    let more = dir.path().join("more.yaml");
    common::write_shapes(
        &more,
        &[(2048, 2048), (4096, 2048), (2048, 4096), (1024, 1024)],
        &[1, 16, 64, 256, 1024, 4096],
        &["8:32", "16:32"],
    );
    let new_problems = nmtune::shapes::load(&more).unwrap().len();
    let old_rows = measurement_rows(&Database::open_read_only(&db).unwrap());
    let old_done = check_model_database_consistent(&db);
    // Room for a few more problems, not for all 48.
    let limit = std::fs::metadata(&db).unwrap().len() + 64 * 1024;
    let out = Command::new("prlimit")
        .arg(format!("--fsize={limit}"))
        .arg(nmtune_bin())
        .args(["--gpu", "h100", "--backend", "model", "--quiet"])
        .arg("--shapes")
        .arg(&more)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    let line = one_clear_error_line(&out);
    eprintln!("hostile: file-size limit of {limit} bytes: {line}");

    // Everything stored before is intact, and what the cut run stored is whole.
    assert_eq!(common::integrity_check(&db), "ok");
    let done = check_model_database_consistent(&db);
    assert!(
        done >= old_done && done < old_done + new_problems,
        "{done} problems done"
    );
    let rows = measurement_rows(&Database::open_read_only(&db).unwrap());
    for row in &old_rows {
        assert!(rows.contains(row), "lost or changed: {row:?}");
    }
    // Without the limit the run resumes and finishes.
    let out = model_run(&more, &db).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        check_model_database_consistent(&db),
        old_done + new_problems
    );
    eprintln!(
        "hostile: after the limit: {} of {new_problems} new problems had been stored whole; \
         the resumed run finished",
        done - old_done
    );
}

/// A tiny module: compiles in well under a second.
fn probe_kernel() -> KernelSource {
    KernelSource {
        name: "nmtune_cache_probe".into(),
        reduce_name: None,
        source: "extern \"C\" __global__ void nmtune_cache_probe(float* x, int n) {\n  \
                 int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] = 2.0f * x[i] + 1.0f;\n}\n"
            .into(),
    }
}

#[test]
fn a_damaged_kernel_cache_file_is_rebuilt_never_loaded() {
    if let Err(e) = nmtune::codegen::nvrtc_available() {
        if std::env::var("NMTUNE_REQUIRE_NVRTC").as_deref() == Ok("1") {
            panic!("NMTUNE_REQUIRE_NVRTC=1 but {e}");
        }
        eprintln!("SKIPPED: kernel-cache test ({e}); `source scripts/nvrtc-env.sh` provides NVRTC");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (src, arch) = (probe_kernel(), "sm_90");
    let (fresh, outcome) = nvrtc::compile_cached_with_outcome(&src, arch, dir.path()).unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    let path = nvrtc::cache_path(&src, arch, dir.path()).unwrap();
    let good = std::fs::read(&path).unwrap();
    let (cached, outcome) = nvrtc::compile_cached_with_outcome(&src, arch, dir.path()).unwrap();
    assert_eq!(outcome, CacheOutcome::Hit);
    assert!(
        cached.cubin == fresh.cubin,
        "the cache returned another cubin"
    );

    let header_end = good.iter().position(|&b| b == b'\n').unwrap();
    let flip = |at: usize| {
        let mut bytes = good.clone();
        bytes[at] ^= 0x01;
        bytes
    };
    let mut checksum_changed = good.clone();
    let digit = header_end - 1 - 2 * 20; // inside the hex digest, away from the lengths
    checksum_changed[digit] = if good[digit] == b'0' { b'1' } else { b'0' };
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("a flipped bit in the cubin", flip(good.len() - 1)),
        ("a flipped bit in the log", flip(header_end + 1)),
        ("a different checksum in the header", checksum_changed),
        ("a truncated file", good[..good.len() / 2].to_vec()),
        (
            "extra bytes at the end",
            [good.clone(), b"junk".to_vec()].concat(),
        ),
        ("an empty file", Vec::new()),
        ("text of another program", b"not a cubin\n".to_vec()),
    ];
    for (what, bytes) in &damaged {
        std::fs::write(&path, bytes).unwrap();
        let (kernel, outcome) = nvrtc::compile_cached_with_outcome(&src, arch, dir.path()).unwrap();
        assert_eq!(outcome, CacheOutcome::Compiled, "{what} was loaded");
        assert!(
            kernel.cubin == fresh.cubin,
            "{what}: not rebuilt from source"
        );
        // The file was replaced by a good one (NVRTC's log holds the compile time, so the
        // bytes differ from the first file's), which the next lookup loads.
        assert!(
            std::fs::read(&path).unwrap() != *bytes,
            "{what}: not replaced"
        );
        let (again, outcome) = nvrtc::compile_cached_with_outcome(&src, arch, dir.path()).unwrap();
        assert_eq!(
            outcome,
            CacheOutcome::Hit,
            "{what}: the rebuilt file is not used"
        );
        assert!(
            again.cubin == fresh.cubin,
            "{what}: the rebuilt file holds another cubin"
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    eprintln!(
        "hostile: {} kinds of damaged kernel-cache file were each rebuilt, never loaded",
        damaged.len()
    );
}

/// A folder under `scratch` holding only a copy of the committed `tuning-db/h200.sqlite`, and
/// that copy's export beside the folder: (folder, database, measurements file).
fn committed_copy(scratch: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let dir = scratch.join("db");
    std::fs::create_dir(&dir).unwrap();
    let db = dir.join("h200.sqlite");
    std::fs::copy("tuning-db/h200.sqlite", &db).unwrap();
    let file = scratch.join("h200.measurements.jsonl");
    let export: [&OsStr; 5] = [
        "export".as_ref(),
        "--db".as_ref(),
        db.as_os_str(),
        "--out".as_ref(),
        file.as_os_str(),
    ];
    let out = run(&export);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, db, file)
}

/// Every command that reads or writes a database, on `db`, with `file` its measurements.
fn every_command(db: &Path, file: &Path) -> Vec<Vec<std::ffi::OsString>> {
    let args = |list: &[&OsStr]| list.iter().map(|a| a.to_os_string()).collect::<Vec<_>>();
    let (db, file) = (db.as_os_str(), file.as_os_str());
    let shapes = OsStr::new(EXAMPLE_SHAPES);
    let lookup = ["--m", "256", "--n", "4096", "--k", "4096", "--nm", "8:32"].map(OsStr::new);
    vec![
        args(&["--gpu", "h200", "--backend", "model", "--quiet", "--shapes"].map(OsStr::new))
            .into_iter()
            .chain(args(&[shapes, "--db".as_ref(), db]))
            .collect(),
        args(&["report".as_ref(), "--db".as_ref(), db]),
        args(&["report", "--format", "json", "--db"].map(OsStr::new))
            .into_iter()
            .chain(args(&[db]))
            .collect(),
        args(&[
            "lookup".as_ref(),
            "--gpu".as_ref(),
            "h200".as_ref(),
            "--db".as_ref(),
            db,
        ])
        .into_iter()
        .chain(args(&lookup))
        .collect(),
        args(&["export".as_ref(), "--db".as_ref(), db]),
        args(&["model-eval".as_ref(), "--db".as_ref(), db]),
        args(&[
            "check-replay".as_ref(),
            "--db".as_ref(),
            db,
            "--measurements".as_ref(),
            file,
        ]),
    ]
}

#[test]
fn a_damaged_database_is_refused_by_every_command_and_left_alone() {
    let scratch = tempfile::tempdir().unwrap();
    let (dir, db, file) = committed_copy(scratch.path());
    // Eight bytes flipped from 1.5 MB on, a page at a time until SQLite's integrity check
    // sees the damage (a free page or slack space would not be damage): typically a row
    // missing from an index, which quick_check does not see.
    let pristine = std::fs::read(&db).unwrap();
    let damaged = (1_500_000..pristine.len() - 8).step_by(4096).find(|&at| {
        let mut bytes = pristine.clone();
        bytes[at..at + 8].iter_mut().for_each(|b| *b ^= 0xff);
        std::fs::write(&db, &bytes).unwrap();
        common::integrity_check(&db) != "ok"
    });
    assert!(damaged.is_some(), "no damage found from 1.5 MB on");
    // That check's read-only connection leaves SQLite's side files: not part of the case.
    std::fs::remove_file(db.with_extension("sqlite-shm")).ok();
    std::fs::remove_file(db.with_extension("sqlite-wal")).ok();
    let before = snapshot(&dir);
    for args in every_command(&db, &file) {
        let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let line = one_clear_error_line(&run(&args));
        assert!(line.contains("h200.sqlite is damaged"), "{args:?}: {line}");
        assert!(snapshot(&dir) == before, "{args:?} changed the folder");
    }
}

#[test]
fn reading_commands_leave_nothing_beside_a_committed_database() {
    let scratch = tempfile::tempdir().unwrap();
    let (dir, db, file) = committed_copy(scratch.path());
    let before = snapshot(&dir);
    assert_eq!(before.len(), 1);
    // Every command but the first (a model run, which writes).
    for args in every_command(&db, &file).into_iter().skip(1) {
        let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let out = run(&args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let after = snapshot(&dir);
        assert!(
            after == before,
            "{args:?} left {:?}",
            after.keys().collect::<Vec<_>>()
        );
    }
}
