#!/usr/bin/env bash
# Session 58, second device call (H200), from the repository root:
#   S=.dev/s58 bash docs/results/warm-local/run2.sh
# $S holds nmtune.gz (this build: the warm strategy offers each problem the fastest
# configurations of its twin with A in the other layout) and h200.sqlite.gz (the committed
# tuning-db/h200.sqlite).
# `--strategy warm --retune` into tuning-db/h200.sqlite of shapes/llama.yaml twice (the first
# pass's new winners reach their cells' other layers and their layout twins on the second)
# and of shapes/llama7b-between.yaml. The database comes back as $OUT/h200.sqlite.gz.
set -u
OUT=${OUT:-/tmp/nmtune-out}; export OUT
S=$S bash scripts/device/unpack.sh
for file in shapes/llama.yaml shapes/llama.yaml shapes/llama7b-between.yaml; do
  CALL_BUDGET=$((575 - SECONDS)) TUNE_STRATEGY=warm TUNE_ARGS=--retune \
    bash scripts/device/session.sh tune "$file" tuning-db/h200.sqlite | tail -1
  cp "$OUT/tune-$(basename "$file" .yaml).log" "$OUT/tune-$(basename "$file" .yaml)-$SECONDS.log"
  echo "$file: $SECONDS s"
done
echo "end: $SECONDS s"
