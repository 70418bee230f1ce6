#!/usr/bin/env bash
# Session 59, fifth device call (H200), from the repository root, every large file parked:
#   S=.dev/s59e bash docs/results/cluster-sum/run5.sh
# $S holds nmtune.gz (call 4's build: row chunks of 12 and 16 allowed, the template's chunk
# loop with the last chunk unrolled with the tile's end) and nmtune-rolled.gz (a scratch build,
# not committed: every chunk through the same rolled code, the tile's end inside the loop's
# last pass; its template diff is in rolled.diff).
# `nmtune bench` of rolled.list with each binary, one process a problem, medians of 10:
# $OUT/time-old.txt, $OUT/time-rolled.txt.
set -u
OUT=${OUT:-/tmp/nmtune-out}; export OUT
S=$S bash scripts/device/unpack.sh
TIME_TAG=-old bash scripts/device/session.sh time docs/results/cluster-sum/rolled.list | tail -1
TIME_BIN=$PWD/.device/bin/nmtune-rolled TIME_TAG=-rolled \
  bash scripts/device/session.sh time docs/results/cluster-sum/rolled.list | tail -1
TIME_TAG=-old2 bash scripts/device/session.sh time docs/results/cluster-sum/rolled.list | tail -1
echo "end: $SECONDS s"
