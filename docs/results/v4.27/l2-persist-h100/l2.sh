#!/usr/bin/env bash
# Session 35: split-K partial sums under a persisting L2 access policy window (the stream's
# window over the partials, the context's set-aside at its maximum; NMTUNE_L2_PERSIST=1 in
# .device/bin/nmtune-l2) against the same binary without it. Side A: off, side B: on.
# 1. every m = 256 best entry of $DB (`nmtune bench --db --m 256`), two rounds, alternating;
#    entries that do not split are the control (nothing changes for them).
# 2. the column-major split-3 kernel at 300 x 11008 x 4096 12:32, 6 processes per side.
set -u
B=.device/bin/nmtune-l2
DB=${DB:-tuning-db/h100.sqlite}
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
cat "$OUT/env.txt"
awk -F'"' '{}' /dev/null
for round in 1 2; do
  for side in A B; do
    if [ $side = B ]; then export NMTUNE_L2_PERSIST=1; else unset NMTUNE_L2_PERSIST; fi
    timeout 200 $B bench --db "$DB" --m 256 --runs 10 --csv "$OUT/ab-db-$side$round-m256.csv" > /dev/null 2>> "$OUT/l2-log.txt"
    echo "round $round side $side: rc=$? $SECONDS s"
  done
done
K=nm_spmm_f32_acol16_ms64_ns128_ks32_mt8_nt8_w8x4_n12m32l32_nopack_cp2_mb1_sk3
for p in 1 2 3 4 5 6; do
  for side in A B; do
    if [ $side = B ]; then export NMTUNE_L2_PERSIST=1; else unset NMTUNE_L2_PERSIST; fi
    echo "$side $p $(timeout 60 $B bench --m 300 --n 11008 --k 4096 --nm 12:32 --a-layout col --kernels $K --runs 20 2>>"$OUT/l2-log.txt" | grep nm_spmm)" >> "$OUT/m300.txt"
  done
done
echo "done $SECONDS s"; cut -c1-100 "$OUT/m300.txt"; sort -u "$OUT/l2-log.txt" | head -5
