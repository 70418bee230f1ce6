//! How well the runtime's nearest-m rule does, judged by a tuning database alone (no GPU).
//!
//! Every tuned problem at an interior m of the grid (512, 1024, 2048) is held out in turn: the
//! lookup table is built from all other problems' measurements, asked for the held-out
//! problem, and the kernel it answers with is looked up among the held-out problem's own
//! measured candidates. Its measured time against the problem's tuned best is the share the
//! rule reaches; a kernel the tuner never timed on that problem is counted apart.
//!
//! `cargo run --release --example lookup_leave_one_out -- --db tuning-db/h100.sqlite --gpu h100`

use anyhow::Context;
use clap::Parser;
use nmtune::db::{Database, Measurement, Status};
use nmtune::gpu_profile::GpuProfile;
use nmtune::problem::Problem;
use nmtune::runtime::Lookup;
use std::path::PathBuf;
use std::process::ExitCode;

/// The m held out: the grid's interior, so that each has a tuned m below and above.
const HELD_OUT_M: [usize; 3] = [512, 1024, 2048];
/// A share of the tuned best below this counts as a miss (issue 14's criterion).
const GOOD_SHARE: f64 = 0.9;

#[derive(Parser)]
struct Args {
    /// Tuning database to judge.
    #[arg(long)]
    db: PathBuf,
    /// GPU whose entries to use (a built-in profile: h100, h200, …).
    #[arg(long)]
    gpu: String,
}

fn main() -> ExitCode {
    match run(&Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!(
                "lookup_leave_one_out: error: {}",
                nmtune::one_line(err.as_ref())
            );
            ExitCode::from(1)
        }
    }
}

fn run(args: &Args) -> anyhow::Result<()> {
    let profile = GpuProfile::builtin(&args.gpu)
        .with_context(|| format!("no built-in GPU profile named {}", args.gpu))?;
    let db = Database::open_read_only(&args.db)?;
    let rows = db.measurements(Some(&args.gpu))?;
    let mut shares_by_m: Vec<(usize, f64)> = Vec::new();
    let mut untimed = 0;
    for best in db.best_entries(Some(&args.gpu))? {
        let held = best.problem;
        if !HELD_OUT_M.contains(&held.m) {
            continue;
        }
        let others = rows.iter().filter(|r| r.problem != held).cloned();
        let choice = Lookup::from_measurements(profile.clone(), others).lookup(&held)?;
        let kernel = choice.config.name();
        match (best.median_us, measured_us(&rows, &held, &kernel)) {
            (Some(tuned), Some(answered)) => {
                println!(
                    "{held}: {:.3} of the tuned best with {kernel}",
                    tuned / answered
                );
                shares_by_m.push((held.m, tuned / answered));
            }
            _ => untimed += 1,
        }
    }
    for m in HELD_OUT_M {
        let shares: Vec<f64> = shares_by_m
            .iter()
            .filter(|(at, _)| *at == m)
            .map(|(_, s)| *s)
            .collect();
        summarize(&format!("m = {m}"), &shares);
    }
    let all: Vec<f64> = shares_by_m.iter().map(|(_, s)| *s).collect();
    summarize("all", &all);
    println!("{untimed} held-out problems answered with a kernel never timed on them (left out)");
    Ok(())
}

/// The measured median of `kernel` on `problem`, if the tuner timed it there.
fn measured_us(rows: &[Measurement], problem: &Problem, kernel: &str) -> Option<f64> {
    rows.iter()
        .find(|r| r.problem == *problem && r.status == Status::Ok && r.kernel_name() == kernel)
        .and_then(|r| r.median_us)
}

fn summarize(what: &str, shares: &[f64]) {
    if shares.is_empty() {
        return;
    }
    let geomean = (shares.iter().map(|s| s.ln()).sum::<f64>() / shares.len() as f64).exp();
    let misses = shares.iter().filter(|s| **s < GOOD_SHARE).count();
    let worst = shares.iter().copied().fold(f64::INFINITY, f64::min);
    println!(
        "{what}: {} problems, geometric-mean share of the tuned best {geomean:.3}, \
         {misses} below {GOOD_SHARE}, worst {worst:.3}",
        shares.len()
    );
}
