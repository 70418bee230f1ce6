#!/usr/bin/env bash
# Issue 14: read ceilings of a row-major B' on the device (stream.cu), the decode winner's loop
# rebuilt one piece at a time (gemv.cu), the winner's own source beside it (real.cu), and more
# of B' loaded before the launch protocol's wait (pre.cu); each file's header says what it
# runs. nvcc of the device image; about two minutes.
#   bash docs/results/v4.16/decode-stream/run.sh [stream] [gemv] [real] [pre]   ($OUT/<name>.txt, $OUT/<name>-build.txt)
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
bash "$here/variants.sh" /tmp/decode-variants  # real.cu's edits of the winner's source
for name in ${*:-stream gemv real pre}; do
  if nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -I/tmp/decode-variants "$here/$name.cu" -o "/tmp/$name" > "$OUT/$name-build.txt" 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/$name.txt"
    timeout 300 "/tmp/$name" >> "$OUT/$name.txt" 2>&1 || echo "$name: exit $?" >> "$OUT/$name.txt"
    cat "$OUT/$name.txt"
  else
    tail -20 "$OUT/$name-build.txt"
  fi
done
