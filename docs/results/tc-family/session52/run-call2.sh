#!/usr/bin/env bash
# Session 52, call 2 (H200): what binds the L = 32, 8:32 winners at m = 256 that stay below
# cuBLAS. ncu (speed of light, memory workload, warp states and stall reasons, scheduler,
# occupancy) on the committed BF16 winners of 256 × 11008 × 4096 (one block a tile, four
# warpgroups) and 256 × 2048 × 2048 (split 2), column-major A, and on cuBLAS's kernel for
# the first; the row-major 256 × 2048 × 2048 winner's two kernels. One archive: $OUT/results.tgz.
# Carried: .dev/s52 (nmtune.gz = main at the session's landing, build t).
set -u
S=${S:-.dev/s52}
export PATH=/usr/local/cuda/bin:$PATH NMTUNE_CACHE_DIR=/tmp/cubins
R=$OUT/r; mkdir -p "$R"
B=/tmp/bin; mkdir -p $B
gunzip -c "$S/nmtune.gz" > $B/nmtune; chmod +x $B/nmtune
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/env.txt"
pack() { tar czf "$OUT/results.tgz" -C "$R" .; }
KA=nm_spmm_bf16_wgmma_ms256_ns128_ks32_mt64_nt128_w16x1_n8m32l32_nopack_cp3_mb1_sk1
KB=nm_spmm_bf16_wgmma_ms64_ns128_ks32_mt64_nt128_w4x1_n8m32l32_nopack_cp4_mb1_sk2
bench() { # n, k, kernel, extra
  $B/nmtune bench --m 256 --n $1 --k $2 --nm 8:32 --l 32 --a-layout col --dtype bf16 --kernels $3 --runs 20 "${@:4}"
}
bench 11008 4096 $KA > "$R/bench-a.txt" 2>&1
bench 2048 2048 $KB > "$R/bench-b.txt" 2>&1
for x in a:11008:4096:$KA b:2048:2048:$KB; do
  IFS=: read -r tag n k kern <<< "$x"
  timeout 120 ncu --kernel-name regex:tc_bf16 --launch-skip 2 --launch-count 1 --import-source no \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
    --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section LaunchStats \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_sectors_srcunit_tex_op_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    -o /tmp/r$tag $B/nmtune bench --m 256 --n $n --k $k --nm 8:32 --l 32 --a-layout col --dtype bf16 \
    --kernels $kern --runs 5 > "$R/ncu-run-$tag.txt" 2>&1
  ncu --import /tmp/r$tag.ncu-rep --print-details all > "$R/ncu-$tag.txt" 2>&1
  echo "ncu $tag: $SECONDS s"; pack
done
timeout 100 ncu --kernel-name regex:'nvjet|gemm|xmma|cutlass|sm90' --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section Occupancy \
  --section LaunchStats $B/nmtune bench --m 256 --n 11008 --k 4096 --nm 8:32 --l 32 --a-layout col \
  --dtype bf16 --kernels $KA --runs 5 > "$R/ncu-cublas-a.txt" 2>&1
echo "cublas: $SECONDS s"; pack
# Row-major A: the transposing pass and the main kernel of the 256 × 2048 × 2048 winner.
KC=nm_spmm_bf16_wgmmatrans_ms64_ns128_ks32_mt64_nt128_w4x1_n8m32l32_nopack_cp4_mb1_sk2
$B/nmtune bench --m 256 --n 2048 --k 2048 --nm 8:32 --l 32 --a-layout row --dtype bf16 --kernels $KC \
  --runs 20 > "$R/bench-c.txt" 2>&1
timeout 100 ncu --kernel-name regex:tc_bf16 --launch-skip 4 --launch-count 2 \
  --section SpeedOfLight --section LaunchStats --section MemoryWorkloadAnalysis \
  $B/nmtune bench --m 256 --n 2048 --k 2048 --nm 8:32 --l 32 --a-layout row --dtype bf16 --kernels $KC \
  --runs 5 > "$R/ncu-c.txt" 2>&1
echo "row: $SECONDS s"; pack
