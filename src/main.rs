//! The `nmtune` command line. Errors end here as one line on stderr and a non-zero exit.

mod cli;

fn main() -> std::process::ExitCode {
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
