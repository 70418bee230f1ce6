//! Argument parsing and the subcommands.

mod bench;
mod export;
mod fields;
mod kernel;
mod lookup;
mod model_eval;
mod prune;
mod replay;
mod report;
mod report_plot;
mod shapes;
pub mod supervise;
mod tidy;
mod tune;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Autotuning code generator for N:M-sparse matrix multiplication on NVIDIA GPUs.
///
/// The main job tunes every shape of a shapes file on a GPU and writes the tuning database:
///
///     nmtune --gpu h100 --shapes shapes/llama.yaml
///
/// Each candidate kernel is compiled with NVRTC, verified against cuBLAS on random data and
/// timed beside cuBLAS SGEMM; the fastest verified one per problem is stored. An interrupted
/// run resumes where it stopped when started again with the same arguments.
#[derive(Debug, Parser)]
#[command(
    name = "nmtune",
    version,
    about,
    long_about,
    args_conflicts_with_subcommands = true,
    // `--m -5` must reach the value's parser and its message, not read as an option.
    allow_negative_numbers = true
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    tune: tune::TuneArgs,
}

/// Every subcommand lets negative numbers through to its values' parsers, as the main job does.
#[derive(Debug, Subcommand)]
enum Command {
    /// Print the best kernel per problem from a tuning database.
    #[command(allow_negative_numbers = true)]
    Report(report::ReportArgs),
    /// Time kernels on the GPU beside cuBLAS in the problem's type, one line per kernel (nothing stored).
    #[command(allow_negative_numbers = true)]
    Bench(bench::BenchArgs),
    /// Compile one kernel with NVRTC and print its resource report (no GPU needed).
    #[command(allow_negative_numbers = true)]
    Kernel(kernel::KernelArgs),
    /// Print the kernel the runtime would launch for one problem, and the rule that chose it.
    #[command(allow_negative_numbers = true)]
    Lookup(lookup::LookupArgs),
    /// Write every measurement of a database as JSON lines (the diffable text of a database).
    #[command(allow_negative_numbers = true)]
    Export(export::ExportArgs),
    /// Check that a measurements file is its database's export and replays to the same best
    /// entries.
    #[command(allow_negative_numbers = true)]
    CheckReplay(replay::CheckArgs),
    /// Evaluate the model-guided search against a database's measurements.
    #[command(allow_negative_numbers = true)]
    ModelEval(model_eval::ModelEvalArgs),
    /// Prune a safetensors checkpoint's linear weights to N:M and write them as (B', D);
    /// with --decompress, restore a pruned checkpoint to dense weights.
    #[command(allow_negative_numbers = true)]
    Prune(prune::PruneArgs),
    /// Write the shapes file of a safetensors checkpoint's linear layers (for --shapes).
    #[command(allow_negative_numbers = true)]
    Shapes(shapes::ShapesArgs),
    /// Drop the measurements a later tuning of the same problem superseded (after a template
    /// change), then compact the file.
    #[command(allow_negative_numbers = true)]
    Tidy(tidy::TidyArgs),
}

pub fn run() -> anyhow::Result<()> {
    let cli = parse()?;
    match cli.command {
        Some(Command::Report(args)) => report::run(&args),
        Some(Command::Bench(args)) => bench::run(&args),
        Some(Command::Kernel(args)) => kernel::run(&args),
        Some(Command::Lookup(args)) => lookup::run(&args),
        Some(Command::Export(args)) => export::run(&args),
        Some(Command::CheckReplay(args)) => replay::check(&args),
        Some(Command::ModelEval(args)) => model_eval::run(&args),
        Some(Command::Prune(args)) => prune::run(&args),
        Some(Command::Shapes(args)) => shapes::run(&args),
        Some(Command::Tidy(args)) => tidy::run(&args),
        None => tune::run(&cli.tune),
    }
}

/// The command line; a usage error becomes one line (clap's first) that points at the help of
/// the subcommand it is about; help and version print as usual.
fn parse() -> anyhow::Result<Cli> {
    Cli::try_parse().map_err(|err| {
        if !err.use_stderr() {
            err.exit();
        }
        let text = err.to_string();
        anyhow::anyhow!("{} (see {} --help)", first_message(&text), command_named())
    })
}

/// The first line of clap's message, with the indented lines that complete it when it ends in
/// a colon ("the following required arguments were not provided:" and their names).
fn first_message(text: &str) -> String {
    let mut lines = text.lines();
    let mut message = lines
        .next()
        .unwrap_or("invalid arguments")
        .trim_start_matches("error: ")
        .to_string();
    if message.ends_with(':') {
        let items: Vec<&str> = lines
            .take_while(|l| l.starts_with(' ') && !l.trim().is_empty())
            .map(str::trim)
            .collect();
        message = format!("{} {}", message, items.join(", "));
    }
    message.trim_end().to_string()
}

/// `nmtune <subcommand>` when the command line names one, else `nmtune`.
fn command_named() -> String {
    use clap::CommandFactory;
    let word = std::env::args().nth(1).unwrap_or_default();
    let cli = Cli::command();
    let sub = cli
        .get_subcommands()
        .find(|c| c.get_name() == word || c.get_all_aliases().any(|a| a == word));
    match sub {
        Some(c) => format!("nmtune {}", c.get_name()),
        None => "nmtune".to_string(),
    }
}

/// Default database of the main job for a GPU and where its times come from: timings on the
/// GPU go to `tuning-db/<gpu>.sqlite`, the database of measured entries that is committed;
/// predictions and replays go to `tuning-db/<gpu>-model.sqlite` and
/// `tuning-db/<gpu>-replay.sqlite`, which git ignores, so that a run without a GPU never
/// changes a committed measured database the user did not name with `--db`.
pub fn default_db_path(gpu: &str, source: nmtune::db::Source) -> PathBuf {
    use nmtune::db::Source;
    let name = match source {
        Source::Measured => format!("{gpu}.sqlite"),
        Source::Model => format!("{gpu}-model.sqlite"),
        Source::Replay => format!("{gpu}-replay.sqlite"),
    };
    PathBuf::from("tuning-db").join(name)
}
