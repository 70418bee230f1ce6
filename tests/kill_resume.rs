//! Kill and resume: `nmtune --backend model` is SIGKILLed at random moments (seeded) and
//! started again each time; the database it ends with must equal an uninterrupted run's,
//! row for row, and be whole after every kill.
//!
//! ```sh
//! cargo test --release --test kill_resume -- --nocapture
//! ```
//!
//! `NMTUNE_KILL_SEED=<n>` replays a sequence of kill points.

mod common;

use common::{
    best_rows, check_model_database_consistent, integrity_check, measurement_rows, model_run,
    problem_runs, write_shapes,
};
use nmtune::db::Database;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Kills per test.
const KILLS: usize = 5;

/// 4 layers × 6 values of m × 2 sparsities = 48 problems.
fn shapes(path: &Path) {
    write_shapes(
        path,
        &[(2048, 2048), (4096, 2048), (2048, 4096), (1024, 1024)],
        &[1, 16, 64, 256, 1024, 4096],
        &["8:32", "16:32"],
    );
}

fn run_to_completion(shapes: &Path, db: &Path) -> Duration {
    let started = Instant::now();
    let out = model_run(shapes, db).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    started.elapsed()
}

#[test]
fn killed_runs_resume_to_the_same_database() {
    let dir = tempfile::tempdir().unwrap();
    let shapes_file = dir.path().join("shapes.yaml");
    shapes(&shapes_file);
    let problems = nmtune::shapes::load(&shapes_file).unwrap().len();

    let reference = dir.path().join("reference.sqlite");
    let full_run = run_to_completion(&shapes_file, &reference);
    assert_eq!(check_model_database_consistent(&reference), problems);

    let seed = std::env::var("NMTUNE_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen::<u64>());
    eprintln!(
        "kill_resume: {problems} problems, uninterrupted run {:.2} s, seed {seed} (NMTUNE_KILL_SEED)",
        full_run.as_secs_f64()
    );
    let mut rng = SmallRng::seed_from_u64(seed);
    let interrupted = dir.path().join("interrupted.sqlite");
    let (mut killed_mid_run, mut done_before) = (0, 0);
    for kill in 0..KILLS {
        // The first kill lands early (while the file and its schema are being created); each
        // later one somewhere in the first 10..60 % of what is left of the run.
        let left = (problems - done_before) as f64 / problems as f64;
        let fraction = if kill == 0 {
            rng.gen_range(0.0..0.04)
        } else {
            left * rng.gen_range(0.1..0.6)
        };
        let delay = full_run.mul_f64(fraction);
        let mut child = model_run(&shapes_file, &interrupted)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let still_running = child.try_wait().unwrap().is_none();
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        if !still_running {
            assert!(
                status.success(),
                "run {kill} failed before its kill: {status}"
            );
        }
        killed_mid_run += still_running as usize;
        // Whatever the moment, the file is whole: a problem is either fully stored and
        // marked done, or absent.
        let done = if interrupted.exists() && Database::open_read_only(&interrupted).is_ok() {
            check_model_database_consistent(&interrupted)
        } else {
            0
        };
        assert!(
            done >= done_before,
            "kill {kill}: finished problems went from {done_before} to {done}"
        );
        eprintln!(
            "kill_resume: kill {} after {:>4} ms: {}, {done}/{problems} problems stored",
            kill + 1,
            delay.as_millis(),
            if still_running {
                "killed mid-run"
            } else {
                "run had already finished"
            }
        );
        done_before = done;
    }
    run_to_completion(&shapes_file, &interrupted);

    assert_eq!(integrity_check(&interrupted), "ok");
    assert_eq!(check_model_database_consistent(&interrupted), problems);
    let (want, got) = (
        Database::open_read_only(&reference).unwrap(),
        Database::open_read_only(&interrupted).unwrap(),
    );
    let (want_rows, got_rows) = (measurement_rows(&want), measurement_rows(&got));
    assert_eq!(got_rows.len(), want_rows.len(), "measurement rows");
    assert_eq!(
        got_rows, want_rows,
        "measurements differ from the uninterrupted run"
    );
    assert_eq!(best_rows(&got), best_rows(&want), "best entries differ");
    assert_eq!(
        problem_runs(&interrupted),
        problem_runs(&reference),
        "finished-problem marks differ"
    );
    eprintln!(
        "kill_resume: {killed_mid_run}/{KILLS} kills landed mid-run and were survived; \
         {} measurement rows, {} best entries and {} done marks equal the uninterrupted run's",
        got_rows.len(),
        best_rows(&got).len(),
        problem_runs(&interrupted).len()
    );
    assert!(
        killed_mid_run >= 3,
        "only {killed_mid_run} of {KILLS} kills interrupted a run: the kill points are too late"
    );
}
