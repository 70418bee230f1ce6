//! The warm strategy: after a template change, time again what won before.
//!
//! A template change makes every stored row of the problems its families serve stale (their
//! checksum is not this build's), so each database of those problems is tuned again; with the
//! pruned strategy that is about 20 candidates a problem and most of a session's GPU time for
//! the committed databases. A change that keeps the configuration space should move the times
//! of all configurations a little and their ranking little, so each problem is offered its
//! [`WARM_TOP`] fastest verified configurations of the earlier runs stored for it (any other
//! template checksum) that this build can still run, the paper's Table I configurations
//! (every search times them: [`table_one_seeds`]) and its default configuration (the runtime's
//! fallback, so it stays timed), the row-chunk variants of the first few, the 8-row variants
//! of the first few 4-row decode configurations, the other decode pipelines of the first
//! few decode configurations and the stream-K schedule of the first few tiled ones. A
//! problem with no such rows gets the
//! pruned candidates. It is a re-timing, not a search: after a change that moves the ranking
//! (a new dimension, new seeds), tune with the pruned strategy.

use super::search::{
    table_one_seeds, with_pipeline_twins, with_row_chunks, with_stream_k, with_tma_twins,
    with_transposed_twins, with_wide_rows, TMA_TWINS_TOP,
};
use crate::codegen::{templates_checksum, validate, Family, KernelConfig};
use crate::db::{Database, Measurement, Source, Status};
use crate::gpu::GpuProfile;
use crate::kernels::table_one;
use crate::problem::Problem;
use std::collections::HashMap;

/// Earlier configurations timed again per problem.
pub const WARM_TOP: usize = 8;

/// The warm candidates of each of `problems` on `profile`'s GPU from the earlier rows of `db`;
/// `None` for a problem that has none (the caller gives it the pruned candidates). A re-tune
/// (`retune`: the search changed, the templates did not) counts this build's own timings as
/// earlier ones too, so that the variants a changed search adds reach the current winners.
pub fn warm_candidates(
    db: &Database,
    profile: &GpuProfile,
    problems: &[Problem],
    retune: bool,
) -> Result<Vec<Option<Vec<KernelConfig>>>, crate::db::DbError> {
    let mut earlier: HashMap<Problem, Vec<Measurement>> = HashMap::new();
    for row in db.measurements(Some(&profile.name))? {
        if is_timing(&row) && (retune || is_stale(&row)) {
            earlier.entry(row.problem).or_default().push(row);
        }
    }
    Ok(problems
        .iter()
        .map(|p| earlier.remove(p).map(|rows| retimed(rows, p, profile)))
        .map(|picked| picked.filter(|configs| !configs.is_empty()))
        .collect())
}

/// A verified, timed row measured on the GPU (an abandoned candidate's probe runs time it too).
fn is_timing(row: &Measurement) -> bool {
    row.source == Source::Measured
        && matches!(row.status, Status::Ok | Status::Abandoned)
        && row.verified
        && row.median_us.is_some()
}

/// A row of another template checksum than this build's.
fn is_stale(row: &Measurement) -> bool {
    row.template_checksum != templates_checksum(&row.problem)
}

/// The fastest [`WARM_TOP`] distinct configurations of `rows` that this build can run for
/// `problem`, fastest first, then the Table I seeds and the problem's default configuration,
/// then the row-chunk variants of the first few ([`with_row_chunks`]), the 8-row variants of
/// the first few 4-row decode ones ([`with_wide_rows`]), the other decode pipelines of the
/// first few decode ones ([`with_pipeline_twins`]), the transposing twins of the first few
/// row-copying ones ([`with_transposed_twins`]), the tensor-copy twins of the first few that
/// can take them ([`with_tma_twins`]) and the stream-K variants of the first few tiled ones
/// ([`with_stream_k`]).
fn retimed(mut rows: Vec<Measurement>, problem: &Problem, gpu: &GpuProfile) -> Vec<KernelConfig> {
    // Every row here has a time (`is_timing`), and a stored time is finite.
    let time = |m: &Measurement| m.median_us.unwrap_or(f64::INFINITY);
    rows.sort_by(|a, b| time(a).total_cmp(&time(b)));
    let serving = Family::serving(problem);
    let mut picked: Vec<KernelConfig> = Vec::new();
    for row in rows {
        let cfg = row.config;
        let runnable = serving.contains(&cfg.family())
            && validate::validate_for_problem(&cfg, problem).is_ok()
            && validate::validate(&cfg, gpu).is_ok();
        if runnable && !picked.contains(&cfg) {
            picked.push(cfg);
            if picked.len() == WARM_TOP {
                break;
            }
        }
    }
    if picked.is_empty() {
        return picked;
    }
    let default = table_one::default_config(problem, gpu);
    for cfg in table_one_seeds(problem, gpu).into_iter().chain(default) {
        if !picked.contains(&cfg) {
            picked.push(cfg);
        }
    }
    let picked = with_transposed_twins(picked, problem, gpu);
    let picked = with_tma_twins(picked, problem, gpu, TMA_TWINS_TOP);
    let picked = with_wide_rows(with_row_chunks(picked, problem, gpu), problem, gpu);
    with_stream_k(with_pipeline_twins(picked, problem, gpu), problem, gpu)
}
