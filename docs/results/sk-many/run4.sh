#!/usr/bin/env bash
# Session 57, fourth device call (H200), from the repository root:
#   S=.dev/s57b bash docs/results/sk-many/run4.sh
# ncu of the many-way stream-K kernels beside the split ones they compete with at m = 256
# (every kernel of one `nmtune bench` launch: main, reduction, stream-K workers), with the
# durations and the throughputs that say where a worker's time goes. $OUT/ncu-sk.txt.
set -u
OUT=${OUT:-/tmp/nmtune-out}; export OUT
mkdir -p "$OUT" .device/bin
gunzip -c "$S/nmtune.gz" > .device/bin/nmtune && chmod +x .device/bin/nmtune
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$OUT/env.txt"
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
P=nm_spmm_f32_acol16
while read -r n k kernel; do
  echo "#### m=256 n=$n k=$k 8:32 col $kernel" >> "$OUT/ncu-sk${NCU_TAG:-}.txt"
  timeout 150 ncu --clock-control none --kernel-name regex:'^nm_spmm' --launch-skip 0 --launch-count 3 \
    --metrics ${NCU_METRICS:-gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active,launch__grid_size,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum} \
    .device/bin/nmtune bench --m 256 --n "$n" --k "$k" --nm 8:32 --a-layout col --kernels "$kernel" --runs 1 \
    >> "$OUT/ncu-sk${NCU_TAG:-}.txt" 2>&1
  echo "$n $k $kernel: $SECONDS s"
done <<LIST
4096 4096 ${P}_ms128_ns256_ks64_mt16_nt8_w8x4_n8m32l32_nopack_cp3_mb1_sk4_tma
4096 4096 ${P}_ms128_ns256_ks64_mt16_nt8_w8x4_n8m32l32_nopack_cp3_mb1_sk1_tma_streamk
6656 6656 ${P}_ms128_ns256_ks64_mt16_nt8_w8x4_n8m32l32_nopack_cp3_mb1_sk2_tma
6656 6656 ${P}_ms128_ns256_ks64_mt16_nt8_w8x4_n8m32l32_nopack_cp3_mb1_sk1_tma_streamk
LIST
