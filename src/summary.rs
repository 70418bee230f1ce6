//! Speed-up summaries shared by `nmtune report` and `nmtune bench`: the geometric mean of
//! the speed-up over cuBLAS per (element type, A layout, m, N:M, L) row, and the worst problem
//! of each row.

use crate::problem::{ALayout, Dtype, Problem};
use std::collections::BTreeMap;
use std::fmt::Write;

/// One row of the summary: all problems of one element type, A layout, m and sparsity
/// pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct SpeedupRow {
    pub dtype: Dtype,
    pub a_layout: ALayout,
    pub m: usize,
    /// "N:M".
    pub nm: String,
    pub l: usize,
    pub problems: usize,
    pub geomean: f64,
    pub worst: f64,
    pub worst_problem: Problem,
}

/// Group `(problem, speed-up)` pairs by (element type, A layout, m, N:M, L); non-finite or
/// non-positive speed-ups are left out. Rows come sorted by type (FP32 first), layout
/// (row-major first), then by m, then by decreasing N/M (50 % sparsity first).
pub fn speedup_rows(results: &[(Problem, f64)]) -> Vec<SpeedupRow> {
    type Key = (Dtype, ALayout, usize, std::cmp::Reverse<u64>, u32, usize);
    let mut groups: BTreeMap<Key, Vec<(Problem, f64)>> = BTreeMap::new();
    for (p, s) in results.iter().filter(|(_, s)| s.is_finite() && *s > 0.0) {
        let density_key = std::cmp::Reverse((p.nm.density() * 1e6).round() as u64);
        groups
            .entry((p.dtype, p.a_layout, p.m, density_key, p.nm.m, p.l))
            .or_default()
            .push((*p, *s));
    }
    groups
        .into_values()
        .map(|items| {
            let log_sum: f64 = items.iter().map(|(_, s)| s.ln()).sum();
            let (worst_problem, worst) = items
                .iter()
                .copied()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("groups are never empty");
            SpeedupRow {
                dtype: worst_problem.dtype,
                a_layout: worst_problem.a_layout,
                m: worst_problem.m,
                nm: worst_problem.nm.to_string(),
                l: worst_problem.l,
                problems: items.len(),
                geomean: (log_sum / items.len() as f64).exp(),
                worst,
                worst_problem,
            }
        })
        .collect()
}

/// The summary as a small text table.
pub fn speedup_table(rows: &[SpeedupRow]) -> String {
    let mut out = format!(
        "{:<3} {:>5} {:>6} {:>3} {:>8} {:>8} {:>6}  {}\n",
        "A", "m", "N:M", "L", "problems", "geomean", "worst", "worst problem"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<3} {:>5} {:>6} {:>3} {:>8} {:>7.2}x {:>5.2}x  {}",
            r.a_layout.as_str(),
            r.m,
            r.nm,
            r.l,
            r.problems,
            r.geomean,
            r.worst,
            r.worst_problem
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::NmPattern;

    fn problem(m: usize, n: u32) -> Problem {
        Problem::new(m, 64, 64, NmPattern::new(n, 32).unwrap(), 32).unwrap()
    }

    #[test]
    fn geomean_and_worst_per_row() {
        let rows = speedup_rows(&[
            (problem(256, 8), 2.0),
            (problem(256, 8), 8.0),
            (problem(256, 16), 1.5),
            (problem(4096, 8), f64::NAN),
        ]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].nm, "16:32");
        assert_eq!(rows[1].nm, "8:32");
        assert!((rows[1].geomean - 4.0).abs() < 1e-12);
        assert_eq!(rows[1].worst, 2.0);
        assert_eq!(rows[1].problems, 2);
    }

    #[test]
    fn layouts_are_summarised_apart() {
        let col = |m, n| problem(m, n).with_layout(ALayout::ColMajor).unwrap();
        let rows = speedup_rows(&[
            (col(256, 8), 3.0),
            (problem(256, 8), 2.0),
            (col(256, 8), 3.0),
        ]);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].a_layout, rows[0].problems), (ALayout::RowMajor, 1));
        assert_eq!((rows[1].a_layout, rows[1].problems), (ALayout::ColMajor, 2));
        let table = speedup_table(&rows);
        assert!(
            table.lines().nth(2).unwrap().starts_with("col   256"),
            "{table}"
        );
    }
}
