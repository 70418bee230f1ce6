//! The tuning loop the GPU uses, driven by a deterministic fake runner: no GPU needed. What a
//! user relies on: a run killed inside a problem resumes without running anything twice and
//! ends where an uninterrupted run ends; the faulting kernel is stored and never run again;
//! slower candidates are abandoned against the best so far; the best entry is the fastest
//! verified one, and wrong results never are; `nmtune bench`'s run of the same loop (its own
//! kernel lists, a recorder that keeps nothing) times every kernel to the end.

use nmtune::codegen::KernelConfig;
use nmtune::db::{Database, Measurement, Source, Status};
use nmtune::gpu::GpuProfile;
use nmtune::problem::{ALayout, NmPattern, Problem};
use nmtune::tuner::measure::{Outcome, Timing, TimingPlan};
use nmtune::tuner::runner::{Runner, Session, Trial};
use nmtune::tuner::{
    run_plans, search, tune_with_runner, Benchmark, Strategy, TuneError, TuneOptions, TuneSummary,
};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;

/// Candidates slower than this factor × the best so far are abandoned (as the GPU's probe
/// runs do).
const ABANDON: f64 = 1.5;

/// FNV-1a of a kernel's name and the problem: the fake's stand-in for a measurement.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

fn fake_time(problem: &Problem, config: &KernelConfig) -> f64 {
    10.0 + (fnv(&format!("{problem}/{}", config.name())) % 1000) as f64 / 10.0
}

/// Every seventh kernel computes garbage.
fn fake_wrong(config: &KernelConfig) -> bool {
    fnv(&config.name()) % 7 == 0
}

/// About one kernel in eleven spills registers, so ptxas's report rejects it before timing.
fn fake_spills(config: &KernelConfig) -> bool {
    fnv(&config.name()) % 11 == 5
}

/// One call of `run`: the problem, the kernel, and the bar the loop passed.
#[derive(Debug, Clone, PartialEq)]
struct Call {
    problem: Problem,
    kernel: String,
    best_us: Option<f64>,
}

struct Fake {
    calls: Rc<RefCell<Vec<Call>>>,
    /// The kernel whose run breaks the "GPU context", on that problem.
    fault: Option<(Problem, String)>,
}

struct FakeSession<'a> {
    fake: &'a mut Fake,
    problem: Problem,
}

impl Runner for Fake {
    type Session<'a> = FakeSession<'a>;

    fn source(&self) -> Source {
        Source::Measured
    }

    fn begin<'a>(
        &'a mut self,
        problem: &Problem,
        _configs: &[KernelConfig],
    ) -> Result<FakeSession<'a>, TuneError> {
        Ok(FakeSession {
            fake: self,
            problem: *problem,
        })
    }
}

impl Session for FakeSession<'_> {
    fn baseline_us(&self) -> Option<f64> {
        Some(200.0)
    }

    fn order(&self, configs: &[KernelConfig]) -> Vec<KernelConfig> {
        let mut ordered = configs.to_vec();
        ordered.sort_by_key(|c| c.name());
        ordered
    }

    fn run(&mut self, config: &KernelConfig, best_us: Option<f64>) -> Trial {
        self.fake.calls.borrow_mut().push(Call {
            problem: self.problem,
            kernel: config.name(),
            best_us,
        });
        let mut trial = Trial::new();
        if self.fake.fault == Some((self.problem, config.name())) {
            trial.fail(Status::LaunchFailed, "illegal address".into());
            trial.fatal = Some(TuneError::ContextLost {
                kernel: config.name(),
                problem: self.problem.to_string(),
                detail: "illegal address".into(),
            });
            return trial;
        }
        if fake_spills(config) {
            trial.registers = Some(255);
            trial.spill_bytes = Some(24);
            trial.fail(
                Status::Rejected,
                "ptxas spills 24 bytes of registers: rejected before timing".into(),
            );
            return trial;
        }
        if fake_wrong(config) {
            trial.apply(Outcome::Wrong { rel_error: 0.5 });
            return trial;
        }
        let us = fake_time(&self.problem, config);
        let timing = Timing {
            median_us: us,
            min_us: us * 0.99,
            runs: 10,
        };
        let outcome = match best_us {
            Some(best) if us > ABANDON * best => Outcome::Abandoned {
                timing,
                rel_error: 1e-7,
            },
            _ => Outcome::Timed {
                timing,
                rel_error: 1e-7,
            },
        };
        trial.apply(outcome);
        trial
    }
}

fn h200() -> GpuProfile {
    GpuProfile::builtin("h200").unwrap()
}

/// Six problems over two weights, three m each.
fn problems() -> Vec<Problem> {
    let mut out = Vec::new();
    for (n, k, nm) in [(1024, 2048, (8, 32)), (2048, 1024, (4, 32))] {
        for m in [64, 256, 1024] {
            let pattern = NmPattern::new(nm.0, nm.1).unwrap();
            out.push(Problem::new(m, n, k, pattern, 32).unwrap());
        }
    }
    out
}

fn options(dir: &Path) -> TuneOptions {
    TuneOptions {
        strategy: Strategy::Pruned,
        plan: TimingPlan::default(),
        quiet: true,
        cache_dir: dir.join("cache"),
        seed: 7,
        retune_since: None,
    }
}

/// Run the loop with a fake faulting on `fault`; every call it saw, and the run's summary.
fn run(
    fault: Option<(Problem, String)>,
    db: &Database,
    dir: &Path,
) -> (Vec<Call>, Result<TuneSummary, TuneError>) {
    run_opts(fault, db, &options(dir))
}

/// [`run`] with other options.
fn run_opts(
    fault: Option<(Problem, String)>,
    db: &Database,
    opts: &TuneOptions,
) -> (Vec<Call>, Result<TuneSummary, TuneError>) {
    let calls = Rc::new(RefCell::new(Vec::new()));
    let fake = Fake {
        calls: Rc::clone(&calls),
        fault,
    };
    // The loop owns the runner (and leaks it after a fault); the calls stay readable here.
    let result = tune_with_runner(fake, &h200(), &problems(), db, opts);
    let calls = calls.borrow().clone();
    (calls, result)
}

/// Every row of a database, by (problem, kernel).
fn rows(db: &Database) -> BTreeMap<(String, String), Measurement> {
    db.measurements(Some("h200"))
        .unwrap()
        .into_iter()
        .map(|m| ((m.problem.to_string(), m.config.name()), m))
        .collect()
}

/// `field` of every problem's best entry.
fn best_by<T>(db: &Database, field: impl Fn(&Measurement) -> T) -> HashMap<Problem, T> {
    db.best_entries(Some("h200"))
        .unwrap()
        .iter()
        .map(|m| (m.problem, field(m)))
        .collect()
}

/// The best entry's kernel of every problem.
fn best(db: &Database) -> HashMap<Problem, String> {
    best_by(db, |m| m.config.name())
}

#[test]
fn the_loop_runs_every_candidate_once_and_stores_what_it_gave() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("t.sqlite")).unwrap();
    let (calls, result) = run(None, &db, dir.path());
    let summary = result.unwrap();
    let stored = rows(&db);
    assert_eq!(stored.len(), calls.len(), "one row per run");
    assert!(calls.len() > 6 * 5, "{} runs", calls.len());
    for problem in problems() {
        assert!(db
            .is_problem_done(
                "h200",
                &problem,
                nmtune::codegen::templates_checksum(&problem),
                Source::Measured
            )
            .unwrap());
    }
    let counts = |s: Status| stored.values().filter(|m| m.status == s).count();
    assert!(counts(Status::Ok) > 0 && counts(Status::WrongResult) > 0);
    assert!(counts(Status::Abandoned) > 0, "nothing abandoned");
    assert!(counts(Status::Rejected) > 0, "nothing rejected");
    // The summary line's counts are the stored rows': a spill is a rejection, not a failure.
    assert_eq!(summary.candidates_timed, counts(Status::Ok));
    assert_eq!(summary.candidates_abandoned, counts(Status::Abandoned));
    assert_eq!(summary.candidates_rejected, counts(Status::Rejected));
    assert_eq!(summary.candidates_failed, counts(Status::WrongResult));
    for m in stored.values() {
        assert_eq!(m.cublas_us, Some(200.0));
        assert_eq!(m.source, Source::Measured);
        match m.status {
            Status::Ok | Status::Abandoned => {
                assert!(m.verified && m.median_us.is_some() && m.runs == 10);
            }
            Status::WrongResult => assert!(!m.verified && m.error.is_some()),
            Status::Rejected => {
                assert!(!m.verified && m.median_us.is_none() && m.spill_bytes == Some(24))
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn slower_candidates_are_abandoned_against_the_best_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("t.sqlite")).unwrap();
    let (calls, result) = run(None, &db, dir.path());
    result.unwrap();
    let stored = rows(&db);
    // Per problem, in the order run: the bar passed is the fastest time timed before it.
    let mut bar: HashMap<Problem, Option<f64>> = HashMap::new();
    for call in &calls {
        let expected = bar.get(&call.problem).copied().flatten();
        assert_eq!(call.best_us, expected, "{call:?}");
        let row = &stored[&(call.problem.to_string(), call.kernel.clone())];
        if row.status == Status::Ok {
            let t = row.median_us.unwrap();
            bar.insert(call.problem, Some(expected.map_or(t, |b: f64| b.min(t))));
        }
        if row.status == Status::Abandoned {
            assert!(row.median_us.unwrap() > ABANDON * expected.unwrap());
        }
    }
}

#[test]
fn the_best_entry_is_the_fastest_verified_timing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("t.sqlite")).unwrap();
    run(None, &db, dir.path()).1.unwrap();
    let stored = rows(&db);
    let best = best(&db);
    for problem in problems() {
        let fastest = stored
            .values()
            .filter(|m| m.problem == problem && m.status == Status::Ok)
            .min_by(|a, b| a.median_us.partial_cmp(&b.median_us).unwrap())
            .unwrap();
        assert_eq!(best[&problem], fastest.config.name(), "{problem}");
        assert!(!fake_wrong(&fastest.config));
    }
}

#[test]
fn a_run_killed_by_a_fault_resumes_without_running_anything_twice() {
    let dir = tempfile::tempdir().unwrap();
    // The uninterrupted run: the ground truth.
    let clean = Database::open(&dir.path().join("clean.sqlite")).unwrap();
    let (whole, result) = run(None, &clean, dir.path());
    result.unwrap();
    // The fault: a kernel of the fifth problem that is not its best, after others of it ran.
    let victim = problems()[4];
    let of_victim: Vec<&Call> = whole.iter().filter(|c| c.problem == victim).collect();
    let clean_rows = rows(&clean);
    let faulty = of_victim[1..]
        .iter()
        .filter(|c| clean_rows[&(victim.to_string(), c.kernel.clone())].status != Status::Ok)
        .map(|c| c.kernel.clone())
        .next()
        .expect("a kernel of the victim that is not its best");

    let db = Database::open(&dir.path().join("t.sqlite")).unwrap();
    let (first, result) = run(Some((victim, faulty.clone())), &db, dir.path());
    let err = result.unwrap_err();
    assert!(err.is_restartable(), "{err}");
    let after_fault = rows(&db);
    let failed = &after_fault[&(victim.to_string(), faulty.clone())];
    assert_eq!(failed.status, Status::LaunchFailed, "the fault is stored");
    assert!(!db
        .is_problem_done(
            "h200",
            &victim,
            nmtune::codegen::templates_checksum(&victim),
            Source::Measured
        )
        .unwrap());

    // A fresh process resumes: nothing stored is run again, the faulting kernel included.
    let (second, result) = run(None, &db, dir.path());
    result.unwrap();
    for call in &second {
        let key = (call.problem.to_string(), call.kernel.clone());
        assert!(!after_fault.contains_key(&key), "ran {key:?} twice");
    }
    assert_eq!(
        first.len() + second.len(),
        whole.len(),
        "every candidate ran exactly once over both runs"
    );
    assert_eq!(
        best(&db),
        best(&clean),
        "ends where an uninterrupted run ends"
    );
}

#[test]
fn a_benchmark_runs_the_same_loop_times_every_kernel_to_the_end_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // The plans a user asks for: the pruned candidates of every problem.
    let plans: Vec<(Problem, Vec<KernelConfig>)> = problems()
        .into_iter()
        .map(|p| {
            let configs = nmtune::tuner::search::candidates(&p, &h200(), Strategy::Pruned);
            (p, configs)
        })
        .collect();
    let calls = Rc::new(RefCell::new(Vec::new()));
    let fake = Fake {
        calls: Rc::clone(&calls),
        fault: None,
    };
    let mut kept: Vec<Measurement> = Vec::new();
    let mut finished: Vec<Problem> = Vec::new();
    let mut bench = Benchmark::new(|problem: &Problem, rows: Vec<Measurement>| {
        kept.extend(rows);
        finished.push(*problem);
        Ok(())
    });
    run_plans(fake, "h200", &plans, &mut bench, true).unwrap();
    drop(bench);
    let calls = calls.borrow();
    let asked: usize = plans.iter().map(|(_, c)| c.len()).sum();
    assert_eq!(calls.len(), asked, "every kernel asked for ran once");
    assert!(
        calls.iter().all(|c| c.best_us.is_none()),
        "no bar: nothing abandoned"
    );
    assert_eq!(kept.len(), asked, "one row per kernel");
    assert!(kept.iter().all(|r| r.status != Status::Abandoned));
    assert_eq!(finished.len(), problems().len(), "every problem ended once");
    let finished: HashSet<Problem> = finished.into_iter().collect();
    assert_eq!(finished, problems().into_iter().collect::<HashSet<_>>());
    // The same kernels through the tuning run abandon some, and store what they gave.
    let db = Database::open(&dir.path().join("t.sqlite")).unwrap();
    run(None, &db, dir.path()).1.unwrap();
    assert!(rows(&db).values().any(|m| m.status == Status::Abandoned));
}

/// Run the loop with `strategy` on `db`; the kernels it ran, per problem.
fn run_with(strategy: Strategy, db: &Database, dir: &Path) -> HashMap<Problem, HashSet<String>> {
    let opts = TuneOptions {
        strategy,
        ..options(dir)
    };
    run_with_opts(db, &opts)
}

/// [`run_with`] with other options.
fn run_with_opts(db: &Database, opts: &TuneOptions) -> HashMap<Problem, HashSet<String>> {
    let calls = Rc::new(RefCell::new(Vec::new()));
    let fake = Fake {
        calls: Rc::clone(&calls),
        fault: None,
    };
    tune_with_runner(fake, &h200(), &problems(), db, opts).unwrap();
    let mut ran: HashMap<Problem, HashSet<String>> = HashMap::new();
    for call in calls.borrow().iter() {
        ran.entry(call.problem)
            .or_default()
            .insert(call.kernel.clone());
    }
    ran
}

/// Run the loop over `problems` with a fake that never faults; every call it saw.
fn tune_calls(problems: &[Problem], db: &Database, opts: &TuneOptions) -> Vec<Call> {
    let calls = Rc::new(RefCell::new(Vec::new()));
    let fake = Fake {
        calls: Rc::clone(&calls),
        fault: None,
    };
    tune_with_runner(fake, &h200(), problems, db, opts).unwrap();
    let ran: Vec<Call> = calls.borrow().clone();
    ran
}

/// The kernels the warm strategy offers `problem` given the timed `rows`, and whether it left
/// some of them out: the fastest earlier configurations, the Table I seeds and the default, in
/// that order, then the transposing twins of the first row-copying ones, the row-chunk
/// variants of the first whole tiles among them, the stream-K variants of the first tiles
/// that do not split k, the other splits of the first tiles, the other lane widths of the
/// first element-wise decode kernels and the cluster-summed pairs of the first splits.
fn warm_plan(rows: &[Measurement], problem: &Problem) -> (HashSet<String>, bool) {
    let mut timed: Vec<&Measurement> = rows
        .iter()
        .filter(|m| m.problem == *problem && m.verified && m.median_us.is_some())
        .filter(|m| matches!(m.status, Status::Ok | Status::Abandoned))
        .collect();
    timed.sort_by(|a, b| a.median_us.partial_cmp(&b.median_us).unwrap());
    let mut picked: Vec<KernelConfig> = Vec::new();
    for m in &timed {
        if picked.len() < nmtune::tuner::warm::WARM_TOP && !picked.contains(&m.config) {
            picked.push(m.config);
        }
    }
    let cut = timed.len() > nmtune::tuner::warm::WARM_TOP;
    let default = nmtune::kernels::table_one::default_config(problem, &h200()).unwrap();
    let seeds = search::table_one_seeds(problem, &h200());
    assert!(!seeds.is_empty(), "{problem}: no Table I seed to check");
    for cfg in seeds.into_iter().chain([default]) {
        if !picked.contains(&cfg) {
            picked.push(cfg);
        }
    }
    let twinned = search::with_transposed_twins(picked, problem, &h200());
    let twinned = search::with_tma_twins(twinned, problem, &h200(), search::TMA_TWINS_TOP);
    let chunked = search::with_row_chunks(twinned, problem, &h200());
    let streamed = search::with_stream_k(chunked, problem, &h200());
    let split = search::with_split_twins(streamed, problem, &h200());
    let laned = search::with_lane_twins(split, problem, &h200());
    let plan = search::with_cluster_sums(laned, problem, &h200())
        .iter()
        .map(KernelConfig::name)
        .collect();
    (plan, cut)
}

#[test]
fn a_warm_retune_offers_the_current_winners_variants_and_runs_only_what_is_new() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("t.sqlite")).unwrap();
    run(None, &db, dir.path()).1.unwrap();
    let before = db.measurements(Some("h200")).unwrap();
    let ran = run_with_opts(
        &db,
        &TuneOptions {
            strategy: Strategy::Warm,
            retune_since: Some(chrono::Utc::now()),
            ..options(dir.path())
        },
    );
    let mut new_somewhere = false;
    for problem in problems() {
        let stored: HashSet<String> = before
            .iter()
            .filter(|m| m.problem == problem)
            .map(Measurement::kernel_name)
            .collect();
        let expected = &warm_plan(&before, &problem).0 - &stored;
        new_somewhere |= !expected.is_empty();
        assert_eq!(
            ran.get(&problem).cloned().unwrap_or_default(),
            expected,
            "{problem}"
        );
    }
    assert!(
        new_somewhere,
        "the warm plan of the pruned winners added nothing to check"
    );
}

#[test]
fn a_warm_retune_offers_each_problem_the_winners_of_its_cell() {
    // Three layers of one cell (same m, pattern, L, layout and type) tuned with the pruned
    // strategy, so each has its own winner; then a warm re-tune.
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("t.sqlite")).unwrap();
    let pattern = NmPattern::new(8, 32).unwrap();
    let cell: Vec<Problem> = [(1024, 2048), (2048, 4096), (4096, 1024)]
        .iter()
        .map(|&(n, k)| Problem::new(256, n, k, pattern, 32).unwrap())
        .collect();
    let tune = |opts: &TuneOptions| tune_calls(&cell, &db, opts);
    tune(&options(dir.path()));
    let winners = best(&db);
    let before = rows(&db);
    let ran = tune(&TuneOptions {
        strategy: Strategy::Warm,
        retune_since: Some(chrono::Utc::now()),
        ..options(dir.path())
    });
    let mut offered = 0;
    for problem in &cell {
        for (other, name) in &winners {
            let won = KernelConfig::parse_name(name).unwrap();
            for cfg in [won, KernelConfig { split_k: 1, ..won }] {
                let runs = nmtune::codegen::validate_for_problem(&cfg, problem).is_ok()
                    && nmtune::codegen::validate(&cfg, &h200()).is_ok();
                let stored = before.contains_key(&(problem.to_string(), cfg.name()));
                if other == problem || !runs || stored {
                    continue;
                }
                offered += 1;
                assert!(
                    ran.iter()
                        .any(|c| c.problem == *problem && c.kernel == cfg.name()),
                    "{problem}: the winner of {other}, {}, was not timed",
                    cfg.name()
                );
            }
        }
    }
    assert!(
        offered > 0,
        "the layers' winners were timed on every layer already"
    );
}

#[test]
fn a_warm_retune_offers_each_problem_the_fastest_kernels_of_its_other_a_layout() {
    // One product with A in both layouts, tuned with the pruned strategy (each layout ranks
    // its own candidates), then a warm re-tune.
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("t.sqlite")).unwrap();
    let pattern = NmPattern::new(4, 32).unwrap();
    let row = Problem::new(256, 2048, 4096, pattern, 32).unwrap();
    let both = [row, row.with_layout(ALayout::ColMajor).unwrap()];
    let tune = |opts: &TuneOptions| tune_calls(&both, &db, opts);
    tune(&options(dir.path()));
    let before = db.measurements(Some("h200")).unwrap();
    let ran = tune(&TuneOptions {
        strategy: Strategy::Warm,
        retune_since: Some(chrono::Utc::now()),
        ..options(dir.path())
    });
    let mut offered = 0;
    for (problem, twin) in [(both[0], both[1]), (both[1], both[0])] {
        let mut fastest: Vec<&Measurement> = before
            .iter()
            .filter(|m| m.problem == twin && m.median_us.is_some())
            .collect();
        fastest.sort_by(|a, b| a.median_us.partial_cmp(&b.median_us).unwrap());
        let mut won: Vec<KernelConfig> = Vec::new();
        for m in fastest {
            if won.len() < nmtune::tuner::warm::LAYOUT_TWINS_TOP && !won.contains(&m.config) {
                won.push(m.config);
            }
        }
        for cfg in won {
            let cfg = KernelConfig {
                a_copy: cfg.a_copy.layout_twin(),
                ..cfg
            };
            assert_eq!(cfg.a_layout(), problem.a_layout);
            let runs = nmtune::codegen::validate_for_problem(&cfg, &problem).is_ok()
                && nmtune::codegen::validate(&cfg, &h200()).is_ok();
            let stored = before
                .iter()
                .any(|m| m.problem == problem && m.config == cfg);
            if !runs || stored {
                continue;
            }
            offered += 1;
            assert!(
                ran.iter()
                    .any(|c| c.problem == problem && c.kernel == cfg.name()),
                "{problem}: {} of the other layout's winners was not timed",
                cfg.name()
            );
        }
    }
    assert!(
        offered > 0,
        "every layout twin of the winners was timed already"
    );
}

#[test]
fn a_local_retune_times_the_one_parameter_neighbours_of_each_winner() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("t.sqlite")).unwrap();
    run(None, &db, dir.path()).1.unwrap();
    let winners = best(&db);
    let before = rows(&db);
    let ran = run_with_opts(
        &db,
        &TuneOptions {
            strategy: Strategy::Local,
            retune_since: Some(chrono::Utc::now()),
            ..options(dir.path())
        },
    );
    let mut offered = 0;
    for problem in problems() {
        let won = KernelConfig::parse_name(&winners[&problem]).unwrap();
        let near = search::neighbours(&won, &problem, &h200());
        assert!(near.len() > 3, "{problem}: {} neighbours", near.len());
        for cfg in near {
            assert_ne!(cfg, won);
            if before.contains_key(&(problem.to_string(), cfg.name())) {
                continue;
            }
            offered += 1;
            assert!(
                ran.get(&problem).is_some_and(|r| r.contains(&cfg.name())),
                "{problem}: {}, a neighbour of the winner {}, was not timed",
                cfg.name(),
                won.name()
            );
        }
    }
    assert!(offered > 0, "every neighbour was timed already");
}

#[test]
fn the_warm_strategy_times_the_earlier_winners_again_and_searches_where_none_are_stored() {
    // A pruned tuning, then its rows as an earlier template's would stand after a template
    // change: another checksum, in a second database, for all but the last two problems.
    let dir = tempfile::tempdir().unwrap();
    let first = Database::open(&dir.path().join("first.sqlite")).unwrap();
    run(None, &first, dir.path()).1.unwrap();
    let all = problems();
    let (with_history, without) = all.split_at(4);
    let earlier: Vec<Measurement> = first
        .measurements(Some("h200"))
        .unwrap()
        .into_iter()
        .filter(|m| with_history.contains(&m.problem))
        .map(|m| Measurement {
            template_checksum: "an-earlier-template".into(),
            kernel_checksum: None,
            ..m
        })
        .collect();
    let db = Database::open(&dir.path().join("changed.sqlite")).unwrap();
    db.record_all(&earlier).unwrap();

    let ran = run_with(Strategy::Warm, &db, dir.path());
    let mut truncated = 0;
    for problem in with_history {
        let (expected, cut) = warm_plan(&earlier, problem);
        truncated += usize::from(cut);
        assert_eq!(ran[problem], expected, "{problem}");
    }
    assert!(
        truncated > 0,
        "no problem had more earlier timings than the warm strategy takes"
    );
    for problem in without {
        let pruned: HashSet<String> = search::candidates(problem, &h200(), Strategy::Pruned)
            .iter()
            .map(|c| c.name())
            .collect();
        assert_eq!(ran[problem], pruned, "{problem}");
    }
    // Every problem is done with this build's templates, and its best entry is current.
    let current = best(&db);
    for problem in &all {
        assert!(ran[problem].contains(&current[problem]), "{problem}");
    }
}

#[test]
fn a_template_change_times_again_only_the_kernels_it_changed() {
    // A pruned tuning's rows as they stand after a template change that left every other
    // kernel's code as it was: another template checksum, and the kernel checksum of the
    // code this build generates on every other row (an older one on the rest).
    let dir = tempfile::tempdir().unwrap();
    let first = Database::open(&dir.path().join("first.sqlite")).unwrap();
    run(None, &first, dir.path()).1.unwrap();
    let earlier: Vec<Measurement> = first
        .measurements(Some("h200"))
        .unwrap()
        .into_iter()
        .enumerate()
        .map(|(i, m)| Measurement {
            template_checksum: "an-earlier-template".into(),
            kernel_checksum: Some(if i % 2 == 0 {
                nmtune::codegen::kernel_checksum(&m.config).to_string()
            } else {
                "changed-since".to_string()
            }),
            ..m
        })
        .collect();
    let db = Database::open(&dir.path().join("changed.sqlite")).unwrap();
    db.record_all(&earlier).unwrap();

    let ran = run_with(Strategy::Warm, &db, dir.path());
    let after = db.measurements(Some("h200")).unwrap();
    let current = |m: &Measurement| m.template_checksum != "an-earlier-template";
    for old in &earlier {
        let name = old.kernel_name();
        let ran_again = ran
            .get(&old.problem)
            .is_some_and(|kernels| kernels.contains(&name));
        let now: Vec<&Measurement> = after
            .iter()
            .filter(|m| m.problem == old.problem && m.kernel_name() == name && current(m))
            .collect();
        if old.kernel_checksum.as_deref() == Some(nmtune::codegen::kernel_checksum(&old.config)) {
            // Unchanged code: carried over as this build's row, not run again.
            assert!(!ran_again, "{name} on {} ran again", old.problem);
            assert_eq!(now.len(), 1, "{name} on {}", old.problem);
            assert_eq!(now[0].median_us, old.median_us);
            assert_eq!(now[0].status, old.status);
        } else {
            // Changed code: never carried; timed again where the warm plan offers it.
            assert!(ran_again || now.is_empty(), "{name} on {}", old.problem);
        }
    }
    // Every problem's best entry is the fastest verified timing of this build's rows.
    for problem in problems() {
        let fastest = after
            .iter()
            .filter(|m| m.problem == problem && current(m))
            .filter(|m| m.status == Status::Ok && m.verified)
            .min_by(|a, b| a.median_us.partial_cmp(&b.median_us).unwrap())
            .map(Measurement::kernel_name);
        assert_eq!(best(&db).get(&problem).cloned(), fastest, "{problem}");
    }
}

/// The kernels of `strategy`'s candidates for `problem`.
fn names(problem: &Problem, strategy: Strategy) -> HashSet<String> {
    search::candidates(problem, &h200(), strategy)
        .iter()
        .map(KernelConfig::name)
        .collect()
}

#[test]
fn a_retune_runs_only_what_a_wider_search_adds_and_a_resumed_one_does_not_start_over() {
    // A tuning with the model strategy's few candidates, then the pruned strategy's wider set.
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(&dir.path().join("t.sqlite")).unwrap();
    let narrow = TuneOptions {
        strategy: Strategy::Model,
        ..options(dir.path())
    };
    run_opts(None, &db, &narrow).1.unwrap();
    let narrow_best = best_times(&db);
    let wide = options(dir.path());
    // Without --retune every problem is done: nothing runs.
    let (calls, result) = run_opts(None, &db, &wide);
    assert!(calls.is_empty() && result.unwrap().problems_skipped == problems().len());

    // A re-tune with the wider strategy, killed by a fault midway.
    let retune = TuneOptions {
        retune_since: Some(chrono::Utc::now()),
        ..wide.clone()
    };
    let added: HashMap<Problem, HashSet<String>> = problems()
        .iter()
        .map(|p| {
            let new = &names(p, Strategy::Pruned) - &names(p, Strategy::Model);
            (*p, new)
        })
        .collect();
    let scratch = Database::open(&dir.path().join("s.sqlite")).unwrap();
    let (whole, _) = run_opts(None, &scratch, &wide);
    let victim = whole[whole.len() / 2].problem;
    let faulty = whole
        .iter()
        .filter(|c| c.problem == victim && added[&victim].contains(&c.kernel))
        .nth(2)
        .expect("a new kernel of the victim")
        .kernel
        .clone();
    let (first, result) = run_opts(Some((victim, faulty)), &db, &retune);
    assert!(result.unwrap_err().is_restartable());
    // The fresh process gets the same instant, and resumes.
    let (second, result) = run_opts(None, &db, &retune);
    result.unwrap();
    let mut ran: HashMap<Problem, HashSet<String>> = HashMap::new();
    for call in first.iter().chain(&second) {
        let fresh = ran
            .entry(call.problem)
            .or_default()
            .insert(call.kernel.clone());
        assert!(fresh, "{} ran twice", call.kernel);
        assert!(
            added[&call.problem].contains(&call.kernel),
            "{} was timed before",
            call.kernel
        );
    }
    assert_eq!(ran, added, "every added kernel ran once over both runs");
    // A problem's first new kernel had to beat the best stored before.
    for problem in problems() {
        let first_call = first.iter().chain(&second).find(|c| c.problem == problem);
        assert_eq!(
            first_call.unwrap().best_us,
            Some(narrow_best[&problem]),
            "{problem}"
        );
    }
    // The same instant again: every problem was searched since, so nothing runs.
    let (calls, result) = run_opts(None, &db, &retune);
    assert!(calls.is_empty() && result.unwrap().problems_skipped == problems().len());
    // A later re-tune searches again but finds nothing new to run.
    let later = TuneOptions {
        retune_since: Some(chrono::Utc::now()),
        ..wide.clone()
    };
    let (calls, result) = run_opts(None, &db, &later);
    assert!(calls.is_empty() && result.unwrap().problems_skipped == problems().len());
    // It ends with the fastest of both searches from scratch.
    let wide_best = best_times(&scratch);
    for (problem, time) in best_times(&db) {
        assert_eq!(
            time,
            narrow_best[&problem].min(wide_best[&problem]),
            "{problem}"
        );
    }
}

/// The best entry's time of every problem.
fn best_times(db: &Database) -> HashMap<Problem, f64> {
    best_by(db, |m| m.median_us.unwrap())
}
