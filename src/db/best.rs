//! The rule that picks the best configuration of a (GPU, problem) pair, written once.

use super::types::{Measurement, Source, Status};
use std::cmp::Ordering;

/// Whether a measurement may be the best at all: it ran, has a usable time, and its output was
/// verified. A model prediction has no output to verify, so it needs only the time.
pub fn can_be_best(m: &Measurement) -> bool {
    let timed = matches!(m.median_us, Some(t) if t.is_finite() && t > 0.0);
    let trusted = m.verified || m.source == Source::Model;
    m.status == Status::Ok && trusted && timed
}

/// Whether `candidate` should replace `incumbent` as the best of their (GPU, problem).
///
/// In order:
/// 1. a candidate that cannot be best never wins; one that can beats an incumbent that cannot;
/// 2. a more trusted source wins (measured = replay > model), so a prediction never displaces a
///    timing, not even one taken with older templates;
/// 3. with a different template checksum the newer result wins: the templates changed, so the
///    older timing describes code that is no longer generated (equal times fall through);
/// 4. otherwise the smaller median wins, ties going to the smaller kernel name so that the
///    choice does not depend on the order results arrive in.
pub fn better(candidate: &Measurement, incumbent: &Measurement) -> bool {
    if !can_be_best(candidate) {
        return false;
    }
    if !can_be_best(incumbent) {
        return true;
    }
    let (cand_rank, inc_rank) = (candidate.source.rank(), incumbent.source.rank());
    if cand_rank != inc_rank {
        return cand_rank > inc_rank;
    }
    if candidate.template_checksum != incumbent.template_checksum {
        match compare_times(&candidate.created_at, &incumbent.created_at) {
            Ordering::Greater => return true,
            Ordering::Less => return false,
            Ordering::Equal => {}
        }
    }
    faster(candidate, incumbent)
}

/// Smaller median first, then the smaller kernel name. Both medians are finite here.
fn faster(candidate: &Measurement, incumbent: &Measurement) -> bool {
    let (cand_us, inc_us) = (
        candidate.median_us.unwrap_or(f64::INFINITY),
        incumbent.median_us.unwrap_or(f64::INFINITY),
    );
    match cand_us.total_cmp(&inc_us) {
        Ordering::Less => true,
        Ordering::Greater => false,
        Ordering::Equal => candidate.kernel_name() < incumbent.kernel_name(),
    }
}

/// Compare two RFC 3339 timestamps as instants; text order when either does not parse.
fn compare_times(a: &str, b: &str) -> Ordering {
    match (
        chrono::DateTime::parse_from_rfc3339(a),
        chrono::DateTime::parse_from_rfc3339(b),
    ) {
        (Ok(a), Ok(b)) => a.cmp(&b),
        _ => a.cmp(b),
    }
}

/// The best of `candidates` by [`better`], taken in the order given (arrival order matters only
/// when template checksums differ).
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

    #[test]
    fn model_never_replaces_measured_but_measured_replaces_model() {
        let measured = entry(64, 100.0, Source::Measured);
        let mut model = entry(32, 1.0, Source::Model);
        model.template_checksum = "bbbb".into();
        model.created_at = "2030-01-01T00:00:00Z".into();
        assert!(can_be_best(&model));
        assert!(!better(&model, &measured));
        assert!(better(&measured, &model));
        let replay = entry(128, 50.0, Source::Replay);
        assert!(better(&replay, &measured));
        assert!(!better(&measured, &replay));
    }

    #[test]
    fn newer_templates_win_regardless_of_speed() {
        let old = entry(64, 10.0, Source::Measured);
        let mut new = entry(32, 90.0, Source::Measured);
        new.template_checksum = "bbbb".into();
        new.created_at = "2025-01-02T04:00:00+01:00".into(); // 03:00Z: older than `old`
        assert!(!better(&new, &old));
        assert!(better(&old, &new));
        new.created_at = "2025-01-02T03:04:06Z".into();
        assert!(better(&new, &old));
        assert!(!better(&old, &new));
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
