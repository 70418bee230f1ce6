#!/usr/bin/env bash
# Session 35: the stored m = 4096 and m = 256 winners beside their twins at ptxas register
# usage levels 2 and 7, in the same process (nmtune bench --db --reg-levels), two rounds.
set -u
BIN=$PWD/.device/bin
DB=${DB:-tuning-db/h100.sqlite}
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
cat "$OUT/env.txt"
start=$SECONDS
xargs -P 16 -I{} $BIN/nmtune kernel --arch sm_90 {} < .device/rl-kernels.txt > /tmp/rl-compile.txt 2>&1
echo "compiled: $((SECONDS - start)) s, $(grep -c registers /tmp/rl-compile.txt) kernels, $(grep -c ' [1-9][0-9]* bytes spilled' /tmp/rl-compile.txt) spilling"
for round in 1 2; do
  for m in 4096 256; do
    left=$(( ${BUDGET:-540} - (SECONDS - start) ))
    [ "$left" -lt 60 ] && { echo "skip round $round m $m: $left s left"; continue; }
    timeout $((left - 20)) $BIN/nmtune bench --db "$DB" --m $m --reg-levels 2,7 --runs 10 \
      --csv "$OUT/rl-r$round-m$m.csv" >> "$OUT/rl-log.txt" 2>&1
    echo "round $round m $m: rc=$? $((SECONDS - start)) s, $(wc -l < "$OUT/rl-r$round-m$m.csv") lines"
  done
done
