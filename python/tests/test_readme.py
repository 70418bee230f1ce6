"""The README's Python snippet runs as written (the NumPy and lookup part: no GPU)."""

import os
import re

from helpers import ROOT


def test_the_readme_snippet_runs(capsys):
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("\n## Python\n") :]
    snippet = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "nmtune.Lookup" in snippet and "prune_and_compress" in snippet
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        exec(compile(snippet, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "(1024, 4096) uint8"
    assert printed[1].startswith("nm_spmm_f32_")
