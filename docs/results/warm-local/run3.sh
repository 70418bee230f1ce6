#!/usr/bin/env bash
# Session 58, third device call (H200), from the repository root:
#   S=.dev/s58 bash docs/results/warm-local/run3.sh
# $S holds nmtune.gz (this build: the local strategy) and h200.sqlite.gz (call 2's database).
# 1. `--strategy local --retune` (warm's candidates and the one-parameter neighbours of each
#    problem's winner) of m256-col.yaml and m4096-col12-all.yaml, the three short column-major
#    cells;
# 2. `--strategy warm --retune` of shapes/llama.yaml and shapes/llama7b-between.yaml (new
#    winners reach their cells' other layers and their layout twins).
# The database comes back as $OUT/h200.sqlite.gz.
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}; export OUT
mkdir -p "$OUT" .device/bin
gunzip -c "$S/nmtune.gz" > .device/bin/nmtune && chmod +x .device/bin/nmtune
gunzip -c "$S/h200.sqlite.gz" > tuning-db/h200.sqlite
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$OUT/env.txt"
TUNE_LIMIT=150 CALL_BUDGET=575 TUNE_STRATEGY=local TUNE_ARGS=--retune \
  bash scripts/device/session.sh tune "$here/m256-col.yaml" tuning-db/h200.sqlite | tail -1
echo "m256: $SECONDS s"
TUNE_LIMIT=220 CALL_BUDGET=575 TUNE_STRATEGY=local TUNE_ARGS=--retune \
  bash scripts/device/session.sh tune "$here/m4096-col12-all.yaml" tuning-db/h200.sqlite | tail -1
echo "m4096: $SECONDS s"
for file in shapes/llama.yaml shapes/llama7b-between.yaml; do
  CALL_BUDGET=$((580 - SECONDS)) TUNE_STRATEGY=warm TUNE_ARGS=--retune \
    bash scripts/device/session.sh tune "$file" tuning-db/h200.sqlite | tail -1
  echo "$file: $SECONDS s"
done
echo "end: $SECONDS s"
