#!/usr/bin/env bash
# Session 35: why a split-K kernel's time moves from process to process on the H200
# (session 34, m300-h200/). The column-major split-3 kernel at 300 x 11008 x 4096 12:32:
# A: 8 processes, each timing split 3, split 1 and split 3 again (medians of 20);
# B: 6 processes under ncu (clocks and caches left alone): time and DRAM/L2 figures of the
#    main and reduce launches of the first timed runs.
set -u
B=.device/bin/nmtune
K=nm_spmm_f32_acol16_ms64_ns128_ks32_mt8_nt8_w8x4_n12m32l32_nopack_cp2_mb1
P="--m 300 --n 11008 --k 4096 --nm 12:32 --a-layout col"
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
cat "$OUT/env.txt"
$B kernel --arch sm_90 ${K}_sk1 > /dev/null
for p in 1 2 3 4 5 6 7 8; do
  echo "## process $p" >> "$OUT/spread-time.txt"
  timeout 60 $B bench $P --kernels ${K}_sk3,${K}_sk1 --runs 20 2>&1 | grep nm_spmm >> "$OUT/spread-time.txt"
  timeout 60 $B bench $P --kernels ${K}_sk3 --runs 20 2>&1 | grep nm_spmm | sed 's/^/again /' >> "$OUT/spread-time.txt"
done
echo "A done: $SECONDS s"
for p in 1 2 3 4 5 6; do
  echo "#### process $p" >> "$OUT/spread-ncu.txt"
  timeout 100 ncu --clock-control none --cache-control none -k regex:nm_spmm --launch-skip 4 --launch-count 4 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_write.sum \
    $B bench $P --kernels ${K}_sk3 --runs 5 2>&1 | grep -E '^  nm_spmm|gpu__time|dram__|lts__|nm_spmm_f32.*x ' >> "$OUT/spread-ncu.txt"
done
echo "B done: $SECONDS s"
