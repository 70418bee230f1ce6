#!/usr/bin/env bash
# Session 57, one device call (H200), from the repository root:
#   S=.dev/s57 bash docs/results/sk-many/run.sh [tune-only]
# $S holds this build: nmtune.gz and gpu.gz (the `gpu` test binary).
# 1. tests/gpu.rs's tensor-copy test (stream-K tiles shared among four or five workers
#    among its pairs), $OUT/gpu-tma.log;
# 2. `nmtune bench` of every line of time.list (m = 256 winners beside their stream-K
#    twins), $OUT/time.txt;
# 3. `--strategy warm --retune` of shapes/llama.yaml into tuning-db/h200.sqlite for what the
#    call has left (resumable), $OUT/h200.sqlite.gz and $OUT/tune-llama.log.
# With "tune-only", step 3 alone.
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}; export OUT
mkdir -p "$OUT" .device/bin
for f in nmtune gpu; do gunzip -c "$S/$f.gz" > .device/bin/$f && chmod +x .device/bin/$f; done
export PATH=/usr/local/cuda/bin:$PATH NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$OUT/env.txt"
if [ "${1:-}" != tune-only ]; then
  timeout 240 .device/bin/gpu --exact the_tensor_copies_match_the_cpu_reference --nocapture \
    > "$OUT/gpu-tma.log" 2>&1
  echo "gpu rc=$? $SECONDS s: $(grep -E 'pairs checked|^test result' "$OUT/gpu-tma.log" | tr '\n' ' ')"
  bash scripts/device/session.sh time "$here/time.list" | tail -1
  echo "time: $SECONDS s"
fi
CALL_BUDGET=$((560 - SECONDS)) TUNE_STRATEGY=warm TUNE_ARGS=--retune \
  bash scripts/device/session.sh tune shapes/llama.yaml tuning-db/h200.sqlite | tail -2
echo "end: $SECONDS s"
