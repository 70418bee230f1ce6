//! `nmtune report`: one row per problem, the best kernel beside cuBLAS.

use super::fields::{csv_number, ConfigFields};
use anyhow::bail;
use clap::{Args, ValueEnum};
use nmtune::db::{is_current, Database, Measurement};
use nmtune::format::MinBytes;
use nmtune::gpu_profile::gbps;
use nmtune::problem::{ALayout, Dtype};
use serde::Serialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Json,
    Csv,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Tuning database to read.
    #[arg(long, value_name = "PATH")]
    db: PathBuf,
    /// Only this GPU's entries.
    #[arg(long, value_name = "NAME")]
    gpu: Option<String>,
    /// Only problems with A in this layout: row or col.
    #[arg(long, value_name = "LAYOUT", value_parser = super::tune::parse_a_layout)]
    a_layout: Option<ALayout>,
    /// Only problems of this element type: f32, bf16 or f16.
    #[arg(long, value_name = "TYPE", value_parser = super::tune::parse_dtype)]
    dtype: Option<Dtype>,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Also draw the roofline of the best entries into this file (.png or .svg).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
}

/// One report row. The JSON field names are part of the interface (README "Report").
#[derive(Debug, Serialize)]
pub struct ReportRow {
    pub gpu: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub nm: String,
    pub l: usize,
    /// `row` or `col`.
    pub a_layout: ALayout,
    /// `f32`, `bf16` or `f16`.
    pub dtype: Dtype,
    pub kernel: String,
    pub config: ConfigFields,
    pub median_us: Option<f64>,
    pub effective_tflops: Option<f64>,
    pub cublas_us: Option<f64>,
    pub speedup: Option<f64>,
    pub ideal_speedup: f64,
    pub fraction_of_ideal: Option<f64>,
    /// Bytes any kernel must move between DRAM and the SMs: B', D, A read once, C written once.
    pub min_bytes: u64,
    /// `min_bytes` over the median time, GB/s.
    pub achieved_gbps: Option<f64>,
    /// The device's copy bandwidth as the run that timed this entry measured it, GB/s; `None`
    /// for a prediction and for entries recorded before databases held it.
    pub copy_gbps: Option<f64>,
    pub source: String,
    pub verified: bool,
    /// Tuned with this build's kernel templates; `false`: the runtime never launches it.
    pub current_templates: bool,
}

impl ReportRow {
    fn from_best(best: &Measurement) -> Self {
        let p = &best.problem;
        let speedup = match (best.median_us, best.cublas_us) {
            (Some(t), Some(c)) if t > 0.0 => Some(c / t),
            _ => None,
        };
        let ideal = p.nm.m as f64 / p.nm.n as f64;
        let min_bytes = MinBytes::of(p).total();
        Self {
            gpu: best.gpu.clone(),
            m: p.m,
            n: p.n,
            k: p.k,
            nm: p.nm.to_string(),
            l: p.l,
            a_layout: p.a_layout,
            dtype: p.dtype,
            kernel: best.config.name(),
            config: ConfigFields::from(&best.config),
            median_us: best.median_us,
            effective_tflops: best.median_us.map(|t| p.dense_flops() / (t * 1e-6) / 1e12),
            cublas_us: best.cublas_us,
            speedup,
            ideal_speedup: ideal,
            fraction_of_ideal: speedup.map(|s| s / ideal),
            min_bytes,
            achieved_gbps: best.median_us.map(|t| gbps(min_bytes as f64, t * 1e-6)),
            copy_gbps: best.copy_gbps,
            source: best.source.as_str().to_string(),
            verified: best.verified,
            current_templates: is_current(best),
        }
    }
}

pub fn run(args: &ReportArgs) -> anyhow::Result<()> {
    let db = Database::open_read_only(&args.db)?;
    let gpu = args.gpu.as_deref().map(|g| g.trim().to_ascii_lowercase());
    let mut best = db.serving_entries(gpu.as_deref())?;
    if best.is_empty() {
        // Never an empty answer that looks like a result.
        let gpus = db.gpus()?;
        match &gpu {
            Some(gpu) if !gpus.contains(gpu) => bail!(
                "{} holds no entries of GPU '{gpu}' (it holds: {})",
                args.db.display(),
                if gpus.is_empty() {
                    "none".into()
                } else {
                    gpus.join(", ")
                }
            ),
            Some(gpu) => bail!(
                "{} holds no usable entry of GPU '{gpu}' (no verified, timed result)",
                args.db.display()
            ),
            None => bail!(
                "{} holds no usable entry (no verified, timed result)",
                args.db.display()
            ),
        }
    }
    if let Some(layout) = args.a_layout {
        best.retain(|b| b.problem.a_layout == layout);
        if best.is_empty() {
            bail!(
                "{} holds no usable entry with a_layout {}",
                args.db.display(),
                layout.as_str()
            );
        }
    }
    if let Some(dtype) = args.dtype {
        best.retain(|b| b.problem.dtype == dtype);
        if best.is_empty() {
            bail!(
                "{} holds no usable entry of type {dtype}",
                args.db.display()
            );
        }
    }
    if let Some(path) = &args.plot {
        super::report_plot::plot(&db, &best, path)?;
    }
    let rows: Vec<ReportRow> = best.iter().map(ReportRow::from_best).collect();
    let text = match args.format {
        Format::Json => serde_json::to_string_pretty(&rows)? + "\n",
        Format::Csv => to_csv(&rows),
        Format::Table => to_table(&rows) + &summary(&rows),
    };
    print!("{text}");
    Ok(())
}

/// Geometric-mean speed-up per (A layout, m, N:M, L) and the worst problem of each row.
fn summary(rows: &[ReportRow]) -> String {
    let results: Vec<(nmtune::problem::Problem, f64)> = rows
        .iter()
        .filter_map(|r| {
            let nm = nmtune::problem::NmPattern::parse(&r.nm, 32).ok()?;
            let problem = nmtune::problem::Problem::new(r.m, r.n, r.k, nm, r.l)
                .and_then(|p| p.with_layout(r.a_layout))
                .ok()?
                .with_dtype(r.dtype);
            Some((problem, r.speedup?))
        })
        .collect();
    if results.is_empty() {
        return String::new();
    }
    format!(
        "\nspeed-up over cuBLAS in the problem's type (SGEMM for f32, GemmEx for bf16 and \
         f16; geometric mean per row):\n{}",
        nmtune::summary::speedup_table(&nmtune::summary::speedup_rows(&results))
    )
}

/// A table cell: the value with `decimals` places, `-` when there is none.
fn opt(value: Option<f64>, decimals: usize) -> String {
    value
        .map(|v| format!("{v:.decimals$}"))
        .unwrap_or_else(|| "-".into())
}

/// CSV: one header line, then one line per row; a missing number is an empty field.
fn to_csv(rows: &[ReportRow]) -> String {
    let opt = csv_number;
    let mut out = String::from("gpu,m,n,k,nm,l,a_layout,kernel,median_us,effective_tflops,cublas_us,speedup,ideal_speedup,fraction_of_ideal,min_bytes,achieved_gbps,copy_gbps,source,verified,current_templates,dtype\n");
    for r in rows {
        out += &format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{:.3},{},{},{},{},{},{},{},{}\n",
            r.gpu,
            r.m,
            r.n,
            r.k,
            r.nm,
            r.l,
            r.a_layout,
            r.kernel,
            opt(r.median_us, 2),
            opt(r.effective_tflops, 2),
            opt(r.cublas_us, 2),
            opt(r.speedup, 3),
            r.ideal_speedup,
            opt(r.fraction_of_ideal, 3),
            r.min_bytes,
            opt(r.achieved_gbps, 1),
            opt(r.copy_gbps, 1),
            r.source,
            r.verified,
            r.current_templates,
            r.dtype
        );
    }
    out
}

/// The table. `verified` is `n/a` for a prediction (nothing ran to be verified); the source of
/// an entry tuned with other kernel templates is marked `*`, explained below the table. The
/// least bytes are shown in MB (10⁶ bytes), bandwidths in GB/s.
fn to_table(rows: &[ReportRow]) -> String {
    let mut out = format!(
        "{:<6} {:>5} {:>6} {:>6} {:>6} {:>3} {:<3} {:>10} {:>8} {:>10} {:>7} {:>6} {:>8} {:>6} {:>9} {:<9} {:>8}  {}\n",
        "gpu",
        "m",
        "n",
        "k",
        "N:M",
        "L",
        "A",
        "median_us",
        "eff_TF/s",
        "cublas_us",
        "speedup",
        "ideal%",
        "min_MB",
        "GB/s",
        "copy_GB/s",
        "source",
        "verified",
        "kernel"
    );
    for r in rows {
        out +=
            &format!(
            "{:<6} {:>5} {:>6} {:>6} {:>6} {:>3} {:<3} {:>10} {:>8} {:>10} {:>7} {:>6} {:>8} {:>6} {:>9} {:<9} {:>8}  {}\n",
            r.gpu, r.m, r.n, r.k, r.nm, r.l, r.a_layout.as_str(),
            opt(r.median_us, 1), opt(r.effective_tflops, 2), opt(r.cublas_us, 1),
            opt(r.speedup, 2), opt(r.fraction_of_ideal.map(|f| f * 100.0), 1),
            format!("{:.1}", r.min_bytes as f64 / 1e6), opt(r.achieved_gbps, 0),
            opt(r.copy_gbps, 0), source_cell(r), verified_cell(r), r.kernel
        );
    }
    let stale = rows.iter().filter(|r| !r.current_templates).count();
    if stale > 0 {
        out += &format!(
            "* {stale} of {} entries were tuned with other kernel templates than this build's: \
             the runtime does not launch them (re-tune with `--strategy warm` to refresh them)\n",
            rows.len()
        );
    }
    out
}

fn source_cell(r: &ReportRow) -> String {
    let mark = if r.current_templates { "" } else { "*" };
    format!("{}{mark}", r.source)
}

fn verified_cell(r: &ReportRow) -> &'static str {
    match (r.source.as_str(), r.verified) {
        ("model", _) => "n/a",
        (_, true) => "yes",
        (_, false) => "no",
    }
}
