//! Values the subcommands read and print the same way: a kernel configuration as flat JSON
//! fields, a sparsity pattern on the command line, numbers in CSV.

use anyhow::bail;
use clap::ValueEnum;
use nmtune::codegen::KernelConfig;
use nmtune::problem::NmPattern;
use nmtune::tuner::Strategy;
use serde::Serialize;

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
}

impl From<StrategyArg> for Strategy {
    fn from(arg: StrategyArg) -> Self {
        match arg {
            StrategyArg::Pruned => Strategy::Pruned,
            StrategyArg::Exhaustive => Strategy::Exhaustive,
            StrategyArg::Model => Strategy::Model,
            StrategyArg::Sample => Strategy::Sample,
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

/// A kernel configuration as the JSON of `nmtune report` and `nmtune lookup` spell it (README
/// "Report fields"): flat fields, each a number, a boolean or a short string.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigFields {
    /// How A's tiles reach shared memory: `col16` (column-major A), `row4`, `row16`, `rowk` or
    /// `trans` (row-major A transposed into the workspace first).
    pub a_copy: &'static str,
    pub m_s: u32,
    pub n_s: u32,
    pub k_s: u32,
    pub m_t: u32,
    pub n_t: u32,
    /// Warp layout, rows × columns of threads: `"8x4"`.
    pub warp: String,
    /// `"N:M"`.
    pub nm: String,
    pub l: u32,
    pub packing: bool,
    /// Depth of the cp.async ring.
    pub stages: u32,
    pub min_blocks: u32,
    pub split_k: u32,
}

impl From<&KernelConfig> for ConfigFields {
    fn from(c: &KernelConfig) -> Self {
        Self {
            a_copy: c.a_copy.token().trim_start_matches('a'),
            m_s: c.m_s,
            n_s: c.n_s,
            k_s: c.k_s,
            m_t: c.m_t,
            n_t: c.n_t,
            warp: format!("{}x{}", c.warp.rows, c.warp.cols),
            nm: c.nm.to_string(),
            l: c.l,
            packing: c.packing,
            stages: c.stages,
            min_blocks: c.min_blocks,
            split_k: c.split_k,
        }
    }
}

/// A sparsity pattern given on the command line: `N:M`, or an explicit percentage of pruned
/// weights with M = 32 (`75%`). A bare number is refused: `0` could be 0 % pruned (dense) or
/// a typo, and 0.75 a fraction kept or pruned.
pub fn pattern_arg(flag: &str, text: &str) -> anyhow::Result<NmPattern> {
    let t = text.trim();
    if !t.contains(':') && !t.ends_with('%') {
        bail!(
            "{flag} '{text}' is neither N:M nor a percentage: write the pattern as N:M (8:32) \
             or the share of weights pruned with a % sign (75%, with M = 32)"
        );
    }
    Ok(NmPattern::parse(t, 32)?)
}

/// A number for CSV with `decimals` places; a missing value is an empty field.
pub fn csv_number(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(String::new, |v| format!("{v:.decimals$}"))
}
