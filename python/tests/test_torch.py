"""nmtune.torch.SparseLinear: built from an nn.Linear or a pruned checkpoint, clear errors
for inputs it cannot take, and (on a CUDA GPU) the output of torch.matmul on the pruned
dense weight. Skipped, saying so, where torch or a GPU is missing."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: the SparseLinear tests are not run")

import nmtune  # noqa: E402
import nmtune.torch  # noqa: E402
from helpers import ROOT, exact_weight, run_nmtune, write_safetensors  # noqa: E402

DBS = [str(ROOT / "tuning-db" / "h100.sqlite"), str(ROOT / "tuning-db" / "h100-decode.sqlite")]
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU: SparseLinear is not run")


def gpu_profile() -> str:
    """The tuning databases' name for this machine's GPU (h100, h200, …)."""
    name = torch.cuda.get_device_name().lower()
    for profile in ("h200", "h100", "a100", "4090", "3090"):
        if profile in name:
            return profile
    pytest.skip(f"no committed tuning database for {torch.cuda.get_device_name()}")


def linear(n=256, k=512, bias=True, seed=0):
    torch.manual_seed(seed)
    layer = torch.nn.Linear(k, n, bias=bias)
    return layer


def test_from_linear_prunes_and_keeps_the_bias():
    dense = linear()
    layer = nmtune.torch.SparseLinear.from_linear(dense, "8:32", l=32, db=DBS, gpu="h100")
    assert (layer.in_features, layer.out_features) == (512, 256)
    torch.testing.assert_close(layer.bias.cpu(), dense.bias.detach())
    answer = layer.kernel_for(16)
    assert answer["m"] == 16 and answer["n"] == 256 and answer["k"] == 512 and answer["gpu"] == "h100"
    assert "nm=8:32" in repr(layer)


def test_forward_rejects_what_it_cannot_take():
    layer = nmtune.torch.SparseLinear.from_linear(linear(), "8:32", db=DBS, gpu="h100")
    with pytest.raises(ValueError, match="runs on CUDA tensors, but x is on cpu"):
        layer(torch.randn(4, 512))
    with pytest.raises(TypeError, match="takes a torch tensor, got ndarray"):
        layer(np.ones((4, 512), dtype=np.float32))
    with pytest.raises(nmtune.NmtuneError, match="m=0 is not a whole number"):
        layer.kernel_for(0)


def test_construction_errors():
    with pytest.raises(TypeError, match="gpu is required"):
        nmtune.torch.SparseLinear.from_linear(linear(), "8:32", db=DBS)
    with pytest.raises(TypeError, match="must be a torch.nn.Linear"):
        nmtune.torch.SparseLinear.from_linear(torch.nn.Conv1d(4, 4, 1), "8:32", db=DBS, gpu="h100")
    with pytest.raises(nmtune.NmtuneError, match="does not exist"):
        nmtune.torch.SparseLinear.from_linear(linear(), "8:32", db="nowhere.sqlite", gpu="h100")
    with pytest.raises(nmtune.NmtuneError, match="is neither N:M nor a percentage"):
        nmtune.torch.SparseLinear.from_linear(linear(), "0", db=DBS, gpu="h100")
    with pytest.raises(nmtune.NmtuneError, match="runs on CUDA devices, not cpu"):
        nmtune.torch.SparseLinear.from_linear(linear(), "8:32", db=DBS, gpu="h100", device="cpu")
    lookup = nmtune.Lookup(DBS, "h100")
    with pytest.raises(nmtune.NmtuneError, match="the Lookup given as db is for 'h100'"):
        nmtune.torch.SparseLinear.from_linear(linear(), "8:32", db=lookup, gpu="h200")


def test_from_safetensors_reads_weight_and_bias(tmp_path):
    rng = np.random.default_rng(3)
    w = exact_weight(rng, 64, 96)
    b = rng.standard_normal(64).astype(np.float32)
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"proj.weight": w, "proj.bias": b})
    pruned = tmp_path / "model.nm.safetensors"
    run_nmtune("prune", "--in", str(path), "--nm", "8:32", "--out", str(pruned))
    lookup = nmtune.Lookup(DBS, "h100")
    layer = nmtune.torch.SparseLinear.from_safetensors(pruned, "proj.weight", db=lookup)
    np.testing.assert_array_equal(layer.bias.cpu().numpy(), b)
    assert (layer.in_features, layer.out_features) == (96, 64)
    plain = nmtune.torch.SparseLinear.from_safetensors(pruned, "proj.weight", db=lookup, bias=None)
    assert plain.bias is None
    with pytest.raises(nmtune.NmtuneError, match="has no tensor 'nothing.bias'"):
        nmtune.torch.SparseLinear.from_safetensors(pruned, "proj.weight", db=lookup, bias="nothing.bias")


@needs_cuda
@pytest.mark.parametrize("m", [1, 16, 300])
@pytest.mark.parametrize("n,k,nm", [(4096, 4096, "8:32"), (11008, 4096, "16:32"), (200, 300, "8:32")])
def test_sparse_linear_matches_torch_matmul_on_the_pruned_weight(m, n, k, nm):
    gpu = gpu_profile()
    dbs = [str(ROOT / "tuning-db" / f"{gpu}.sqlite"), str(ROOT / "tuning-db" / f"{gpu}-decode.sqlite")]
    dense = linear(n, k, seed=m).cuda()
    layer = nmtune.torch.SparseLinear.from_linear(dense, nm, l=32, db=dbs, gpu=gpu)
    pruned = nmtune.decompress(*nmtune.prune_and_compress(dense.weight.detach(), nm, l=32))
    x = torch.randn(m, k, device="cuda")
    y = layer(x)
    expected = torch.matmul(x.double(), pruned.double().T) + dense.bias.double()
    assert y.shape == (m, n) and y.dtype == torch.float32 and y.device == x.device
    error = ((y.double() - expected).norm() / expected.norm()).item()
    assert error < 1e-5, f"relative error {error:.2e} ({layer.kernel_for(m)['kernel']})"
    # Leading dimensions are kept, and the same layer serves every m.
    y3 = layer(x.view(1, m, k))
    assert y3.shape == (1, m, n)
    torch.testing.assert_close(y3.view(m, n), y, rtol=0, atol=0)


@needs_cuda
def test_gpu_input_errors():
    gpu = gpu_profile()
    dbs = [str(ROOT / "tuning-db" / f"{gpu}.sqlite")]
    layer = nmtune.torch.SparseLinear.from_linear(linear().cuda(), "8:32", db=dbs, gpu=gpu)
    x = torch.randn(8, 512, device="cuda")
    with pytest.raises(TypeError, match="kernels are FP32: x is torch.float16"):
        layer(x.half())
    with pytest.raises(ValueError, match="x is not contiguous"):
        layer(torch.randn(512, 8, device="cuda").T)
    with pytest.raises(ValueError, match="last dimension must be in_features = 512"):
        layer(torch.randn(8, 256, device="cuda"))
    with pytest.raises(nmtune.NmtuneError, match="not a multiple of 16 bytes"):
        layer(torch.randn(8 * 512 + 1, device="cuda")[1:].view(8, 512))
    if torch.cuda.device_count() > 1:
        with pytest.raises(ValueError, match="but this layer runs on cuda:0"):
            layer(x.to("cuda:1"))
