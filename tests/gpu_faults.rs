//! GPU faults: a candidate kernel that kills the GPU context (a `trap`, an out-of-bounds
//! write) is recorded as `launch_failed` with the driver's reason; the tuner drops the broken
//! context, opens the device afresh and goes on, so the other candidates of the same problem
//! and the next problem are tuned on the same device in the same run.
//!
//! The faulting kernels reach the tuner the way any kernel does: their cubins are planted in
//! the NVRTC cache under the cache keys of two real candidates (same symbols, same
//! arguments), so the tuner's own path (build → LoadedKernel → Bench) launches them.
//!
//! Run on a GPU machine (skipped, visibly, without one):
//!
//! ```sh
//! source scripts/nvrtc-env.sh && cargo test --release --test gpu_faults -- --nocapture
//! ```
//!
//! # A kernel that runs too long
//!
//! Nothing in the driver API stops a running kernel short of ending its process. The tuner
//! waits for each verification and each batch of timed launches at most `--kernel-time-limit`
//! seconds; a kernel still running then is recorded as `launch_failed`, the worker process
//! exits, and the `nmtune` supervisor starts a fresh worker that resumes the run. The second
//! test plants an endless kernel and runs the command line end to end.

use nmtune::codegen::{compile_key, nvrtc, render, KernelConfig, KernelSource};
use nmtune::db::{Database, Source, Status};
use nmtune::gpu::{device, Gpu};
use nmtune::problem::{NmPattern, Problem};
use nmtune::tuner::measure::TimingPlan;
use nmtune::tuner::search::candidates;
use nmtune::tuner::{self, Strategy, TuneOptions};
use std::path::Path;
use std::process::Command;

mod common;

fn gpu_or_skip() -> Option<Gpu> {
    if !device::driver_present() {
        eprintln!("SKIPPED: GPU fault tests (no NVIDIA driver on this machine)");
        return None;
    }
    match Gpu::open(0) {
        Ok(gpu) => Some(gpu),
        Err(e) => {
            eprintln!("SKIPPED: GPU fault tests ({e})");
            None
        }
    }
}

/// How a planted kernel breaks the context.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// `trap`: the kernel aborts (CUDA_ERROR_LAUNCH_FAILED).
    Trap,
    /// A store 4 TiB past C (CUDA_ERROR_ILLEGAL_ADDRESS).
    OutOfBounds,
    /// Spins forever.
    Hang,
}

/// A module with the entry points of `victim` (codegen's kernel ABI) whose main kernel faults.
fn faulting_source(victim: &KernelSource, fault: Fault) -> KernelSource {
    let body = match fault {
        Fault::Trap => "asm volatile(\"trap;\");",
        Fault::OutOfBounds => "((volatile float*)C)[1ull << 40] = alpha;",
        Fault::Hang => "volatile int spin = 1; while (spin) { }",
    };
    let name = &victim.name;
    let source = format!(
        "extern \"C\" __global__ void {name}(const float* A, const float* B, const int* D,\n\
         const int* col_info, const int* col_count, float* C, float* workspace,\n\
         int m, int n, int k, float alpha, float beta) {{ {body} }}\n\
         extern \"C\" __global__ void {name}_reduce(const float* workspace, float* C, int m,\n\
         int n, int split_k, float alpha, float beta) {{ }}\n"
    );
    KernelSource {
        name: name.clone(),
        reduce_name: victim.reduce_name.clone(),
        source,
    }
}

/// Compile a faulting stand-in for `victim` and store it in the cache under `victim`'s key.
fn plant(victim: &KernelConfig, fault: Fault, arch: &str, cache: &Path) {
    let real = render::render(&compile_key(victim)).unwrap();
    let bad = nvrtc::compile(&faulting_source(&real, fault), arch).unwrap();
    let path = nvrtc::cache_path(&real, arch, cache).unwrap();
    nvrtc::write_cache_entry(&path, &bad).unwrap();
}

#[test]
fn a_faulting_kernel_is_recorded_and_the_next_problem_is_tuned() {
    let Some(gpu) = gpu_or_skip() else { return };
    let profile = gpu.profile().clone();
    let arch = profile.arch();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cubins");
    let db_path = dir.path().join("faults.sqlite");
    let nm = |n, m| NmPattern::new(n, m).unwrap();
    // Different patterns, so the second problem shares no kernel with the planted ones.
    let first = Problem::new(256, 1024, 1024, nm(8, 32), 32).unwrap();
    let second = Problem::new(256, 1024, 1024, nm(16, 32), 32).unwrap();
    let strategy = Strategy::Model;

    let first_candidates = candidates(&first, &profile, strategy);
    let trap_key = compile_key(&first_candidates[0]);
    let oob_key = first_candidates
        .iter()
        .map(compile_key)
        .find(|key| *key != trap_key)
        .expect("two distinct kernels among the candidates");
    let planted = [(trap_key, Fault::Trap), (oob_key, Fault::OutOfBounds)];
    for (key, fault) in &planted {
        plant(key, *fault, &arch, &cache);
        eprintln!("gpu_faults: planted a {fault:?} kernel as {}", key.name());
    }
    let victims: Vec<&KernelConfig> = first_candidates
        .iter()
        .filter(|c| planted.iter().any(|(key, _)| compile_key(c) == *key))
        .collect();
    assert!(
        victims.len() < first_candidates.len(),
        "every candidate of the first problem is planted: nothing left to succeed"
    );

    let opts = TuneOptions {
        strategy,
        plan: TimingPlan {
            runs: 3,
            ..TimingPlan::default()
        },
        quiet: true,
        cache_dir: cache.clone(),
        seed: 7,
    };
    let db = Database::open(&db_path).unwrap();
    let summary = tuner::tune_on_gpu(gpu, &[first, second], &db, &opts)
        .expect("the run goes on after a kernel breaks the context");
    eprintln!("gpu_faults: {summary:?}");
    assert_eq!(summary.problems_tuned, 2);
    assert!(summary.candidates_failed >= victims.len());

    let rows = db.measurements(Some(&profile.name)).unwrap();
    for victim in &victims {
        let row = rows
            .iter()
            .find(|r| r.problem == first && r.config == **victim)
            .unwrap_or_else(|| panic!("{victim} was not recorded"));
        assert_eq!(row.status, Status::LaunchFailed, "{victim}");
        let reason = row.error.as_deref().unwrap_or("");
        assert!(!reason.is_empty() && !row.verified && row.median_us.is_none());
        eprintln!("gpu_faults: {victim}: launch_failed: {reason}");
    }
    for problem in [&first, &second] {
        let best = db
            .best_for(&profile.name, problem)
            .unwrap()
            .unwrap_or_else(|| panic!("{problem}: no best entry after the faults"));
        assert!(
            best.verified && best.status == Status::Ok,
            "{problem}: {best:?}"
        );
        assert!(!victims.contains(&&best.config));
        let checksum = nmtune::codegen::template_checksum();
        assert!(db
            .is_problem_done(&profile.name, problem, checksum, Source::Measured)
            .unwrap());
        eprintln!(
            "gpu_faults: {problem}: best {} at {:.1} µs",
            best.config,
            best.median_us.unwrap()
        );
    }
    assert!(
        rows.iter()
            .filter(|r| r.problem == second)
            .all(|r| r.status != Status::LaunchFailed),
        "the second problem suffered from the first one's faults"
    );

    // The device is healthy for the next user, and a resumed run has nothing left to do.
    let gpu = Gpu::open(0).unwrap();
    gpu.check_healthy().unwrap();
    let again = tuner::tune_on_gpu(gpu, &[first, second], &db, &opts).unwrap();
    assert_eq!((again.problems_skipped, again.problems_tuned), (2, 0));
}

#[test]
fn an_endless_kernel_is_recorded_and_a_fresh_process_resumes_the_run() {
    let Some(gpu) = gpu_or_skip() else { return };
    let profile = gpu.profile().clone();
    drop(gpu);
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cubins");
    let db_path = dir.path().join("hang.sqlite");
    let shapes = dir.path().join("shapes.yaml");
    common::write_shapes(&shapes, &[(1024, 1024)], &[256], &["8:32", "16:32"]);
    let nm = |n, m| NmPattern::new(n, m).unwrap();
    let first = Problem::new(256, 1024, 1024, nm(8, 32), 32).unwrap();
    let victim = compile_key(&candidates(&first, &profile, Strategy::Model)[0]);
    plant(&victim, Fault::Hang, &profile.arch(), &cache);
    eprintln!("gpu_faults: planted a Hang kernel as {}", victim.name());

    let started = std::time::Instant::now();
    let out = Command::new(common::nmtune_bin())
        .args([
            "--gpu",
            "auto",
            "--strategy",
            "model",
            "--kernel-time-limit",
            "2",
        ])
        .arg("--shapes")
        .arg(&shapes)
        .arg("--db")
        .arg(&db_path)
        .arg("--cache-dir")
        .arg(&cache)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "gpu_faults: nmtune took {:.1} s:\n{stderr}",
        started.elapsed().as_secs_f64()
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("time limit") && stderr.contains("fresh process"));

    let db = Database::open_read_only(&db_path).unwrap();
    let rows = db.measurements(Some(&profile.name)).unwrap();
    let hung: Vec<_> = rows
        .iter()
        .filter(|r| compile_key(&r.config) == victim)
        .collect();
    assert!(!hung.is_empty(), "the endless kernel was not recorded");
    for row in &hung {
        assert_eq!(row.status, Status::LaunchFailed);
        assert!(row.error.as_deref().unwrap_or("").contains("time limit"));
    }
    for problem in shapes_problems(&shapes) {
        let best = db.best_for(&profile.name, &problem).unwrap();
        let best = best.unwrap_or_else(|| panic!("{problem}: no best entry"));
        assert!(best.verified && compile_key(&best.config) != victim);
    }
}

fn shapes_problems(path: &Path) -> Vec<Problem> {
    nmtune::shapes::load(path).unwrap().problems()
}
