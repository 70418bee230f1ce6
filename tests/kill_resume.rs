//! Kill and resume: `nmtune --backend model` is SIGKILLed at random points (seeded: a random
//! moment for the first kill, a random count of stored problems for the others) and
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
use nmtune::codegen::templates_checksum;
use nmtune::db::{Database, Source};
use nmtune::problem::Problem;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::io::Read;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Kills per test.
const KILLS: usize = 5;

/// 4 layers × 8 values of m × 4 sparsities = 128 problems.
fn shapes(path: &Path) {
    write_shapes(
        path,
        &[(2048, 2048), (4096, 2048), (2048, 4096), (1024, 1024)],
        &[1, 16, 64, 256, 512, 1024, 2048, 4096],
        &["4:32", "8:32", "12:32", "16:32"],
    );
}

/// Wait until `target` problems are stored in `db` or the child has exited.
fn wait_for_progress(child: &mut Child, db: &Path, problems: &[Problem], target: usize) {
    let mut reader: Option<Database> = None;
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        if reader.is_none() {
            reader = Database::open_read_only(db).ok();
        }
        if let Some(reader) = &reader {
            let done = problems
                .iter()
                .filter(|p| {
                    reader
                        .is_problem_done("h100", p, templates_checksum(p), Source::Model)
                        .unwrap_or(false)
                })
                .count();
            if done >= target {
                return;
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
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
    let all_problems = nmtune::shapes::load(&shapes_file).unwrap().problems();
    let problems = all_problems.len();

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
    let (mut killed_mid_run, mut killed_while_storing, mut done_before) = (0, 0, 0);
    for kill in 0..KILLS {
        if done_before == problems {
            break; // a run outran its kill point and finished: nothing left to interrupt
        }
        let mut child = model_run(&shapes_file, &interrupted)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The first kill lands at a random moment early on (while the file and its schema are
        // being created); each later one once a random number of further problems is stored,
        // so that it interrupts the writing itself.
        let moment = if kill == 0 {
            let delay = full_run.mul_f64(rng.gen_range(0.0..0.04));
            std::thread::sleep(delay);
            format!("after {:>4} ms", delay.as_millis())
        } else {
            let target = done_before + rng.gen_range(1..=(problems - done_before).div_ceil(2));
            wait_for_progress(&mut child, &interrupted, &all_problems, target);
            format!("at {target:>3} stored")
        };
        let still_running = child.try_wait().unwrap().is_none();
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        if !still_running && !status.success() {
            let mut stderr = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
            panic!("run {kill} failed before its kill: {status}: {stderr}");
        }
        killed_mid_run += still_running as usize;
        // Whatever the moment, the file is whole: a problem is either fully stored and
        // marked done, or absent.
        let done = if interrupted.exists() && Database::open_read_only(&interrupted).is_ok() {
            check_model_database_consistent(&interrupted)
        } else {
            0
        };
        killed_while_storing += (still_running && done > 0 && done < problems) as usize;
        assert!(
            done >= done_before,
            "kill {kill}: finished problems went from {done_before} to {done}"
        );
        eprintln!(
            "kill_resume: kill {} {moment}: {}, {done}/{problems} problems stored",
            kill + 1,
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
        "kill_resume: {killed_mid_run}/{KILLS} kills landed mid-run ({killed_while_storing} \
         while problems were being stored) and were survived; \
         {} measurement rows, {} best entries and {} done marks equal the uninterrupted run's",
        got_rows.len(),
        best_rows(&got).len(),
        problem_runs(&interrupted).len()
    );
    assert!(
        killed_mid_run >= 3,
        "only {killed_mid_run} of {KILLS} kills interrupted a run: the kill points are too late"
    );
    assert!(
        killed_while_storing >= 2,
        "only {killed_while_storing} kills landed while problems were being stored"
    );
}
