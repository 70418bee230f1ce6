"""Type stubs of the extension module nmtune._native (Rust, PyO3). Use the wrappers in
``nmtune`` and ``nmtune.torch``: they convert arrays and check arguments."""

from os import PathLike
from typing import List, Sequence, Tuple, Union

_Path = Union[str, PathLike]

TOOL_VERSION: str

class NmtuneError(ValueError):
    """An error of nmtune, with the command line tool's one-line message."""

def parse_pattern(nm: str) -> Tuple[int, int]: ...
def prune_and_compress(
    dense: bytes, n: int, k: int, nm: str, l: int
) -> Tuple[bytes, bytes, Tuple[int, int]]: ...
def decompress(
    values: bytes,
    indices: bytes,
    nm: str,
    l: int,
    padded: Tuple[int, int],
    shape: Tuple[int, int],
) -> bytes: ...
def read_pruned(
    path: _Path, name: str
) -> Tuple[bytes, bytes, str, int, Tuple[int, int], Tuple[int, int]]: ...
def pruned_names(path: _Path) -> List[str]: ...
def read_float_tensor(path: _Path, name: str) -> Tuple[bytes, List[int]]: ...

class Lookup:
    def __init__(self, paths: Sequence[_Path], gpu: str) -> None: ...
    @property
    def gpu(self) -> str: ...
    def lookup(
        self, m: int, n: int, k: int, nm: str, l: int, a_layout: str, dtype: str
    ) -> str: ...

class Layer:
    def __init__(
        self,
        lookup: Lookup,
        values: bytes,
        indices: bytes,
        nm: str,
        l: int,
        shape: Tuple[int, int],
        padded: Tuple[int, int],
    ) -> None: ...
    def choose(self, m: int) -> str: ...
    def forward(
        self, device: int, stream: int, a: int, a_len: int, c: int, c_len: int, m: int
    ) -> str: ...
