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
//! few decode configurations, the stream-K schedule and the other splits of k of the first
//! few tiled ones, the other lane widths of the first few element-wise decode ones, the
//! fastest configurations of the same product with A in the other layout
//! ([`layout_winners`]), and last the configurations that won its siblings
//! ([`sibling_winners`]). A problem with no such
//! rows gets the pruned candidates. It is a re-timing, not a search: after a change that
//! moves the ranking (a new dimension, new seeds), tune with the pruned strategy. Of what it
//! offers, the tuning loop times only the kernels whose code changed: an earlier row of a
//! kernel this build generates unchanged is carried over (`run::Stored::carried`).

use super::search::{
    neighbours, runs, table_one_seeds, with_cluster_sums, with_lane_twins, with_pipeline_twins,
    with_row_chunks, with_shuffle_twins, with_split_twins, with_stream_k, with_tma_twins,
    with_transposed_twins, with_wide_rows, TMA_TWINS_TOP,
};
use crate::codegen::{templates_checksum, KernelConfig};
use crate::db::{Database, Measurement, Source, Status};
use crate::gpu::GpuProfile;
use crate::kernels::table_one;
use crate::problem::{ALayout, Dtype, Problem};
use std::collections::HashMap;

/// Earlier configurations timed again per problem.
pub const WARM_TOP: usize = 8;

/// Fastest configurations of a problem that its twin with A in the other layout is offered.
pub const LAYOUT_TWINS_TOP: usize = 3;

/// The warm candidates of each of `problems` on `profile`'s GPU from the earlier rows of `db`;
/// `None` for a problem that has none (the caller gives it the pruned candidates). A re-tune
/// (`retune`: the search changed, the templates did not) counts this build's own timings as
/// earlier ones too, so that the variants a changed search adds reach the current winners.
/// With `local` (the local strategy), also every configuration one parameter away from the
/// problem's fastest earlier one ([`neighbours`]).
pub fn warm_candidates(
    db: &Database,
    profile: &GpuProfile,
    problems: &[Problem],
    retune: bool,
    local: bool,
) -> Result<Vec<Option<Vec<KernelConfig>>>, crate::db::DbError> {
    let mut earlier: HashMap<Problem, Vec<Measurement>> = HashMap::new();
    for row in db.measurements(Some(&profile.name))? {
        if is_timing(&row) && (retune || is_stale(&row)) {
            earlier.entry(row.problem).or_default().push(row);
        }
    }
    let siblings = sibling_winners(&earlier);
    let layout_twins = layout_winners(&earlier);
    Ok(problems
        .iter()
        .map(|p| {
            let rows = earlier.remove(p)?;
            let picked = retimed(rows, p, profile);
            if picked.is_empty() {
                return Some(picked);
            }
            let twin = Problem {
                a_layout: p.a_layout.other(),
                ..*p
            };
            let twin_won = layout_twins.get(&twin).map_or(&[][..], Vec::as_slice);
            let fastest = picked[0];
            let picked = with_layout_twins(picked, twin_won, p, profile);
            let near = if local {
                neighbours(&fastest, p, profile)
            } else {
                Vec::new()
            };
            let picked = with_runnable(picked, near, p, profile);
            let won = siblings.get(&Cell::of(p)).map_or(&[][..], Vec::as_slice);
            let others: Vec<KernelConfig> = won
                .iter()
                .filter(|(layer, _)| layer != p)
                .map(|&(_, cfg)| cfg)
                .collect();
            Some(with_sibling_winners(picked, &others, p, profile))
        })
        .map(|picked| picked.filter(|configs| !configs.is_empty()))
        .collect())
}

/// The problems whose winners a problem's warm candidates take in: the same m, pattern, L, A
/// layout and element type, so one cell of `nmtune report`'s tables, other (n, k).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Cell {
    m: usize,
    nm: (u32, u32),
    l: usize,
    a_layout: ALayout,
    dtype: Dtype,
}

impl Cell {
    fn of(p: &Problem) -> Self {
        Self {
            m: p.m,
            nm: (p.nm.n, p.nm.m),
            l: p.l,
            a_layout: p.a_layout,
            dtype: p.dtype,
        }
    }
}

/// The fastest configuration of every problem of `earlier`, with its problem, gathered per
/// [`Cell`] in the order of the configurations' names. A search ranks each problem's
/// candidates apart, so a kernel that wins one layer of a cell may never be timed on the next
/// one: on the H200, the winners of a cell's other layers ran faster than a problem's own
/// winner on 14 of the 20 column-major 16:32 problems at m = 4096 and on 15 of the 20
/// row-major 4:32 ones (docs/perf-log.md, session 39).
fn sibling_winners(
    earlier: &HashMap<Problem, Vec<Measurement>>,
) -> HashMap<Cell, Vec<(Problem, KernelConfig)>> {
    let time = |m: &Measurement| m.median_us.unwrap_or(f64::INFINITY);
    let mut won: HashMap<Cell, Vec<(Problem, KernelConfig)>> = HashMap::new();
    for (problem, rows) in earlier {
        if let Some(best) = rows.iter().min_by(|a, b| time(a).total_cmp(&time(b))) {
            won.entry(Cell::of(problem))
                .or_default()
                .push((*problem, best.config));
        }
    }
    // One order whatever the map's.
    for layers in won.values_mut() {
        layers.sort_by_key(|(problem, cfg)| (cfg.name(), problem.to_string()));
    }
    won
}

/// The [`LAYOUT_TWINS_TOP`] fastest distinct configurations of every problem of `earlier`.
/// Each is offered to the same product with A in the other layout: the tile shape that wins
/// one layout tends to suit the other (a transposing path runs the column-major main loop
/// after a pass over A), but each search ranks its layout's candidates apart. On the H200 the
/// column-major 4:32 winners' tile at m = 4096 (128 × 256, k_s = 128, two stages) had been
/// timed on none of the 20 row-major layers, nor the row-major 8:32 winner at 256 × 6656² on
/// its column-major twin (docs/perf-log.md, session 58).
fn layout_winners(
    earlier: &HashMap<Problem, Vec<Measurement>>,
) -> HashMap<Problem, Vec<KernelConfig>> {
    earlier
        .iter()
        .map(|(problem, rows)| (*problem, fastest_distinct(rows, LAYOUT_TWINS_TOP, |_| true)))
        .collect()
}

/// The `top` fastest distinct configurations of `rows` that pass `keep`, fastest first.
fn fastest_distinct(
    rows: &[Measurement],
    top: usize,
    keep: impl Fn(&KernelConfig) -> bool,
) -> Vec<KernelConfig> {
    // Every row here has a time (`is_timing`), and a stored time is finite.
    let time = |m: &&Measurement| m.median_us.unwrap_or(f64::INFINITY);
    let mut fastest: Vec<&Measurement> = rows.iter().collect();
    fastest.sort_by(|a, b| time(a).total_cmp(&time(b)));
    let mut picked: Vec<KernelConfig> = Vec::new();
    for row in fastest {
        if picked.len() == top {
            break;
        }
        if keep(&row.config) && !picked.contains(&row.config) {
            picked.push(row.config);
        }
    }
    picked
}

/// `picked` followed by those of `offered` that it lacks and that run `problem` on `gpu`.
fn with_runnable(
    mut picked: Vec<KernelConfig>,
    offered: impl IntoIterator<Item = KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    for cfg in offered {
        if runs(&cfg, problem, gpu) && !picked.contains(&cfg) {
            picked.push(cfg);
        }
    }
    picked
}

/// `picked` followed by the configurations in `won` (the fastest of the problem's twin in the
/// other A layout), each with the twin path of its A copy ([`crate::codegen::ACopy::layout_twin`]), that it
/// lacks and that run `problem` on `gpu`.
fn with_layout_twins(
    picked: Vec<KernelConfig>,
    won: &[KernelConfig],
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let twins = won.iter().map(|cfg| KernelConfig {
        a_copy: cfg.a_copy.layout_twin(),
        ..*cfg
    });
    with_runnable(picked, twins, problem, gpu)
}

/// `picked` followed by the configurations in `won` (the winners of the problem's cell) that
/// it lacks and that run `problem` on `gpu`, each as it won and without its split of k (the
/// split suits the layer it won; the problem's own split variants are the search's business).
fn with_sibling_winners(
    picked: Vec<KernelConfig>,
    won: &[KernelConfig],
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    let as_won_and_unsplit = won.iter().flat_map(|cfg| [*cfg, cfg.with_split(1)]);
    with_runnable(picked, as_won_and_unsplit, problem, gpu)
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
/// can take them ([`with_tma_twins`]), the stream-K variants of the first few tiled ones
/// ([`with_stream_k`]), the other splits of k of the first few tiled ones
/// ([`with_split_twins`]), the other lane widths of the first few element-wise decode
/// ones ([`with_lane_twins`]) and their twins with A gathered the other way
/// ([`with_shuffle_twins`]), and the cluster-summed twins of the first few that split k
/// ([`with_cluster_sums`]).
fn retimed(rows: Vec<Measurement>, problem: &Problem, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let mut picked = fastest_distinct(&rows, WARM_TOP, |cfg| runs(cfg, problem, gpu));
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
    let picked = with_stream_k(with_pipeline_twins(picked, problem, gpu), problem, gpu);
    let picked = with_lane_twins(with_split_twins(picked, problem, gpu), problem, gpu);
    with_cluster_sums(with_shuffle_twins(picked, problem, gpu), problem, gpu)
}
