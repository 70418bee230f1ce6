#!/usr/bin/env bash
# Device call: build stream.cu with the machine's nvcc and run it while a sampler records the
# SM clock and power every ~50 ms. Output under $OUT.
set -u
export PATH=/usr/local/cuda/bin:$PATH
here=$(dirname "$0")
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -d ' ')
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
nvcc -O3 -arch=sm_90 "$here/stream.cu" -lcublas -o /tmp/stream > "$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }
( while :; do echo "$(date +%s.%N) $(nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader)"; sleep 0.05; done ) > "$OUT/clocks.txt" &
sampler=$!
/tmp/stream > "$OUT/stream.txt" 2> "$OUT/marks.txt"
rc=$?
kill $sampler
echo "rc=$rc gpu=$gpu"
cat "$OUT/env.txt"
awk 'NR<3 || /memcpy|sgemm|ffma/' "$OUT/stream.txt"
# best variant per size (the empty kernel left out)
grep -v '^null' "$OUT/stream.txt" | awk '$NF ~ /%$/ {sz=$(NF-3); sh=$NF; sub("%","",sh); if (sh+0 > best[sz]+0) {best[sz]=sh; name[sz]=$0}} END {for (s in best) print name[s]}'
