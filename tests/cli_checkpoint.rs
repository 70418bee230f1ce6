//! `nmtune prune` and `nmtune shapes --from` as a user runs them, on small safetensors files
//! made here: B' and D exactly as `nmtune::format` makes them, the metadata, untouched tensors
//! byte for byte, the way back to dense weights, the shapes file the loader reads, and every
//! bad input a one-line error that leaves nothing behind.

mod common;

use common::{nmtune, one_line_error, snapshot};
use half::{bf16, f16};
use nmtune::checkpoint::{
    indices_name, values_name, weight_key, WeightInfo, FORMAT_KEY, FORMAT_VERSION,
};
use nmtune::format::{decompress_nk, prune_and_compress_nk, CompressedWeight, Padding};
use nmtune::problem::NmPattern;
use predicates::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use safetensors::{Dtype, SafeTensors, View};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One tensor of a test checkpoint.
#[derive(Debug, Clone)]
struct Tensor {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl View for &Tensor {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

fn encode(dtype: Dtype, values: &[f32]) -> Vec<u8> {
    match dtype {
        Dtype::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        Dtype::F16 => values
            .iter()
            .flat_map(|v| f16::from_f32(*v).to_le_bytes())
            .collect(),
        Dtype::BF16 => values
            .iter()
            .flat_map(|v| bf16::from_f32(*v).to_le_bytes())
            .collect(),
        other => panic!("no encoder for {other}"),
    }
}

fn decode(dtype: Dtype, bytes: &[u8]) -> Vec<f32> {
    match dtype {
        Dtype::F32 => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect(),
        Dtype::F16 => bytes
            .chunks_exact(2)
            .map(|b| f16::from_le_bytes(b.try_into().unwrap()).to_f32())
            .collect(),
        Dtype::BF16 => bytes
            .chunks_exact(2)
            .map(|b| bf16::from_le_bytes(b.try_into().unwrap()).to_f32())
            .collect(),
        other => panic!("no decoder for {other}"),
    }
}

/// Random values of both signs, never zero (|v| ≥ 0.1), rounded to `dtype`.
fn random_tensor(rng: &mut SmallRng, dtype: Dtype, shape: &[usize]) -> Tensor {
    let len = shape.iter().product();
    let values: Vec<f32> = (0..len)
        .map(|_| {
            let magnitude = rng.gen_range(0.1f32..1.0);
            if rng.gen_bool(0.5) {
                magnitude
            } else {
                -magnitude
            }
        })
        .collect();
    Tensor {
        dtype,
        shape: shape.to_vec(),
        data: encode(dtype, &values),
    }
}

const NM: NmPattern = NmPattern { n: 8, m: 32 };
const L: usize = 32;

/// The selected weights of the test model (PyTorch [out, in]) and their types.
const LINEAR: [(&str, Dtype, [usize; 2]); 5] = [
    ("model.layers.0.mlp.up_proj.weight", Dtype::F32, [96, 64]),
    ("model.layers.0.mlp.down_proj.weight", Dtype::F16, [64, 96]),
    (
        "model.layers.0.self_attn.q_proj.weight",
        Dtype::BF16,
        [64, 64],
    ),
    // Padded: k = 50 to 64 (M = 32), n = 40 to 64 (L = 32).
    (
        "model.layers.0.self_attn.o_proj.weight",
        Dtype::F32,
        [40, 50],
    ),
    // Already 8:32: only checked.
    ("model.layers.0.mlp.gate_proj.weight", Dtype::F16, [64, 64]),
];
const ALREADY_SPARSE: &str = "model.layers.0.mlp.gate_proj.weight";

/// Tensors the default rule leaves alone.
fn others(rng: &mut SmallRng) -> Vec<(String, Tensor)> {
    let position_ids = Tensor {
        dtype: Dtype::I64,
        shape: vec![1, 8],
        data: (0..8i64).flat_map(|v| v.to_le_bytes()).collect(),
    };
    vec![
        (
            "model.layers.0.input_layernorm.weight".into(),
            random_tensor(rng, Dtype::F32, &[64]),
        ),
        (
            "model.embed_tokens.weight".into(),
            random_tensor(rng, Dtype::F32, &[100, 64]),
        ),
        (
            "lm_head.weight".into(),
            random_tensor(rng, Dtype::BF16, &[100, 64]),
        ),
        (
            "model.layers.0.mlp.up_proj.bias".into(),
            random_tensor(rng, Dtype::F16, &[96]),
        ),
        ("model.position_ids".into(), position_ids),
    ]
}

/// The test model: its tensors by name.
fn model() -> BTreeMap<String, Tensor> {
    let mut rng = SmallRng::seed_from_u64(16);
    let mut tensors: BTreeMap<String, Tensor> = others(&mut rng).into_iter().collect();
    for (name, dtype, shape) in LINEAR {
        let mut tensor = random_tensor(&mut rng, dtype, &shape);
        if name == ALREADY_SPARSE {
            let (w, padding) =
                prune_and_compress_nk(&decode(dtype, &tensor.data), shape[0], shape[1], NM, L)
                    .unwrap();
            tensor.data = encode(dtype, &decompress_nk(&w, &padding).unwrap());
        }
        tensors.insert(name.to_string(), tensor);
    }
    tensors
}

fn write_checkpoint(path: &Path, tensors: &BTreeMap<String, Tensor>) {
    let metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
    safetensors::serialize_to_file(tensors.iter(), Some(metadata), path).unwrap();
}

/// A file read back: its tensors by name and its metadata.
struct Read {
    tensors: BTreeMap<String, Tensor>,
    metadata: HashMap<String, String>,
}

fn read_checkpoint(path: &Path) -> Read {
    let bytes = fs::read(path).unwrap();
    let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
    let file = SafeTensors::deserialize(&bytes).unwrap();
    let tensors = file
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            let tensor = Tensor {
                dtype: view.dtype(),
                shape: view.shape().to_vec(),
                data: view.data().to_vec(),
            };
            (name, tensor)
        })
        .collect();
    Read {
        tensors,
        metadata: header.metadata().clone().unwrap_or_default(),
    }
}

/// A temporary directory holding the test model as `model.safetensors`.
fn model_dir() -> (tempfile::TempDir, PathBuf, BTreeMap<String, Tensor>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.safetensors");
    let tensors = model();
    write_checkpoint(&path, &tensors);
    (dir, path, tensors)
}

/// What `nmtune::format` makes of a test weight, in f32.
fn expected(tensor: &Tensor) -> (CompressedWeight, Padding) {
    let (n, k) = (tensor.shape[0], tensor.shape[1]);
    prune_and_compress_nk(&decode(tensor.dtype, &tensor.data), n, k, NM, L).unwrap()
}

fn prune(input: &Path, output: &Path) -> assert_cmd::assert::Assert {
    nmtune()
        .args(["prune", "--in"])
        .arg(input)
        .args(["--nm", "8:32", "--out"])
        .arg(output)
        .assert()
}

#[test]
fn prune_writes_b_prime_and_d_as_the_format_module_makes_them() {
    let (dir, input, model) = model_dir();
    let output = dir.path().join("model.nm.safetensors");
    prune(&input, &output)
        .success()
        .stderr(predicate::str::contains(
            "5 weights at 8:32 (L = 32): 4 pruned, 1 already 8:32 (only checked); 5 other tensors copied unchanged",
        ))
        .stderr(predicate::str::contains(
            "model.layers.0.self_attn.o_proj.weight: [40, 50] padded with zeros to [64, 64]",
        ));
    let pruned = read_checkpoint(&output);
    for (name, dtype, shape) in LINEAR {
        let (w, padding) = expected(&model[name]);
        let values = &pruned.tensors[&values_name(name)];
        let indices = &pruned.tensors[&indices_name(name)];
        assert_eq!(values.dtype, dtype, "{name}: B' keeps the weight's type");
        assert_eq!(values.shape, [w.w(), w.n], "{name}");
        assert_eq!(decode(dtype, &values.data), w.values, "{name}: B'");
        assert_eq!(indices.dtype, Dtype::U8, "{name}");
        assert_eq!(indices.shape, [w.w(), w.q()], "{name}");
        assert_eq!(indices.data, w.indices, "{name}: D");
        assert!(!pruned.tensors.contains_key(name), "{name} is replaced");
        let info: WeightInfo = serde_json::from_str(&pruned.metadata[&weight_key(name)]).unwrap();
        assert_eq!(info, WeightInfo::new(NM, L, &padding), "{name}");
        assert_eq!(info.shape, shape, "{name}: the original [out, in]");
    }
    assert_eq!(
        pruned.metadata[&weight_key("model.layers.0.self_attn.o_proj.weight")],
        r#"{"nm":"8:32","l":32,"shape":[40,50],"padded_shape":[64,64]}"#
    );
    assert_eq!(pruned.metadata[FORMAT_KEY], FORMAT_VERSION);
    assert_eq!(
        pruned.metadata["format"], "pt",
        "the input's metadata is kept"
    );
    let untouched: Vec<&String> = model
        .keys()
        .filter(|n| !LINEAR.iter().any(|l| l.0 == *n))
        .collect();
    assert_eq!(untouched.len(), 5);
    for name in untouched {
        let (a, b) = (&model[name], &pruned.tensors[name]);
        assert_eq!((a.dtype, &a.shape), (b.dtype, &b.shape), "{name}");
        assert!(a.data == b.data, "{name} is not byte-identical");
    }
    assert_eq!(pruned.tensors.len(), 5 + 2 * LINEAR.len());
    // An ordinary file, not the private mode of a temporary one.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&output).unwrap().permissions().mode();
        assert_ne!(mode & 0o044, 0, "mode {mode:o}");
    }
}

#[test]
fn a_weight_that_already_has_the_pattern_is_only_checked() {
    let (dir, input, model) = model_dir();
    let output = dir.path().join("gate.safetensors");
    nmtune()
        .args(["prune", "--in"])
        .arg(&input)
        .args(["--nm", "8:32", "--layers", r"gate_proj\.weight$", "--out"])
        .arg(&output)
        .assert()
        .success()
        .stderr(predicate::str::contains("0 pruned, 1 already 8:32"));
    let pruned = read_checkpoint(&output);
    let gate = &model[ALREADY_SPARSE];
    let dense = decode(gate.dtype, &gate.data);
    let kept = decode(
        gate.dtype,
        &pruned.tensors[&values_name(ALREADY_SPARSE)].data,
    );
    // Every non-zero of the input is in B', unchanged: 8 of every 32 per column.
    let mut nonzero_in: Vec<f32> = dense.iter().copied().filter(|v| *v != 0.0).collect();
    let mut nonzero_out: Vec<f32> = kept.iter().copied().filter(|v| *v != 0.0).collect();
    nonzero_in.sort_by(f32::total_cmp);
    nonzero_out.sort_by(f32::total_cmp);
    assert_eq!(nonzero_in.len(), 64 * 64 / 4);
    assert_eq!(nonzero_in, nonzero_out);
    assert_eq!(pruned.tensors.len(), model.len() + 1);
}

#[test]
fn decompress_gives_back_the_pruned_dense_weights() {
    let (dir, input, model) = model_dir();
    let pruned = dir.path().join("model.nm.safetensors");
    let restored = dir.path().join("model.dense.safetensors");
    prune(&input, &pruned).success();
    nmtune()
        .args(["prune", "--decompress", "--in"])
        .arg(&pruned)
        .arg("--out")
        .arg(&restored)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "5 pruned weights restored to dense",
        ));
    let restored = read_checkpoint(&restored);
    let names: HashSet<&String> = restored.tensors.keys().collect();
    assert_eq!(names, model.keys().collect(), "the input's tensor names");
    for (name, dtype, shape) in LINEAR {
        let (original, back) = (&model[name], &restored.tensors[name]);
        assert_eq!(
            (back.dtype, back.shape.as_slice()),
            (dtype, shape.as_slice()),
            "{name}"
        );
        let (w, padding) = expected(original);
        let pruned_dense = decompress_nk(&w, &padding).unwrap();
        assert_eq!(decode(dtype, &back.data), pruned_dense, "{name}");
        let input = decode(dtype, &original.data);
        let kept = pruned_dense.iter().filter(|v| **v != 0.0).count();
        let in_b_prime = w.values.iter().filter(|v| **v != 0.0).count();
        assert_eq!(kept, in_b_prime, "{name}: what B' keeps, nothing else");
        if padding.is_padded() {
            // 40 outputs × 16 of the 50 inputs: 8 of the first window's 32, 8 of the 18 real
            // rows of the second.
            assert_eq!(kept, 40 * 16, "{name}");
        } else {
            assert_eq!(kept, input.len() / 4, "{name}: 8 of 32 kept");
        }
        for (v, x) in pruned_dense.iter().zip(&input) {
            assert!(*v == 0.0 || v == x, "{name}: a kept value changed");
        }
    }
    assert!(
        restored.tensors[ALREADY_SPARSE].data == model[ALREADY_SPARSE].data,
        "a weight that had the pattern comes back byte for byte"
    );
    for (name, tensor) in &model {
        if !LINEAR.iter().any(|l| l.0 == name) {
            assert!(restored.tensors[name].data == tensor.data, "{name}");
        }
    }
    let kept_keys: HashSet<&String> = restored.metadata.keys().collect();
    assert_eq!(kept_keys, HashSet::from([&"format".to_string()]));
}

#[test]
fn shapes_from_a_checkpoint_load_with_the_shapes_loader() {
    let (dir, input, _) = model_dir();
    let out = dir.path().join("model-shapes.yaml");
    nmtune()
        .args(["shapes", "--from"])
        .arg(&input)
        .args(["--m", "1,16", "--nm", "8:32,2:4", "--out"])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "4 distinct shapes of 5 linear weights",
        ));
    let set = nmtune::shapes::load(&out).unwrap();
    let problems: HashSet<(usize, usize, usize, String)> = set
        .problems()
        .iter()
        .map(|p| (p.m, p.n, p.k, p.nm.to_string()))
        .collect();
    let mut expected = HashSet::new();
    // (n, k) padded as `nmtune prune` pads them: [40, 50] is 64×64 at 8:32 (L = 32), and
    // 64×52 at 2:4 (k to a multiple of 4).
    for m in [1, 16] {
        for (n, k) in [(96, 64), (64, 96), (64, 64)] {
            for nm in ["8:32", "2:4"] {
                expected.insert((m, n, k, nm.to_string()));
            }
        }
        expected.insert((m, 64, 52, "2:4".to_string()));
    }
    assert_eq!(problems, expected);
    assert!(set
        .entries
        .iter()
        .all(|e| e.model.as_deref() == Some("model")));
    assert!(set.problems().iter().all(|p| p.l == L));
}

#[test]
fn shapes_from_a_checkpoint_go_to_standard_output_by_default() {
    let (_dir, input, _) = model_dir();
    let out = nmtune()
        .args(["shapes", "--from"])
        .arg(&input)
        .args(["--nm", "2:4"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let set = nmtune::shapes::parse(&text, "stdout").unwrap();
    // Default m: 1, 16, 256, 4096; at 2:4 the four shapes stay distinct once padded.
    assert_eq!(set.len(), 4 * 4);
    assert!(
        text.contains("# model.layers.0.self_attn.o_proj.weight; [40, 50] padded\n"),
        "{text}"
    );
    assert!(text.contains("n: 64, k: 52 }"), "{text}");
}

/// The README's checkpoint commands, run exactly as written beside a model.safetensors.
#[test]
fn the_readme_checkpoint_commands_work_as_written() {
    let readme =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme
        .split("\n## Checkpoints\n")
        .nth(1)
        .expect("the README has a Checkpoints section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let commands: Vec<&str> = block
        .lines()
        .filter(|line| line.starts_with("nmtune ") && !line.contains("--shapes"))
        .collect();
    assert!(commands.len() >= 2, "{block}");
    let (dir, _, _) = model_dir();
    for command in commands {
        let words: Vec<&str> = command.split_whitespace().skip(1).collect();
        nmtune()
            .current_dir(dir.path())
            .args(&words)
            .assert()
            .success();
    }
    let files = snapshot(dir.path());
    assert!(
        files.contains_key("model.nm.safetensors"),
        "{:?}",
        files.keys()
    );
    assert!(
        files.keys().any(|f| f.ends_with(".yaml")),
        "{:?}",
        files.keys()
    );
}

/// A failed run: exit status 1, one line naming `what`, and the directory unchanged (no
/// output, no temporary file).
fn refused(dir: &Path, args: &[&str], what: &'static str) {
    let before = snapshot(dir);
    nmtune()
        .current_dir(dir)
        .args(args)
        .assert()
        .code(1)
        .stderr(one_line_error(what));
    let after = snapshot(dir);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "{args:?}"
    );
    assert!(after == before, "{args:?} changed a file");
}

#[test]
fn bad_input_is_one_line_and_leaves_nothing_behind() {
    let (dir, _, model) = model_dir();
    let d = dir.path();
    fs::write(d.join("notes.txt"), "not a checkpoint\n").unwrap();
    fs::write(d.join("empty.safetensors"), "").unwrap();
    let mut rng = SmallRng::seed_from_u64(1);
    let empty_weight = BTreeMap::from([
        (
            "model.layers.0.empty.weight".to_string(),
            Tensor {
                dtype: Dtype::F32,
                shape: vec![0, 64],
                data: Vec::new(),
            },
        ),
        (
            "model.norm.weight".to_string(),
            random_tensor(&mut rng, Dtype::F32, &[64]),
        ),
    ]);
    write_checkpoint(&d.join("zero.safetensors"), &empty_weight);
    let prune_args = |input: &'static str, extra: &[&'static str]| {
        let mut args = vec!["prune", "--in", input, "--nm", "8:32"];
        args.extend_from_slice(extra);
        if !extra.contains(&"--out") {
            args.extend_from_slice(&["--out", "out.safetensors"]);
        }
        args
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            prune_args("missing.safetensors", &[]),
            "cannot read missing.safetensors",
        ),
        (
            prune_args("notes.txt", &[]),
            "notes.txt is not a safetensors file",
        ),
        (
            prune_args("empty.safetensors", &[]),
            "is not a safetensors file",
        ),
        (
            prune_args("model.safetensors", &["--layers", "layernorm"]),
            "only 2-D",
        ),
        (
            prune_args("model.safetensors", &["--layers", "position_ids"]),
            "only F32, F16 and BF16",
        ),
        (
            prune_args("zero.safetensors", &[]),
            "at least one row and one column",
        ),
        (
            prune_args("model.safetensors", &["--layers", "mlp.("]),
            "not a valid regular expression",
        ),
        (
            prune_args("model.safetensors", &["--layers", "^nothing$"]),
            "has no tensor that the regular expression",
        ),
        (
            prune_args("model.safetensors", &["--out", "model.safetensors"]),
            "is the input file",
        ),
        (
            prune_args("model.safetensors", &["--out", "./model.safetensors"]),
            "is the input file",
        ),
        (
            prune_args("model.safetensors", &["--out", "notes.txt/out.safetensors"]),
            "cannot write",
        ),
        (
            prune_args(
                "model.safetensors",
                &["--out", "no-such-dir/out.safetensors"],
            ),
            "cannot write",
        ),
        (prune_args("model.safetensors", &["--l", "129"]), "L=129"),
        (
            vec![
                "prune",
                "--in",
                "model.safetensors",
                "--nm",
                "33:32",
                "--out",
                "o.safetensors",
            ],
            "N must not exceed M",
        ),
        (
            vec![
                "prune",
                "--in",
                "model.safetensors",
                "--out",
                "o.safetensors",
            ],
            "were not provided: --nm <N:M>",
        ),
        (
            vec![
                "prune",
                "--decompress",
                "--in",
                "model.safetensors",
                "--out",
                "o.safetensors",
            ],
            "is not a pruned checkpoint",
        ),
        (
            vec!["shapes", "--from", "missing.safetensors"],
            "cannot read missing.safetensors",
        ),
        (
            vec!["shapes", "--from", "notes.txt"],
            "is not a safetensors file",
        ),
        (
            vec![
                "shapes",
                "--from",
                "model.safetensors",
                "--out",
                "model.safetensors",
            ],
            "is the input file",
        ),
        (
            vec!["shapes", "--from", "model.safetensors", "--layers", "norm"],
            "only 2-D",
        ),
        (
            vec!["shapes", "--from", "model.safetensors", "--nm", "0.75"],
            "neither N:M nor a percentage",
        ),
    ];
    for (args, what) in &cases {
        refused(d, args, what);
    }
    // An existing directory in the output's place: refused, the directory untouched.
    fs::create_dir(d.join("taken.safetensors")).unwrap();
    refused(
        d,
        &prune_args("model.safetensors", &["--out", "taken.safetensors"]),
        "cannot write",
    );
    assert!(d.join("taken.safetensors").is_dir());
    // A hard link to the input is the input.
    fs::hard_link(d.join("model.safetensors"), d.join("link.safetensors")).unwrap();
    refused(
        d,
        &prune_args("model.safetensors", &["--out", "link.safetensors"]),
        "is the input file",
    );
    // A pruned checkpoint is not pruned again.
    prune(
        &d.join("model.safetensors"),
        &d.join("model.nm.safetensors"),
    )
    .success();
    refused(
        d,
        &prune_args("model.nm.safetensors", &[]),
        "already a pruned checkpoint",
    );
    // The input is never changed.
    assert_eq!(
        read_checkpoint(&d.join("model.safetensors")).tensors.len(),
        model.len()
    );
}

/// An error found only while the output is being written (D out of range, checked when the
/// weight is rebuilt) discards the whole output.
#[test]
fn a_corrupt_pruned_checkpoint_is_refused_without_output() {
    let (dir, input, _) = model_dir();
    let d = dir.path();
    let pruned = d.join("model.nm.safetensors");
    prune(&input, &pruned).success();
    let mut file = read_checkpoint(&pruned);
    let d_name = indices_name("model.layers.0.self_attn.q_proj.weight");
    file.tensors.get_mut(&d_name).unwrap().data[7] = 200;
    safetensors::serialize_to_file(file.tensors.iter(), Some(file.metadata.clone()), &pruned)
        .unwrap();
    refused(
        d,
        &[
            "prune",
            "--decompress",
            "--in",
            "model.nm.safetensors",
            "--out",
            "back.safetensors",
        ],
        "is not below M=32",
    );
    // Metadata that does not describe the parts.
    let key = weight_key("model.layers.0.self_attn.q_proj.weight");
    file.metadata.insert(
        key,
        r#"{"nm":"8:32","l":16,"shape":[64,64],"padded_shape":[64,64]}"#.into(),
    );
    safetensors::serialize_to_file(file.tensors.iter(), Some(file.metadata), &pruned).unwrap();
    refused(
        d,
        &[
            "prune",
            "--decompress",
            "--in",
            "model.nm.safetensors",
            "--out",
            "back.safetensors",
        ],
        "expected [16, 4]",
    );
}
