#!/usr/bin/env bash
# Session 59, second device call (H200), from the repository root, every large file parked:
#   S=.dev/s59b bash docs/results/cluster-sum/run2.sh
# $S holds nmtune.gz (this session's build) and h200.sqlite.gz (call 1's database).
# `--strategy warm --retune` of shapes/llama.yaml again (call 1's new winners, cluster-summed
# splits among them, reach their cells' other layers and layout twins) and of
# shapes/llama7b-between.yaml. The database comes back as $OUT/h200.sqlite.gz.
set -u
OUT=${OUT:-/tmp/nmtune-out}; export OUT
S=$S bash scripts/device/unpack.sh
for file in shapes/llama.yaml shapes/llama7b-between.yaml; do
  CALL_BUDGET=$((575 - SECONDS)) TUNE_STRATEGY=warm TUNE_ARGS=--retune \
    bash scripts/device/session.sh tune "$file" tuning-db/h200.sqlite | tail -1
  cp "$OUT/tune-$(basename "$file" .yaml).log" "$OUT/tune-$(basename "$file" .yaml)-$SECONDS.log"
  echo "$file: $SECONDS s"
done
echo "end: $SECONDS s"
