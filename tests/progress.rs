//! The progress line's ETA (issue 12: `1/400 problems, ETA 12m` for a run that took 2 s): it
//! comes from the rate of the units of work this run did, counted from the first one.

use nmtune::tuner::progress::{format_eta, Rate};
use std::time::{Duration, Instant};

#[test]
fn set_up_before_the_first_unit_does_not_count() {
    let t0 = Instant::now();
    let ms = |n: u64| t0 + Duration::from_millis(n);
    // 1.9 s of set-up (enumerating, predicting, compiling), then 400 units of 5 ms each.
    let mut rate = Rate::new(400);
    assert_eq!(
        rate.eta(ms(1900)),
        None,
        "no estimate before a unit is done"
    );
    rate.begin(ms(1900));
    rate.finish(1);
    let eta = rate.eta(ms(1905)).unwrap().as_secs_f64();
    assert!((eta - 399.0 * 0.005).abs() < 1e-6, "{eta} s");
    assert_eq!(format_eta(rate.eta(ms(1905))), "2s");
    // Halfway, the estimate is the time spent so far again.
    rate.finish(199);
    let eta = rate.eta(ms(2900)).unwrap().as_secs_f64();
    assert!((eta - 1.0).abs() < 1e-6, "{eta} s");
}

#[test]
fn units_that_needed_no_work_leave_the_total_not_the_rate() {
    let t0 = Instant::now();
    // A resumed run: 300 of 400 candidates were measured before; each of the rest takes 1 s.
    let mut rate = Rate::new(400);
    rate.skip(300);
    rate.begin(t0);
    rate.finish(10);
    assert_eq!(rate.total(), 100);
    let eta = rate.eta(t0 + Duration::from_secs(10)).unwrap();
    assert_eq!(eta, Duration::from_secs(90));
    // Never below what is done, and done never beyond the total.
    rate.skip(1000);
    rate.finish(1000);
    assert_eq!((rate.done(), rate.total()), (10, 10));
    assert_eq!(rate.eta(t0 + Duration::from_secs(11)), Some(Duration::ZERO));
}
