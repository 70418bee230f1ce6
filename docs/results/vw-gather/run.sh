#!/usr/bin/env bash
# Issue 14, session 55: gather32.cu (its header says what it runs), built with the device
# image's nvcc against session 54's harness and run once; about a minute.
#   bash docs/results/vw-gather/run.sh   ($OUT/gather32.txt, $OUT/gather32-build.txt)
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
if nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -I"$here/../decode-balanced" -I"$here/../v4.16/decode-stream" \
    "$here/gather32.cu" -o /tmp/gather32 > "$OUT/gather32-build.txt" 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/gather32.txt"
  timeout 400 /tmp/gather32 >> "$OUT/gather32.txt" 2>&1 || echo "gather32: exit $?" >> "$OUT/gather32.txt"
  cat "$OUT/gather32.txt"
else
  tail -20 "$OUT/gather32-build.txt"
fi
