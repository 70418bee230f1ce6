#!/usr/bin/env bash
# Issue 14, session 54: balanced.cu (its header says what it runs) built with the device
# image's nvcc and run once; about a minute.
#   bash docs/results/decode-balanced/run.sh      ($OUT/balanced.txt, $OUT/balanced-build.txt)
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
if nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -I"$here/../v4.16/decode-stream" "$here/balanced.cu" \
    -o /tmp/balanced > "$OUT/balanced-build.txt" 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/balanced.txt"
  timeout 400 /tmp/balanced >> "$OUT/balanced.txt" 2>&1 || echo "balanced: exit $?" >> "$OUT/balanced.txt"
  cat "$OUT/balanced.txt"
else
  tail -20 "$OUT/balanced-build.txt"
fi
