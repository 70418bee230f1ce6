//! The `nmtune` command line. Errors end here as one line on stderr and a non-zero exit.

mod cli;

fn main() -> std::process::ExitCode {
    ignore_file_size_signal();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp(None)
        .init();
    match cli::run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            // One line: the chain of causes joined, never a backtrace.
            let chain: Vec<String> = err.chain().map(|c| c.to_string()).collect();
            eprintln!("nmtune: error: {}", chain.join(": "));
            std::process::ExitCode::from(1)
        }
    }
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
