//! Concurrent writers: two `nmtune --backend model` processes fill one new database file at
//! once from different (overlapping) shapes files, while a reader in this process opens it
//! read-only in a loop. Both writers must succeed and store every result; the reader must
//! never fail once the file exists, and never see a problem marked done without its best
//! entry.
//!
//! ```sh
//! cargo test --release --test concurrency -- --nocapture
//! ```

mod common;

use common::{check_model_database_consistent, model_run, write_shapes};
use nmtune::codegen::templates_checksum;
use nmtune::db::{Database, DbError, Source};
use nmtune::problem::Problem;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What the reader saw.
#[derive(Default, Debug)]
struct ReaderLog {
    opens: usize,
    /// Errors before the file was an nmtune database (a writer creating it): allowed.
    early_errors: usize,
    max_done: usize,
}

/// One look at the database: every problem marked done has its best entry.
fn read_once(path: &Path, problems: &[Problem]) -> Result<usize, DbError> {
    let db = Database::open_read_only(path)?;
    let done: Vec<&Problem> = problems
        .iter()
        .filter_map(
            |p| match db.is_problem_done("h100", p, templates_checksum(p), Source::Model) {
                Ok(true) => Some(Ok(p)),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            },
        )
        .collect::<Result<_, _>>()?;
    // Read after the done marks: the best entries can only have grown since.
    let best: BTreeSet<String> = db
        .best_entries(Some("h100"))?
        .iter()
        .map(|m| m.problem.to_string())
        .collect();
    for p in &done {
        assert!(
            best.contains(&p.to_string()),
            "{p} is marked done but has no best entry (partial state seen)"
        );
    }
    Ok(done.len())
}

#[test]
fn two_writers_and_a_reader_share_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let (shapes_a, shapes_b) = (dir.path().join("a.yaml"), dir.path().join("b.yaml"));
    // 3 layers × 4 m × 2 sparsities = 24 problems each; layer (2048, 2048) is in both.
    let ms = [1, 64, 512, 4096];
    write_shapes(
        &shapes_a,
        &[(2048, 2048), (4096, 2048), (1024, 4096)],
        &ms,
        &["8:32", "16:32"],
    );
    write_shapes(
        &shapes_b,
        &[(2048, 2048), (2048, 8192), (8192, 1024)],
        &ms,
        &["8:32", "16:32"],
    );
    let load = |p: &Path| nmtune::shapes::load(p).unwrap().problems();
    let mut all: Vec<Problem> = load(&shapes_a);
    for p in load(&shapes_b) {
        if !all.contains(&p) {
            all.push(p);
        }
    }
    let db_path = dir.path().join("shared.sqlite");

    let started = Instant::now();
    let writers_done = AtomicBool::new(false);
    let (outputs, log) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut log = ReaderLog::default();
            let mut ever_opened = false;
            while !writers_done.load(Ordering::Acquire) {
                match read_once(&db_path, &all) {
                    Ok(done) => {
                        ever_opened = true;
                        log.opens += 1;
                        log.max_done = log.max_done.max(done);
                    }
                    Err(e) if !ever_opened => {
                        // Missing, empty or not yet initialised: the writers are creating it.
                        assert!(
                            matches!(e, DbError::Missing { .. } | DbError::NotNmtune { .. }),
                            "reader error before the database existed: {e}"
                        );
                        log.early_errors += 1;
                    }
                    Err(e) => panic!("reader failed after {} good opens: {e}", log.opens),
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            log
        });
        let children: Vec<_> = [&shapes_a, &shapes_b]
            .iter()
            .map(|shapes| {
                model_run(shapes, &db_path)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outputs: Vec<_> = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect();
        writers_done.store(true, Ordering::Release);
        (outputs, reader.join().unwrap())
    });
    for (name, out) in ["a.yaml", "b.yaml"].iter().zip(&outputs) {
        assert!(
            out.status.success(),
            "writer {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let db = Database::open_read_only(&db_path).unwrap();
    let best: BTreeSet<String> = db
        .best_entries(Some("h100"))
        .unwrap()
        .iter()
        .map(|m| m.problem.to_string())
        .collect();
    for p in &all {
        assert!(best.contains(&p.to_string()), "{p} missing");
        assert!(db
            .is_problem_done("h100", p, templates_checksum(p), Source::Model)
            .unwrap());
    }
    assert_eq!(best.len(), all.len());
    assert_eq!(check_model_database_consistent(&db_path), all.len());
    assert!(log.opens > 0, "the reader never got in");
    eprintln!(
        "concurrency: 2 writers stored {} problems ({} + {} listed, {} shared) in {:.2} s; \
         reader: {} consistent read-only snapshots (up to {} problems done), {} opens before the file existed",
        all.len(),
        load(&shapes_a).len(),
        load(&shapes_b).len(),
        load(&shapes_a).len() + load(&shapes_b).len() - all.len(),
        started.elapsed().as_secs_f64(),
        log.opens,
        log.max_done,
        log.early_errors
    );
}
