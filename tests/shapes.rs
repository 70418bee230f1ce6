//! The shapes file: the shipped files, overrides, and one-line errors that place the fault.

use nmtune::problem::{ALayout, Dtype, NmPattern, Problem};
use nmtune::shapes::{load, parse, parse_with_layouts, ShapeError};
use std::collections::HashSet;
use std::path::Path;

fn repo_file(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("shapes")
        .join(name)
}

fn parse_err(text: &str) -> ShapeError {
    let err = parse(text, "test.yaml").expect_err("the file must be rejected");
    let shown = err.to_string();
    assert!(!shown.contains('\n'), "error must be one line: {shown:?}");
    assert!(
        shown.starts_with("test.yaml:"),
        "error must name the file: {shown}"
    );
    err
}

fn nm(n: u32, m: u32) -> NmPattern {
    NmPattern::new(n, m).unwrap()
}

#[test]
fn llama_file_is_the_papers_400_problems_in_both_a_layouts() {
    let set = load(&repo_file("llama.yaml")).unwrap();
    let problems: HashSet<Problem> = set.problems().into_iter().collect();
    assert_eq!(set.len(), 800);
    assert_eq!(problems.len(), 800);
    let layouts: HashSet<ALayout> = problems.iter().map(|p| p.a_layout).collect();
    assert_eq!(
        layouts,
        HashSet::from([ALayout::RowMajor, ALayout::ColMajor])
    );
    let pairs: HashSet<(usize, usize)> = problems.iter().map(|p| (p.n, p.k)).collect();
    assert_eq!(pairs.len(), 20);
    for (h, f) in [
        (2048, 5632),
        (4096, 11008),
        (5120, 13824),
        (6656, 17920),
        (8192, 22016),
    ] {
        for pair in [(h, h), (3 * h, h), (h, f), (f, h)] {
            assert!(pairs.contains(&pair), "missing (n, k) = {pair:?}");
        }
    }
    let ms: HashSet<usize> = problems.iter().map(|p| p.m).collect();
    assert_eq!(ms, HashSet::from([256, 512, 1024, 2048, 4096]));
    let patterns: HashSet<NmPattern> = problems.iter().map(|p| p.nm).collect();
    assert_eq!(
        patterns,
        HashSet::from([nm(16, 32), nm(12, 32), nm(8, 32), nm(4, 32)])
    );
    assert!(problems.iter().all(|p| p.l == 32));
    let up = set
        .entries
        .iter()
        .find(|e| (e.problem.n, e.problem.k) == (11008, 4096))
        .unwrap();
    assert_eq!(
        (up.model.as_deref(), up.layer.as_deref()),
        (Some("llama-7b"), Some("mlp_up"))
    );
}

#[test]
fn example_file_expands_defaults_and_overrides() {
    let set = load(&repo_file("example.yaml")).unwrap();
    assert_eq!(set.len(), 9);
    let of_layer = |name: &str| -> Vec<Problem> {
        set.entries
            .iter()
            .filter(|e| e.layer.as_deref() == Some(name))
            .map(|e| e.problem)
            .collect()
    };
    let q = of_layer("q_proj");
    assert_eq!(q.len(), 4);
    assert!(q.iter().any(|p| p.nm == nm(16, 32) && p.m == 1024));
    let up: HashSet<usize> = of_layer("up_proj").iter().map(|p| p.m).collect();
    assert_eq!(up, HashSet::from([1, 16]));
    let down = of_layer("down_proj");
    assert_eq!(
        down,
        vec![Problem::new(256, 4096, 11008, nm(2, 4), 16).unwrap()]
    );
}

#[test]
fn malformed_yaml_names_file_and_line() {
    let text = "defaults:\n  m: [1, 2\n  L: 32\nlayers:\n  - { n: 64, k: 64 }\n";
    let err = parse_err(text);
    assert!(err.line.is_some() && err.column.is_some(), "{err}");
    assert!(err.line.unwrap() >= 2, "{err}");
    assert!(
        err.message.contains("flow sequence"),
        "the YAML fault itself is reported: {err}"
    );
}

#[test]
fn n_above_m_names_layer_and_its_line() {
    let text = "\
defaults:
  m: [16]
  L: 32
layers:
  - { model: llama-7b, name: q_proj, n: 4096, k: 4096, sparsity: \"8:32\" }
  # a comment between layers
  - model: llama-7b
    name: up_proj
    n: 11008
    k: 4096
    sparsity: [\"8:32\", \"33:32\"]
";
    let err = parse_err(text);
    assert_eq!(err.line, Some(7), "{err}");
    let shown = err.to_string();
    assert!(
        shown.starts_with("test.yaml:7: layer 'up_proj' (llama-7b):"),
        "{shown}"
    );
    assert!(
        shown.contains("33:32") && shown.contains("N must not exceed M"),
        "{shown}"
    );
}

#[test]
fn bad_default_sparsity_points_at_its_line() {
    let text =
        "defaults:\n  m: 8\n  L: 32\n  sparsity: [\"0:32\"]\nlayers:\n  - { n: 64, k: 64 }\n";
    let err = parse_err(text);
    assert_eq!(err.line, Some(4), "{err}");
    assert!(err.message.contains("defaults"), "{err}");
}

#[test]
fn unknown_fields_are_errors() {
    let err =
        parse_err("layers:\n  - { n: 64, k: 64, m: 8, sparsity: \"2:4\", L: 4, colour: red }\n");
    assert!(err.message.contains("colour"), "{err}");
    assert_eq!(err.line, Some(2), "{err}");
    let err = parse_err("defaults:\n  l: 32\nlayers:\n  - { n: 64, k: 64 }\n");
    assert!(err.message.contains("unknown field `l`"), "{err}");
    assert_eq!(err.line, Some(2), "{err}");
    let err = parse_err("shapes:\n  - { n: 64, k: 64 }\n");
    assert!(err.message.contains("shapes"), "{err}");
}

#[test]
fn empty_files_and_empty_layer_lists_are_errors() {
    let err = parse_err("");
    assert!(err.message.contains("empty"), "{err}");
    let err = parse_err("# only a comment\n\n");
    assert!(err.message.contains("empty"), "{err}");
    let err = parse_err("defaults:\n  m: 8\nlayers: []\n");
    assert_eq!(err.line, Some(3), "{err}");
    assert!(err.message.contains("no layers"), "{err}");
    let err = parse_err("defaults:\n  m: 8\n");
    assert!(err.message.contains("no layers"), "{err}");
}

#[test]
fn fractional_sparsities_use_the_window() {
    let text = "\
defaults:
  m: 64
  L: 16
  M: 16
layers:
  - { name: a, n: 64, k: 64, sparsity: [0.75, \"50%\", \"62.5%\"] }
  - { name: b, n: 64, k: 64, sparsity: 0.5, M: 8 }
";
    let set = parse(text, "test.yaml").unwrap();
    let patterns: Vec<NmPattern> = set.problems().iter().map(|p| p.nm).collect();
    assert_eq!(patterns, vec![nm(4, 16), nm(8, 16), nm(6, 16), nm(4, 8)]);
    // A fraction with no window anywhere says what to add.
    let err = parse_err("layers:\n  - { n: 64, k: 64, m: 4, L: 16, sparsity: 0.75 }\n");
    assert!(err.message.contains("set the window M"), "{err}");
    // A fraction the window cannot express.
    let err = parse_err("layers:\n  - { n: 64, k: 64, m: 4, L: 16, M: 32, sparsity: 0.3 }\n");
    assert_eq!(err.line, Some(2), "{err}");
}

#[test]
fn layer_m_list_overrides_defaults() {
    let text = "\
defaults: { m: [256, 512], sparsity: \"8:32\", L: 32 }
layers:
  - { name: a, n: 64, k: 64 }
  - { name: b, n: 128, k: 64, m: [1, 16, 37] }
";
    let set = parse(text, "test.yaml").unwrap();
    let ms = |name: &str| -> Vec<usize> {
        set.entries
            .iter()
            .filter(|e| e.layer.as_deref() == Some(name))
            .map(|e| e.problem.m)
            .collect()
    };
    assert_eq!(ms("a"), vec![256, 512]);
    assert_eq!(ms("b"), vec![1, 16, 37]);
}

#[test]
fn duplicates_keep_the_first_layer() {
    let text = "\
defaults: { m: [8, 8], sparsity: [\"2:4\", \"0.5\"], M: 4, L: 4 }
layers:
  - { model: x, name: first, n: 64, k: 64 }
  - { model: y, name: second, n: 64, k: 64 }
";
    let set = parse(text, "test.yaml").unwrap();
    assert_eq!(set.len(), 1);
    assert_eq!(set.entries[0].layer.as_deref(), Some("first"));
    assert_eq!(set.entries[0].model.as_deref(), Some("x"));
}

#[test]
fn unpadded_shapes_say_to_pad() {
    let err = parse_err("layers:\n  - { n: 64, k: 60, m: 4, L: 16, sparsity: \"8:32\" }\n");
    assert!(err.message.contains("pad"), "{err}");
    let err = parse_err("layers:\n  - { n: 60, k: 64, m: 4, L: 16, sparsity: \"8:32\" }\n");
    assert!(err.message.contains("pad"), "{err}");
    assert!(
        err.to_string().starts_with("test.yaml:2: layer #1:"),
        "{err}"
    );
}

#[test]
fn missing_settings_and_bad_values_are_errors() {
    let err = parse_err("layers:\n  - { n: 64, k: 64, sparsity: \"8:32\", L: 16 }\n");
    assert!(err.message.contains("no m given"), "{err}");
    let err = parse_err("layers:\n  - { n: 64, k: 64, m: 4, sparsity: \"8:32\" }\n");
    assert!(err.message.contains("L"), "{err}");
    let err = parse_err("layers:\n  - { n: 64, k: 64, m: -4, sparsity: \"8:32\", L: 16 }\n");
    assert_eq!(err.line, Some(2), "{err}");
    let err = parse_err("layers:\n  - { n: 64, k: 64, m: [], sparsity: \"8:32\", L: 16 }\n");
    assert!(err.message.contains("empty"), "{err}");
    let err = parse_err("layers:\n  - { n: 64, k: 64, m: 4, sparsity: \"8:32\", L: 256 }\n");
    assert!(err.message.contains("L=256"), "{err}");
}

#[test]
fn missing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope.yaml");
    let err = load(&path).unwrap_err();
    assert!(
        err.to_string().starts_with(&path.display().to_string()),
        "{err}"
    );
    assert!(err.message.contains("cannot read"), "{err}");
}

// ---------------------------------------------------------------- A layouts

fn layouts_of(set: &nmtune::shapes::ShapeSet, name: &str) -> Vec<(usize, ALayout)> {
    set.entries
        .iter()
        .filter(|e| e.layer.as_deref() == Some(name))
        .map(|e| (e.problem.m, e.problem.a_layout))
        .collect()
}

#[test]
fn a_layout_row_col_or_both_default_and_per_layer() {
    let text = "\
defaults: { m: [256], sparsity: \"8:32\", L: 32, a_layout: col }
layers:
  - { name: inherits, n: 64, k: 64 }
  - { name: row, n: 128, k: 64, a_layout: row }
  - { name: both, n: 256, k: 64, a_layout: [row, col], m: [8, 16] }
";
    let set = parse(text, "test.yaml").unwrap();
    use ALayout::{ColMajor as Col, RowMajor as Row};
    assert_eq!(layouts_of(&set, "inherits"), vec![(256, Col)]);
    assert_eq!(layouts_of(&set, "row"), vec![(256, Row)]);
    assert_eq!(
        layouts_of(&set, "both"),
        vec![(8, Row), (16, Row), (8, Col), (16, Col)]
    );
    let col = set.entries[0].problem;
    assert_eq!(col.to_string(), "m256_n64_k64_8:32_l32_acol");
    // Without a_layout anywhere, A is row-major.
    let set = parse(
        "layers:\n  - { n: 64, k: 64, m: 3, sparsity: \"8:32\", L: 32 }\n",
        "test.yaml",
    )
    .unwrap();
    assert_eq!(set.entries[0].problem.a_layout, Row);
}

#[test]
fn bad_a_layouts_name_file_and_line() {
    let err = parse_err(
        "layers:\n  - { n: 64, k: 64, m: 8, sparsity: \"8:32\", L: 32 }\n  - { n: 64, k: 64, m: 8, sparsity: \"8:32\", L: 32, a_layout: diag }\n",
    );
    assert_eq!(err.line, Some(3), "{err}");
    assert!(err.message.contains("a_layout must be row, col"), "{err}");
    let err = parse_err("defaults:\n  L: 32\n  a_layout: []\nlayers:\n  - { n: 64, k: 64 }\n");
    assert!(err.message.contains("a_layout list is empty"), "{err}");
    let err = parse_err("defaults:\n  a_layout: [row, 7]\nlayers:\n  - { n: 64, k: 64 }\n");
    assert_eq!(err.line, Some(2), "{err}");
}

#[test]
fn dtype_f32_by_default_bf16_f16_or_a_list_per_layer_and_bad_ones_name_the_line() {
    let text = "\
defaults: { m: [256], sparsity: \"8:32\", L: 32, dtype: bf16 }
layers:
  - { name: inherits, n: 64, k: 64 }
  - { name: both, n: 128, k: 64, dtype: [f32, f16] }
";
    let set = parse(text, "test.yaml").unwrap();
    let types: Vec<(String, Dtype)> = set
        .entries
        .iter()
        .map(|e| (e.problem.to_string(), e.problem.dtype))
        .collect();
    assert_eq!(
        types,
        vec![
            ("m256_n64_k64_8:32_l32_bf16".into(), Dtype::Bf16),
            ("m256_n128_k64_8:32_l32".into(), Dtype::F32),
            ("m256_n128_k64_8:32_l32_f16".into(), Dtype::F16),
        ]
    );
    let set = parse(
        "layers:\n  - { n: 64, k: 64, m: 3, sparsity: \"8:32\", L: 32 }\n",
        "test.yaml",
    )
    .unwrap();
    assert_eq!(set.entries[0].problem.dtype, Dtype::F32);
    let err = parse_err(
        "layers:\n  - { n: 64, k: 64, m: 8, sparsity: \"8:32\", L: 32 }\n  - { n: 64, k: 64, m: 8, sparsity: \"8:32\", L: 32, dtype: f64 }\n",
    );
    assert_eq!(err.line, Some(3), "{err}");
    assert!(
        err.message.contains("dtype must be f32, bf16, f16"),
        "{err}"
    );
    let err = parse_err("defaults:\n  L: 32\n  dtype: []\nlayers:\n  - { n: 64, k: 64 }\n");
    assert!(err.message.contains("dtype list is empty"), "{err}");
}

#[test]
fn column_major_a_needs_m_a_multiple_of_4_and_the_error_names_the_shape() {
    let text = "\
defaults: { sparsity: \"8:32\", L: 32 }
layers:
  - { name: ok, n: 64, k: 64, m: [4, 8], a_layout: col }
  - { model: m7, name: odd, n: 64, k: 128, m: [8, 6], a_layout: [row, col] }
";
    let err = parse_err(text);
    let shown = err.to_string();
    assert!(
        shown.starts_with("test.yaml:4: layer 'odd' (m7): shape m6_n64_k128_8:32_l32 with a_layout col: m=6 must be a multiple of 4"),
        "{shown}"
    );
}

#[test]
fn layout_override_replaces_the_files_layouts() {
    let text = "\
defaults: { m: [6, 8], sparsity: \"8:32\", L: 32 }
layers:
  - { name: a, n: 64, k: 64, a_layout: col, m: 8 }
  - { name: b, n: 128, k: 64 }
";
    use ALayout::{ColMajor as Col, RowMajor as Row};
    let set = parse_with_layouts(text, "test.yaml", None).unwrap();
    assert_eq!(layouts_of(&set, "a"), vec![(8, Col)]);
    assert_eq!(layouts_of(&set, "b"), vec![(6, Row), (8, Row)]);
    let rows = parse_with_layouts(text, "test.yaml", Some(&[Row])).unwrap();
    assert_eq!(layouts_of(&rows, "a"), vec![(8, Row)]);
    assert_eq!(rows.len(), 3);
    // Both layouts for every layer: b's m = 6 cannot be column-major, and the error says the
    // layout came from the override.
    let err = parse_with_layouts(text, "test.yaml", Some(&[Row, Col])).unwrap_err();
    assert_eq!(err.line, Some(4), "{err}");
    assert!(
        err.message
            .contains("shape m6_n128_k64_8:32_l32 with a_layout col (--a-layout): m=6"),
        "{err}"
    );
    let err = parse_with_layouts(text, "test.yaml", Some(&[])).unwrap_err();
    assert!(err.message.contains("empty"), "{err}");
}

#[test]
fn absurd_nesting_or_size_is_refused_at_once() {
    let deep = [
        "[".repeat(100_000),
        format!("layers: {}", "[".repeat(100_000)),
        format!("defaults:\n  m: {}", "{a: ".repeat(100_000)),
    ];
    for text in deep {
        let started = std::time::Instant::now();
        let err = parse_err(&text);
        assert!(
            started.elapsed().as_secs_f64() < 1.0,
            "took {:?}",
            started.elapsed()
        );
        assert!(err.message.contains("nested deeper than"), "{err}");
        assert!(err.line.is_some() && err.column.is_some(), "{err}");
    }
    // Brackets in quotes and comments do not count; the shipped files nest two deep.
    let quoted = format!(
        "# {}\nlayers:\n  - {{ name: \"{}\", n: 64, k: 64, m: [1], sparsity: ['2:4'], L: 4 }}\n",
        "[".repeat(50),
        "[".repeat(50)
    );
    assert_eq!(parse(&quoted, "q.yaml").unwrap().len(), 1);
    let big = format!("# {}\n", "x".repeat(nmtune::shapes::MAX_FILE_BYTES));
    assert!(parse_err(&big).message.contains("larger than"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.yaml");
    std::fs::write(&file, &big).unwrap();
    let err = load(&file).unwrap_err();
    assert!(err.message.contains("larger than"), "{err}");
}

#[test]
fn a_list_of_vector_lengths_tunes_each_and_bad_lists_are_errors() {
    let set = load(&repo_file("decode.yaml")).unwrap();
    assert_eq!(set.len(), 800);
    for l in [32, 1] {
        let at_l = set.problems().iter().filter(|p| p.l == l).count();
        assert_eq!(at_l, 400, "L={l}");
    }
    // A layer's list overrides the defaults' single value.
    let set = parse(
        "defaults: { m: 4, sparsity: \"8:32\", L: 32 }\n\
         layers:\n  - { n: 256, k: 256, L: [32, 1, 4] }\n",
        "test.yaml",
    )
    .unwrap();
    let ls: Vec<usize> = set.problems().iter().map(|p| p.l).collect();
    assert_eq!(ls, [32, 1, 4]);
    for (text, says) in [
        (
            "defaults: { m: 4, sparsity: \"8:32\", L: [] }\nlayers:\n  - { n: 256, k: 256 }\n",
            "L list is empty",
        ),
        (
            "defaults: { m: 4, sparsity: \"8:32\", L: [32, 0] }\nlayers:\n  - { n: 256, k: 256 }\n",
            "L=0 must be between 1 and 128",
        ),
        (
            "defaults: { m: 4, sparsity: \"8:32\", L: [32, x] }\nlayers:\n  - { n: 256, k: 256 }\n",
            "L must be a positive integer or a list of them",
        ),
        (
            "defaults: { m: 4, sparsity: \"8:32\" }\nlayers:\n  - { n: 256, k: 256, L: [200] }\n",
            "L=200 must be between 1 and 128",
        ),
    ] {
        let shown = parse_err(text).to_string();
        assert!(shown.contains(says), "{shown}");
    }
}
