#!/usr/bin/env bash
# Where a short split block's time goes (session 33): per-instruction stall samples of the
# 8:32 winner at 256 × 4096² split 4, and the launch's kernels at split 1 and 4.
B=.device/bin/nmtune
K=nm_spmm_f32_acol16_ms128_ns256_ks64_mt16_nt8_w8x4_n8m32l32_nopack_cp3_mb1
P="--m 256 --n 4096 --k 4096 --nm 8:32 --a-layout col"
timeout 200 ncu --clock-control none --kernel-name ${K}_sk1 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
  $B bench $P --kernels ${K}_sk4 --runs 1 > $OUT/sass-split4.csv 2> $OUT/sass-split4.err
gzip $OUT/sass-split4.csv
timeout 120 ncu --clock-control none --kernel-name regex:"${K}_sk1(_reduce)?$" --launch-count 4 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
  $B bench $P --kernels ${K}_sk4,${K}_sk1 --runs 1 > $OUT/ncu-split.txt 2>&1
