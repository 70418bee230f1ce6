//! `nmtune tidy`: drop what later tunings superseded from a database, then compact it.
//!
//!     nmtune tidy --db tuning-db/h100.sqlite
//!
//! Tuning again after the kernel templates changed re-tunes every problem whose rows carry
//! another template checksum and keeps the old rows beside the new ones (lookup and report
//! ignore them), so the file and its export grow by one copy per template change. This keeps,
//! per GPU and problem, the measured rows of its latest completed tuning only: what tuning
//! into an empty file would have written. A tuning that stopped midway is left as it is, unless
//! another tuning of the problem completed after it.

use clap::Args;
use nmtune::db::{Database, DbError};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct TidyArgs {
    /// Tuning database to tidy (changed in place).
    #[arg(long, value_name = "PATH")]
    db: PathBuf,
}

pub fn run(args: &TidyArgs) -> anyhow::Result<()> {
    // Opening read-write would create a missing file: a typo must not leave an empty database.
    if !args.db.exists() {
        return Err(DbError::Missing {
            path: args.db.clone(),
        }
        .into());
    }
    let before = file_bytes(&args.db);
    let tidied = Database::open(&args.db)?.drop_superseded()?;
    let midway = match tidied.problems_midway {
        0 => String::new(),
        n => format!("; {n} problem(s) left as they are (a tuning stopped midway: resume it)"),
    };
    eprintln!(
        "nmtune: {}: dropped {} superseded measurements of {} problem(s){midway}; {} -> {} bytes",
        args.db.display(),
        tidied.rows_dropped,
        tidied.problems_tidied,
        before,
        file_bytes(&args.db)
    );
    Ok(())
}

fn file_bytes(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}
