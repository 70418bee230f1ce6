//! What the database stores: one [`Measurement`] per kernel configuration tried.

use crate::codegen::KernelConfig;
use crate::problem::Problem;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Where a time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Timed on a GPU.
    Measured,
    /// Predicted by the performance model, without a GPU.
    Model,
    /// Imported from an earlier log or database.
    Replay,
}

impl Source {
    pub const ALL: [Source; 3] = [Source::Measured, Source::Model, Source::Replay];

    pub fn as_str(&self) -> &'static str {
        match self {
            Source::Measured => "measured",
            Source::Model => "model",
            Source::Replay => "replay",
        }
    }
}

/// A string that names no [`Source`] or [`Status`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} '{text}' (expected one of: {expected})")]
pub struct ParseEnumError {
    pub what: &'static str,
    pub text: String,
    pub expected: String,
}

impl FromStr for Source {
    type Err = ParseEnumError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_named(text, "source", &Source::ALL, Source::as_str)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How trying one configuration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Compiled, ran and was timed.
    Ok,
    CompileFailed,
    LaunchFailed,
    /// Ran but its output did not match the reference.
    WrongResult,
    /// Stopped early, e.g. clearly slower than the best so far.
    Abandoned,
    /// Broke a resource constraint: before rendering, or in ptxas's report (spills).
    Rejected,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Ok,
        Status::CompileFailed,
        Status::LaunchFailed,
        Status::WrongResult,
        Status::Abandoned,
        Status::Rejected,
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::CompileFailed => "compile_failed",
            Status::LaunchFailed => "launch_failed",
            Status::WrongResult => "wrong_result",
            Status::Abandoned => "abandoned",
            Status::Rejected => "rejected",
        }
    }
}

impl FromStr for Status {
    type Err = ParseEnumError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse_named(text, "status", &Status::ALL, Status::as_str)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn parse_named<T: Copy>(
    text: &str,
    what: &'static str,
    all: &[T],
    name: fn(&T) -> &'static str,
) -> Result<T, ParseEnumError> {
    let wanted = text.trim().to_ascii_lowercase();
    all.iter()
        .find(|v| name(v) == wanted)
        .copied()
        .ok_or_else(|| ParseEnumError {
            what,
            text: text.to_string(),
            expected: all.iter().map(name).collect::<Vec<_>>().join(", "),
        })
}

/// One kernel configuration tried on one problem on one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Short GPU name ("h100"), the key of the `gpus` table.
    pub gpu: String,
    pub problem: Problem,
    pub config: KernelConfig,
    pub status: Status,
    /// Why it failed, one line; `None` when it worked.
    pub error: Option<String>,
    /// Median and minimum kernel time, microseconds (for `Source::Model`, the prediction).
    pub median_us: Option<f64>,
    pub min_us: Option<f64>,
    /// Timed launches behind the median.
    pub runs: u32,
    /// Output matched cuBLAS SGEMM on the same inputs (`tuner::measure::MAX_RELATIVE_ERROR`).
    pub verified: bool,
    pub max_rel_error: Option<f64>,
    /// cuBLAS SGEMM on the same shape in the same process.
    pub cublas_us: Option<f64>,
    /// The device's copy bandwidth, GB/s, timed by the run that measured this row (a large
    /// device-to-device copy, `tuner::measure::copy_bandwidth_gbps`); `None` where no copy was
    /// timed: predictions, and rows of databases older than schema 2.
    #[serde(default)]
    pub copy_gbps: Option<f64>,
    pub registers: Option<u32>,
    pub spill_bytes: Option<u32>,
    /// Hash of the templates of every family that may serve the problem
    /// ([`crate::codegen::templates_checksum`]): the tuning run's key, by which it resumes and
    /// re-tunes.
    pub template_checksum: String,
    /// Hash of the templates of the kernel's own family ([`crate::codegen::family_checksum`]),
    /// which generated the code this row timed; `None` for rows of databases older than
    /// schema 4. While it is current the row's time stays valid, whatever other families'
    /// templates did ([`crate::db::is_current`]).
    #[serde(default)]
    pub kernel_checksum: Option<String>,
    pub source: Source,
    pub tool_version: String,
    /// RFC 3339, UTC (see [`now_rfc3339`]).
    pub created_at: String,
}

/// The longest time a row may hold, µs: one hour, the longest `--kernel-time-limit`. A
/// kernel or cuBLAS time beyond it cannot have been measured.
pub const MAX_TIME_US: f64 = 3.6e9;

impl Measurement {
    /// The kernel's name, as stored in the database and printed in logs.
    pub fn kernel_name(&self) -> String {
        self.config.name()
    }

    /// Why this row's values cannot be true, if they cannot: a time that is not a positive
    /// finite number of at most [`MAX_TIME_US`], a copy bandwidth that is not a positive finite
    /// number, a minimum above the median, a negative error.
    /// Such a row is refused by the database and by a measurements file.
    pub fn impossible(&self) -> Option<String> {
        let times = [
            ("median_us", self.median_us),
            ("min_us", self.min_us),
            ("cublas_us", self.cublas_us),
        ];
        for (field, value) in times {
            match value {
                Some(t) if !(t.is_finite() && t > 0.0 && t <= MAX_TIME_US) => {
                    let t = if t.is_finite() && t.abs() >= 1e9 {
                        format!("{t:e}")
                    } else {
                        t.to_string()
                    };
                    return Some(format!(
                        "{field} {t} is not a time (above 0 and at most {MAX_TIME_US:e} µs)"
                    ));
                }
                _ => {}
            }
        }
        if let Some(gbps) = self.copy_gbps.filter(|g| !(g.is_finite() && *g > 0.0)) {
            return Some(format!(
                "copy_gbps {gbps} is not a bandwidth (above 0 and finite)"
            ));
        }
        if let (Some(min), Some(median)) = (self.min_us, self.median_us) {
            if min > median {
                return Some(format!("min_us {min} is above median_us {median}"));
            }
        }
        match self.max_rel_error {
            Some(e) if e < 0.0 => Some(format!("max_rel_error {e} is negative")),
            _ => None,
        }
    }
}

/// The current time as RFC 3339 UTC with microseconds, the format of `created_at`.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}
