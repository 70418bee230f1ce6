"""nmtune: N:M-sparse FP32 matrix multiplication on NVIDIA GPUs, from Python.

The weights of a PyTorch ``nn.Linear`` (``out_features × in_features``, that is n × k) are
pruned by magnitude to the vector-wise N:M format of NM-SpMM and compressed to B' (the kept
values) and D (their positions, ``uint8``); :class:`Lookup` answers which tuned kernel runs a
problem, exactly as ``nmtune lookup --format json`` does; :mod:`nmtune.torch` runs those
kernels on PyTorch's CUDA tensors (``SparseLinear``).

Every error of the library is a :class:`NmtuneError` (a ``ValueError``) with the one-line
message of the command line tool; arguments of the wrong type raise ``TypeError``.

>>> import numpy as np, nmtune
>>> w = np.random.default_rng(0).standard_normal((64, 96), dtype=np.float32)
>>> c = nmtune.prune_and_compress(w, "8:32", l=32)
>>> c.values.shape, c.indices.shape, c.indices.dtype
((24, 64), (24, 2), dtype('uint8'))
>>> dense = nmtune.decompress(*c)
>>> dense.shape, float((dense != 0).mean())
((64, 96), 0.25)
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from ._native import NmtuneError

__all__ = [
    "Compressed",
    "Lookup",
    "NmtuneError",
    "decompress",
    "parse_pattern",
    "prune_and_compress",
    "pruned_names",
    "read_pruned",
    "__version__",
]

__version__: str = _native.TOOL_VERSION

PathLike = Union[str, "os.PathLike[str]"]
#: A weight: a NumPy array or a torch tensor.
Array = Any


class Compressed(NamedTuple):
    """A weight in the N:M vector-wise format, PyTorch's layout (``shape`` is ``(n, k)``).

    ``values`` is B' (``w × n_p``, ``w = k_p·N/M``), ``indices`` is D (``w × n_p/L``,
    ``uint8``: the position of each kept row inside its window of M). ``n_p`` and ``k_p`` are
    n and k padded with zeros to multiples of L and M (``padded_shape``). Unpacking it into
    :func:`decompress` restores the dense weight: ``decompress(*compressed)``.
    """

    values: Array
    indices: Array
    nm: str
    l: int
    shape: Tuple[int, int]

    @property
    def padded_shape(self) -> Tuple[int, int]:
        """``(n_p, k_p)``: the shape the kernels see, padding included."""
        n, m = parse_pattern(self.nm)
        return (int(self.values.shape[1]), int(self.values.shape[0]) // n * m)


def parse_pattern(nm: str) -> Tuple[int, int]:
    """``(N, M)`` of a pattern written as ``nmtune --nm`` takes it: ``"8:32"``, or the share
    of weights pruned as a percentage with M = 32 (``"75%"``). A bare number is refused."""
    if not isinstance(nm, str):
        raise TypeError(f"the pattern must be a string such as '8:32' or '75%', got {type(nm).__name__}")
    return _native.parse_pattern(nm)


def _whole(name: str, value: Any) -> int:
    """A size argument: an int of at least 1 (bools refused), else a clear error."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise NmtuneError(f"{name}={value} is not a whole number of at least 1")
    return int(value)


def _torch_module() -> Any:
    """The torch module if the program has imported it (a tensor cannot exist otherwise)."""
    return sys.modules.get("torch")


def _is_tensor(value: Any) -> bool:
    torch = _torch_module()
    return torch is not None and isinstance(value, torch.Tensor)


_NUMPY_FLOATS = (np.dtype(np.float32), np.dtype(np.float16))


def _matrix_f32(weight: Array, what: str) -> np.ndarray:
    """A 2-D float32/float16/bfloat16 weight as a C-contiguous float32 NumPy array."""
    if _is_tensor(weight):
        torch = _torch_module()
        if weight.dtype not in (torch.float32, torch.float16, torch.bfloat16):
            raise TypeError(f"{what} must be float32, float16 or bfloat16, got {weight.dtype}")
        if weight.dim() != 2:
            raise NmtuneError(f"{what} must be 2-D (out_features × in_features), got shape {tuple(weight.shape)}")
        return weight.detach().to(device="cpu", dtype=torch.float32).contiguous().numpy()
    if isinstance(weight, np.ndarray):
        if weight.dtype not in _NUMPY_FLOATS:
            raise TypeError(f"{what} must be float32 or float16, got {weight.dtype}")
        if weight.ndim != 2:
            raise NmtuneError(f"{what} must be 2-D (out_features × in_features), got shape {weight.shape}")
        return np.ascontiguousarray(weight, dtype=np.float32)
    raise TypeError(f"{what} must be a NumPy array or a torch tensor, got {type(weight).__name__}")


def _bytes_f32(matrix: np.ndarray) -> bytes:
    return np.ascontiguousarray(matrix, dtype="<f4").tobytes()


def _from_f32(data: bytes, shape: Tuple[int, int]) -> np.ndarray:
    return np.frombuffer(data, dtype="<f4").reshape(shape).astype(np.float32, copy=True)


def _like(result: np.ndarray, template: Array, keep_dtype: bool) -> Array:
    """``result`` as the kind of ``template``: a torch tensor on its device, or NumPy; float
    results in the template's float type when ``keep_dtype`` (exact: pruning selects values)."""
    if _is_tensor(template):
        torch = _torch_module()
        tensor = torch.from_numpy(result)
        if keep_dtype and template.dtype in (torch.float16, torch.bfloat16):
            tensor = tensor.to(template.dtype)
        return tensor.to(template.device)
    if keep_dtype and isinstance(template, np.ndarray) and template.dtype == np.float16:
        return result.astype(np.float16)
    return result


def prune_and_compress(weight: Array, nm: str, l: int = 32) -> Compressed:
    """Prune a dense ``nn.Linear`` weight (n × k: out × in) to the N:M pattern ``nm`` with
    vector length ``l``, by magnitude, and compress it.

    In every window of M consecutive input features, each group of ``l`` consecutive output
    features keeps the N inputs with the largest sum of absolute values over the group (ties:
    the lower input first), as ``nmtune prune`` does. k and n are padded with zeros to
    multiples of M and ``l`` when needed (``Compressed.padded_shape``).

    ``weight`` is a NumPy array (float32 or float16) or a torch tensor (float32, float16 or
    bfloat16, any device: it is pruned on the CPU). The result is of the same kind: B' in the
    weight's float type (float32 for float32), D as ``uint8``, tensors on the weight's device.
    """
    n_m = parse_pattern(nm)
    l = _whole("l", l)
    dense = _matrix_f32(weight, "the weight")
    n, k = dense.shape
    values, indices, (n_p, k_p) = _native.prune_and_compress(_bytes_f32(dense), n, k, nm, l)
    w = k_p // n_m[1] * n_m[0]
    values_np = _from_f32(values, (w, n_p))
    indices_np = np.frombuffer(indices, dtype=np.uint8).reshape(w, n_p // l).copy()
    return Compressed(
        values=_like(values_np, weight, keep_dtype=True),
        indices=_like(indices_np, weight, keep_dtype=False),
        nm=nm,
        l=l,
        shape=(n, k),
    )


def _indices_u8(indices: Array) -> np.ndarray:
    if _is_tensor(indices):
        torch = _torch_module()
        if indices.dtype != torch.uint8:
            raise TypeError(f"the indices D must be uint8, got {indices.dtype}")
        if indices.dim() != 2:
            raise NmtuneError(f"the indices D must be 2-D, got shape {tuple(indices.shape)}")
        return indices.detach().cpu().contiguous().numpy()
    if isinstance(indices, np.ndarray):
        if indices.dtype != np.uint8:
            raise TypeError(f"the indices D must be uint8, got {indices.dtype}")
        if indices.ndim != 2:
            raise NmtuneError(f"the indices D must be 2-D, got shape {indices.shape}")
        return np.ascontiguousarray(indices)
    raise TypeError(f"the indices D must be a NumPy array or a torch tensor, got {type(indices).__name__}")


def decompress(
    values: Array,
    indices: Array,
    nm: str,
    l: int = 32,
    shape: Optional[Tuple[int, int]] = None,
) -> Array:
    """The inverse of :func:`prune_and_compress`: the dense n × k weight with zeros where
    pruned, padding removed.

    ``values`` is B' (``w × n_p``), ``indices`` is D (``w × n_p/l``, ``uint8``); ``shape`` is
    the original ``(n, k)`` (default: the padded shape). Returns the kind and float type of
    ``values`` (NumPy, or a torch tensor on its device).
    """
    n_keep, m_window = parse_pattern(nm)
    l = _whole("l", l)
    b = _matrix_f32(values, "the values B'")
    d = _indices_u8(indices)
    w, n_p = b.shape
    if w % n_keep != 0:
        raise NmtuneError(f"the values B' have {w} rows, not a multiple of N={n_keep} (N:M = {nm})")
    k_p = w // n_keep * m_window
    if shape is None:
        shape = (n_p, k_p)
    if not (isinstance(shape, (tuple, list)) and len(shape) == 2):
        raise TypeError(f"shape must be a pair (n, k), got {shape!r}")
    n, k = _whole("n", shape[0]), _whole("k", shape[1])
    if d.shape[0] != w:
        raise NmtuneError(f"the indices D have {d.shape[0]} rows, the values B' {w}: they must match")
    dense = _native.decompress(_bytes_f32(b), d.tobytes(), nm, l, (n_p, k_p), (n, k))
    return _like(_from_f32(dense, (n, k)), values, keep_dtype=True)


def read_pruned(path: PathLike, name: str) -> Compressed:
    """Weight ``name`` of a checkpoint written by ``nmtune prune`` (its tensors
    ``<name>.nm_values`` and ``<name>.nm_indices`` and its metadata ``nmtune.weight.<name>``),
    as NumPy arrays: B' as float32 (widened exactly from the file's float type), D as uint8."""
    path = os.fspath(path)
    values, indices, nm, l, shape, padded = _native.read_pruned(path, name)
    n_keep, m_window = parse_pattern(nm)
    n_p, k_p = padded
    w = k_p // m_window * n_keep
    return Compressed(
        values=_from_f32(values, (w, n_p)),
        indices=np.frombuffer(indices, dtype=np.uint8).reshape(w, n_p // l).copy(),
        nm=nm,
        l=l,
        shape=(shape[0], shape[1]),
    )


def pruned_names(path: PathLike) -> List[str]:
    """The names of the weights a checkpoint written by ``nmtune prune`` holds, sorted."""
    return list(_native.pruned_names(os.fspath(path)))


def _paths(db: Union[PathLike, Sequence[PathLike]]) -> List[str]:
    if isinstance(db, (str, os.PathLike)):
        return [os.fspath(db)]
    if isinstance(db, (list, tuple)):
        if not all(isinstance(p, (str, os.PathLike)) for p in db):
            raise TypeError("db must be a path or a list of paths")
        return [os.fspath(p) for p in db]
    raise TypeError(f"db must be a path or a list of paths, got {type(db).__name__}")


class Lookup:
    """A tuning table: the best kernels of one GPU, read once from one or more databases.

    ``db`` is a path or a list of paths (a GPU's prefill and decode databases, say, read as
    one as ``nmtune lookup --db A --db B`` reads them); every file must exist. ``gpu`` names
    the GPU profile whose entries are used (``"h100"``, ``"h200"``, …).
    """

    def __init__(self, db: Union[PathLike, Sequence[PathLike]], gpu: str) -> None:
        if not isinstance(gpu, str):
            raise TypeError(f"gpu must be a string such as 'h100', got {type(gpu).__name__}")
        self._native = _native.Lookup(_paths(db), gpu)

    @property
    def gpu(self) -> str:
        """The GPU profile's name."""
        return self._native.gpu

    def lookup(
        self,
        m: int,
        n: int,
        k: int,
        nm: str,
        l: int = 32,
        a_layout: str = "row",
        dtype: str = "f32",
    ) -> Dict[str, Any]:
        """The kernel the runtime launches for ``C (m×n) = A (m×k) ⊗ (B', D)``, and why: a
        dict with exactly the fields of ``nmtune lookup --format json`` (``gpu``, ``m``, ``n``,
        ``k``, ``nm``, ``l``, ``a_layout``, ``dtype``, ``kernel``, ``config``, ``rule``,
        ``from_m``, ``source``, ``median_us``, ``cublas_us``, ``speedup``). No GPU needed."""
        parse_pattern(nm)
        if not isinstance(a_layout, str):
            raise TypeError(f"a_layout must be 'row' or 'col', got {type(a_layout).__name__}")
        if not isinstance(dtype, str):
            raise TypeError(f"dtype must be 'f32', 'bf16' or 'f16', got {type(dtype).__name__}")
        answer = self._native.lookup(
            _whole("m", m), _whole("n", n), _whole("k", k), nm, _whole("l", l), a_layout, dtype
        )
        return json.loads(answer)

    def __repr__(self) -> str:
        return f"nmtune.Lookup(gpu={self.gpu!r})"
