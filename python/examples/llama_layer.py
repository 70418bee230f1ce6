"""A Llama-shaped decoder layer (Llama-7B sizes, random weights, plain PyTorch) whose seven
linear layers are replaced by nmtune.torch.SparseLinear.

It checks the sparse layer's output against the same layer run by PyTorch on the same pruned
weights (decompressed to dense), then times one forward at m = 1, 16 and 4096 tokens against
PyTorch's dense FP32 layer (the unpruned weights, TF32 off, as nmtune's kernels are FP32).

    python python/examples/llama_layer.py [--nm 8:32] [--l 32] [--m 1,16,4096] [--json FILE]

Needs a CUDA GPU with a committed tuning database (tuning-db/<gpu>.sqlite); it says so and
exits otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Callable, Dict, List

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nm", default="8:32", help="sparsity pattern N:M (default 8:32)")
    parser.add_argument("--l", type=int, default=32, help="vector length L (default 32)")
    parser.add_argument("--m", default="1,16,4096", help="tokens per forward, comma-separated")
    parser.add_argument("--hidden", type=int, default=4096, help="hidden size (Llama-7B: 4096)")
    parser.add_argument("--intermediate", type=int, default=11008, help="MLP size (Llama-7B: 11008)")
    parser.add_argument("--heads", type=int, default=32, help="attention heads (Llama-7B: 32)")
    parser.add_argument("--runs", type=int, default=20, help="timed forwards per point (median)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    try:
        ms = [int(v) for v in args.m.split(",")]
    except ValueError:
        parser.error(f"--m {args.m!r}: give whole numbers separated by commas")

    try:
        import torch
    except ImportError:
        print("llama_layer.py needs PyTorch: pip install torch", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print(
            "llama_layer.py needs a CUDA GPU, and torch.cuda.is_available() is False on this machine: "
            "nothing was run",
            file=sys.stderr,
        )
        return 1
    import nmtune
    import nmtune.torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gpu = gpu_profile(torch.cuda.get_device_name())
    dbs = [p for p in (ROOT / "tuning-db" / f"{gpu}.sqlite", ROOT / "tuning-db" / f"{gpu}-decode.sqlite") if p.exists()]
    if gpu is None or not dbs:
        print(f"no tuning database for {torch.cuda.get_device_name()} in {ROOT / 'tuning-db'}", file=sys.stderr)
        return 1
    lookup = nmtune.Lookup(dbs, gpu)

    torch.manual_seed(0)
    dense = DecoderLayer(args.hidden, args.intermediate, args.heads).cuda().eval()
    sparse = DecoderLayer(args.hidden, args.intermediate, args.heads).cuda().eval()
    pruned = DecoderLayer(args.hidden, args.intermediate, args.heads).cuda().eval()
    sparse.load_state_dict(dense.state_dict())
    pruned.load_state_dict(dense.state_dict())
    for name in LINEARS:
        linear = dense.get_submodule(name)
        layer = nmtune.torch.SparseLinear.from_linear(linear, args.nm, l=args.l, db=lookup)
        set_submodule(sparse, name, layer)
        compressed = nmtune.prune_and_compress(linear.weight.detach(), args.nm, l=args.l)
        with torch.no_grad():
            pruned.get_submodule(name).weight.copy_(nmtune.decompress(*compressed))

    results: Dict[str, object] = {
        "gpu": torch.cuda.get_device_name(),
        "profile": gpu,
        "databases": [str(p.relative_to(ROOT)) for p in dbs],
        "nm": args.nm,
        "l": args.l,
        "hidden": args.hidden,
        "intermediate": args.intermediate,
        "heads": args.heads,
        "torch": torch.__version__,
        "points": [],
    }
    print(f"{torch.cuda.get_device_name()} ({gpu}), pattern {args.nm}, L = {args.l}, torch {torch.__version__}")
    print(f"{'m':>6} {'rel. error':>11} {'dense FP32 ms':>14} {'pruned dense ms':>16} {'nmtune ms':>10} {'speed-up':>9}")
    with torch.no_grad():
        for m in ms:
            x = torch.randn(1, m, args.hidden, device="cuda")
            reference = pruned(x).double()
            got = sparse(x).double()
            error = ((got - reference).norm() / reference.norm()).item()
            t_dense = median_ms(lambda: dense(x), args.runs)
            t_pruned = median_ms(lambda: pruned(x), args.runs)
            t_sparse = median_ms(lambda: sparse(x), args.runs)
            kernels = {name: sparse.get_submodule(name).kernel_for(m)["kernel"] for name in LINEARS}
            print(f"{m:>6} {error:>11.2e} {t_dense:>14.3f} {t_pruned:>16.3f} {t_sparse:>10.3f} {t_dense / t_sparse:>8.2f}x")
            results["points"].append(
                {
                    "m": m,
                    "relative_error": error,
                    "dense_fp32_ms": t_dense,
                    "pruned_dense_fp32_ms": t_pruned,
                    "nmtune_ms": t_sparse,
                    "speedup": t_dense / t_sparse,
                    "kernels": kernels,
                }
            )
            if error > 1e-4:
                print(f"relative error {error:.2e} at m = {m} is larger than 1e-4", file=sys.stderr)
                return 1
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


LINEARS = [
    "attn.q_proj",
    "attn.k_proj",
    "attn.v_proj",
    "attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
]


def gpu_profile(device_name: str):
    name = device_name.lower()
    for profile in ("h200", "h100", "a100", "4090", "3090"):
        if profile in name:
            return profile
    return None


def set_submodule(root, dotted: str, module) -> None:
    parent, _, leaf = dotted.rpartition(".")
    setattr(root.get_submodule(parent) if parent else root, leaf, module)


def median_ms(run: Callable[[], object], runs: int) -> float:
    """Median wall time of one call on the GPU, by CUDA events, after three warm-up calls (the
    first compiles and uploads nmtune's kernels)."""
    import torch

    for _ in range(3):
        run()
    times: List[float] = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def _modules():
    import torch
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self, size: int, eps: float = 1e-6) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(size))
            self.eps = eps

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    def rotate(x, positions):
        half = x.shape[-1] // 2
        freq = 1.0 / (10000 ** (torch.arange(half, device=x.device, dtype=torch.float32) / half))
        angle = positions[:, None].float() * freq[None, :]
        cos, sin = angle.cos(), angle.sin()
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)

    class Attention(nn.Module):
        def __init__(self, hidden: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.q_proj = nn.Linear(hidden, hidden, bias=False)
            self.k_proj = nn.Linear(hidden, hidden, bias=False)
            self.v_proj = nn.Linear(hidden, hidden, bias=False)
            self.o_proj = nn.Linear(hidden, hidden, bias=False)

        def forward(self, x):
            b, s, h = x.shape
            split = lambda t: t.view(b, s, self.heads, h // self.heads).transpose(1, 2)  # noqa: E731
            positions = torch.arange(s, device=x.device)
            q = rotate(split(self.q_proj(x)), positions)
            k = rotate(split(self.k_proj(x)), positions)
            v = split(self.v_proj(x))
            out = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o_proj(out.transpose(1, 2).reshape(b, s, h))

    class MLP(nn.Module):
        def __init__(self, hidden: int, intermediate: int) -> None:
            super().__init__()
            self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
            self.up_proj = nn.Linear(hidden, intermediate, bias=False)
            self.down_proj = nn.Linear(intermediate, hidden, bias=False)

        def forward(self, x):
            return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))

    class Layer(nn.Module):
        def __init__(self, hidden: int, intermediate: int, heads: int) -> None:
            super().__init__()
            self.input_norm = RMSNorm(hidden)
            self.attn = Attention(hidden, heads)
            self.post_norm = RMSNorm(hidden)
            self.mlp = MLP(hidden, intermediate)
            for linear in self.modules():
                if isinstance(linear, nn.Linear):
                    nn.init.normal_(linear.weight, std=1.0 / math.sqrt(linear.in_features))

        def forward(self, x):
            x = x + self.attn(self.input_norm(x))
            return x + self.mlp(self.post_norm(x))

    return Layer


def DecoderLayer(hidden: int, intermediate: int, heads: int):
    """One Llama decoder layer: RMSNorm, rotary causal self-attention, RMSNorm, SwiGLU MLP."""
    return _modules()(hidden, intermediate, heads)


if __name__ == "__main__":
    sys.exit(main())
