//! `nmtune shapes --from`: the shapes file of a checkpoint's linear layers, ready for
//! `nmtune --shapes`. The work is `nmtune::checkpoint`'s; this parses and prints.
//!
//!     nmtune shapes --from model.safetensors --m 1,16,256,4096 --nm 8:32 --out model-shapes.yaml

use super::fields::{pattern_arg, whole_number};
use anyhow::Context;
use clap::Args;
use nmtune::checkpoint::{self, Selection, ShapesRequest};
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ShapesArgs {
    /// The safetensors checkpoint to read.
    #[arg(long, value_name = "FILE")]
    from: PathBuf,
    /// Rows of A (tokens) to tune each layer for, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,16,256,4096", value_parser = whole_number)]
    m: Vec<usize>,
    /// Sparsity patterns, comma-separated: N:M (8:32) or percentages (75%, M = 32).
    #[arg(
        long,
        value_name = "N:M",
        value_delimiter = ',',
        default_value = "8:32"
    )]
    nm: Vec<String>,
    /// Vector length L.
    #[arg(long, default_value_t = 32, value_parser = whole_number)]
    l: usize,
    /// List the tensors whose name this regular expression matches [default: as nmtune prune]
    #[arg(long, value_name = "REGEX")]
    layers: Option<String>,
    /// File to write (replaced atomically) [default: standard output].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn run(args: &ShapesArgs) -> anyhow::Result<()> {
    let patterns = args
        .nm
        .iter()
        .map(|text| pattern_arg("--nm", text))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let selection = match &args.layers {
        Some(pattern) => Selection::matching(pattern)?,
        None => Selection::Linear,
    };
    if let Some(out) = &args.out {
        checkpoint::check_not_input(&args.from, out)?;
    }
    let shapes = checkpoint::linear_shapes(&args.from, &selection)?;
    let request = ShapesRequest {
        ms: args.m.clone(),
        patterns,
        l: args.l,
    };
    let model = args
        .from
        .file_stem()
        .map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned());
    let text = checkpoint::shapes_yaml(&model, &shapes, &request)?;
    match &args.out {
        Some(out) => {
            checkpoint::write_text(out, &text)?;
            let tensors: usize = shapes.iter().map(|s| s.tensors.len()).sum();
            eprintln!(
                "nmtune: wrote {}: {} distinct shapes of {tensors} linear weights",
                out.display(),
                shapes.len()
            );
        }
        None => std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("cannot write to standard output")?,
    }
    Ok(())
}
