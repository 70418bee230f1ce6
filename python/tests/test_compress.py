"""prune_and_compress and decompress against the NumPy reference, on NumPy arrays (and on
torch tensors where torch is installed)."""

import numpy as np
import pytest

import nmtune
from helpers import exact_weight, reference_dense, reference_prune

CASES = [
    # (n, k, pattern, N, M, L)
    (64, 96, "8:32", 8, 32, 32),
    (128, 64, "2:4", 2, 4, 16),
    (96, 128, "75%", 8, 32, 32),
    (40, 50, "8:32", 8, 32, 32),  # n and k padded
    (33, 70, "4:8", 4, 8, 8),  # padded, small windows
    (64, 64, "16:16", 16, 16, 64),  # dense: N = M
]


@pytest.mark.parametrize("n,k,nm,n_keep,m_window,l", CASES)
def test_compress_matches_the_numpy_reference(n, k, nm, n_keep, m_window, l):
    w = exact_weight(np.random.default_rng(n * k), n, k)
    c = nmtune.prune_and_compress(w, nm, l=l)
    values, indices = reference_prune(w, n_keep, m_window, l)
    assert c.values.dtype == np.float32 and c.indices.dtype == np.uint8
    np.testing.assert_array_equal(c.values, values)
    np.testing.assert_array_equal(c.indices, indices)
    assert c.shape == (n, k) and c.nm == nm and c.l == l
    assert c.padded_shape == (values.shape[1], values.shape[0] // n_keep * m_window)


@pytest.mark.parametrize("n,k,nm,n_keep,m_window,l", CASES)
def test_decompress_restores_the_pruned_weight(n, k, nm, n_keep, m_window, l):
    w = exact_weight(np.random.default_rng(n + k), n, k)
    c = nmtune.prune_and_compress(w, nm, l=l)
    dense = nmtune.decompress(*c)
    assert dense.shape == (n, k) and dense.dtype == np.float32
    np.testing.assert_array_equal(dense, reference_dense(w, n_keep, m_window, l))
    # Pruning what is already pruned changes nothing.
    again = nmtune.prune_and_compress(dense, nm, l=l)
    np.testing.assert_array_equal(nmtune.decompress(*again), dense)


def test_decompress_defaults_to_the_padded_shape():
    w = exact_weight(np.random.default_rng(1), 40, 50)
    c = nmtune.prune_and_compress(w, "8:32")
    padded = nmtune.decompress(c.values, c.indices, "8:32", 32)
    assert padded.shape == c.padded_shape == (64, 64)
    np.testing.assert_array_equal(padded[:40, :50], nmtune.decompress(*c))
    assert not padded[40:, :].any() and not padded[:, 50:].any()


def test_random_float32_weights_keep_a_quarter_at_8_of_32():
    w = np.random.default_rng(2).standard_normal((256, 512)).astype(np.float32)
    c = nmtune.prune_and_compress(w, "8:32", l=32)
    dense = nmtune.decompress(*c)
    assert (dense != 0).mean() == 0.25
    kept = dense != 0
    np.testing.assert_array_equal(dense[kept], w[kept])


def test_float16_weights_keep_their_type_exactly():
    w = exact_weight(np.random.default_rng(3), 64, 64).astype(np.float16)
    c = nmtune.prune_and_compress(w, "8:32")
    assert c.values.dtype == np.float16
    values, _ = reference_prune(w.astype(np.float32), 8, 32, 32)
    np.testing.assert_array_equal(c.values.astype(np.float32), values)
    dense = nmtune.decompress(*c)
    assert dense.dtype == np.float16


def test_non_contiguous_arrays_are_read_as_their_values():
    w = exact_weight(np.random.default_rng(4), 96, 64)
    c = nmtune.prune_and_compress(w.T, "8:32")  # 64 × 96, a transposed view
    np.testing.assert_array_equal(c.values, reference_prune(np.ascontiguousarray(w.T), 8, 32, 32)[0])


def test_torch_tensors_round_trip():
    torch = pytest.importorskip("torch", reason="torch is not installed: the torch round trip is not run")
    w = exact_weight(np.random.default_rng(5), 64, 96)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        t = torch.from_numpy(w).to(dtype)
        c = nmtune.prune_and_compress(t, "8:32", l=32)
        assert isinstance(c.values, torch.Tensor) and c.values.dtype == dtype
        assert c.indices.dtype == torch.uint8
        values, indices = reference_prune(w, 8, 32, 32)
        np.testing.assert_array_equal(c.values.float().numpy(), values)
        np.testing.assert_array_equal(c.indices.numpy(), indices)
        dense = nmtune.decompress(*c)
        assert dense.dtype == dtype
        np.testing.assert_array_equal(dense.float().numpy(), reference_dense(w, 8, 32, 32))


def test_the_module_docstring_example_holds():
    import doctest

    failures, tried = doctest.testmod(nmtune, verbose=False)
    assert tried >= 4 and failures == 0
