//! GPU faults, through the `nmtune` command line: a candidate kernel that kills the GPU
//! context (a `trap`, an out-of-bounds write) is recorded as `launch_failed` with the
//! driver's reason, and the run goes on: the worker process exits (nothing can run on a
//! context after a fault; resetting the primary context was tried and, on the H100's
//! driver 580, left it broken) and the supervisor starts a fresh worker that resumes. The
//! other candidates of the same problem and the next problem are tuned in the same command.
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
//! `NMTUNE_BIN` names the `nmtune` binary to run where the test binary was copied to another
//! machine (default: the one cargo built beside it).
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
use nmtune::gpu::{device, Gpu, GpuProfile};
use nmtune::problem::{NmPattern, Problem};
use nmtune::tuner::search::candidates;
use nmtune::tuner::Strategy;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

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
        // C is poisoned with NaN before the launch: the loop never ends (and, reading
        // volatile global memory, cannot be optimised away).
        Fault::Hang => "while (((volatile float*)C)[0] != 1.0e30f) { }",
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

/// The two tests share the GPU; each runs `nmtune` alone on it.
static GPU_IN_USE: Mutex<()> = Mutex::new(());

/// `nmtune --gpu auto --strategy model` on a shapes file, with its own cache and database.
fn tune_cli(shapes: &Path, db: &Path, cache: &Path, extra: &[&str]) -> (bool, String) {
    let started = std::time::Instant::now();
    let out = Command::new(common::nmtune_bin())
        .args(["--gpu", "auto", "--strategy", "model", "--runs", "3"])
        .args(extra)
        .arg("--shapes")
        .arg(shapes)
        .arg("--db")
        .arg(db)
        .arg("--cache-dir")
        .arg(cache)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!(
        "gpu_faults: nmtune took {:.1} s:\n{stderr}",
        started.elapsed().as_secs_f64()
    );
    (out.status.success(), stderr)
}

/// Every problem of the shapes file has a verified best entry that is none of `victims`.
fn check_tuned(db: &Database, gpu: &str, shapes: &Path, victims: &[KernelConfig]) {
    for problem in nmtune::shapes::load(shapes).unwrap().problems() {
        let best = db.best_for(gpu, &problem).unwrap();
        let best = best.unwrap_or_else(|| panic!("{problem}: no best entry"));
        assert!(
            best.verified && best.status == Status::Ok,
            "{problem}: {best:?}"
        );
        assert!(!victims.contains(&compile_key(&best.config)));
        let checksum = nmtune::codegen::templates_checksum(&problem);
        assert!(db
            .is_problem_done(gpu, &problem, checksum, Source::Measured)
            .unwrap());
        eprintln!(
            "gpu_faults: {problem}: best {} at {:.1} µs",
            best.config,
            best.median_us.unwrap()
        );
    }
}

/// The rows of `victim`'s kernels: all failed to launch, with a reason containing `why`.
fn check_recorded(db: &Database, gpu: &str, victim: &KernelConfig, why: &str) {
    let rows = db.measurements(Some(gpu)).unwrap();
    let failed: Vec<_> = rows
        .iter()
        .filter(|r| compile_key(&r.config) == *victim)
        .collect();
    assert!(!failed.is_empty(), "{} was not recorded", victim.name());
    for row in failed {
        let reason = row.error.as_deref().unwrap_or("");
        assert_eq!(row.status, Status::LaunchFailed, "{}", row.config);
        assert!(!row.verified && row.median_us.is_none());
        assert!(reason.contains(why), "{}: {reason}", row.config);
        eprintln!("gpu_faults: {}: launch_failed: {reason}", row.config);
    }
}

/// One test's run: the GPU's profile, a scratch folder with a shapes file of two problems
/// (8:32 and 16:32, so the second shares no kernel with kernels planted for the first), the
/// distinct kernels of the first problem's candidates, best predicted first.
struct Setup {
    profile: GpuProfile,
    dir: tempfile::TempDir,
    shapes: PathBuf,
    first_kernels: Vec<KernelConfig>,
}

impl Setup {
    fn new() -> Option<Self> {
        let profile = gpu_or_skip()?.profile().clone();
        let dir = tempfile::tempdir().unwrap();
        let shapes = dir.path().join("shapes.yaml");
        common::write_shapes(&shapes, &[(1024, 1024)], &[256], &["8:32", "16:32"]);
        let first = Problem::new(256, 1024, 1024, NmPattern::new(8, 32).unwrap(), 32).unwrap();
        let mut first_kernels: Vec<KernelConfig> = Vec::new();
        for key in candidates(&first, &profile, Strategy::Model)
            .iter()
            .map(compile_key)
        {
            if !first_kernels.contains(&key) {
                first_kernels.push(key);
            }
        }
        Some(Self {
            profile,
            dir,
            shapes,
            first_kernels,
        })
    }

    fn plant(&self, key: &KernelConfig, fault: Fault) {
        plant(key, fault, &self.profile.arch(), &self.cache());
        eprintln!("gpu_faults: planted a {fault:?} kernel as {}", key.name());
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cubins")
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("tune.sqlite")
    }

    fn tune(&self, extra: &[&str]) -> (bool, String) {
        tune_cli(&self.shapes, &self.db(), &self.cache(), extra)
    }

    /// Every victim recorded as failed with `why`, every problem tuned without them.
    fn check(&self, victims: &[KernelConfig], why: &str) {
        let db = Database::open_read_only(&self.db()).unwrap();
        for victim in victims {
            check_recorded(&db, &self.profile.name, victim, why);
        }
        check_tuned(&db, &self.profile.name, &self.shapes, victims);
    }
}

#[test]
fn a_faulting_kernel_is_recorded_and_the_next_problem_is_tuned() {
    let _gpu = GPU_IN_USE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(run) = Setup::new() else { return };
    let victims = &run.first_kernels[..2];
    assert!(run.first_kernels.len() > 2, "nothing left to succeed");
    run.plant(&victims[0], Fault::Trap);
    run.plant(&victims[1], Fault::OutOfBounds);

    let (ok, stderr) = run.tune(&[]);
    assert!(ok, "the run stopped after a kernel broke the context");
    assert!(stderr.contains("broke the GPU context") && stderr.contains("fresh process"));
    run.check(victims, "CUDA");

    // A resumed run has nothing left to do, and the device is healthy for the next user.
    let (ok, stderr) = run.tune(&[]);
    assert!(ok && stderr.contains("0 tuned, 2 already done"), "{stderr}");
    Gpu::open(0).unwrap().check_healthy().unwrap();
}

#[test]
fn an_endless_kernel_is_recorded_and_a_fresh_process_resumes_the_run() {
    let _gpu = GPU_IN_USE.lock().unwrap_or_else(|e| e.into_inner());
    let Some(run) = Setup::new() else { return };
    let victim = run.first_kernels[0];
    run.plant(&victim, Fault::Hang);

    let (ok, stderr) = run.tune(&["--kernel-time-limit", "2"]);
    assert!(ok, "{stderr}");
    assert!(stderr.contains("time limit") && stderr.contains("fresh process"));
    run.check(&[victim], "time limit");
}
