//! The parts of the CI check of a committed database that need no tuning loop: its
//! measurements file must be its exact export ([`check_export`]), and the best entries of a
//! replay must equal the committed ones ([`compare_best`]). The check itself, which replays
//! through the tuning loop, is `tuner::replay::check`.

use super::{io_error, jsonl, MeasurementLog, ReplayError};
use crate::db::{Database, Measurement, Source};
use crate::problem::Problem;
use std::collections::HashMap;
use std::path::PathBuf;

/// What a passing check compared.
#[derive(Debug, Clone)]
pub struct CheckReport {
    pub gpus: Vec<String>,
    pub rows: usize,
    pub best_entries: usize,
}

/// One (GPU, problem) whose best entry differs: (kernel, median µs) on each side.
#[derive(Debug, Clone, PartialEq)]
pub struct BestDiff {
    pub gpu: String,
    pub problem: Problem,
    pub committed: Option<(String, Option<f64>)>,
    pub replayed: Option<(String, Option<f64>)>,
}

impl std::fmt::Display for BestDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = |s: &Option<(String, Option<f64>)>| match s {
            None => "no best entry".to_string(),
            Some((kernel, Some(t))) => format!("{kernel} {t} µs"),
            Some((kernel, None)) => format!("{kernel} (no time)"),
        };
        write!(
            f,
            "{} {}: committed {}, replayed {}",
            self.gpu,
            self.problem,
            side(&self.committed),
            side(&self.replayed)
        )
    }
}

/// The file must hold exactly the database's rows (compared as normalised text). Model rows
/// of the database that the file lacks are a polluted database, not a stale file: the error
/// says to restore the database, never to export predictions into the file.
pub fn check_export(db: &Database, log: &MeasurementLog) -> Result<(), ReplayError> {
    let rows = db.measurements(None)?;
    let model_rows =
        |rows: &[Measurement]| rows.iter().filter(|r| r.source == Source::Model).count();
    let extra = model_rows(&rows).saturating_sub(model_rows(&log.rows));
    if extra > 0 {
        return Err(ReplayError::Predictions {
            file: log.path.clone(),
            db: db.path().to_path_buf(),
            count: extra,
        });
    }
    let exported = jsonl::to_text(&rows);
    let ours = jsonl::to_text(&log.rows);
    let stale = |detail: String| ReplayError::Stale {
        file: log.path.clone(),
        db: db.path().to_path_buf(),
        detail,
    };
    let (a, b): (Vec<&str>, Vec<&str>) = (exported.lines().collect(), ours.lines().collect());
    if let Some(i) = (0..a.len().min(b.len())).find(|&i| a[i] != b[i]) {
        return Err(stale(format!(
            "row {} of the sorted export differs: {}",
            i + 1,
            difference(a[i], b[i])
        )));
    }
    if a.len() != b.len() {
        return Err(stale(format!(
            "the database has {} rows, the file {}",
            a.len(),
            b.len()
        )));
    }
    Ok(())
}

/// Where two export lines part: the file's kernel and both texts around the first change.
fn difference(db_line: &str, file_line: &str) -> String {
    let at = db_line
        .bytes()
        .zip(file_line.bytes())
        .take_while(|(x, y)| x == y)
        .count();
    let around = |line: &str| {
        let start = boundary(line, at.saturating_sub(24));
        let end = boundary(line, at + 40);
        format!("…{}…", &line[start..end])
    };
    let kernel = file_line
        .split("\"kernel\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or("?");
    format!(
        "kernel {kernel}: database {}, file {}",
        around(db_line),
        around(file_line)
    )
}

/// The last char boundary of `text` at or before `at`.
fn boundary(text: &str, at: usize) -> usize {
    (0..=at.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

/// Best entries that differ in kernel name or median, in the committed order, then those only
/// the replay has.
pub fn compare_best(committed: &[Measurement], replayed: &[Measurement]) -> Vec<BestDiff> {
    let summary = |m: &Measurement| (m.kernel_name(), m.median_us);
    let mut theirs: HashMap<(&str, Problem), &Measurement> = replayed
        .iter()
        .map(|m| ((m.gpu.as_str(), m.problem), m))
        .collect();
    let mut diffs = Vec::new();
    for m in committed {
        let other = theirs.remove(&(m.gpu.as_str(), m.problem));
        let (ours, other) = (summary(m), other.map(summary));
        if other.as_ref() != Some(&ours) {
            diffs.push(BestDiff {
                gpu: m.gpu.clone(),
                problem: m.problem,
                committed: Some(ours),
                replayed: other,
            });
        }
    }
    for m in replayed {
        if theirs.contains_key(&(m.gpu.as_str(), m.problem)) {
            diffs.push(BestDiff {
                gpu: m.gpu.clone(),
                problem: m.problem,
                committed: None,
                replayed: Some(summary(m)),
            });
        }
    }
    diffs
}

/// A private directory under the system's temporary directory, removed when dropped.
pub struct ScratchDir {
    pub path: PathBuf,
}

impl ScratchDir {
    pub fn new() -> Result<Self, ReplayError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "nmtune-check-replay-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).map_err(|e| io_error(&path, e))?;
        Ok(Self { path })
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
