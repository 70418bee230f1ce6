//! replay: a tuning database's measurements as text, to rebuild it without a GPU.
//!
//! [`jsonl`] writes every row of a database as one JSON line and reads them back;
//! [`MeasurementLog`] is one such file. Replaying it into a database runs the tuning loop with
//! a runner that hands back the recorded rows (`tuner::replay`), so that it stores, resumes
//! and chooses best entries exactly as a GPU run does. [`check`] holds the parts of the CI
//! check that need no loop.

pub mod check;
pub mod jsonl;

use crate::db::{Database, DbError, Measurement, Source};
use crate::problem::Problem;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Recorded in `problem_runs.strategy` for replayed problems.
pub const REPLAY_STRATEGY: &str = "replay";

/// Errors of the replay layer, one line each, naming the file.
#[derive(Debug, Error)]
pub enum ReplayError {
    #[error("{}: {detail}", path.display())]
    Io { path: PathBuf, detail: String },
    #[error("{}:{line}: {detail}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        detail: String,
    },
    #[error("{} holds no measurements of GPU '{gpu}' (it holds: {found})", path.display())]
    NoSuchGpu {
        path: PathBuf,
        gpu: String,
        found: String,
    },
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("{} is not the export of {}: {detail}; after a re-tune on a GPU, regenerate it with `nmtune export --db {} --out {}`",
        file.display(), db.display(), db.display(), file.display())]
    Stale {
        file: PathBuf,
        db: PathBuf,
        detail: String,
    },
    #[error("{} holds {count} model predictions (source = model) that {} lacks: a run without a GPU wrote into it; predictions never belong in a committed database, so restore it (`git checkout -- {}`) instead of exporting it", db.display(), file.display(), db.display())]
    Predictions {
        file: PathBuf,
        db: PathBuf,
        count: usize,
    },
    #[error("{}'s best entries were chosen by an older nmtune: {} of {} are timings of kernels whose templates have changed since, and this build ranks a current timing above them (first: {}); re-tune its shapes into it with `--strategy warm`, then `nmtune export --db {} --out {}`",
        .0.db.display(), .0.differ, .0.total, .0.first, .0.db.display(), .0.file.display())]
    OlderBuild(BestMismatch),
    #[error("replaying {} does not reproduce {}: {} of {} best entries differ (first: {})",
        .0.file.display(), .0.db.display(), .0.differ, .0.total, .0.first)]
    Mismatch(BestMismatch),
}

/// Where a replay's best entries part from the committed database's.
#[derive(Debug)]
pub struct BestMismatch {
    pub file: PathBuf,
    pub db: PathBuf,
    pub differ: usize,
    pub total: usize,
    /// The first difference, as [`check::BestDiff`] prints it.
    pub first: String,
}

pub(crate) fn io_error(path: &Path, err: impl std::fmt::Display) -> ReplayError {
    ReplayError::Io {
        path: path.to_path_buf(),
        detail: err.to_string(),
    }
}

/// The rows of one measurements file.
#[derive(Debug, Clone)]
pub struct MeasurementLog {
    pub path: PathBuf,
    pub rows: Vec<Measurement>,
}

impl MeasurementLog {
    /// Read and check a measurements file.
    pub fn read(path: &Path) -> Result<Self, ReplayError> {
        let text = std::fs::read_to_string(path).map_err(|e| io_error(path, e))?;
        let rows = jsonl::parse(&text, path)?;
        Ok(Self {
            path: path.to_path_buf(),
            rows,
        })
    }

    /// GPU names in the file, sorted.
    pub fn gpus(&self) -> Vec<String> {
        let names: BTreeSet<&str> = self.rows.iter().map(|r| r.gpu.as_str()).collect();
        names.into_iter().map(String::from).collect()
    }

    /// One GPU's problems in file order, each once.
    pub fn problems(&self, gpu: &str) -> Vec<Problem> {
        let mut seen = std::collections::HashSet::new();
        self.rows
            .iter()
            .filter(|r| r.gpu == gpu && seen.insert(r.problem))
            .map(|r| r.problem)
            .collect()
    }

    /// An error naming the GPUs of the file when it has no row of `gpu` at all.
    pub fn check_gpu(&self, gpu: &str) -> Result<(), ReplayError> {
        if self.rows.iter().any(|r| r.gpu == gpu) {
            return Ok(());
        }
        Err(ReplayError::NoSuchGpu {
            path: self.path.clone(),
            gpu: gpu.to_string(),
            found: self.gpus().join(", "),
        })
    }

    /// One GPU's timed rows (sources measured and replay) by problem; an error when the file
    /// has no row of that GPU at all.
    pub fn timed_rows(
        &self,
        gpu: &str,
    ) -> Result<HashMap<Problem, Vec<&Measurement>>, ReplayError> {
        self.check_gpu(gpu)?;
        let mut by_problem: HashMap<Problem, Vec<&Measurement>> = HashMap::new();
        for row in self.rows.iter().filter(|r| r.gpu == gpu) {
            if row.source != Source::Model {
                by_problem.entry(row.problem).or_default().push(row);
            }
        }
        Ok(by_problem)
    }
}

/// Every measurement of `db` (or of one GPU) as the text of a measurements file.
pub fn export(db: &Database, gpu: Option<&str>) -> Result<String, ReplayError> {
    Ok(jsonl::to_text(&db.measurements(gpu)?))
}

/// Write `text` to `path` through a temporary file beside it, so that a reader never sees a
/// half-written file.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), ReplayError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|e| io_error(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_error(path, e)
    })
}
