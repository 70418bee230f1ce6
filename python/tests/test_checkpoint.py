"""`nmtune prune` and `nmtune shapes --from` on a generated safetensors checkpoint: B' and D
as nmtune.prune_and_compress and the NumPy reference compute them, the metadata, and every
other tensor byte for byte; the package reads the pruned file back."""

import json

import numpy as np
import pytest

import nmtune
from helpers import as_array, exact_weight, read_safetensors, reference_prune, run_nmtune, write_safetensors

UP = "model.layers.0.mlp.up_proj.weight"
Q = "model.layers.0.self_attn.q_proj.weight"
UNTOUCHED = [
    "model.embed_tokens.weight",
    "model.layers.0.self_attn.q_proj.bias",
    "model.norm.weight",
    "position_ids",
]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A small Llama-like checkpoint: an F32 and an F16 (padded) linear weight, an embedding,
    a bias, a norm and an integer tensor, and metadata of its own."""
    rng = np.random.default_rng(7)
    folder = tmp_path_factory.mktemp("checkpoint")
    tensors = {
        UP: exact_weight(rng, 64, 96),
        Q: exact_weight(rng, 40, 50).astype(np.float16),
        "model.embed_tokens.weight": rng.standard_normal((100, 64)).astype(np.float32),
        "model.layers.0.self_attn.q_proj.bias": rng.standard_normal(40).astype(np.float32),
        "model.norm.weight": np.ones(64, dtype=np.float32),
        "position_ids": np.arange(16, dtype=np.int64),
    }
    path = folder / "model.safetensors"
    write_safetensors(path, tensors, {"format": "pt"})
    out = folder / "model.nm.safetensors"
    result = run_nmtune("prune", "--in", str(path), "--nm", "8:32", "--l", "32", "--out", str(out))
    return path, out, tensors, result


def test_pruned_weights_are_the_packages_and_the_references(checkpoint):
    _, out, tensors, _ = checkpoint
    written, _ = read_safetensors(out)
    for name, dtype in [(UP, "F32"), (Q, "F16")]:
        assert name not in written
        values_entry = written[f"{name}.nm_values"]
        indices_entry = written[f"{name}.nm_indices"]
        assert values_entry[0] == dtype and indices_entry[0] == "U8"
        w = tensors[name]
        values, indices = reference_prune(w.astype(np.float32), 8, 32, 32)
        np.testing.assert_array_equal(as_array(values_entry).astype(np.float32), values)
        np.testing.assert_array_equal(as_array(indices_entry), indices)
        c = nmtune.prune_and_compress(w, "8:32", l=32)
        np.testing.assert_array_equal(as_array(values_entry), c.values)
        np.testing.assert_array_equal(as_array(indices_entry), c.indices)


def test_metadata_says_pattern_l_and_shapes(checkpoint):
    _, out, _, _ = checkpoint
    _, metadata = read_safetensors(out)
    assert metadata["format"] == "pt", "the file's own metadata is kept"
    assert metadata["nmtune.format"] == "nm-vector-wise/1"
    assert json.loads(metadata[f"nmtune.weight.{UP}"]) == {
        "nm": "8:32", "l": 32, "shape": [64, 96], "padded_shape": [64, 96],
    }
    assert json.loads(metadata[f"nmtune.weight.{Q}"]) == {
        "nm": "8:32", "l": 32, "shape": [40, 50], "padded_shape": [64, 64],
    }
    assert sorted(k for k in metadata if k.startswith("nmtune.weight.")) == [
        f"nmtune.weight.{UP}", f"nmtune.weight.{Q}",
    ]


def test_other_tensors_are_byte_identical(checkpoint):
    path, out, _, result = checkpoint
    original, _ = read_safetensors(path)
    written, _ = read_safetensors(out)
    for name in UNTOUCHED:
        assert written[name] == original[name], name
    assert len(written) == len(UNTOUCHED) + 4
    assert "4 other tensors copied unchanged" in result.stderr
    assert f"{Q}: [40, 50] padded with zeros to [64, 64]" in result.stderr


def test_the_package_reads_the_pruned_file(checkpoint):
    _, out, tensors, _ = checkpoint
    assert nmtune.pruned_names(out) == sorted([UP, Q])
    for name in (UP, Q):
        c = nmtune.read_pruned(out, name)
        expected = nmtune.prune_and_compress(tensors[name], "8:32", l=32)
        np.testing.assert_array_equal(c.values, expected.values.astype(np.float32))
        np.testing.assert_array_equal(c.indices, expected.indices)
        assert (c.nm, c.l, c.shape) == ("8:32", 32, tensors[name].shape)
        np.testing.assert_array_equal(
            nmtune.decompress(*c), nmtune.decompress(*expected).astype(np.float32)
        )
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.read_pruned(out, "model.layers.0.mlp.down_proj.weight")
    assert str(err.value) == (
        f"{out} holds no pruned weight 'model.layers.0.mlp.down_proj.weight' "
        f"(it holds '{UP}', '{Q}')"
    )


def test_decompress_restores_what_pruning_kept(checkpoint, tmp_path):
    _, out, tensors, _ = checkpoint
    restored = tmp_path / "restored.safetensors"
    run_nmtune("prune", "--decompress", "--in", str(out), "--out", str(restored))
    written, metadata = read_safetensors(restored)
    assert not any(k.startswith("nmtune.") for k in metadata)
    for name in (UP, Q):
        dense = as_array(written[name])
        assert dense.dtype == tensors[name].dtype and dense.shape == tensors[name].shape
        c = nmtune.prune_and_compress(tensors[name], "8:32")
        np.testing.assert_array_equal(dense, nmtune.decompress(*c))


def test_shapes_from_the_checkpoint(checkpoint, tmp_path):
    path, _, _, _ = checkpoint
    shapes = tmp_path / "shapes.yaml"
    run_nmtune("shapes", "--from", str(path), "--m", "1,16", "--nm", "8:32,75%", "--out", str(shapes))
    text = shapes.read_text()
    assert "m: [1, 16]" in text
    assert f"name: {UP}, n: 64, k: 96" in text or f'name: "{UP}", n: 64, k: 96' in text
    assert "n: 64, k: 64" in text, "the F16 weight's padded shape"
    assert "[40, 50] padded" in text
    assert "embed_tokens" not in text and "norm" not in text
    # The file is one the main job reads: it lists its problems without error.
    stdout = run_nmtune("shapes", "--from", str(path), "--m", "1,16", "--nm", "8:32").stdout
    assert stdout.count("- {") == 2


def test_prune_errors_are_one_line(checkpoint, tmp_path):
    path, out, _, _ = checkpoint
    result = run_nmtune("prune", "--in", str(out), "--nm", "8:32", "--out", str(tmp_path / "x"), check=False)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "is already a pruned checkpoint" in result.stderr
    missing = tmp_path / "missing.safetensors"
    result = run_nmtune("prune", "--in", str(missing), "--nm", "8:32", "--out", str(tmp_path / "y"), check=False)
    assert result.returncode == 1
    line = result.stderr.strip()
    assert line.startswith(f"nmtune: error: cannot read {missing}: ")
    cause = line.split(": ", 3)[-1]
    assert line.count(cause) == 1, f"the cause is repeated: {line}"
