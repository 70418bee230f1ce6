#!/usr/bin/env bash
# On the lent GPU machine, from the repository root there: the Python package's tests with the
# GPU ones (SparseLinear against torch.matmul on the pruned weight) and the Llama layer example
# (python/examples/llama_layer.py), with the machine's PyTorch. Prepare here, then carry .device:
#   target/py-venv/bin/maturin build --release --out .device/wheels   # after scripts/test-python.sh
#   mkdir -p .device/bin && cp target/release/nmtune .device/bin/
#   device run (carry .device): bash scripts/device/python.sh
# Writes $OUT/python-tests.log, $OUT/llama-layer.log and $OUT/llama-layer.json.
set -u
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
export NMTUNE_BIN=$PWD/.device/bin/nmtune
python3 -m pip install --quiet --no-index --no-deps --target /tmp/nmtune-site .device/wheels/nmtune-*.whl || exit 1
export PYTHONPATH=/tmp/nmtune-site
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -m pytest python/tests -ra -p no:cacheprovider 2>&1 | tee "$OUT/python-tests.log"
python3 python/examples/llama_layer.py --json "$OUT/llama-layer.json" 2>&1 | tee "$OUT/llama-layer.log"
