#!/usr/bin/env bash
# Session 59, first device call (H200), from the repository root:
#   S=.dev/s59 bash docs/results/cluster-sum/run1.sh
# $S holds nmtune.gz and gpu.gz (this build: a split of k may be summed in a cluster,
# `_clsum`) and h200.sqlite.gz (the committed tuning-db/h200.sqlite).
# 1. tests/gpu.rs's cluster-sum test (CPU reference and the workspace twin, bit for bit).
# 2. `nmtune bench` of the 19 split winners of the short column-major cells at m = 256
#    (8:32 and 12:32) beside their cluster-summed twins, one process a problem, medians of 10.
# 3. `--strategy warm --retune` of shapes/llama.yaml into tuning-db/h200.sqlite (it offers
#    the cluster-summed twins of each problem's fastest splits), as long as the call allows.
set -u
OUT=${OUT:-/tmp/nmtune-out}; export OUT
S=$S bash scripts/device/unpack.sh
NMTUNE_REQUIRE_GPU=1 timeout 200 .device/bin/gpu the_cluster_sums --nocapture --test-threads 1 \
  > "$OUT/gpu-cluster-test.log" 2>&1
echo "test rc=$? $(grep -E '^test result|cluster sums:' "$OUT/gpu-cluster-test.log" | tr '\n' ' ') $SECONDS s"
bash scripts/device/session.sh time docs/results/cluster-sum/m256-split.list | tail -1
echo "time: $SECONDS s"
CALL_BUDGET=$((575 - SECONDS)) TUNE_STRATEGY=warm TUNE_ARGS=--retune \
  bash scripts/device/session.sh tune shapes/llama.yaml tuning-db/h200.sqlite | tail -1
echo "end: $SECONDS s"
