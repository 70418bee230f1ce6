//! The `nmtune` command line. Errors end here as one line on stderr and a non-zero exit.

mod cli;

fn main() -> std::process::ExitCode {
    ignore_file_size_signal();
    end_quietly_when_the_reader_goes();
    // Warnings in the style of every other message: `nmtune: warning: …`, one line.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format(|out, record| {
            use std::io::Write;
            let level = match record.level() {
                log::Level::Error => "error",
                log::Level::Warn => "warning",
                log::Level::Info => "note",
                log::Level::Debug | log::Level::Trace => "debug",
            };
            writeln!(out, "nmtune: {level}: {}", record.args())
        })
        .init();
    match cli::run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            if let Some(cli::supervise::WorkerFailed(code)) = err.downcast_ref() {
                // The worker printed its own error line.
                return std::process::ExitCode::from(*code as u8);
            }
            // One line: the chain of causes joined without repeats, never a backtrace.
            let line = nmtune::one_line(err.as_ref());
            let restartable = err
                .downcast_ref::<nmtune::tuner::TuneError>()
                .is_some_and(|e| e.is_restartable());
            if restartable && cli::supervise::is_worker() {
                // Not the end of the run: the supervisor resumes it.
                eprintln!("nmtune: {line}");
                exit_now(cli::supervise::RESTART_EXIT_CODE);
            }
            eprintln!("nmtune: error: {line}");
            std::process::ExitCode::from(1)
        }
    }
}

/// End the process without exit handlers: the CUDA libraries' handlers may wait for a kernel
/// that never finishes. The driver reclaims the GPU context when the process is gone.
fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stderr().flush();
    // SAFETY: _exit ends the process at once; nothing runs after it.
    unsafe { libc::_exit(code) }
}

/// A file-size limit (`ulimit -f`) makes the kernel send SIGXFSZ, whose default action kills
/// the process in the middle of a write. Ignored, the write fails with EFBIG instead and the
/// error ends as one line like any other; the database stays consistent either way.
#[cfg(unix)]
fn ignore_file_size_signal() {
    // SAFETY: sets one signal's disposition to SIG_IGN, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

#[cfg(not(unix))]
fn ignore_file_size_signal() {}

/// Rust ignores SIGPIPE, so that writing to a pipe whose reader has gone (`nmtune report |
/// head`) fails with EPIPE, and `print!` turns that failure into a panic. With the default
/// action back, the process ends there, quietly, as Unix tools do; a database write in
/// progress is a transaction, so nothing is lost or half-written.
#[cfg(unix)]
fn end_quietly_when_the_reader_goes() {
    // SAFETY: sets one signal's disposition to SIG_DFL, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn end_quietly_when_the_reader_goes() {}
