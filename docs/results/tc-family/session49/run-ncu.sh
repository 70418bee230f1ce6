#!/usr/bin/env bash
# Session 49's fourth device call: where the m = 4096 winners' warps stall. ncu on HEAD's
# 8:32 and 4:32 winners at 4096^3 (column-major A, L = 128): speed of light, warp states with
# every stall reason, and the per-instruction stall samples of the SASS (source page, CSV);
# then cuBLAS's BF16 kernel of the same product for reference. One archive: $OUT/results.tgz.
set -u
S=${S:-.dev/s49}
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r; mkdir -p "$R"
B=/tmp/bin; mkdir -p $B
gunzip -c "$S/nmtune-a.gz" > $B/nmtune-a; chmod +x $B/nmtune-a
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/env.txt"
pack() { tar czf "$OUT/results.tgz" -C "$R" .; }
export NMTUNE_CACHE_DIR=/tmp/cubins-a
run() { # N:M, kernel
  $B/nmtune-a bench --m 4096 --n 4096 --k 4096 --nm $1 --l 128 --a-layout col --dtype bf16 --kernels $2 --runs 5 "${@:3}"
}
K8=nm_spmm_bf16_wgmma_ms128_ns128_ks64_mt64_nt128_w8x1_n8m32l128_nopack_cp3_mb2_sk1
K4=nm_spmm_bf16_wgmma_ms128_ns128_ks64_mt64_nt128_w8x1_n4m32l128_nopack_cp3_mb1_sk1
run 8:32 $K8 > "$R/warm8.txt" 2>&1
run 4:32 $K4 > "$R/warm4.txt" 2>&1
for x in 8:$K8 4:$K4; do
  s=${x%%:*}; k=${x#*:}
  timeout 150 ncu --kernel-name regex:tc_bf16 --launch-skip 2 --launch-count 1 --import-source no \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
    --section MemoryWorkloadAnalysis --section SourceCounters --section InstructionStats \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio \
    -o /tmp/r$s $B/nmtune-a bench --m 4096 --n 4096 --k 4096 --nm $s:32 --l 128 --a-layout col --dtype bf16 \
    --kernels $k --runs 5 > "$R/ncu-run$s.txt" 2>&1
  ncu --import /tmp/r$s.ncu-rep --print-details all > "$R/ncu-$s-32.txt" 2>&1
  ncu --import /tmp/r$s.ncu-rep --page source --csv --print-source sass > "$R/source-$s-32.csv" 2>&1
  gzip "$R/source-$s-32.csv"
  echo "ncu $s:32: $SECONDS s"; pack
done
timeout 100 ncu --kernel-name regex:'nvjet|gemm|xmma|cutlass' --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section Occupancy \
  $B/nmtune-a bench --m 4096 --n 4096 --k 4096 --nm 8:32 --l 128 --a-layout col --dtype bf16 --kernels $K8 --runs 5 \
  > "$R/ncu-cublas.txt" 2>&1
echo "cublas: $SECONDS s"; pack
