//! Values the subcommands read and print the same way: a kernel configuration as flat JSON
//! fields, a sparsity pattern on the command line, numbers in CSV.

use anyhow::bail;
use clap::ValueEnum;
use nmtune::problem::{NmPattern, ProblemError};
use nmtune::tuner::Strategy;

/// A search strategy on the command line: `tuner::Strategy`, described for its users.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum StrategyArg {
    /// The paper's rules prune the space, the model ranks what is left and keeps its best 3,
    /// the Table I tiles and the sweep's winning shapes join as seeds (with split-K where the
    /// grid fills its waves poorly)
    #[default]
    Pruned,
    /// Every valid configuration (candidates clearly slower than the best are abandoned early)
    Exhaustive,
    /// Only the model's best 3 and their one-parameter neighbours
    Model,
    /// The pruned candidates plus the same 256 pseudo-random valid configurations for every
    /// problem of a pattern: a ground truth within a GPU budget
    Sample,
    /// After a template change: each problem's 8 fastest configurations of the earlier runs in
    /// the database, timed again, its default, and the winners of the other layers at its m,
    /// pattern and layout and the 3 fastest of its twin with A in the other layout (the pruned
    /// candidates where it has none)
    Warm,
    /// What warm offers, and every configuration one parameter away from the problem's
    /// fastest earlier one (one step of a hill climb; with --retune, from the current winner)
    Local,
}

impl From<StrategyArg> for Strategy {
    fn from(arg: StrategyArg) -> Self {
        match arg {
            StrategyArg::Pruned => Strategy::Pruned,
            StrategyArg::Exhaustive => Strategy::Exhaustive,
            StrategyArg::Model => Strategy::Model,
            StrategyArg::Sample => Strategy::Sample,
            StrategyArg::Warm => Strategy::Warm,
            StrategyArg::Local => Strategy::Local,
        }
    }
}

/// A count or size on the command line: a whole number of at least 1. Negative numbers reach
/// this parser (the commands allow them as values) and get this message, not clap's
/// "unexpected argument".
pub fn whole_number(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err(format!("'{text}' is not a whole number of at least 1")),
    }
}

/// The flat JSON fields of a configuration live beside the configuration, shared with the
/// runtime's lookup answer (and so with the Python package).
pub use nmtune::codegen::ConfigFields;

/// A sparsity pattern given on the command line: `N:M`, or an explicit percentage of pruned
/// weights with M = 32 (`75%`). A bare number is refused: `0` could be 0 % pruned (dense) or
/// a typo, and 0.75 a fraction kept or pruned.
/// The rule is [`NmPattern::parse_explicit`]'s; this names the flag in its message.
pub fn pattern_arg(flag: &str, text: &str) -> anyhow::Result<NmPattern> {
    match NmPattern::parse_explicit(text) {
        Ok(nm) => Ok(nm),
        Err(err @ ProblemError::NotExplicit { .. }) => bail!("{flag} {err}"),
        Err(err) => Err(err.into()),
    }
}

/// A number for CSV with `decimals` places; a missing value is an empty field.
pub fn csv_number(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(String::new, |v| format!("{v:.decimals$}"))
}
