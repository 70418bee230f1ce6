#!/usr/bin/env bash
# Session 58, fifth device call (H200), from the repository root:
#   S=.dev/s58 bash docs/results/warm-local/run5.sh
# $S holds nmtune.gz (this build: a neighbour whose tile runs only chunked keeps its own row
# chunk where the winner's does not fit, so the winners that chunk nothing reach the longer
# tiles of call 4's build) and h200.sqlite.gz (call 4's database).
# 1. `--strategy local --retune` of m4096-col12-all.yaml and m256-col.yaml;
# 2. `--strategy warm --retune` of shapes/llama.yaml and shapes/llama7b-between.yaml.
# The database comes back as $OUT/h200.sqlite.gz.
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}; export OUT
mkdir -p "$OUT" .device/bin
gunzip -c "$S/nmtune.gz" > .device/bin/nmtune && chmod +x .device/bin/nmtune
gunzip -c "$S/h200.sqlite.gz" > tuning-db/h200.sqlite
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$OUT/env.txt"
for file in "$here/m4096-col12-all.yaml" "$here/m256-col.yaml"; do
  TUNE_LIMIT=170 CALL_BUDGET=440 TUNE_STRATEGY=local TUNE_ARGS=--retune \
    bash scripts/device/session.sh tune "$file" tuning-db/h200.sqlite | tail -1
  echo "$file: $SECONDS s"
done
for file in shapes/llama.yaml shapes/llama7b-between.yaml; do
  TUNE_LIMIT=150 CALL_BUDGET=$((470 - SECONDS)) TUNE_STRATEGY=warm TUNE_ARGS=--retune \
    bash scripts/device/session.sh tune "$file" tuning-db/h200.sqlite | tail -1
  echo "$file: $SECONDS s"
done
echo "end: $SECONDS s"
