#!/usr/bin/env bash
# Session 35: does the split-K partial sums' address decide the split kernel's time? The
# column-major split-3 kernel at 300 x 11008 x 4096 12:32 (and its unsplit twin as control)
# with the partial sums shifted by SHIFT KB inside a larger workspace (NMTUNE_WS_SHIFT_KB,
# ws-shift.patch), one process per (round, shift), three rounds.
set -u
B=.device/bin/nmtune-ws
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
K=nm_spmm_f32_acol16_ms64_ns128_ks32_mt8_nt8_w8x4_n12m32l32_nopack_cp2_mb1
for round in 1 2 3; do
  for shift in 0 256 512 1024 1536 2048 3072 4096; do
    NMTUNE_WS_SHIFT_KB=$shift timeout 60 $B bench --m 300 --n 11008 --k 4096 --nm 12:32 --a-layout col \
      --kernels ${K}_sk3,${K}_sk1 --runs 20 2>&1 | grep nm_spmm | awk -v r=$round -v s=$shift '{print r, s, $4, $NF}' >> "$OUT/ws.txt"
  done
done
awk '$4 ~ /sk3$/ {a[$2]=a[$2]" "$3} END {for (s in a) print s, a[s]}' "$OUT/ws.txt" | sort -n
awk '$4 ~ /sk1$/ {print $3}' "$OUT/ws.txt" | sort -n | sed -n '1p;$p'
