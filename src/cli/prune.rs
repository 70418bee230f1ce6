//! `nmtune prune`: a safetensors checkpoint's linear weights pruned to N:M and written as
//! (B', D), or (`--decompress`) a pruned checkpoint back to dense weights. The work is
//! `nmtune::checkpoint`'s; this parses the arguments and prints what was done.
//!
//!     nmtune prune --in model.safetensors --nm 8:32 --out model.nm.safetensors

use super::fields::{pattern_arg, whole_number};
use clap::Args;
use nmtune::checkpoint::{self, Outcome, PruneOptions, PruneReport, Selection};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// The safetensors checkpoint to read; linear weights in PyTorch's [out, in] layout, F32,
    /// F16 or BF16.
    #[arg(long = "in", value_name = "FILE")]
    input: PathBuf,
    /// The file to write; written beside it under a temporary name and renamed when complete.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Sparsity pattern N:M, such as 8:32, or the share of weights pruned as a percentage,
    /// such as 75% (with M = 32).
    #[arg(long, value_name = "N:M", required_unless_present = "decompress")]
    nm: Option<String>,
    /// Vector length L: neighbouring output features that share one pattern.
    #[arg(long, default_value_t = 32, value_parser = whole_number)]
    l: usize,
    /// Prune the tensors whose name this regular expression matches (anywhere in the name)
    /// [default: every 2-D tensor whose name ends in .weight and contains none of embed, norm,
    /// lm_head]
    #[arg(long, value_name = "REGEX")]
    layers: Option<String>,
    /// Restore a pruned checkpoint instead: every pruned weight back to a dense [out, in]
    /// tensor (zeros where pruned) under its own name.
    #[arg(long, conflicts_with_all = ["nm", "l", "layers"])]
    decompress: bool,
}

pub fn run(args: &PruneArgs) -> anyhow::Result<()> {
    if args.decompress {
        let restored = checkpoint::restore_file(&args.input, &args.out)?;
        eprintln!(
            "nmtune: wrote {}: {} pruned weights restored to dense",
            args.out.display(),
            restored.len()
        );
        return Ok(());
    }
    let nm = pattern_arg("--nm", args.nm.as_deref().unwrap_or_default())?;
    let selection = match &args.layers {
        Some(pattern) => Selection::matching(pattern)?,
        None => Selection::Linear,
    };
    let options = PruneOptions {
        nm,
        l: args.l,
        selection,
    };
    let report = checkpoint::prune_file(&args.input, &args.out, &options)?;
    print_report(args, &options, &report);
    Ok(())
}

/// Padded weights one line each, then one line of totals (stderr, like every note).
fn print_report(args: &PruneArgs, options: &PruneOptions, report: &PruneReport) {
    for (name, info, _) in &report.weights {
        if info.shape != info.padded_shape {
            eprintln!(
                "nmtune: note: {name}: {:?} padded with zeros to {:?}",
                info.shape, info.padded_shape
            );
        }
    }
    let checked = report
        .weights
        .iter()
        .filter(|(_, _, outcome)| *outcome == Outcome::AlreadySparse)
        .count();
    eprintln!(
        "nmtune: wrote {}: {} weights at {} (L = {}): {} pruned, {checked} already {} (only \
         checked); {} other tensors copied unchanged",
        args.out.display(),
        report.weights.len(),
        options.nm,
        options.l,
        report.weights.len() - checked,
        options.nm,
        report.copied
    );
}
