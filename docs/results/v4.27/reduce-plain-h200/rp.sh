#!/usr/bin/env bash
# Session 35: the split-K reduction launched as a programmatic dependent (side A, as main
# does) or as an ordinary launch after the main kernel (side B, NMTUNE_REDUCE_PLAIN=1), same
# binary: the column-major split-3 kernel at 300 x 11008 x 4096 12:32, 8 processes a side
# alternating (medians of 20), then every m = 256 best entry of $DB, one round a side.
set -u
B=.device/bin/nmtune-rp
DB=${DB:-tuning-db/h200.sqlite}
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
K=nm_spmm_f32_acol16_ms64_ns128_ks32_mt8_nt8_w8x4_n12m32l32_nopack_cp2_mb1_sk3
for p in 1 2 3 4 5 6 7 8; do
  for side in A B; do
    if [ $side = B ]; then export NMTUNE_REDUCE_PLAIN=1; else unset NMTUNE_REDUCE_PLAIN; fi
    echo "$side $p $(timeout 60 $B bench --m 300 --n 11008 --k 4096 --nm 12:32 --a-layout col --kernels $K --runs 20 2>&1 | grep nm_spmm)" >> "$OUT/m300.txt"
  done
done
for side in A B; do
  if [ $side = B ]; then export NMTUNE_REDUCE_PLAIN=1; else unset NMTUNE_REDUCE_PLAIN; fi
  timeout 200 $B bench --db "$DB" --m 256 --runs 10 --csv "$OUT/ab-db-${side}1-m256.csv" > /dev/null 2>&1
  echo "side $side: rc=$? $SECONDS s"
done
awk '{print $1, $6}' "$OUT/m300.txt"
