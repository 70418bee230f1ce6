"""Every bad input is a Python exception with a clear one-line message: NmtuneError (a
ValueError) for bad values, TypeError for arguments of the wrong type. Never a crash."""

import numpy as np
import pytest

import nmtune
from helpers import ROOT, write_safetensors

W = np.ones((64, 64), dtype=np.float32)
DB = str(ROOT / "tuning-db" / "h100.sqlite")


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    assert text, "an empty message"
    return text


@pytest.mark.parametrize(
    "nm,says",
    [
        ("0", "'0' is neither N:M nor a percentage"),
        ("0.75", "'0.75' is neither N:M nor a percentage"),
        ("8:0", "M must be between 1 and 128"),
        ("9:8", "N must not exceed M"),
        ("0:32", "N must be at least 1"),
        ("x:32", "N is not an integer"),
        ("101%", "sparsity must be in [0, 1)"),
    ],
)
def test_bad_patterns(nm, says):
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.prune_and_compress(W, nm)
    assert says in one_line(err)
    with pytest.raises(ValueError):
        nmtune.parse_pattern(nm)


def test_pattern_parsing_is_the_command_lines():
    assert nmtune.parse_pattern("8:32") == (8, 32)
    assert nmtune.parse_pattern("75%") == (8, 32)
    assert nmtune.parse_pattern(" 2:4 ") == (2, 4)
    with pytest.raises(TypeError, match="string such as '8:32'"):
        nmtune.parse_pattern(8)


@pytest.mark.parametrize(
    "weight,error,says",
    [
        ([[1.0, 2.0]], TypeError, "must be a NumPy array or a torch tensor, got list"),
        (np.ones((64, 64), dtype=np.int32), TypeError, "must be float32 or float16, got int32"),
        (np.ones((64, 64), dtype=np.float64), TypeError, "must be float32 or float16, got float64"),
        (np.ones((2, 64, 64), dtype=np.float32), nmtune.NmtuneError, "must be 2-D"),
        (np.ones((0, 64), dtype=np.float32), nmtune.NmtuneError, "at least one row and one column"),
    ],
)
def test_bad_weights(weight, error, says):
    with pytest.raises(error) as err:
        nmtune.prune_and_compress(weight, "8:32")
    assert says in one_line(err)


@pytest.mark.parametrize(
    "l,error,says",
    [
        (0, nmtune.NmtuneError, "l=0 is not a whole number of at least 1"),
        (-32, nmtune.NmtuneError, "l=-32 is not a whole number of at least 1"),
        (129, nmtune.NmtuneError, "vector length L=129 must be between 1 and 128"),
        (32.0, TypeError, "l must be an int, got float"),
        (True, TypeError, "l must be an int, got bool"),
    ],
)
def test_bad_vector_lengths(l, error, says):
    with pytest.raises(error) as err:
        nmtune.prune_and_compress(W, "8:32", l=l)
    assert says in one_line(err)


def test_bad_compressed_parts():
    c = nmtune.prune_and_compress(W, "8:32")
    with pytest.raises(TypeError, match="indices D must be uint8, got int32"):
        nmtune.decompress(c.values, c.indices.astype(np.int32), "8:32")
    broken = c.indices.copy()
    broken[0, 0] = 40
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.decompress(c.values, broken, "8:32")
    assert "position 40 is not below M=32" in one_line(err)
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.decompress(c.values, c.indices[:8], "8:32")
    assert "indices D have 8 rows, the values B' 16" in one_line(err)
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.decompress(c.values[:15], c.indices[:15], "8:32")
    assert "not a multiple of N=8" in one_line(err)
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.decompress(*c[:4], shape=(80, 64))
    assert "does not describe" in one_line(err)
    with pytest.raises(TypeError, match=r"shape must be a pair \(n, k\)"):
        nmtune.decompress(*c[:4], shape=64)


def test_lookup_needs_existing_databases(tmp_path):
    missing = tmp_path / "nowhere.sqlite"
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.Lookup(missing, "h100")
    assert one_line(err) == f"{missing} does not exist"
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.Lookup([DB, missing], "h100")
    assert one_line(err) == f"{missing} does not exist"
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.Lookup([], "h100")
    assert "no tuning database given" in one_line(err)
    not_a_db = tmp_path / "text.sqlite"
    not_a_db.write_text("hello")
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.Lookup(not_a_db, "h100")
    one_line(err)
    with pytest.raises(TypeError, match="db must be a path or a list of paths, got int"):
        nmtune.Lookup(3, "h100")
    with pytest.raises(TypeError, match="gpu must be a string"):
        nmtune.Lookup(DB, None)


def test_lookup_rejects_bad_problems():
    lookup = nmtune.Lookup(DB, "h100")
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.Lookup(DB, "tpu9")
    assert "unknown GPU 'tpu9'" in one_line(err)
    cases = [
        (dict(m=0), nmtune.NmtuneError, "m=0 is not a whole number of at least 1"),
        (dict(n=-4096), nmtune.NmtuneError, "n=-4096 is not a whole number of at least 1"),
        (dict(k=4001), nmtune.NmtuneError, "k=4001 is not a multiple of M=32"),
        (dict(n=4004), nmtune.NmtuneError, "n=4004 is not a multiple of the vector length L=32"),
        (dict(nm="0"), nmtune.NmtuneError, "is neither N:M nor a percentage"),
        (dict(a_layout="diag"), nmtune.NmtuneError, "unknown A layout 'diag'"),
        (dict(a_layout="col", m=3), nmtune.NmtuneError, "must be a multiple of 4 for column-major A"),
        (dict(m=1.5), TypeError, "m must be an int, got float"),
        (dict(a_layout=None), TypeError, "a_layout must be 'row' or 'col'"),
        (dict(dtype="f64"), nmtune.NmtuneError, "unknown data type 'f64'"),
        (dict(dtype=16), TypeError, "dtype must be 'f32', 'bf16' or 'f16'"),
        (dict(dtype="bf16"), nmtune.NmtuneError, "m = 16 and n = 4096 must be multiples of 64 and 128"),
    ]
    for change, error, says in cases:
        args = dict(m=16, n=4096, k=4096, nm="8:32", l=32, a_layout="row")
        args.update(change)
        with pytest.raises(error) as err:
            lookup.lookup(**args)
        assert says in one_line(err), (change, str(err.value))


def test_checkpoint_errors(tmp_path):
    missing = tmp_path / "missing.safetensors"
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.read_pruned(missing, "w")
    line = one_line(err)
    assert line.startswith(f"cannot read {missing}: ")
    # The cause is said once, not repeated after the message that already holds it.
    cause = line[len(f"cannot read {missing}: "):]
    assert line.count(cause) == 1, line
    garbage = tmp_path / "garbage.safetensors"
    garbage.write_bytes(b"not a safetensors file at all")
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.pruned_names(garbage)
    assert "is not a safetensors file" in one_line(err)
    plain = tmp_path / "plain.safetensors"
    write_safetensors(plain, {"w.weight": np.ones((32, 32), dtype=np.float32)})
    with pytest.raises(nmtune.NmtuneError) as err:
        nmtune.read_pruned(plain, "w.weight")
    assert "is not a pruned checkpoint" in one_line(err)
