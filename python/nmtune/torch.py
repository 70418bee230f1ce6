"""nmtune for PyTorch: :class:`SparseLinear`, an ``nn.Module`` that runs nmtune's tuned N:M
kernels on PyTorch's CUDA tensors.

>>> import torch, nmtune.torch
>>> dense = torch.nn.Linear(4096, 4096, bias=False)
>>> layer = nmtune.torch.SparseLinear.from_linear(
...     dense, "8:32", l=32, db=["tuning-db/h100.sqlite", "tuning-db/h100-decode.sqlite"], gpu="h100")
>>> y = layer(torch.randn(16, 4096, device="cuda"))  # doctest: +SKIP

``forward`` launches the kernel that the tuning database chose for the input's number of rows
on the input's CUDA device and on PyTorch's current stream, reading the input and writing the
output in place (no copy of either), FP32 only, inference only (no autograd).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Sequence, Union

import numpy as np
import torch
from torch import nn

from . import Compressed, Lookup, NmtuneError, _native, parse_pattern, prune_and_compress, read_pruned

__all__ = ["SparseLinear"]

PathLike = Union[str, "os.PathLike[str]"]
DbArg = Union[PathLike, Sequence[PathLike], Lookup]


def _lookup(db: DbArg, gpu: Optional[str]) -> Lookup:
    if isinstance(db, Lookup):
        if gpu is not None and gpu.strip().lower() != db.gpu:
            raise NmtuneError(f"gpu='{gpu}' but the Lookup given as db is for '{db.gpu}'")
        return db
    if gpu is None:
        raise TypeError("gpu is required when db is a path: name the GPU profile, e.g. gpu='h100'")
    return Lookup(db, gpu)


def _device(device: Union[torch.device, str, int, None], fallback: torch.device) -> torch.device:
    if device is None:
        device = fallback if fallback.type == "cuda" else torch.device("cuda")
    if isinstance(device, int):
        device = torch.device("cuda", device)
    device = torch.device(device)
    if device.type != "cuda":
        raise NmtuneError(f"SparseLinear runs on CUDA devices, not {device}")
    return device


class SparseLinear(nn.Module):
    """``y = x·Wᵀ + b`` with W pruned to N:M and compressed, run by nmtune's tuned kernels.

    Build it with :meth:`from_linear` (prune an ``nn.Linear``) or :meth:`from_safetensors`
    (a weight of a checkpoint written by ``nmtune prune``), or from a :class:`nmtune.Compressed`
    weight directly. The compressed weight lives in nmtune's own device memory on ``device``
    (default: the ``nn.Linear``'s device when it is a CUDA one, else the current CUDA device),
    uploaded at the first ``forward``; the bias, if any, is a buffer of this module.

    ``forward(x)`` takes a contiguous float32 CUDA tensor on that device whose last dimension
    is ``in_features`` and returns ``(..., out_features)`` float32 on the same device,
    enqueued on ``torch.cuda.current_stream()``. x is read where it is and the kernel writes
    the output tensor directly; the one exception is a weight whose ``in_features`` is not a
    multiple of M, where x is first padded with zero columns (a copy). A CPU tensor, another
    dtype, a non-contiguous tensor or a tensor on another device raises ``ValueError`` or
    ``TypeError`` with a message saying what to change. Inference only: no gradients flow.
    """

    def __init__(
        self,
        weight: Compressed,
        *,
        db: DbArg,
        gpu: Optional[str] = None,
        bias: Optional[torch.Tensor] = None,
        device: Union[torch.device, str, int, None] = None,
    ) -> None:
        super().__init__()
        if not isinstance(weight, Compressed):
            raise TypeError(f"weight must be an nmtune.Compressed, got {type(weight).__name__}")
        self._lookup = _lookup(db, gpu)
        self.nm: str = weight.nm
        self.l: int = weight.l
        self.out_features, self.in_features = (int(weight.shape[0]), int(weight.shape[1]))
        self._padded_n, self._padded_k = weight.padded_shape
        values = weight.values
        indices = weight.indices
        if isinstance(values, torch.Tensor):
            values = values.detach().to("cpu", torch.float32).numpy()
        if isinstance(indices, torch.Tensor):
            indices = indices.detach().cpu().numpy()
        values = np.ascontiguousarray(values, dtype="<f4")
        indices = np.ascontiguousarray(indices)
        if indices.dtype != np.uint8:
            raise TypeError(f"the indices D must be uint8, got {indices.dtype}")
        self._layer = _native.Layer(
            self._lookup._native,
            values.tobytes(),
            indices.tobytes(),
            self.nm,
            self.l,
            (self.out_features, self.in_features),
            (self._padded_n, self._padded_k),
        )
        self._device = _device(device, torch.device("cpu"))
        if bias is not None:
            if not isinstance(bias, torch.Tensor):
                raise TypeError(f"bias must be a torch tensor, got {type(bias).__name__}")
            if tuple(bias.shape) != (self.out_features,):
                raise NmtuneError(
                    f"bias has shape {tuple(bias.shape)}, the layer {self.out_features} outputs"
                )
            bias = bias.detach().to(torch.float32)
            if torch.cuda.is_available():
                bias = bias.to(self._device)
        # On a machine without CUDA the bias stays where it is; forward cannot run there.
        self.register_buffer("bias", bias)

    @classmethod
    def from_linear(
        cls,
        linear: nn.Linear,
        nm: str = "8:32",
        l: int = 32,
        *,
        db: DbArg,
        gpu: Optional[str] = None,
        device: Union[torch.device, str, int, None] = None,
    ) -> "SparseLinear":
        """Prune ``linear.weight`` to ``nm`` with vector length ``l`` by magnitude (as
        :func:`nmtune.prune_and_compress`) and keep ``linear.bias``. ``db`` is a tuning
        database path, a list of them, or an :class:`nmtune.Lookup`; ``gpu`` names the GPU
        profile (not needed with a Lookup)."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"linear must be a torch.nn.Linear, got {type(linear).__name__}")
        parse_pattern(nm)
        weight = prune_and_compress(linear.weight, nm, l)
        target = _device(device, linear.weight.device)
        bias = None if linear.bias is None else linear.bias.detach()
        return cls(weight, db=db, gpu=gpu, bias=bias, device=target)

    @classmethod
    def from_safetensors(
        cls,
        path: PathLike,
        name: str,
        *,
        db: DbArg,
        gpu: Optional[str] = None,
        bias: Union[str, bool, None] = True,
        device: Union[torch.device, str, int, None] = None,
    ) -> "SparseLinear":
        """Weight ``name`` (e.g. ``"model.layers.0.mlp.up_proj.weight"``) of a checkpoint
        written by ``nmtune prune``. ``bias=True`` takes the tensor named like the weight with
        ``.bias`` for ``.weight`` when the file has one; a string names the bias tensor; False
        or None means no bias."""
        path = os.fspath(path)
        weight = read_pruned(path, name)
        target = _device(device, torch.device("cpu"))
        bias_tensor = None
        if bias is True:
            if name.endswith(".weight"):
                candidate = name[: -len(".weight")] + ".bias"
                try:
                    bias_tensor = _read_tensor(path, candidate)
                except NmtuneError as err:
                    if "has no tensor" not in str(err):
                        raise
        elif isinstance(bias, str):
            bias_tensor = _read_tensor(path, bias)
        elif bias not in (False, None):
            raise TypeError(f"bias must be True, False, None or a tensor name, got {bias!r}")
        return cls(weight, db=db, gpu=gpu, bias=bias_tensor, device=target)

    @property
    def device(self) -> torch.device:
        """The CUDA device the layer runs on."""
        return self._device

    @property
    def lookup(self) -> Lookup:
        """The tuning table the layer's kernels come from."""
        return self._lookup

    def kernel_for(self, m: int) -> Dict[str, Any]:
        """The lookup answer (the fields of ``nmtune lookup --format json``) for ``m`` rows of
        x: which kernel ``forward`` launches, and why. No GPU needed."""
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise NmtuneError(f"m={m!r} is not a whole number of at least 1")
        return json.loads(self._layer.choose(m))

    def _resolved_device(self) -> torch.device:
        if self._device.index is None:
            self._device = torch.device("cuda", torch.cuda.current_device())
        return self._device

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x·Wᵀ + b`` for float32 CUDA ``x`` of shape ``(..., in_features)``."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"SparseLinear takes a torch tensor, got {type(x).__name__}")
        if x.device.type != "cuda":
            raise ValueError(
                f"SparseLinear runs on CUDA tensors, but x is on {x.device}: move it with x.to('{self._device}')"
            )
        if x.dtype != torch.float32:
            raise TypeError(
                f"SparseLinear's kernels are FP32: x is {x.dtype}; convert it with x.float()"
            )
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            raise ValueError(
                f"x has shape {tuple(x.shape)}; its last dimension must be in_features = {self.in_features}"
            )
        if not x.is_contiguous():
            raise ValueError(
                "x is not contiguous (a transposed or strided view): SparseLinear reads x in place; "
                "call x.contiguous() first (a copy)"
            )
        device = self._resolved_device()
        if x.device != device:
            raise ValueError(f"x is on {x.device}, but this layer runs on {device}: move x there")
        lead = tuple(x.shape[:-1])
        m = x.numel() // self.in_features if self.in_features else 0
        if m == 0:
            return x.new_empty(lead + (self.out_features,))
        a = x.view(m, self.in_features)
        if self._padded_k != self.in_features:
            a = nn.functional.pad(a, (0, self._padded_k - self.in_features))
        out = torch.empty((m, self._padded_n), device=device, dtype=torch.float32)
        stream = torch.cuda.current_stream(device)
        self._layer.forward(
            device.index,
            stream.cuda_stream,
            a.data_ptr(),
            a.numel(),
            out.data_ptr(),
            out.numel(),
            m,
        )
        y = out.view(lead + (self._padded_n,))
        if self._padded_n != self.out_features:
            y = y[..., : self.out_features]
        if self.bias is not None:
            if self.bias.device != device:
                self.bias = self.bias.to(device)
            y.add_(self.bias)
        return y

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, nm={self.nm}, "
            f"l={self.l}, bias={self.bias is not None}, device={self._device}, gpu={self._lookup.gpu}"
        )


def _read_tensor(path: str, name: str) -> torch.Tensor:
    data, shape = _native.read_float_tensor(path, name)
    array = np.frombuffer(data, dtype="<f4").reshape(shape).astype(np.float32, copy=True)
    return torch.from_numpy(array)
