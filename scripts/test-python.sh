#!/usr/bin/env bash
# The Python package's tests (README "Python"): a virtual environment under the target folder
# with maturin, NumPy and pytest from PyPI, the package built into a wheel and installed, then
# pytest on python/tests. The extension crate (python/) shares the root crate's target folder,
# release profile and dependency features, so after `bash scripts/test.sh` only the extension
# itself is compiled. Tests compare against the `nmtune` binary of the release build (built
# here if missing); torch tests skip without torch, GPU tests without CUDA, saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$PWD/$target" ;; esac
export CARGO_TARGET_DIR="$target"
start=$SECONDS
venv="$target/py-venv"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'maturin>=1.9.4,<2' numpy pytest
if [ ! -x "$target/release/nmtune" ]; then
  cargo build --release --bin nmtune
fi
wheels="$target/python-wheels"
rm -rf "$wheels"
"$venv/bin/maturin" build --release --out "$wheels"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "$wheels"/nmtune-*.whl
export NMTUNE_BIN="$target/release/nmtune"
# `import nmtune` is the installed package: python/ itself is not on the path.
"$venv/bin/python" -m pytest python/tests -ra -p no:cacheprovider "$@"
echo "scripts/test-python.sh: $((SECONDS - start)) s"
