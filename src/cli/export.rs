//! `nmtune export`: every measurement of a database as JSON lines, sorted, one row a line.
//!
//!     nmtune export --db tuning-db/h200.sqlite --out tuning-db/h200.measurements.jsonl

use anyhow::Context;
use clap::Args;
use nmtune::db::Database;
use nmtune::replay;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Tuning database to read.
    #[arg(long, value_name = "PATH")]
    db: PathBuf,
    /// Only this GPU's measurements.
    #[arg(long, value_name = "NAME")]
    gpu: Option<String>,
    /// File to write (replaced atomically) [default: standard output].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let db = Database::open_read_only(&args.db)?;
    let text = replay::export(&db, args.gpu.as_deref())?;
    match &args.out {
        Some(path) => {
            replay::write_atomically(path, &text)?;
            eprintln!(
                "nmtune: wrote {} measurements of {} to {}",
                text.lines().count(),
                args.db.display(),
                path.display()
            );
        }
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("cannot write to standard output")?,
    }
    Ok(())
}
