#!/usr/bin/env bash
# ncu of a cluster-reduced kernel beside its plain twin (session 33).
B=.device/bin/nmtune
P="--m 256 --n 4096 --k 4096 --nm 8:32 --a-layout col"
K=nm_spmm_f32_acol16_ms128_ns256_ks64_mt16_nt8_w8x4_n8m32l32_nopack_cp3_mb1_sk4
S="--section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats --section SchedulerStats"
timeout 150 ncu --clock-control none --kernel-name regex:'in_cluster$' --launch-count 1 $S $B bench $P --kernels ${K}_cluster --runs 1 > $OUT/ncu-cluster.txt 2>&1
timeout 150 ncu --clock-control none --kernel-name regex:'(sk1|_reduce)$' --launch-count 2 $S $B bench $P --kernels $K --runs 1 >> $OUT/ncu-cluster.txt 2>&1
P2="--m 256 --n 2048 --k 2048 --nm 8:32 --a-layout col"
K2=nm_spmm_f32_acol16_ms64_ns64_ks64_mt16_nt4_w4x8_n8m32l32_nopack_cp2_mb2_sk4
timeout 100 ncu --clock-control none --kernel-name regex:'in_cluster$' --launch-count 1 --section LaunchStats --section Occupancy --section SpeedOfLight $B bench $P2 --kernels ${K2}_cluster --runs 1 >> $OUT/ncu-cluster.txt 2>&1
