#!/usr/bin/env bash
# Issue 14, session 55: dpanel.cu (its header says what it runs), built with the device
# image's nvcc and run once; under a minute.
#   bash docs/results/ew-dpanel/run.sh   ($OUT/dpanel.txt, $OUT/dpanel-build.txt)
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
if nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v "$here/dpanel.cu" -o /tmp/dpanel > "$OUT/dpanel-build.txt" 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/dpanel.txt"
  timeout 500 /tmp/dpanel >> "$OUT/dpanel.txt" 2>&1 || echo "dpanel: exit $?" >> "$OUT/dpanel.txt"
  cat "$OUT/dpanel.txt"
else
  tail -20 "$OUT/dpanel-build.txt"
fi
