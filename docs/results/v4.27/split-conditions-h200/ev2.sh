#!/usr/bin/env bash
# Session 35: what makes one launch of a split kernel's main kernel faster than another?
# Events around the main kernel and the reduction of every launch (NMTUNE_SPLIT_EVENTS=1) of
# the column-major split-3 kernel at 300 x 11008 x 4096 12:32, under four conditions, 4
# processes each, interleaved: as the tuner times (rotating A sets), A fixed (set 0 every
# launch, NMTUNE_FIXED_A=1), L2 flushed before every launch (a 128 MB memset outside the
# events, NMTUNE_FLUSH_L2=1), and both (split-conditions.patch).
set -u
B=.device/bin/nmtune-ev
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
K=nm_spmm_f32_acol16_ms64_ns128_ks32_mt8_nt8_w8x4_n12m32l32_nopack_cp2_mb1_sk3
$B kernel --arch sm_90 ${K/sk3/sk1} > /dev/null
for p in 1 2 3 4; do
  for cond in rotating fixedA flush both; do
    unset NMTUNE_FIXED_A NMTUNE_FLUSH_L2
    case $cond in fixedA) export NMTUNE_FIXED_A=1 ;; flush) export NMTUNE_FLUSH_L2=1 ;;
      both) export NMTUNE_FIXED_A=1 NMTUNE_FLUSH_L2=1 ;; esac
    NMTUNE_SPLIT_EVENTS=1 timeout 60 $B bench --m 300 --n 11008 --k 4096 --nm 12:32 --a-layout col \
      --kernels $K --runs 20 > /dev/null 2> /tmp/ev-err.txt
    grep split-events /tmp/ev-err.txt | awk '{print $3, $5}' | python3 -c "
import sys, statistics
rows=[tuple(map(float,l.split())) for l in sys.stdin][5:]
m=[r[0] for r in rows]; r=[r[1] for r in rows]
print('$cond process $p: main median %.1f (min %.1f max %.1f)  reduce median %.1f' % (statistics.median(m), min(m), max(m), statistics.median(r)))" >> "$OUT/ev2.txt"
  done
done
sort "$OUT/ev2.txt"
