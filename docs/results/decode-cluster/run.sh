#!/usr/bin/env bash
# Issue 14, session 60: cluster.cu (its header says what it runs), built with the device
# image's nvcc and run once; about a minute.
#   bash docs/results/decode-cluster/run.sh   ($OUT/cluster.txt, $OUT/cluster-build.txt)
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
if nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -I"$here/../decode-balanced" \
    -I"$here/../v4.16/decode-stream" "$here/cluster.cu" -o /tmp/cluster > "$OUT/cluster-build.txt" 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/cluster.txt"
  timeout 400 /tmp/cluster >> "$OUT/cluster.txt" 2>&1 || echo "cluster: exit $?" >> "$OUT/cluster.txt"
  cat "$OUT/cluster.txt"
else
  grep -E "error|warning" "$OUT/cluster-build.txt" | head -30
fi
