"""Shared by the tests: the NumPy reference of N:M vector-wise pruning, a small safetensors
reader and writer (the format is 8 bytes of header length, a JSON header, the data), and the
`nmtune` command line tool."""

from __future__ import annotations

import json
import os
import struct
import subprocess
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]

DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "U8": np.dtype("u1"), "I64": np.dtype("<i8")}


def reference_prune(w: np.ndarray, n_keep: int, m_window: int, l: int) -> Tuple[np.ndarray, np.ndarray]:
    """B' and D of an [n, k] weight, written from the definition (docs/design.md): B = Wᵀ
    padded with zeros to k_p × n_p; in each window of M rows and group of L columns keep the N
    rows of largest Σ|value| (ties: the lower row), in row order."""
    n, k = w.shape
    k_p = -(-k // m_window) * m_window
    n_p = -(-n // l) * l
    b = np.zeros((k_p, n_p), dtype=np.float32)
    b[:k, :n] = w.T
    q = n_p // l
    windows = k_p // m_window
    values = np.zeros((windows * n_keep, n_p), dtype=np.float32)
    indices = np.zeros((windows * n_keep, q), dtype=np.uint8)
    for window in range(windows):
        rows = b[window * m_window : (window + 1) * m_window]
        for j in range(q):
            group = rows[:, j * l : (j + 1) * l]
            scores = np.abs(group.astype(np.float64)).sum(axis=1)
            best = sorted(range(m_window), key=lambda p: (-scores[p], p))[:n_keep]
            for i, p in enumerate(sorted(best)):
                values[window * n_keep + i, j * l : (j + 1) * l] = group[p]
                indices[window * n_keep + i, j] = p
    return values, indices


def reference_dense(w: np.ndarray, n_keep: int, m_window: int, l: int) -> np.ndarray:
    """The pruned [n, k] weight: W with zeros wherever the reference pruning drops a value."""
    n, k = w.shape
    values, indices = reference_prune(w, n_keep, m_window, l)
    k_p = -(-k // m_window) * m_window
    b = np.zeros((k_p, values.shape[1]), dtype=np.float32)
    for u in range(values.shape[0]):
        window = u // n_keep
        for j in range(indices.shape[1]):
            row = window * m_window + int(indices[u, j])
            b[row, j * l : (j + 1) * l] = values[u, j * l : (j + 1) * l]
    return b[:k, :n].T.copy()


def exact_weight(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    """Random weights in quarters from -2 to 2: sums of their magnitudes are exact in f32 and
    f64 alike, and ties are frequent, so the tie rule is exercised too."""
    return (rng.integers(-8, 9, size=(n, k)) / 4).astype(np.float32)


def write_safetensors(path: Path, tensors: Dict[str, np.ndarray], metadata: Optional[Dict[str, str]] = None) -> None:
    codes = {"<f4": "F32", "<f2": "F16", "|u1": "U8", "<i8": "I64"}
    header: Dict[str, object] = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    blobs = []
    offset = 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {
            "dtype": codes[array.dtype.newbyteorder("<").str],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def read_safetensors(path: Path) -> Tuple[Dict[str, Tuple[str, list, bytes]], Dict[str, str]]:
    """{name: (dtype, shape, raw bytes)} and the metadata of a safetensors file."""
    raw = Path(path).read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    metadata = header.pop("__metadata__", {}) or {}
    base = 8 + length
    tensors = {}
    for name, info in header.items():
        start, end = info["data_offsets"]
        tensors[name] = (info["dtype"], info["shape"], raw[base + start : base + end])
    return tensors, metadata


def as_array(entry: Tuple[str, list, bytes]) -> np.ndarray:
    dtype, shape, data = entry
    return np.frombuffer(data, dtype=DTYPES[dtype]).reshape(shape)


def nmtune_binary() -> Path:
    """The command line tool the tests compare against: $NMTUNE_BIN, else the release build
    in the target folder. Tests that need it skip, saying so, when it has not been built."""
    if "NMTUNE_BIN" in os.environ:
        return Path(os.environ["NMTUNE_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    if not target.is_absolute():
        target = ROOT / target
    binary = target / "release" / "nmtune"
    if not binary.exists():
        pytest.skip(f"no nmtune binary at {binary}: build it with `cargo build --release` or set NMTUNE_BIN")
    return binary


def run_nmtune(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(nmtune_binary()), *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    if check and result.returncode != 0:
        raise AssertionError(f"nmtune {' '.join(args)} failed: {result.stderr}")
    return result
