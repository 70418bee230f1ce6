//! A lookup's answer as a record: what `nmtune lookup --format json` prints and what the
//! Python package's `Lookup.lookup` returns. One home for its fields (README "nmtune lookup").

use super::{Choice, Rule};
use crate::codegen::ConfigFields;
use crate::problem::{ALayout, Dtype, Problem};
use serde::Serialize;

/// The kernel chosen for one problem, and why, as flat fields. Field names are part of the
/// interface (README "nmtune lookup").
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    pub gpu: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// `"N:M"`.
    pub nm: String,
    pub l: usize,
    /// `row` or `col`.
    pub a_layout: ALayout,
    /// `f32`, `bf16` or `f16`.
    pub dtype: Dtype,
    pub kernel: String,
    pub config: ConfigFields,
    /// `exact`, `nearest_m` or `default`.
    pub rule: &'static str,
    /// The m of the borrowed entry (`nearest_m` only).
    pub from_m: Option<usize>,
    /// `measured`, `replay`, `model`, or null for a default.
    pub source: Option<String>,
    pub median_us: Option<f64>,
    pub cublas_us: Option<f64>,
    /// `cublas_us / median_us`, when both are known.
    pub speedup: Option<f64>,
}

impl Answer {
    /// The answer of `choice` for `problem` on the GPU profile named `gpu`.
    pub fn new(gpu: &str, problem: &Problem, choice: &Choice) -> Self {
        let speedup = match (choice.median_us, choice.cublas_us) {
            (Some(t), Some(c)) if t > 0.0 => Some(c / t),
            _ => None,
        };
        Self {
            gpu: gpu.to_string(),
            m: problem.m,
            n: problem.n,
            k: problem.k,
            nm: problem.nm.to_string(),
            l: problem.l,
            a_layout: problem.a_layout,
            dtype: problem.dtype,
            kernel: choice.config.name(),
            config: ConfigFields::from(&choice.config),
            rule: choice.rule.as_str(),
            from_m: match choice.rule {
                Rule::NearestM { from_m } => Some(from_m),
                _ => None,
            },
            source: choice.source.map(|s| s.to_string()),
            median_us: choice.median_us,
            cublas_us: choice.cublas_us,
            speedup,
        }
    }

    /// The answer as pretty JSON, exactly as `nmtune lookup --format json` prints it.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("an answer of numbers and strings serializes")
    }
}
