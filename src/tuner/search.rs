//! Search strategies: which configurations to time for a problem.

use super::model;
use crate::codegen::{enumerate, validate, KernelConfig, Pipeline, WarpLayout};
use crate::gpu::GpuProfile;
use crate::problem::Problem;
use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// How candidates are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// The paper's rules prune the space, the model ranks what is left, Table I seeds join.
    #[default]
    Pruned,
    /// Every valid configuration (slow candidates abandoned early).
    Exhaustive,
    /// Only the model's best few and their neighbours.
    Model,
    /// The pruned candidates plus a fixed pseudo-random sample of [`SAMPLE_SIZE`] valid
    /// configurations: a ground-truth sweep within a GPU budget that an exhaustive one exceeds.
    Sample,
}

impl Strategy {
    pub fn as_str(&self) -> &'static str {
        match self {
            Strategy::Pruned => "pruned",
            Strategy::Exhaustive => "exhaustive",
            Strategy::Model => "model",
            Strategy::Sample => "sample",
        }
    }
}

/// Candidates the pruned strategy keeps after the model ranks them.
const PRUNED_TOP: usize = 6;
/// Candidates the model strategy keeps before adding neighbours.
pub const MODEL_TOP: usize = 3;
/// Sparsity above which packing is tried (paper §III-A: the bound shifts near 70 %).
const PACKING_MIN_SPARSITY: f64 = 0.70;

/// Configurations the sample strategy draws besides the pruned candidates.
pub const SAMPLE_SIZE: usize = 256;

/// Configurations to time for `problem` on `gpu`, best predicted first.
pub fn candidates(problem: &Problem, gpu: &GpuProfile, strategy: Strategy) -> Vec<KernelConfig> {
    let space: Vec<KernelConfig> = enumerate::search_space(problem.nm, problem.l as u32, gpu)
        .into_iter()
        .filter(|cfg| validate::validate_for_problem(cfg, problem).is_ok())
        .collect();
    match strategy {
        Strategy::Exhaustive => ranked(space, problem, gpu),
        Strategy::Sample => {
            let mut picked = candidates(problem, gpu, Strategy::Pruned);
            for cfg in sample(space, SAMPLE_SIZE) {
                if !picked.contains(&cfg) {
                    picked.push(cfg);
                }
            }
            picked
        }
        Strategy::Pruned => {
            let kept: Vec<_> = space
                .into_iter()
                .filter(|c| paper_rules(c, problem, gpu))
                .collect();
            let mut picked: Vec<_> = ranked(kept, problem, gpu)
                .into_iter()
                .take(PRUNED_TOP)
                .collect();
            for seed in table_one_seeds(problem, gpu)
                .into_iter()
                .chain(wide_tile_seeds(problem, gpu))
                .chain(sweep_seeds(problem, gpu))
            {
                if !picked.contains(&seed) {
                    picked.push(seed);
                }
            }
            picked
        }
        Strategy::Model => model_picks(&ranked(space, problem, gpu), MODEL_TOP, true),
    }
}

/// `count` configurations of `space` chosen by the SHA-256 of their names: the same kernels
/// for every problem of a pattern (compiled once, as N, M, L are the only compile-time shape
/// facts), reproducible on any machine, and unrelated to any parameter's order.
fn sample(mut space: Vec<KernelConfig>, count: usize) -> Vec<KernelConfig> {
    use sha2::{Digest, Sha256};
    space.sort_by_cached_key(|cfg| Sha256::digest(cfg.name().as_bytes()));
    space.truncate(count);
    space
}

/// What the model strategy times out of `ranked` (best predicted first): the `top` best and,
/// with `neighbours`, every configuration of `ranked` one parameter away from one of them.
/// `nmtune model-eval` runs the same selection on a measured set.
pub fn model_picks(ranked: &[KernelConfig], top: usize, neighbours: bool) -> Vec<KernelConfig> {
    let mut picked: Vec<KernelConfig> = ranked.iter().take(top).copied().collect();
    if !neighbours {
        return picked;
    }
    let close: Vec<KernelConfig> = ranked
        .iter()
        .filter(|c| picked.iter().any(|p| is_neighbour(p, c)))
        .copied()
        .collect();
    for cfg in close {
        if !picked.contains(&cfg) {
            picked.push(cfg);
        }
    }
    picked
}

/// The model's single choice among `space` for `problem`: the first of [`ranked`] over the
/// configurations valid for the problem, found without sorting.
pub fn model_choice(
    space: &[KernelConfig],
    problem: &Problem,
    gpu: &GpuProfile,
) -> Option<KernelConfig> {
    let mut best: Option<(f64, KernelConfig)> = None;
    for cfg in space {
        if validate::validate_for_problem(cfg, problem).is_err() {
            continue;
        }
        let time = model::predict(cfg, problem, gpu).time_s;
        let wins = match &best {
            None => true,
            Some((t, b)) => match time.total_cmp(t) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Equal => cfg.name() < b.name(),
                std::cmp::Ordering::Greater => false,
            },
        };
        if wins {
            best = Some((time, *cfg));
        }
    }
    best.map(|(_, cfg)| cfg)
}

/// Sort by predicted time, fastest first (name breaks ties so the order is reproducible).
pub fn ranked(
    mut configs: Vec<KernelConfig>,
    problem: &Problem,
    gpu: &GpuProfile,
) -> Vec<KernelConfig> {
    // Names are computed once: formatting them inside the comparison dominated the sort.
    let mut keyed: Vec<(f64, String, KernelConfig)> = configs
        .drain(..)
        .map(|c| (model::predict(&c, problem, gpu).time_s, c.name(), c))
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    keyed.into_iter().map(|(_, _, c)| c).collect()
}

/// The paper's pruning rules: packing only at high sparsity, split-K only when the grid
/// cannot fill the GPU, thread tiles of at least 4×8, a pipeline that overlaps loads.
fn paper_rules(cfg: &KernelConfig, problem: &Problem, gpu: &GpuProfile) -> bool {
    let sparse = problem.nm.sparsity() >= PACKING_MIN_SPARSITY;
    if cfg.packing && !sparse {
        return false;
    }
    let tiles = problem.m.div_ceil(cfg.m_s as usize) * problem.n.div_ceil(cfg.n_s as usize);
    if cfg.split_k > 1 && tiles >= 2 * gpu.sm_count as usize {
        return false;
    }
    cfg.m_t * cfg.n_t >= 32 && cfg.pipeline != Pipeline::Single
}

/// Differs from `a` in exactly one parameter.
fn is_neighbour(a: &KernelConfig, b: &KernelConfig) -> bool {
    let diffs = [
        a.m_s != b.m_s,
        a.n_s != b.n_s,
        a.k_s != b.k_s,
        a.m_t != b.m_t,
        a.n_t != b.n_t,
        a.warp != b.warp,
        a.packing != b.packing,
        a.pipeline != b.pipeline,
        a.split_k != b.split_k,
    ];
    diffs.iter().filter(|d| **d).count() == 1
}

/// NM-SpMM Table I (small 32×32/4×4, medium 32×64/8×4, large 64×128/8×8) with the largest
/// k_s that validates: the "no database yet" default and a seed for every search.
pub fn table_one_seeds(problem: &Problem, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let size_class = table_one_class(problem);
    table_one_config(size_class, problem, gpu)
        .into_iter()
        .collect()
}

/// Block tiles 256 columns wide, for problems with enough of them to fill the GPU: on an
/// H100 at m = n = k = 4096 they beat every 128-wide tile by 5–15 % at each sparsity
/// (docs/perf-log.md, v2), which the model does not rank high enough by itself.
pub fn wide_tile_seeds(problem: &Problem, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let tiles = problem.m.div_ceil(128) * problem.n.div_ceil(256);
    if tiles < gpu.sm_count as usize {
        return Vec::new();
    }
    let base = KernelConfig {
        m_s: 128,
        n_s: 256,
        k_s: 32.max(problem.nm.m),
        m_t: 16,
        n_t: 8,
        warp: WarpLayout::new(4, 8),
        nm: problem.nm,
        l: problem.l as u32,
        packing: false,
        pipeline: Pipeline::CpAsync { stages: 3 },
        split_k: 1,
    };
    let transposed = KernelConfig {
        m_t: 8,
        n_t: 16,
        warp: WarpLayout::new(8, 4),
        ..base
    };
    [base, transposed]
        .into_iter()
        .filter(|cfg| {
            validate::validate(cfg, gpu).is_ok()
                && validate::validate_for_problem(cfg, problem).is_ok()
        })
        .collect()
}

/// Block shapes that won the sampled sweep of the Llama-7B problems on the H100
/// (`tuning-db/h100-sweep.sqlite`, docs/perf-log.md) and that the model ranks too low, by
/// density N/M: at high sparsity narrow (32–64 row) blocks 256 columns wide with few warps
/// beat the 128×256 tiles by 10–15 % at m = 4096 and by 2× at m = 256. Written with the
/// window size of M = 32 and split_k 1; split-K 2 and 4 join where the paper's rule allows.
const SWEEP_SEEDS: [(f64, &str); 9] = [
    (0.125, "ms32_ns256_ks32_mt8_nt16_w2x16_cp4"),
    (0.125, "ms32_ns256_ks128_mt8_nt8_w4x8_cp3"),
    (0.125, "ms32_ns256_ks32_mt8_nt16_w4x8_cp4"),
    (0.25, "ms64_ns256_ks32_mt16_nt8_w2x16_cp3"),
    (0.25, "ms64_ns256_ks128_mt8_nt8_w8x4_cp2"),
    (0.25, "ms64_ns128_ks32_mt16_nt4_w4x8_cp3"),
    (1.0, "ms64_ns128_ks32_mt8_nt8_w2x16_cp2"),
    (1.0, "ms32_ns256_ks32_mt8_nt8_w2x16_cp4"),
    (1.0, "ms128_ns256_ks32_mt8_nt16_w16x2_cp4"),
];

/// The [`SWEEP_SEEDS`] of the problem's density band, valid for it on `gpu`.
pub fn sweep_seeds(problem: &Problem, gpu: &GpuProfile) -> Vec<KernelConfig> {
    let density = problem.nm.density();
    let band = SWEEP_SEEDS
        .iter()
        .map(|(upper, _)| *upper)
        .find(|upper| density <= *upper + 1e-9)
        .unwrap_or(1.0);
    let (n, m, l) = (problem.nm.n, problem.nm.m, problem.l);
    SWEEP_SEEDS
        .iter()
        .filter(|(upper, _)| *upper == band)
        .flat_map(|(_, shape)| {
            let (head, pipe) = shape.rsplit_once('_').unwrap_or((shape, "cp3"));
            [1, 2, 4].map(|sk| format!("nm_spmm_f32_{head}_n{n}m{m}l{l}_nopack_{pipe}_sk{sk}"))
        })
        .filter_map(|name| KernelConfig::parse_name(&name))
        .filter(|cfg| {
            validate::validate(cfg, gpu).is_ok()
                && validate::validate_for_problem(cfg, problem).is_ok()
                && paper_rules(cfg, problem, gpu)
        })
        .collect()
}

/// Small, medium or large by the paper's Table II examples (512², 1024–2048, ≥ 2048·4096).
pub fn table_one_class(problem: &Problem) -> usize {
    let work = problem.m as f64 * problem.n as f64;
    if work <= 512.0 * 1024.0 {
        0
    } else if work <= 1024.0 * 2048.0 {
        1
    } else {
        2
    }
}

/// The Table I configuration of a size class, with the largest valid k_s (None if none fits).
pub fn table_one_config(class: usize, problem: &Problem, gpu: &GpuProfile) -> Option<KernelConfig> {
    let (m_s, n_s, m_t, n_t, warp) = [
        (32, 32, 4, 4, WarpLayout::new(8, 4)),
        (32, 64, 8, 4, WarpLayout::new(4, 8)),
        (64, 128, 8, 8, WarpLayout::new(4, 8)),
    ][class.min(2)];
    let m_window = problem.nm.m;
    let packing = problem.nm.sparsity() >= PACKING_MIN_SPARSITY;
    (1..=256 / m_window)
        .rev()
        .map(|mult| KernelConfig {
            m_s,
            n_s,
            k_s: mult * m_window,
            m_t,
            n_t,
            warp,
            nm: problem.nm,
            l: problem.l as u32,
            packing,
            pipeline: Pipeline::CpAsync { stages: 2 },
            split_k: 1,
        })
        .find(|cfg| {
            cfg.k_s <= 64.max(m_window)
                && validate::validate(cfg, gpu).is_ok()
                && validate::validate_for_problem(cfg, problem).is_ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::compile_key;
    use crate::problem::NmPattern;
    use std::collections::BTreeSet;

    #[test]
    fn sweep_seeds_follow_the_density_band_and_the_split_k_rule() {
        let gpu = GpuProfile::builtin("h100").unwrap();
        let problem = |m, n: u32| Problem::new(m, 4096, 4096, NmPattern::new(n, 32).unwrap(), 32);
        let large = sweep_seeds(&problem(4096, 4).unwrap(), &gpu);
        assert_eq!(large.len(), 3, "{large:?}");
        assert!(large.iter().all(|c| c.m_s == 32 && c.split_k == 1));
        let small = sweep_seeds(&problem(256, 8).unwrap(), &gpu);
        assert!(small.iter().any(|c| c.split_k > 1) && small.iter().all(|c| c.m_s == 64));
        let dense = sweep_seeds(&problem(4096, 32).unwrap(), &gpu);
        assert!(!dense.is_empty() && dense.iter().all(|c| c.nm.n == 32));
    }

    #[test]
    fn sample_keeps_the_pruned_picks_and_shares_kernels_across_problems() {
        let gpu = GpuProfile::builtin("h100").unwrap();
        let nm = NmPattern::new(8, 32).unwrap();
        let mut kernels = BTreeSet::new();
        for (m, n, k) in [(256, 4096, 4096), (4096, 11008, 4096), (4096, 4096, 11008)] {
            let problem = Problem::new(m, n, k, nm, 32).unwrap();
            let sampled = candidates(&problem, &gpu, Strategy::Sample);
            let pruned = candidates(&problem, &gpu, Strategy::Pruned);
            assert!(pruned.iter().all(|c| sampled.contains(c)));
            assert!(sampled.len() <= pruned.len() + SAMPLE_SIZE);
            assert!(sampled.len() >= SAMPLE_SIZE);
            assert_eq!(sampled, candidates(&problem, &gpu, Strategy::Sample));
            kernels.extend(sampled.iter().map(|c| compile_key(c).name()));
        }
        // Split-K variants share a kernel, and the sample is the same for every problem.
        assert!(kernels.len() < 2 * SAMPLE_SIZE, "{} kernels", kernels.len());
    }
}
