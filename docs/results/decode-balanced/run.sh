#!/usr/bin/env bash
# Issue 14, session 54: balanced.cu, columns.cu, prefetch.cu and index-ahead.cu (each file's header says what it runs),
# built with the device image's nvcc and run once each; about a minute apiece.
#   bash docs/results/decode-balanced/run.sh [balanced] [columns] [prefetch] [index-ahead]   ($OUT/<name>.txt, $OUT/<name>-build.txt)
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
for name in ${*:-balanced columns prefetch index-ahead}; do
  if nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -I"$here/../v4.16/decode-stream" "$here/$name.cu" \
      -o "/tmp/$name" > "$OUT/$name-build.txt" 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/$name.txt"
    timeout 400 "/tmp/$name" >> "$OUT/$name.txt" 2>&1 || echo "$name: exit $?" >> "$OUT/$name.txt"
    cat "$OUT/$name.txt"
  else
    tail -20 "$OUT/$name-build.txt"
  fi
done
