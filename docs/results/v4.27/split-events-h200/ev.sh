#!/usr/bin/env bash
# Session 35: which kernel of a split launch varies between processes? Events around the main
# kernel and around the reduction (launched plainly after it) of every launch
# (NMTUNE_SPLIT_EVENTS=1, split-events.patch), the column-major split-3 kernel at
# 300 x 11008 x 4096 12:32, 8 processes; per process the median of each over its launches.
set -u
B=.device/bin/nmtune-ev
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
K=nm_spmm_f32_acol16_ms64_ns128_ks32_mt8_nt8_w8x4_n12m32l32_nopack_cp2_mb1_sk3
$B kernel --arch sm_90 ${K/sk3/sk1} > /dev/null
for p in 1 2 3 4 5 6 7 8; do
  NMTUNE_SPLIT_EVENTS=1 timeout 60 $B bench --m 300 --n 11008 --k 4096 --nm 12:32 --a-layout col \
    --kernels $K --runs 20 > /tmp/ev-out.txt 2> /tmp/ev-err.txt
  echo "process $p: $(grep split-events /tmp/ev-err.txt | wc -l) launches" >> "$OUT/ev.txt"
  grep split-events /tmp/ev-err.txt | awk '{print $3, $5}' | python3 -c "
import sys, statistics
rows=[tuple(map(float,l.split())) for l in sys.stdin]
m=[r[0] for r in rows[5:]]; r=[r[1] for r in rows[5:]]
print('  main median %.1f (min %.1f max %.1f)  reduce median %.1f (min %.1f max %.1f)' % (statistics.median(m), min(m), max(m), statistics.median(r), min(r), max(r)))" >> "$OUT/ev.txt"
done
cat "$OUT/ev.txt"
