//! The rule that picks the best entry of a (GPU, problem) pair, written once and used by
//! everything that needs a "best": the database's `best` table ([`better`], on every write),
//! the runtime lookup ([`best_per_problem`] in memory, or the `best` table it reads) and the
//! model evaluation's ground truth (`tuner::evaluate`). docs/design.md "Timing rules".

use super::types::{Measurement, Source, Status};
use crate::problem::Problem;
use std::cmp::Ordering;
use std::collections::HashMap;

/// Whether a measurement may be the best at all: it ran, has a usable time, and its output was
/// verified. A model prediction has no output to verify, so it needs only the time.
pub fn can_be_best(m: &Measurement) -> bool {
    let timed = matches!(m.median_us, Some(t) if t.is_finite() && t > 0.0);
    let trusted = m.verified || m.source == Source::Model;
    m.status == Status::Ok && trusted && timed
}

/// Trust in a time from this source, greater is more: a timing on the GPU beats one replayed
/// from a measurements file, which beats a prediction.
pub fn trust(source: Source) -> u8 {
    match source {
        Source::Measured => 3,
        Source::Replay => 2,
        Source::Model => 1,
    }
}

/// The rule, as an order: `Greater` when `a` is the better entry. `current` is the template
/// checksum of the code this build generates for their problem
/// ([`crate::codegen::templates_checksum`]).
///
/// In order:
/// 1. an entry that can be best ([`can_be_best`]) beats one that cannot;
/// 2. a more trusted source wins ([`trust`]: measured > replay > model), so a prediction never
///    displaces a timing, and a replayed timing never displaces one taken on the GPU;
/// 3. an entry produced with the `current` templates beats one from other templates (whose
///    time describes code that is no longer generated);
/// 4. the smaller median wins;
/// 5. ties go to the smaller kernel name, then to the smaller checksum and the earlier date,
///    so that the order is total and the choice never depends on the order rows arrive in.
pub fn compare(a: &Measurement, b: &Measurement, current: &str) -> Ordering {
    let median = |m: &Measurement| m.median_us.unwrap_or(f64::INFINITY);
    can_be_best(a)
        .cmp(&can_be_best(b))
        .then_with(|| trust(a.source).cmp(&trust(b.source)))
        .then_with(|| (a.template_checksum == current).cmp(&(b.template_checksum == current)))
        .then_with(|| median(b).total_cmp(&median(a)))
        .then_with(|| b.kernel_name().cmp(&a.kernel_name()))
        .then_with(|| b.template_checksum.cmp(&a.template_checksum))
        .then_with(|| b.created_at.cmp(&a.created_at))
}

/// Whether `candidate` should replace `incumbent` as the best of their (GPU, problem) for this
/// build: [`compare`] with this build's template checksum for that problem. An entry that
/// cannot be best never wins.
pub fn better(candidate: &Measurement, incumbent: &Measurement) -> bool {
    can_be_best(candidate)
        && compare(
            candidate,
            incumbent,
            crate::codegen::templates_checksum(&candidate.problem),
        ) == Ordering::Greater
}

/// The best of `candidates` by [`better`]; `None` when none can be best.
pub(crate) fn pick_best(candidates: impl IntoIterator<Item = (i64, Measurement)>) -> Option<i64> {
    let mut best: Option<(i64, Measurement)> = None;
    for (id, m) in candidates {
        let wins = match &best {
            None => can_be_best(&m),
            Some((_, incumbent)) => better(&m, incumbent),
        };
        if wins {
            best = Some((id, m));
        }
    }
    best.map(|(id, _)| id)
}

/// The best entry of every (GPU, problem) among `rows` by [`better`]: what the `best` table of
/// a database holding exactly these rows says. Problems without an entry that can be best are
/// left out.
pub fn best_per_problem(
    rows: impl IntoIterator<Item = Measurement>,
) -> HashMap<(String, Problem), Measurement> {
    let mut best: HashMap<(String, Problem), Measurement> = HashMap::new();
    for m in rows.into_iter().filter(can_be_best) {
        let key = (m.gpu.clone(), m.problem);
        match best.get(&key) {
            Some(incumbent) if !better(&m, incumbent) => {}
            _ => {
                best.insert(key, m);
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::{ACopy, KernelConfig, WarpLayout};
    use crate::problem::{NmPattern, Problem};
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    fn config(m_s: u32) -> KernelConfig {
        KernelConfig {
            a_copy: ACopy::Row4,
            m_s,
            n_s: 64,
            k_s: 32,
            m_t: 4,
            n_t: 4,
            warp: WarpLayout::new(4, 8),
            nm: NmPattern { n: 8, m: 32 },
            l: 32,
            packing: false,
            stages: 2,
            min_blocks: 1,
            split_k: 1,
        }
    }

    fn entry(m_s: u32, median_us: f64, source: Source) -> Measurement {
        Measurement {
            gpu: "h100".into(),
            problem: Problem::new(256, 2048, 2048, NmPattern { n: 8, m: 32 }, 32).unwrap(),
            config: config(m_s),
            status: Status::Ok,
            error: None,
            median_us: Some(median_us),
            min_us: Some(median_us * 0.97),
            runs: 20,
            verified: source != Source::Model,
            max_rel_error: Some(1.3e-6),
            cublas_us: Some(median_us * 1.7),
            copy_gbps: None,
            registers: Some(96),
            spill_bytes: Some(0),
            template_checksum: "aaaa".into(),
            source,
            tool_version: "0.1.0".into(),
            created_at: "2025-01-02T03:04:05.000006Z".into(),
        }
    }

    #[test]
    fn faster_verified_wins_slower_does_not() {
        let mut rng = SmallRng::seed_from_u64(7);
        for _ in 0..200 {
            let a = rng.gen_range(1.0..500.0);
            let b = rng.gen_range(1.0..500.0);
            let (x, y) = (
                entry(32, a, Source::Measured),
                entry(64, b, Source::Measured),
            );
            assert_eq!(better(&x, &y), a < b, "{a} vs {b}");
            assert_eq!(better(&y, &x), b < a, "{b} vs {a}");
        }
    }

    #[test]
    fn ties_go_to_the_smaller_name_and_self_never_wins() {
        let (x, y) = (
            entry(32, 10.0, Source::Measured),
            entry(64, 10.0, Source::Measured),
        );
        assert_ne!(better(&x, &y), better(&y, &x));
        assert!(!better(&x, &x));
    }

    #[test]
    fn failures_unverified_and_untimed_entries_never_win() {
        let incumbent = entry(64, 100.0, Source::Measured);
        for status in Status::ALL.into_iter().filter(|s| *s != Status::Ok) {
            let mut c = entry(32, 1.0, Source::Measured);
            c.status = status;
            assert!(!better(&c, &incumbent), "{status}");
            assert!(better(&incumbent, &c), "{status}");
        }
        let mut unverified = entry(32, 1.0, Source::Measured);
        unverified.verified = false;
        assert!(!better(&unverified, &incumbent));
        for bad in [
            None,
            Some(f64::NAN),
            Some(0.0),
            Some(-1.0),
            Some(f64::INFINITY),
        ] {
            let mut c = entry(32, 1.0, Source::Measured);
            c.median_us = bad;
            assert!(!better(&c, &incumbent), "{bad:?}");
        }
    }

    /// This build's checksum for the problem of [`entry`].
    fn current() -> &'static str {
        crate::codegen::templates_checksum(&entry(32, 1.0, Source::Measured).problem)
    }

    #[test]
    fn measured_beats_replay_beats_model_whatever_the_time() {
        let measured = entry(64, 100.0, Source::Measured);
        let replay = entry(128, 50.0, Source::Replay);
        let mut model = entry(32, 1.0, Source::Model);
        model.template_checksum = current().into();
        model.created_at = "2030-01-01T00:00:00Z".into();
        assert!(can_be_best(&model));
        assert!(better(&measured, &replay) && better(&replay, &model));
        assert!(better(&measured, &model));
        assert!(!better(&model, &measured) && !better(&model, &replay));
        assert!(!better(&replay, &measured));
    }

    #[test]
    fn current_templates_win_regardless_of_speed_and_date() {
        let current = current();
        let mut old = entry(64, 10.0, Source::Measured);
        old.created_at = "2030-01-01T00:00:00Z".into();
        let mut new = entry(32, 90.0, Source::Measured);
        new.template_checksum = current.into();
        assert!(better(&new, &old));
        assert!(!better(&old, &new));
        // ... but never across sources: a stale timing still beats a current prediction.
        let mut model = entry(16, 1.0, Source::Model);
        model.template_checksum = current.into();
        assert!(better(&old, &model));
        // Between two other templates, the faster wins.
        let mut other = entry(128, 9.0, Source::Measured);
        other.template_checksum = "cccc".into();
        assert!(better(&other, &old) && !better(&old, &other));
    }

    #[test]
    fn the_order_is_total_so_arrival_order_never_matters() {
        let mut rng = SmallRng::seed_from_u64(5);
        let sources = [Source::Measured, Source::Replay, Source::Model];
        let checksums = ["aaaa", "bbbb", current()];
        let rows: Vec<Measurement> = (0..60)
            .map(|i| {
                let mut m = entry(
                    32 + (i % 7) as u32,
                    rng.gen_range(1..5) as f64,
                    sources[rng.gen_range(0..3)],
                );
                m.template_checksum = checksums[rng.gen_range(0..3)].into();
                m.verified = m.source != Source::Model && rng.gen_bool(0.9);
                m
            })
            .collect();
        let expected = best_per_problem(rows.clone());
        for seed in 0..20u64 {
            let mut shuffled = rows.clone();
            let mut r = SmallRng::seed_from_u64(seed);
            for i in (1..shuffled.len()).rev() {
                shuffled.swap(i, r.gen_range(0..=i));
            }
            assert_eq!(best_per_problem(shuffled), expected);
            let ids: Vec<(i64, Measurement)> = rows
                .iter()
                .cloned()
                .enumerate()
                .map(|(i, m)| (i as i64, m))
                .collect();
            let picked = pick_best(ids).map(|id| &rows[id as usize]);
            assert_eq!(picked, expected.values().next());
        }
    }

    #[test]
    fn pick_best_finds_the_fastest_eligible() {
        let mut rng = SmallRng::seed_from_u64(11);
        let entries: Vec<(i64, Measurement)> = (0..40)
            .map(|i| {
                let mut m = entry(32 + i as u32, rng.gen_range(5.0..50.0), Source::Measured);
                m.verified = rng.gen_bool(0.7);
                (i, m)
            })
            .collect();
        let expected = entries
            .iter()
            .filter(|(_, m)| m.verified)
            .min_by(|a, b| a.1.median_us.unwrap().total_cmp(&b.1.median_us.unwrap()))
            .map(|(id, _)| *id);
        assert_eq!(pick_best(entries), expected);
    }
}
