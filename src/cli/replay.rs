//! The replay backend of the main job and `nmtune check-replay`.

use anyhow::bail;
use clap::Args;
use nmtune::db::Database;
use nmtune::gpu::GpuProfile;
use nmtune::problem::Problem;
use nmtune::replay::MeasurementLog;
use nmtune::tuner::replay::{self, check as check_db, ReplaySummary};
use std::path::{Path, PathBuf};

/// How many missing problems are named before the rest are counted.
const MISSING_SHOWN: usize = 5;

/// Rebuild `db` from a measurements file: `nmtune --backend replay`.
pub fn tune_replay(
    log: &MeasurementLog,
    profile: &GpuProfile,
    problems: &[Problem],
    db: &Database,
    quiet: bool,
) -> anyhow::Result<()> {
    let summary = replay::replay(log, &profile.name, Some(profile), problems, db)?;
    let measurements = log.path.as_path();
    report_missing(&summary, measurements);
    if !quiet {
        eprintln!(
            "nmtune: replayed {} of {} problems ({} rows, source = replay) from {} into {}; \
             {} already done{}; {:.1} s",
            summary.problems_replayed,
            summary.problems_total,
            summary.rows_recorded,
            measurements.display(),
            db.path().display(),
            summary.problems_skipped,
            ignored_note(&summary),
            summary.elapsed_s
        );
    }
    Ok(())
}

fn ignored_note(summary: &ReplaySummary) -> String {
    match summary.model_rows_ignored {
        0 => String::new(),
        n => format!("; {n} model rows ignored (predictions are not replayed)"),
    }
}

/// Name the problems of the shapes file that the measurements file lacks (always printed:
/// the database will not hold them).
fn report_missing(summary: &ReplaySummary, measurements: &Path) {
    if summary.missing.is_empty() {
        return;
    }
    let shown: Vec<String> = summary
        .missing
        .iter()
        .take(MISSING_SHOWN)
        .map(|p| p.to_string())
        .collect();
    let more = summary.missing.len().saturating_sub(MISSING_SHOWN);
    eprintln!(
        "nmtune: {} problems of the shapes file are not in {}: {}{}",
        summary.missing.len(),
        measurements.display(),
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    );
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The committed tuning database.
    #[arg(long, value_name = "PATH")]
    db: PathBuf,
    /// Its measurements file [default: the database path with .measurements.jsonl].
    #[arg(long, value_name = "FILE")]
    measurements: Option<PathBuf>,
}

/// `nmtune check-replay`: exit 0 only when the file is the database's export and replaying it
/// gives the same best entries.
pub fn check(args: &CheckArgs) -> anyhow::Result<()> {
    let file = args
        .measurements
        .clone()
        .unwrap_or_else(|| args.db.with_extension("measurements.jsonl"));
    if !file.exists() {
        bail!(
            "{} does not exist: write it with `nmtune export --db {} --out {}`",
            file.display(),
            args.db.display(),
            file.display()
        );
    }
    let log = MeasurementLog::read(&file)?;
    let report = check_db(&args.db, &log, |diff| eprintln!("nmtune: differs: {diff}"))?;
    println!(
        "nmtune: {} reproduces {}: {} rows, {} best entries identical (GPU {})",
        file.display(),
        args.db.display(),
        report.rows,
        report.best_entries,
        report.gpus.join(", ")
    );
    Ok(())
}
