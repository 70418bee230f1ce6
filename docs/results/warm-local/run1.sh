#!/usr/bin/env bash
# Session 58, first device call (H200), from the repository root:
#   S=.dev/s58 bash docs/results/warm-local/run1.sh
# $S holds nmtune.gz (this build) and h200.sqlite.gz (the committed tuning-db/h200.sqlite).
# `--strategy sample --retune` (the pruned candidates and 256 pseudo-random valid
# configurations a pattern) into tuning-db/h200.sqlite of
# 1. m256-col.yaml: the column-major 12:32 and 8:32 cells at m = 256 (40 problems);
# 2. m4096-col12.yaml: four layers of the column-major 12:32 cell at m = 4096.
# The database comes back as $OUT/h200.sqlite.gz, the logs as $OUT/tune-*.log.
# (The calls of this directory ran copies of these scripts from before
# scripts/device/unpack.sh: the same steps; git log shows them.)
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}; export OUT
S=$S bash scripts/device/unpack.sh
for file in "$here/m256-col.yaml" "$here/m4096-col12.yaml"; do
  TUNE_LIMIT=360 CALL_BUDGET=$((570 - SECONDS)) TUNE_STRATEGY=sample TUNE_ARGS=--retune \
    bash scripts/device/session.sh tune "$file" tuning-db/h200.sqlite | tail -1
  echo "$file: $SECONDS s"
done
echo "end: $SECONDS s"
