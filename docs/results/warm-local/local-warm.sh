#!/usr/bin/env bash
# Session 58, calls 3 to 5 (H200), from the repository root: $S holds nmtune.gz (the call's
# build) and h200.sqlite.gz (the previous call's database), unpacked by
# scripts/device/unpack.sh.
# 1. `--strategy local --retune` into tuning-db/h200.sqlite of each file of $LOCAL_FILES (in
#    this directory), each limited to $LOCAL_LIMIT s and the call to $LOCAL_BUDGET;
# 2. `--strategy warm --retune` of shapes/llama.yaml and shapes/llama7b-between.yaml, each
#    limited to $WARM_LIMIT s and the call to $WARM_END s.
# The database comes back as $OUT/h200.sqlite.gz. (Calls 3 to 5 ran copies of their runN.sh
# from before this script and scripts/device/unpack.sh: the same steps; git log shows them.)
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}; export OUT
S=$S bash scripts/device/unpack.sh
for file in $LOCAL_FILES; do
  TUNE_LIMIT=$LOCAL_LIMIT CALL_BUDGET=$LOCAL_BUDGET TUNE_STRATEGY=local TUNE_ARGS=--retune \
    bash scripts/device/session.sh tune "$here/$file" tuning-db/h200.sqlite | tail -1
  echo "$file: $SECONDS s"
done
for file in shapes/llama.yaml shapes/llama7b-between.yaml; do
  TUNE_LIMIT=$WARM_LIMIT CALL_BUDGET=$((WARM_END - SECONDS)) TUNE_STRATEGY=warm TUNE_ARGS=--retune \
    bash scripts/device/session.sh tune "$file" tuning-db/h200.sqlite | tail -1
  echo "$file: $SECONDS s"
done
echo "end: $SECONDS s"
