//! Property-based fuzzing (proptest) of everything nmtune reads from a user: the shapes file,
//! the command line, the N:M format's parameters and data, problem shapes, sparsity strings
//! and kernel names. Nothing may panic; every error must be one non-empty line; every valid
//! input must round-trip.
//!
//! Each target runs [`CASES`] generated inputs and prints its count and wall time:
//!
//! ```sh
//! cargo test --release --test fuzz -- --nocapture
//! ```
//!
//! Seeds are random on every run (a failure prints the shrunk input); set
//! `PROPTEST_RNG_SEED=<n>` to replay one.

// The command line lives in the binary crate; compile its parser into this test so that
// clap's `try_parse_from` can be driven in-process (subcommands added there come along).
#[allow(dead_code)]
#[path = "../src/cli/mod.rs"]
mod cli;

use clap::Parser;
use nmtune::codegen::{self, ACopy, KernelConfig, WarpLayout};
use nmtune::format::{self, CompressedWeight, FormatError};
use nmtune::gpu::GpuProfile;
use nmtune::problem::{ALayout, Dtype, NmPattern, Problem};
use nmtune::shapes;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Generated inputs per target.
const CASES: u32 = 10_000;

/// How one generated input ended, for the printed tally.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Accepted,
    Rejected,
}

/// Run `check` on [`CASES`] inputs from `strategy`; panic with the shrunk input on failure.
fn fuzz<S: Strategy>(
    target: &str,
    strategy: S,
    check: impl Fn(S::Value) -> Result<Verdict, TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let config = Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let (accepted, rejected) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let started = Instant::now();
    let result = runner.run(&strategy, |value| {
        let counter = match check(value)? {
            Verdict::Accepted => &accepted,
            Verdict::Rejected => &rejected,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Ok(())
    });
    if let Err(failure) = result {
        panic!("fuzz target {target}: {failure}");
    }
    eprintln!(
        "fuzz {target}: {CASES} cases ({} accepted, {} rejected with an error) in {:.2} s",
        accepted.load(Ordering::Relaxed),
        rejected.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
}

/// An error text a user sees: non-empty and on one line.
fn check_one_line(text: &str) -> Result<(), TestCaseError> {
    prop_assert!(!text.trim().is_empty(), "empty error");
    prop_assert!(!text.contains('\n'), "error on several lines: {text:?}");
    prop_assert!(
        !text.contains('\r'),
        "error with a carriage return: {text:?}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// (a) The shapes file.

/// Check one shapes text: no panic; an error is one line naming the origin; an accepted file
/// yields valid, distinct problems.
fn check_shapes(text: &str) -> Result<Verdict, TestCaseError> {
    match shapes::parse(text, "fuzz.yaml") {
        Ok(set) => {
            prop_assert!(!set.is_empty());
            let mut seen = BTreeSet::new();
            for p in set.problems() {
                let again = Problem::new(p.m, p.n, p.k, p.nm, p.l);
                prop_assert_eq!(again, Ok(p), "accepted an invalid problem");
                prop_assert!(seen.insert(p.to_string()), "duplicate problem {}", p);
            }
            Ok(Verdict::Accepted)
        }
        Err(err) => {
            let text = err.to_string();
            check_one_line(&text)?;
            prop_assert!(
                text.starts_with("fuzz.yaml"),
                "error without origin: {text}"
            );
            prop_assert!(!err.message.trim().is_empty());
            Ok(Verdict::Rejected)
        }
    }
}

#[test]
fn shapes_parser_arbitrary_text() {
    let text = prop_oneof![
        any::<String>(),
        "[ -~\n\t]{0,200}",
        "[a-zA-Z0-9:,\\[\\]{}\\-#\"' \n.%~&*!|>]{0,200}",
        // Near-miss documents: a valid skeleton with random text spliced in.
        "[ -~\n]{0,40}".prop_map(|noise| format!(
            "defaults: {{ m: [256], sparsity: \"8:32\", L: 32 }}\nlayers:\n  - {{ n: 64, k: 64{noise} }}\n"
        )),
        "[ -~\n]{0,40}".prop_map(|noise| format!("layers:\n  - n: 64\n    k: 64\n{noise}")),
    ];
    fuzz("shapes/arbitrary-text", text, |t| check_shapes(&t));
}

/// A YAML scalar, mostly plausible, often wrong: sizes, negative and huge numbers, floats,
/// strings, nulls, booleans, empty collections.
fn yaml_scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![1u64, 4, 16, 32, 64, 96, 128, 256, 4096])
            .prop_map(|v| v.to_string()),
        1 => Just("0".to_string()),
        1 => any::<i64>().prop_map(|v| v.to_string()),
        1 => any::<u64>().prop_map(|v| v.to_string()),
        1 => Just("18446744073709551616".to_string()),
        1 => Just("-1".to_string()),
        1 => any::<f64>().prop_map(|v| format!("{v:?}")),
        1 => Just("1e400".to_string()),
        1 => Just(".nan".to_string()),
        1 => "[a-z]{0,6}",
        1 => prop::sample::select(vec!["~", "null", "true", "[]", "{}", "\"\"", "[[1]]"])
            .prop_map(str::to_string),
    ]
}

/// A sparsity item: "N:M" (also N > M, zero, huge, junk), fractions and percentages.
fn yaml_sparsity_item() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (0u32..40, 0u32..140).prop_map(|(n, m)| format!("\"{n}:{m}\"")),
        1 => (any::<u32>(), any::<u32>()).prop_map(|(n, m)| format!("\"{n}:{m}\"")),
        2 => prop::sample::select(vec![0.0f64, 0.5, 0.625, 0.75, 0.875, 0.3, 1.0, -0.5, 2.0])
            .prop_map(|f| f.to_string()),
        1 => (0u32..120).prop_map(|p| format!("\"{p}%\"")),
        1 => "\"[0-9:.%a-z -]{0,8}\"",
        1 => yaml_scalar(),
    ]
}

/// `one` or a flow list of 0..4 of them, sometimes a list nested too deep.
fn one_or_list(item: BoxedStrategy<String>) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => item.clone(),
        2 => prop::collection::vec(item.clone(), 0..4)
            .prop_map(|items| format!("[{}]", items.join(", "))),
        1 => item.prop_map(|v| format!("[[{v}]]")),
    ]
}

/// A name: any text, quoted as JSON (a valid YAML double-quoted scalar), so that control
/// characters and quotes reach the parser and its error messages.
fn yaml_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_0-9]{1,10}",
        any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap()),
        Just("\"a\\nb\"".to_string()),
    ]
}

/// Values of the settings of a plausible or a hostile document.
#[derive(Clone, Copy, Debug)]
enum Mood {
    /// Values a user would write (the document may still lack a key or mix patterns).
    Plausible,
    /// Anything: negative, huge, wrong types, N > M, unknown keys.
    Hostile,
}

fn pick(values: &[&'static str]) -> BoxedStrategy<String> {
    prop::sample::select(values.to_vec())
        .prop_map(str::to_string)
        .boxed()
}

/// Optional `key: value` pairs of a settings map (defaults or layer overrides).
fn yaml_settings(mood: Mood) -> BoxedStrategy<Vec<(String, String)>> {
    let (m, sparsity, window, l) = match mood {
        Mood::Plausible => (
            pick(&["1", "16", "256", "4096"]),
            pick(&[
                "\"8:32\"",
                "\"16:32\"",
                "0.75",
                "\"50%\"",
                "0.875",
                "\"2:4\"",
            ]),
            pick(&["32", "4"]),
            pick(&["32", "16", "4"]),
        ),
        Mood::Hostile => (
            yaml_scalar().boxed(),
            yaml_sparsity_item().boxed(),
            yaml_scalar().boxed(),
            yaml_scalar().boxed(),
        ),
    };
    let unknown = match mood {
        Mood::Plausible => Just(None).boxed(),
        Mood::Hostile => prop::option::weighted(0.1, ("[a-zA-Z]{1,6}", yaml_scalar())).boxed(),
    };
    let present = match mood {
        Mood::Plausible => 0.9,
        Mood::Hostile => 0.5,
    };
    (
        prop::option::weighted(present, one_or_list(m)),
        prop::option::weighted(present, one_or_list(sparsity)),
        prop::option::weighted(present, window),
        prop::option::weighted(present, l),
        unknown,
    )
        .prop_map(|(m, sparsity, window, l, unknown)| {
            let mut out = Vec::new();
            let named = [("m", m), ("sparsity", sparsity), ("M", window), ("L", l)];
            for (key, value) in named {
                if let Some(value) = value {
                    out.push((key.to_string(), value));
                }
            }
            out.extend(unknown);
            out
        })
        .boxed()
}

fn yaml_layer(mood: Mood) -> BoxedStrategy<Vec<(String, String)>> {
    let size = match mood {
        Mood::Plausible => pick(&["32", "64", "128", "4096", "11008"]),
        Mood::Hostile => yaml_scalar().boxed(),
    };
    (
        prop::option::of(yaml_name()),
        prop::option::of(yaml_name()),
        prop::option::weighted(0.97, size.clone()),
        prop::option::weighted(0.97, size),
        prop::option::weighted(0.3, yaml_settings(mood)),
    )
        .prop_map(|(model, name, n, k, settings)| {
            let mut out = Vec::new();
            let named = [("model", model), ("name", name), ("n", n), ("k", k)];
            for (key, value) in named {
                if let Some(value) = value {
                    out.push((key.to_string(), value));
                }
            }
            out.extend(settings.unwrap_or_default());
            out
        })
        .boxed()
}

/// A structure-aware shapes document, rendered in block or flow style.
fn yaml_document(mood: Mood) -> impl Strategy<Value = String> {
    (
        prop::option::weighted(0.9, yaml_settings(mood)),
        prop::option::weighted(0.97, prop::collection::vec(yaml_layer(mood), 0..4)).prop_filter(
            "a plausible document has layers",
            move |layers| {
                matches!(mood, Mood::Hostile) || layers.as_ref().is_some_and(|l| !l.is_empty())
            },
        ),
        any::<bool>(),
        prop::option::weighted(0.05, "[ -~]{0,12}"),
    )
        .prop_map(|(defaults, layers, flow, trailing)| {
            let map = |pairs: &[(String, String)]| {
                let items: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                format!("{{ {} }}", items.join(", "))
            };
            let mut doc = String::from("# generated\n");
            if let Some(defaults) = &defaults {
                if flow {
                    doc += &format!("defaults: {}\n", map(defaults));
                } else {
                    doc += "defaults:\n";
                    for (k, v) in defaults {
                        doc += &format!("  {k}: {v}\n");
                    }
                }
            }
            if let Some(layers) = &layers {
                doc += "layers:\n";
                for layer in layers {
                    if flow {
                        doc += &format!("  - {}\n", map(layer));
                    } else if layer.is_empty() {
                        doc += "  - {}\n";
                    } else {
                        for (i, (k, v)) in layer.iter().enumerate() {
                            let lead = if i == 0 { "  - " } else { "    " };
                            doc += &format!("{lead}{k}: {v}\n");
                        }
                    }
                }
            }
            if let Some(trailing) = trailing {
                doc += &trailing;
            }
            doc
        })
}

/// A plausible document with one number replaced by a hostile scalar.
fn yaml_document_one_bad_value() -> impl Strategy<Value = String> {
    (
        yaml_document(Mood::Plausible),
        any::<prop::sample::Index>(),
        yaml_scalar(),
    )
        .prop_map(|(doc, at, bad)| {
            let numbers = number_spans(&doc);
            if numbers.is_empty() {
                return doc;
            }
            let (start, end) = numbers[at.index(numbers.len())];
            format!("{}{bad}{}", &doc[..start], &doc[end..])
        })
}

/// Byte ranges of the runs of ASCII digits in `text`.
fn number_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        match (c.is_ascii_digit(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    spans
}

#[test]
fn shapes_parser_generated_documents() {
    let doc = prop_oneof![
        yaml_document(Mood::Plausible),
        yaml_document(Mood::Hostile),
        yaml_document_one_bad_value(),
    ];
    fuzz("shapes/generated-yaml", doc, |doc| check_shapes(&doc));
}

// ---------------------------------------------------------------------------------------
// (b) The command line.

/// One command-line word: flags and values nmtune knows, near misses, and any text.
fn cli_word() -> impl Strategy<Value = OsString> {
    let known = prop::sample::select(vec![
        "--gpu",
        "--shapes",
        "--db",
        "--strategy",
        "--backend",
        "--force",
        "--runs",
        "--cache-dir",
        "--quiet",
        "-q",
        "report",
        "--format",
        "--help",
        "-h",
        "--version",
        "help",
        "h100",
        "auto",
        "pruned",
        "exhaustive",
        "model",
        "gpu",
        "table",
        "json",
        "csv",
        "0",
        "1",
        "1000",
        "1001",
        "-5",
        "99999999999999999999",
        "--",
        "-",
        "--gpu=h100",
        "--runs=abc",
        "--runs=",
        "shapes/example.yaml",
        "",
    ]);
    prop_oneof![
        6 => known.prop_map(OsString::from),
        2 => any::<String>().prop_map(OsString::from),
        1 => "--[a-z-]{0,12}(=[ -~]{0,6})?".prop_map(OsString::from),
        1 => prop::collection::vec(any::<u8>(), 0..12).prop_map(os_bytes),
    ]
}

/// Bytes as an OS string, invalid UTF-8 included where the platform allows it.
fn os_bytes(bytes: Vec<u8>) -> OsString {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        OsString::from_vec(bytes)
    }
    #[cfg(not(unix))]
    {
        OsString::from(String::from_utf8_lossy(&bytes).into_owned())
    }
}

#[test]
fn command_line_parser_is_consistent() {
    use clap::CommandFactory;
    cli::Cli::command().debug_assert();
}

#[test]
fn command_line_parser_arbitrary_arguments() {
    let args = prop::collection::vec(cli_word(), 0..10);
    fuzz("cli/arguments", args, |words| {
        let argv = std::iter::once(OsString::from("nmtune")).chain(words);
        match cli::Cli::try_parse_from(argv) {
            Ok(parsed) => {
                let _ = format!("{parsed:?}");
                Ok(Verdict::Accepted)
            }
            Err(err) => {
                // A clap error: it has a kind and renders (help and version are errors too).
                let _ = err.kind();
                let rendered = err.render().to_string();
                prop_assert!(!rendered.trim().is_empty(), "empty clap error");
                Ok(Verdict::Rejected)
            }
        }
    });
}

// ---------------------------------------------------------------------------------------
// (c) The N:M format.

/// Parameters of one weight: shape, pattern and vector length, valid or not.
#[derive(Debug, Clone)]
struct WeightCase {
    k: usize,
    n: usize,
    nm_n: u32,
    nm_m: u32,
    l: usize,
    seed: u64,
    /// Make the data one element short (a size mismatch).
    short_data: bool,
    /// (k_s, n_s) of a col_info tiling, as multipliers or raw values.
    tiling: (u32, u32),
}

fn window_m() -> impl Strategy<Value = u32> {
    prop_oneof![
        6 => 1u32..=8,
        4 => prop::sample::select(vec![16u32, 32, 64, 128]),
        1 => Just(0u32),
        1 => 129u32..300,
    ]
}

fn vector_l() -> impl Strategy<Value = usize> {
    prop_oneof![
        6 => 1usize..=8,
        3 => prop::sample::select(vec![16usize, 32, 64, 128]),
        1 => Just(0usize),
        1 => 129usize..200,
    ]
}

fn weight_case() -> impl Strategy<Value = WeightCase> {
    (window_m(), vector_l()).prop_flat_map(|(m, l)| {
        let k_max = 2 * m.max(1) as usize + 3;
        let n_max = 2 * l.max(1) + 3;
        (
            0usize..=k_max,
            0usize..=n_max,
            prop_oneof![8 => 1u32..=m.max(1), 1 => Just(0u32), 1 => m.saturating_add(1)..m.saturating_add(3)],
            Just(m),
            Just(l),
            any::<u64>(),
            prop::bool::weighted(0.03),
            (0u32..8, 0u32..8),
        )
            .prop_map(|(k, n, nm_n, nm_m, l, seed, short_data, tiling)| WeightCase {
                k,
                n,
                nm_n,
                nm_m,
                l,
                seed,
                short_data,
                tiling,
            })
    })
}

/// Non-zero values of random sign and magnitude.
fn nonzero_data(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..len)
        .map(|_| {
            let magnitude: f32 = rng.gen_range(0.25..4.0);
            if rng.gen() {
                magnitude
            } else {
                -magnitude
            }
        })
        .collect()
}

/// Magnitude pruning written out plainly: per window of M rows (padded with zero rows) and
/// group of L columns (padded likewise), keep the N rows with the largest Σ|v| over the
/// group, ties to the lower row. Returns the padded k_p×n_p weight with zeros elsewhere.
fn reference_prune(dense: &[f32], k: usize, n: usize, nm: NmPattern, l: usize) -> Vec<f32> {
    let (big_m, big_n) = (nm.m as usize, nm.n as usize);
    let (k_p, n_p) = (k.div_ceil(big_m) * big_m, n.div_ceil(l) * l);
    let mut out = vec![0.0f32; k_p * n_p];
    for window in 0..k_p / big_m {
        for group in 0..n_p / l {
            let cols = group * l..((group + 1) * l).min(n);
            let score = |pos: usize| -> f32 {
                let row = window * big_m + pos;
                if row >= k {
                    return 0.0;
                }
                cols.clone().map(|c| dense[row * n + c].abs()).sum()
            };
            let mut order: Vec<usize> = (0..big_m).collect();
            order.sort_by(|&a, &b| score(b).total_cmp(&score(a)).then(a.cmp(&b)));
            for &pos in &order[..big_n] {
                let row = window * big_m + pos;
                if row < k {
                    for c in cols.clone() {
                        out[row * n_p + c] = dense[row * n + c];
                    }
                }
            }
        }
    }
    out
}

fn format_params_valid(case: &WeightCase) -> bool {
    case.k > 0
        && case.n > 0
        && case.nm_n >= 1
        && case.nm_n <= case.nm_m
        && (1..=128).contains(&case.nm_m)
        && (1..=128).contains(&case.l)
        && !case.short_data
}

#[test]
fn nm_format_round_trips_and_col_info_is_consistent() {
    fuzz("format/prune-compress-col_info", weight_case(), |case| {
        let nm = NmPattern {
            n: case.nm_n,
            m: case.nm_m,
        };
        let len = (case.k * case.n).saturating_sub(case.short_data as usize);
        let dense = nonzero_data(len, case.seed);
        let result = format::prune_and_compress(&dense, case.k, case.n, nm, case.l);
        let (weight, padding) = match (result, format_params_valid(&case)) {
            (Ok(pair), true) => pair,
            (Err(err), false) => {
                check_one_line(&err.to_string())?;
                return Ok(Verdict::Rejected);
            }
            (Ok(_), false) => return Err(TestCaseError::fail("accepted invalid parameters")),
            (Err(err), true) => return Err(TestCaseError::fail(format!("refused: {err}"))),
        };
        let (big_m, k, n, l) = (nm.m as usize, case.k, case.n, case.l);
        prop_assert_eq!(padding.k_original, k);
        prop_assert_eq!(padding.n_original, n);
        prop_assert_eq!(padding.k_padded, k.div_ceil(big_m) * big_m);
        prop_assert_eq!(padding.n_padded, n.div_ceil(l) * l);
        prop_assert_eq!((weight.k, weight.n), (padding.k_padded, padding.n_padded));
        weight
            .validate()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;

        // Decompression gives back exactly the magnitude-pruned weight.
        let pruned =
            format::try_decompress(&weight).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(
            pruned == reference_prune(&dense, k, n, nm, l),
            "decompress ≠ magnitude pruning"
        );

        // Compressing the pruned weight again gives the same B' and D.
        let again = format::compress_pruned(&pruned, weight.k, weight.n, nm, l)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(again == weight, "compress_pruned(decompress(w)) ≠ w");

        // The PyTorch n×k entry point agrees.
        let mut nk = vec![0.0f32; k * n];
        for r in 0..k {
            for c in 0..n {
                nk[c * k + r] = dense[r * n + c];
            }
        }
        let (from_nk, _) = format::prune_and_compress_nk(&nk, n, k, nm, l)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(from_nk == weight, "n×k layout gives another weight");

        check_col_info(&weight, case.tiling)?;
        check_damaged_indices(&weight, case.seed)?;
        Ok(Verdict::Accepted)
    });
}

/// col_info for a tiling derived from `(a, b)`: valid tilings must be consistent, invalid
/// ones refused.
fn check_col_info(w: &CompressedWeight, (a, b): (u32, u32)) -> Result<(), TestCaseError> {
    let big_m = w.nm.m as usize;
    let k_s = match a {
        0 => 0,
        7 => big_m + 1,
        a => a as usize * big_m,
    };
    let n_s = match b {
        0 => 0,
        1 => 1,
        6 => w.l + 1,
        7 if w.l % 2 == 0 => w.l / 2,
        b => b as usize * w.l,
    };
    let valid = k_s > 0 && k_s % big_m == 0 && n_s > 0 && (n_s % w.l == 0 || w.l % n_s == 0);
    let info = match (format::build_col_info(w, k_s, n_s), valid) {
        (Ok(info), true) => info,
        (Err(err), false) => return check_one_line(&err.to_string()),
        (Ok(_), false) => return Err(TestCaseError::fail(format!("accepted tiling {k_s}×{n_s}"))),
        (Err(err), true) => return Err(TestCaseError::fail(format!("refused {k_s}×{n_s}: {err}"))),
    };
    let (q, w_rows) = (w.q(), w.w());
    let w_s = k_s / big_m * w.nm.n as usize;
    prop_assert_eq!(info.k_tiles, w.k.div_ceil(k_s));
    prop_assert_eq!(info.n_tiles, w.n.div_ceil(n_s));
    prop_assert_eq!(info.columns.len(), info.k_tiles * info.n_tiles * k_s);
    prop_assert_eq!(info.packed_indices.len(), w_rows * q);
    for kt in 0..info.k_tiles {
        let rows = kt * w_s..((kt + 1) * w_s).min(w_rows);
        for nt in 0..info.n_tiles {
            let tile = kt * info.n_tiles + nt;
            let count = info.counts[tile];
            prop_assert!(
                count >= 0 && count as usize <= k_s,
                "count {count} > k_s {k_s}"
            );
            let slots = &info.columns[tile * k_s..(tile + 1) * k_s];
            let listed = &slots[..count as usize];
            prop_assert!(listed.windows(2).all(|p| p[0] < p[1]), "columns not sorted");
            let first_col = nt * n_s;
            let last_col = ((nt + 1) * n_s).min(w.n) - 1;
            let groups = first_col / w.l..last_col / w.l + 1;
            let mut needed = BTreeSet::new();
            for u in rows.clone() {
                for j in groups.clone() {
                    let column = w.absolute_row(u, j);
                    needed.insert(column as i32);
                    let slot = info.packed_indices[u * q + j];
                    prop_assert!(slot >= 0 && slot < count, "slot {slot} outside 0..{count}");
                    prop_assert_eq!(slots[slot as usize], column as i32);
                }
            }
            let listed_set: BTreeSet<i32> = listed.iter().copied().collect();
            prop_assert_eq!(
                &listed_set,
                &needed,
                "tile ({}, {}) lists other columns",
                kt,
                nt
            );
            let base = (kt * k_s) as i32;
            prop_assert!(listed.iter().all(|&c| c >= base && c < base + k_s as i32));
            let filler = listed.last().copied().unwrap_or(base);
            prop_assert!(
                slots[count as usize..].iter().all(|&c| c == filler),
                "bad filler"
            );
        }
    }
    Ok(())
}

/// A weight with one index overwritten: decompression and col_info refuse it exactly when it
/// breaks the rules (position ≥ M, or not strictly increasing in its window), never panic.
fn check_damaged_indices(w: &CompressedWeight, seed: u64) -> Result<(), TestCaseError> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0xdead);
    let mut damaged = w.clone();
    let at = rng.gen_range(0..damaged.indices.len());
    damaged.indices[at] = rng.gen();
    let (n_keep, q) = (w.nm.n as usize, w.q());
    let valid = (0..w.k / w.nm.m as usize).all(|window| {
        (0..q).all(|j| {
            let column: Vec<u8> = (0..n_keep)
                .map(|i| damaged.indices[(window * n_keep + i) * q + j])
                .collect();
            column.iter().all(|&p| (p as u32) < w.nm.m) && column.windows(2).all(|p| p[0] < p[1])
        })
    });
    let decompressed = format::try_decompress(&damaged);
    prop_assert_eq!(decompressed.is_ok(), valid, "damaged D at {}", at);
    if let Err(err) = decompressed {
        check_one_line(&err.to_string())?;
    }
    let tiling = format::build_col_info(&damaged, w.nm.m as usize, w.l);
    prop_assert_eq!(tiling.is_ok(), valid);
    // A hand-built weight with a bad shape is refused too.
    let mut misshapen = w.clone();
    misshapen.values.pop();
    let refused = matches!(
        format::try_decompress(&misshapen),
        Err(FormatError::SizeMismatch { .. })
    );
    prop_assert!(refused, "a weight with a value missing was accepted");
    Ok(())
}

// ---------------------------------------------------------------------------------------
// (d) Problems, sparsity strings and kernel names.

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => prop::sample::select(vec![1usize, 4, 8, 32, 96, 128, 256, 4096, 11008]),
        2 => 0usize..300,
        1 => any::<usize>(),
        1 => (1usize << 15)..(1usize << 17),
    ]
}

#[test]
fn problem_shapes_arbitrary() {
    let arbitrary = (size(), size(), size(), any::<u32>(), 0u32..200, size())
        .prop_map(|(m, n, k, nn, mm, l)| (m, n, k, NmPattern { n: nn, m: mm }, l));
    // Shapes built as multiples of M and L with a valid pattern, so that the size rules are
    // reached; the multipliers still run into the 32-bit limit now and then.
    let aligned = (
        size(),
        0usize..600,
        0usize..600,
        1u32..=128,
        any::<u32>(),
        0usize..=130,
    )
        .prop_map(|(m, kw, nq, mm, nn, l)| {
            let nm = NmPattern {
                n: nn % mm + 1,
                m: mm,
            };
            (m, nq * l, kw * mm as usize, nm, l)
        });
    let input = prop_oneof![arbitrary, aligned];
    fuzz(
        "problem/new",
        input,
        |(m, n, k, nm, l)| match Problem::new(m, n, k, nm, l) {
            Ok(p) => {
                prop_assert!(p.nm.n >= 1 && p.nm.n <= p.nm.m && p.nm.m <= 128);
                prop_assert!(k % nm.m as usize == 0 && n % l == 0 && (1..=128).contains(&l));
                prop_assert!((m as u128) * (k as u128) <= i32::MAX as u128);
                prop_assert!((m as u128) * (n as u128) <= i32::MAX as u128);
                prop_assert!((k as u128) * (n as u128) <= i32::MAX as u128);
                prop_assert_eq!(p.w() * nm.m as usize, k * nm.n as usize);
                prop_assert_eq!(p.q() * l, n);
                let _ = (p.to_string(), p.with_m(m.saturating_add(1)));
                Ok(Verdict::Accepted)
            }
            Err(err) => {
                check_one_line(&err.to_string())?;
                Ok(Verdict::Rejected)
            }
        },
    );
}

#[test]
fn sparsity_strings_arbitrary() {
    let text = prop_oneof![
        any::<String>(),
        (any::<u32>(), any::<u32>()).prop_map(|(n, m)| format!("{n}:{m}")),
        (0u32..200, 0u32..200).prop_map(|(n, m)| format!(" {n} : {m} ")),
        any::<f64>().prop_map(|f| f.to_string()),
        (0.0f64..1.0).prop_map(|f| f.to_string()),
        (0u32..=100).prop_map(|p| format!("{p}%")),
        prop::sample::select(vec![
            "NaN", "inf", "-0", "1e-300", "%", ":", "8:", ":32", "0.75%"
        ])
        .prop_map(str::to_string),
    ];
    let window = prop_oneof![Just(32u32), 0u32..200, any::<u32>()];
    fuzz(
        "problem/sparsity",
        (text, window),
        |(text, window)| match NmPattern::parse(&text, window) {
            Ok(nm) => {
                prop_assert!(nm.n >= 1 && nm.n <= nm.m && nm.m <= 128, "accepted {nm}");
                prop_assert_eq!(NmPattern::parse(&nm.to_string(), 0), Ok(nm));
                Ok(Verdict::Accepted)
            }
            Err(err) => {
                check_one_line(&err.to_string())?;
                Ok(Verdict::Rejected)
            }
        },
    );
}

/// Configurations of the search space (what the tuner really tries), with one field
/// sometimes replaced by an arbitrary value.
fn searched_config() -> impl Strategy<Value = KernelConfig> {
    static SPACE: std::sync::OnceLock<Vec<KernelConfig>> = std::sync::OnceLock::new();
    let space = SPACE.get_or_init(|| {
        let h100 = GpuProfile::builtin("h100").unwrap();
        [(8, 32, 32), (16, 32, 32), (2, 4, 4), (4, 128, 64)]
            .into_iter()
            .flat_map(|(n, m, l)| {
                ALayout::ALL
                    .into_iter()
                    .flat_map(|layout| codegen::search_space(NmPattern { n, m }, l, layout, &h100))
                    .collect::<Vec<_>>()
            })
            .collect()
    });
    (
        prop::sample::select(space.clone()),
        prop::option::weighted(0.3, (0usize..7, any::<u32>())),
    )
        .prop_map(|(cfg, mutation)| match mutation {
            None => cfg,
            Some((0, v)) => KernelConfig { m_s: v, ..cfg },
            Some((1, v)) => KernelConfig { k_s: v, ..cfg },
            Some((2, v)) => KernelConfig { n_t: v % 20, ..cfg },
            Some((3, v)) => KernelConfig {
                split_k: v % 10,
                ..cfg
            },
            Some((4, v)) => KernelConfig { l: v % 140, ..cfg },
            Some((5, v)) => KernelConfig {
                min_blocks: v % 6,
                ..cfg
            },
            Some((_, v)) => KernelConfig {
                stages: v % 6,
                ..cfg
            },
        })
}

/// Any configuration: from the search space, plausible values, or any u32.
fn kernel_config() -> impl Strategy<Value = KernelConfig> {
    prop_oneof![searched_config(), any_config()]
}

fn any_config() -> impl Strategy<Value = KernelConfig> {
    let dim = || {
        prop_oneof![
            4 => prop::sample::select(vec![0u32, 4, 8, 16, 32, 64, 96, 128, 256, 512]),
            1 => any::<u32>(),
        ]
    };
    let stages = prop_oneof![4 => 0u32..6, 1 => any::<u32>()];
    let min_blocks = prop_oneof![4 => 0u32..6, 1 => any::<u32>()];
    let a_copy = prop::sample::select(ACopy::ALL.to_vec());
    let pattern = prop_oneof![
        4 => prop::sample::select(vec![(2u32, 4u32), (8, 32), (16, 32), (32, 32), (4, 128), (1, 1)]),
        1 => (any::<u32>(), any::<u32>()),
        1 => (0u32..140, 0u32..140),
    ];
    let warp = prop_oneof![
        4 => prop::sample::select(vec![(4u32, 8u32), (8, 4), (2, 16), (16, 2), (1, 32), (3, 11)]),
        1 => (any::<u32>(), any::<u32>()),
    ];
    (
        (dim(), dim(), dim(), dim(), dim()),
        warp,
        pattern,
        dim(),
        any::<bool>(),
        (a_copy, stages, min_blocks),
        prop_oneof![4 => 0u32..10, 1 => any::<u32>()],
    )
        .prop_map(
            |(
                (m_s, n_s, k_s, m_t, n_t),
                (wr, wc),
                (nn, mm),
                l,
                packing,
                (a_copy, stages, min_blocks),
                split_k,
            )| {
                KernelConfig {
                    a_copy,
                    m_s,
                    n_s,
                    k_s,
                    m_t,
                    n_t,
                    warp: WarpLayout::new(wr, wc),
                    nm: NmPattern { n: nn, m: mm },
                    l,
                    packing,
                    stages,
                    min_blocks,
                    split_k,
                    row_chunk: 0,
                    stream_k: false,
                    tma: false,
                    cluster_sum: false,
                    dtype: Dtype::F32,
                }
            },
        )
}

#[test]
fn kernel_configs_arbitrary() {
    let h100 = GpuProfile::builtin("h100").unwrap();
    let a100 = GpuProfile::builtin("a100").unwrap();
    // A hand-built problem (public fields, no validation), or one made for the configuration.
    let problem = (
        size(),
        size(),
        size(),
        0u32..140,
        0u32..140,
        size(),
        any::<bool>(),
    );
    let input = (kernel_config(), problem).prop_map(|(cfg, (m, n, k, nn, mm, l, matched))| {
        let problem = if matched {
            let (window, l) = (cfg.nm.m.max(1) as usize, cfg.l.max(1) as usize);
            Problem {
                m: m % 5000 + 1,
                n: (n % 64 + 1) * l,
                k: (k % 64 + 1) * window,
                nm: cfg.nm,
                l,
                a_layout: Default::default(),
                dtype: Default::default(),
            }
        } else {
            Problem {
                m,
                n,
                k,
                nm: NmPattern { n: nn, m: mm },
                l,
                a_layout: Default::default(),
                dtype: Default::default(),
            }
        };
        (cfg, problem)
    });
    fuzz("codegen/config-validate", input, |(cfg, problem)| {
        // The name spells the configuration and parses back to it, valid or not.
        let name = cfg.name();
        prop_assert_eq!(KernelConfig::parse_name(&name), Some(cfg));
        let _ = (cfg.threads(), cfg.w_s(), cfg.q_s(), cfg.smem_bytes());
        let structure = codegen::validate::validate_structure(&cfg);
        let on_h100 = codegen::validate(&cfg, &h100);
        let on_a100 = codegen::validate(&cfg, &a100);
        let for_problem = codegen::validate_for_problem(&cfg, &problem);
        if structure.is_ok() {
            let _ = codegen::estimated_registers(&cfg);
        } else {
            prop_assert!(
                on_h100.is_err() && on_a100.is_err(),
                "GPU rules passed a broken structure"
            );
        }
        let verdict = match (&on_h100, &for_problem) {
            (Ok(()), Ok(())) => Verdict::Accepted,
            _ => Verdict::Rejected,
        };
        for result in [structure, on_h100, on_a100, for_problem] {
            if let Err(err) = result {
                check_one_line(&err.to_string())?;
            }
        }
        Ok(verdict)
    });
}

#[test]
fn kernel_names_arbitrary() {
    let valid_name = || kernel_config().prop_map(|cfg| cfg.name());
    let name = prop_oneof![
        any::<String>(),
        "nm_spmm_f32_[a-z0-9_x+-]{0,60}",
        // A valid name with one character replaced, inserted or removed.
        (valid_name(), any::<prop::sample::Index>(), "[0-9a-z_+ -]").prop_map(|(name, at, c)| {
            let mut chars: Vec<char> = name.chars().collect();
            let i = at.index(chars.len());
            chars[i] = c.chars().next().unwrap_or('_');
            chars.into_iter().collect::<String>()
        }),
        (valid_name(), any::<prop::sample::Index>()).prop_map(|(name, at)| {
            let mut name = name;
            name.remove(at.index(name.len()));
            name
        }),
        valid_name().prop_map(|name| name.replace("ms", "ms0").replace("_sk", "_sk+")),
    ];
    fuzz(
        "codegen/parse_name",
        name,
        |name| match KernelConfig::parse_name(&name) {
            Some(cfg) => {
                prop_assert_eq!(cfg.name(), name, "a name that is not canonical parsed");
                Ok(Verdict::Accepted)
            }
            None => Ok(Verdict::Rejected),
        },
    );
}
