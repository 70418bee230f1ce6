//! The model runner: no GPU, the performance model's prediction stands in for a timing. Each
//! problem's one candidate is the model's best configuration over the whole search space, so
//! a model-filled database holds one predicted entry per problem (`source = model`).

use super::measure::Timing;
use super::runner::{Runner, Session, Trial};
use super::search::Strategy;
use super::TuneError;
use crate::codegen::enumerate::space_for;
use crate::codegen::KernelConfig;
use crate::db::Source;
use crate::gpu_profile::GpuProfile;
use crate::model;
use crate::problem::{ALayout, Dtype, NmPattern, Problem};
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap};

pub struct ModelRunner {
    profile: GpuProfile,
}

impl ModelRunner {
    pub fn new(profile: &GpuProfile) -> Self {
        Self {
            profile: profile.clone(),
        }
    }
}

impl Runner for ModelRunner {
    type Session<'a> = ModelSession<'a>;

    fn source(&self) -> Source {
        Source::Model
    }

    /// The model's best configuration of each problem (none when no configuration can run
    /// it), predicted in parallel: the search spaces, once per (N:M, L, layout), dominate.
    fn plan(
        &self,
        problems: &[Problem],
        profile: &GpuProfile,
        _strategy: Strategy,
    ) -> Vec<Vec<KernelConfig>> {
        let spaces = search_spaces(problems, profile);
        problems
            .par_iter()
            .map(|p| {
                let space = &spaces[&(p.nm, p.l, p.a_layout, p.dtype)];
                model::best(space, p, profile).into_iter().collect()
            })
            .collect()
    }

    fn begin<'a>(
        &'a mut self,
        problem: &Problem,
        _configs: &[KernelConfig],
    ) -> Result<ModelSession<'a>, TuneError> {
        Ok(ModelSession {
            profile: &self.profile,
            problem: *problem,
        })
    }
}

pub struct ModelSession<'a> {
    profile: &'a GpuProfile,
    problem: Problem,
}

impl Session for ModelSession<'_> {
    /// Nothing is timed beside a prediction.
    fn baseline_us(&self) -> Option<f64> {
        None
    }

    fn order(&self, configs: &[KernelConfig]) -> Vec<KernelConfig> {
        configs.to_vec()
    }

    /// The predicted time as median and minimum, no runs, not verified.
    fn run(&mut self, config: &KernelConfig, _best_us: Option<f64>) -> Trial {
        let predicted_us = model::predict(config, &self.problem, self.profile).time_s * 1e6;
        let mut trial = Trial::new();
        trial.timing = Some(Timing {
            median_us: predicted_us,
            min_us: predicted_us,
            runs: 0,
        });
        trial
    }
}

/// The search space of every (N:M, L, layout) among `problems`, enumerated once each.
fn search_spaces(
    problems: &[Problem],
    profile: &GpuProfile,
) -> HashMap<SpaceKey, Vec<KernelConfig>> {
    let keys: BTreeSet<SpaceKey> = problems
        .iter()
        .map(|p| (p.nm, p.l, p.a_layout, p.dtype))
        .collect();
    keys.into_par_iter()
        .map(|(nm, l, a, t)| ((nm, l, a, t), space_for(nm, l as u32, a, t, profile)))
        .collect()
}

/// What a search space depends on: (N:M, L, A layout, element type).
type SpaceKey = (NmPattern, usize, ALayout, Dtype);
