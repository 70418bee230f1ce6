//! GPU tuning runs in a worker process under a supervisor that never touches the GPU.
//!
//! A kernel that runs forever cannot be stopped from inside its process (see
//! `Gpu::synchronize_within`), and a context that cannot be reset cannot run anything more.
//! The worker records the failing kernel and exits with [`RESTART_EXIT_CODE`]; the supervisor
//! starts a fresh worker with the same arguments, which resumes the run (finished problems and
//! recorded kernels are skipped). Any other exit ends the supervisor with the same status.

use std::process::Command;

/// Set in the worker's environment; its presence makes a process a worker.
const WORKER_ENV: &str = "NMTUNE_WORKER";
/// EX_TEMPFAIL: the worker recorded a failure that only a fresh process can get past.
pub const RESTART_EXIT_CODE: i32 = 75;
/// Each restart follows one recorded failure, so a run always moves on; this bounds a device
/// that breaks every context it gets.
const MAX_RESTARTS: usize = 64;

/// A worker that ended without success. Its error line is already printed.
#[derive(Debug, thiserror::Error)]
#[error("the tuning worker exited with status {0}")]
pub struct WorkerFailed(pub i32);

pub fn is_worker() -> bool {
    std::env::var_os(WORKER_ENV).is_some()
}

/// Run this same command line as a worker, with `env` set, until it finishes, restarting it
/// after each failure it marks as restartable.
pub fn run_workers(env: &[(&str, String)]) -> anyhow::Result<()> {
    let exe = std::env::current_exe()?;
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    for restart in 0..=MAX_RESTARTS {
        let mut command = worker_command(&exe, &args);
        command.envs(env.iter().map(|(k, v)| (k, v)));
        let status = command.status()?;
        match status.code() {
            Some(0) => return Ok(()),
            Some(RESTART_EXIT_CODE) if restart < MAX_RESTARTS => {
                eprintln!(
                    "nmtune: starting a fresh process to resume ({} of at most {MAX_RESTARTS})",
                    restart + 1
                );
            }
            Some(code) => return Err(WorkerFailed(code).into()),
            None => anyhow::bail!(
                "the tuning worker was killed ({status}); everything it measured is stored: \
                 run the same command again to resume"
            ),
        }
    }
    anyhow::bail!("the tuning worker needed more than {MAX_RESTARTS} fresh starts; giving up")
}

fn worker_command(exe: &std::path::Path, args: &[std::ffi::OsString]) -> Command {
    let mut command = Command::new(exe);
    command.args(args).env(WORKER_ENV, "1");
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe; it makes the worker die with its supervisor, so
        // killing the command stops the GPU work too.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    command
}
