//! `nmtune lookup`: which kernel the runtime would launch for one problem, and why. Reads the
//! database only; needs no GPU.

use super::fields::{pattern_arg, whole_number};
use clap::{Args, ValueEnum};
use nmtune::problem::{ALayout, Dtype, Problem};
use nmtune::runtime::{Answer, Choice, Lookup};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

#[derive(Debug, Args)]
pub struct LookupArgs {
    /// Tuning database to read; repeat to read several as one (e.g. a GPU's prefill and
    /// decode databases: a problem stored in both keeps the better entry).
    #[arg(long, value_name = "PATH", required = true)]
    db: Vec<PathBuf>,
    /// GPU whose entries to use (h100, h200, …).
    #[arg(long, value_name = "NAME")]
    gpu: String,
    /// Rows of A (tokens).
    #[arg(long, value_parser = whole_number)]
    m: usize,
    /// Columns of the weight and of C (output features).
    #[arg(long, value_parser = whole_number)]
    n: usize,
    /// Rows of the weight, columns of A (input features).
    #[arg(long, value_parser = whole_number)]
    k: usize,
    /// Sparsity pattern N:M, such as 8:32, or the share of weights pruned as a percentage,
    /// such as 75% (with M = 32).
    #[arg(long, value_name = "N:M")]
    nm: String,
    /// Vector length L.
    #[arg(long, default_value_t = 32, value_parser = whole_number)]
    l: usize,
    /// Layout of A: row (m×k row-major) or col (column-major); only kernels compiled for it
    /// answer.
    #[arg(long, value_name = "LAYOUT", default_value = "row", value_parser = super::tune::parse_a_layout)]
    a_layout: ALayout,
    /// Element type of A, B' and C: f32, bf16 or f16.
    #[arg(long, value_name = "TYPE", default_value = "f32", value_parser = super::tune::parse_dtype)]
    dtype: Dtype,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
}

pub fn run(args: &LookupArgs) -> anyhow::Result<()> {
    let nm = pattern_arg("--nm", &args.nm)?;
    let problem = Problem::new(args.m, args.n, args.k, nm, args.l)?
        .with_layout(args.a_layout)?
        .with_dtype(args.dtype);
    // A typo in --db should not quietly turn into "defaults for everything".
    let lookup = Lookup::open_existing(&args.db, &args.gpu)?;
    let choice = lookup.lookup(&problem)?;
    let answer = Answer::new(&lookup.gpu().name, &problem, &choice);
    match args.format {
        Format::Json => println!("{}", answer.to_json()),
        Format::Table => print!("{}", table(&answer, &choice)),
    }
    Ok(())
}

fn opt(value: Option<f64>, unit: &str) -> String {
    value.map_or_else(|| "-".into(), |v| format!("{v:.2}{unit}"))
}

fn table(a: &Answer, choice: &Choice) -> String {
    let c = &choice.config;
    let at = a
        .from_m
        .map_or_else(String::new, |m| format!(" (at m={m})"));
    let lines = [
        ("gpu", a.gpu.clone()),
        (
            "problem",
            format!(
                "m={} n={} k={} {} L={} A {}-major",
                a.m, a.n, a.k, a.nm, a.l, a.a_layout
            ),
        ),
        ("kernel", a.kernel.clone()),
        ("rule", choice.rule.to_string()),
        (
            "source",
            a.source
                .clone()
                .unwrap_or_else(|| "built-in default".into()),
        ),
        ("median", format!("{}{at}", opt(a.median_us, " µs"))),
        ("cublas", format!("{}{at}", opt(a.cublas_us, " µs"))),
        ("speedup", opt(a.speedup, "×")),
        (
            "block",
            format!("m_s={} n_s={} k_s={}", c.m_s, c.n_s, c.k_s),
        ),
        (
            "thread",
            format!(
                "m_t={} n_t={} warp={}x{}",
                c.m_t, c.n_t, c.warp.rows, c.warp.cols
            ),
        ),
        (
            "pipeline",
            format!(
                "A {} cp.async stages={} min_blocks={} packing={} split_k={}",
                c.a_copy.token(),
                c.stages,
                c.min_blocks,
                c.packing,
                c.split_k
            ),
        ),
    ];
    lines
        .iter()
        .map(|(key, value)| format!("{key:<9} {value}\n"))
        .collect()
}
