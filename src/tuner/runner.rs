//! The runner seam of the tuning loop (after TVM MetaSchedule's `Runner`): the loop in
//! [`super::run`] decides which candidates to run, in which order, what to skip on resume and
//! what to store; a [`Runner`] only runs them. The GPU runner ([`super::gpu_runner`]) verifies
//! and times on the device; tests drive the same loop with a deterministic fake.

use super::measure::{Outcome, Timing, MAX_RELATIVE_ERROR};
use super::search::{candidates, Strategy};
use super::TuneError;
use crate::codegen::KernelConfig;
use crate::db::{Measurement, Source, Status};
use crate::gpu_profile::GpuProfile;
use crate::problem::Problem;

/// Runs candidate kernels, one problem at a time.
pub trait Runner {
    /// One problem's inputs and baseline, borrowed from the runner while its candidates run.
    type Session<'a>: Session
    where
        Self: 'a;

    /// The source its rows are stored under.
    fn source(&self) -> Source;

    /// The candidates of each of `problems`, in their order: by default the search
    /// strategy's.
    fn plan(
        &self,
        problems: &[Problem],
        profile: &GpuProfile,
        strategy: Strategy,
    ) -> Vec<Vec<KernelConfig>> {
        problems
            .iter()
            .map(|p| candidates(p, profile, strategy))
            .collect()
    }

    /// Called once before any problem with every candidate of the run (the GPU runner
    /// compiles them all here, in parallel).
    fn prepare(&mut self, _all: &[KernelConfig]) {}

    /// Whether [`Runner::prepare`] compiles kernels (the run's first line says so).
    fn compiles(&self) -> bool {
        false
    }

    /// Set up `problem` (inputs, the baseline) for `configs`.
    fn begin<'a>(
        &'a mut self,
        problem: &Problem,
        configs: &[KernelConfig],
    ) -> Result<Self::Session<'a>, TuneError>;
}

/// One problem under way.
pub trait Session {
    /// The baseline's time for this problem (cuBLAS SGEMM on the GPU), µs.
    fn baseline_us(&self) -> Option<f64>;

    /// The device's copy bandwidth as this run timed it, GB/s, stored beside every row of the
    /// problem; `None` where nothing copies (the model, or a replay, whose recorded rows carry
    /// their own).
    fn copy_gbps(&self) -> Option<f64> {
        None
    }

    /// `configs` in the order to run them: the first timed sets the bar that abandons the
    /// slower ones.
    fn order(&self, configs: &[KernelConfig]) -> Vec<KernelConfig>;

    /// Run `config` against the bar `best_us` (the fastest time of this problem so far).
    fn run(&mut self, config: &KernelConfig, best_us: Option<f64>) -> Trial;
}

/// What running one candidate gave: the fields of its database row.
#[derive(Debug)]
pub struct Trial {
    pub status: Status,
    pub error: Option<String>,
    pub registers: Option<u32>,
    pub spill_bytes: Option<u32>,
    pub timing: Option<Timing>,
    pub verified: bool,
    pub rel_error: Option<f64>,
    /// The runner cannot go on (a fault broke the GPU context, a kernel outlived its time
    /// limit): the loop stores this trial, leaves the session and the runner undropped (a
    /// kernel may still be using their memory) and ends the run with this error.
    pub fatal: Option<TuneError>,
    /// The whole row as an earlier run recorded it (the replay runner): stored as it is,
    /// its template checksum, baseline and date included.
    pub recorded: Option<Measurement>,
}

impl Trial {
    /// A trial that ran nothing yet.
    pub fn new() -> Self {
        Self {
            status: Status::Ok,
            error: None,
            registers: None,
            spill_bytes: None,
            timing: None,
            verified: false,
            rel_error: None,
            fatal: None,
            recorded: None,
        }
    }

    /// A verified timing.
    pub fn timed(timing: Timing, rel_error: f64) -> Self {
        let mut trial = Self::new();
        trial.apply(Outcome::Timed { timing, rel_error });
        trial
    }

    pub fn fail(&mut self, status: Status, reason: String) {
        self.status = status;
        self.error = Some(reason);
    }

    /// Take what measuring gave.
    pub fn apply(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Timed { timing, rel_error } => self.verified_timing(timing, rel_error),
            Outcome::Abandoned { timing, rel_error } => {
                self.verified_timing(timing, rel_error);
                self.status = Status::Abandoned;
            }
            Outcome::Wrong { rel_error } => {
                self.fail(
                    Status::WrongResult,
                    format!("relative error {rel_error:.3e} above {MAX_RELATIVE_ERROR:.0e}"),
                );
                self.rel_error = Some(rel_error);
            }
            Outcome::LaunchFailed(reason) => self.fail(Status::LaunchFailed, reason),
        }
    }

    fn verified_timing(&mut self, timing: Timing, rel_error: f64) {
        self.timing = Some(timing);
        self.verified = true;
        self.rel_error = Some(rel_error);
    }

    /// Copy the trial into its database row.
    pub fn fill(&self, row: &mut Measurement) {
        if let Some(recorded) = &self.recorded {
            row.clone_from(recorded);
            return;
        }
        row.status = self.status;
        row.error.clone_from(&self.error);
        row.registers = self.registers;
        row.spill_bytes = self.spill_bytes;
        if let Some(t) = self.timing {
            row.median_us = Some(t.median_us);
            row.min_us = Some(t.min_us);
            row.runs = t.runs;
        }
        row.verified = self.verified;
        row.max_rel_error = self.rel_error;
    }
}

impl Default for Trial {
    fn default() -> Self {
        Self::new()
    }
}
