#!/usr/bin/env bash
# Session 57, second device call (H200), from the repository root:
#   S=.dev/s57 bash docs/results/sk-many/run2.sh
# 1. `--strategy warm --retune` of shapes/llama.yaml again (the first pass's new winners
#    offered to their cells' other layers) and of shapes/llama7b-between.yaml, into
#    tuning-db/h200.sqlite;
# 2. ncu of the split and the stream-K kernel of 256 × 4096 × 4096 8:32 (ncu.list).
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}; export OUT
mkdir -p "$OUT" .device/bin
for f in nmtune; do gunzip -c "$S/$f.gz" > .device/bin/$f && chmod +x .device/bin/$f; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$OUT/env.txt"
for file in shapes/llama.yaml shapes/llama7b-between.yaml; do
  CALL_BUDGET=$((480 - SECONDS)) TUNE_STRATEGY=warm TUNE_ARGS=--retune \
    bash scripts/device/session.sh tune "$file" tuning-db/h200.sqlite | tail -1
  echo "$file: $SECONDS s"
done
timeout $((570 - SECONDS)) bash scripts/device/session.sh ncu "$here/ncu.list" | tail -1
echo "end: $SECONDS s"
