//! The progress line of a tuning run, with an ETA from the rate of the work this run did.
//!
//! The unit is the piece of work that takes the time: a candidate timed on the GPU, a problem
//! predicted and stored by the model. The rate counts only units done since the first one
//! began, so neither the set-up before it (enumerating, compiling, loading) nor units that
//! needed no work (kernels a resumed run had already measured) distort the estimate.

use indicatif::{ProgressBar, ProgressStyle};
use std::time::{Duration, Instant};

/// Units done against units to do, and when the first began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    total: u64,
    done: u64,
    first_began: Option<Instant>,
}

impl Rate {
    pub fn new(total: u64) -> Self {
        Self {
            total,
            done: 0,
            first_began: None,
        }
    }

    /// A unit begins at `now`; the first one starts the clock.
    pub fn begin(&mut self, now: Instant) {
        self.first_began.get_or_insert(now);
    }

    /// `units` more are done.
    pub fn finish(&mut self, units: u64) {
        self.done = (self.done + units).min(self.total);
    }

    /// `units` of the total turned out to need no work.
    pub fn skip(&mut self, units: u64) {
        self.total = self.total.saturating_sub(units).max(self.done);
    }

    pub fn done(&self) -> u64 {
        self.done
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Time left at `now` at the rate of the units done so far; `None` before the first one
    /// is done.
    pub fn eta(&self, now: Instant) -> Option<Duration> {
        let began = self.first_began?;
        if self.done == 0 {
            return None;
        }
        let per_unit = now.saturating_duration_since(began).as_secs_f64() / self.done as f64;
        Some(Duration::from_secs_f64(
            per_unit * (self.total - self.done) as f64,
        ))
    }
}

/// "1m 05s", "42s", "—" while unknown.
pub fn format_eta(eta: Option<Duration>) -> String {
    let Some(eta) = eta else {
        return "—".into();
    };
    let s = eta.as_secs_f64().round() as u64;
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s:02}s"),
        (h, m, _) => format!("{h}h {m:02}m"),
    }
}

/// A progress bar over [`Rate`] units (hidden with `quiet`), its ETA in the line's prefix.
pub struct Progress {
    bar: ProgressBar,
    rate: Rate,
}

impl Progress {
    /// `total` units named `unit` ("candidates", "problems").
    pub fn new(total: usize, unit: &str, quiet: bool) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            let bar = ProgressBar::new(total as u64);
            let template = format!(
                "{{elapsed_precise}} [{{bar:30}}] {{pos}}/{{len}} {unit}, ETA {{prefix}} {{msg}}"
            );
            bar.set_style(
                ProgressStyle::with_template(&template)
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
            );
            bar
        };
        bar.set_prefix(format_eta(None));
        Self {
            bar,
            rate: Rate::new(total as u64),
        }
    }

    /// A unit of work begins now.
    pub fn begin(&mut self) {
        self.rate.begin(Instant::now());
    }

    /// `units` are done.
    pub fn finish(&mut self, units: u64) {
        self.rate.finish(units);
        self.bar.set_position(self.rate.done());
        self.bar
            .set_prefix(format_eta(self.rate.eta(Instant::now())));
    }

    /// `units` needed no work.
    pub fn skip(&mut self, units: u64) {
        self.rate.skip(units);
        self.bar.set_length(self.rate.total());
    }

    pub fn set_message(&self, message: String) {
        self.bar.set_message(message);
    }

    pub fn clear(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_a_clock() {
        let s = |secs| format_eta(Some(Duration::from_secs(secs)));
        assert_eq!(
            (s(42), s(65), s(7322)),
            ("42s".into(), "1m 05s".into(), "2h 02m".into())
        );
        assert_eq!(format_eta(None), "—");
    }
}
