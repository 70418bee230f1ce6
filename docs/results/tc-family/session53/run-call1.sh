#!/usr/bin/env bash
# Session 53, call 1 (H200): A's copies cached in L1. Build ca (main + `cp.async.ca` for the
# tensor-core template's 16-byte copies instead of `.cg`, patches/copy-ca.patch): at L = 32 a
# 128-column block gathers four groups' kept rows a stage, and a row kept by several groups
# is copied once per group; through L1 the second and later copies of a line can hit there
# instead of L2 (at 8:32 the union of four groups' kept rows is 21.9 of 32 a window).
# Main's build (A) against ca (B) on main's BF16 winners of every L = 32 problem at m = 256
# and m = 4096 (scripts/device/ab-db.sh, medians of 10 beside cuBLAS, two rounds), then ncu
# of the 256 × 11008 × 4096 8:32 column-major winner with both builds (L1 hit rate, L2 reads).
# Carried: .dev/s53 (nmtune.gz = main, nmtune-ca.gz, ab/l32.sqlite: the committed BF16
# database with only the best entries of L = 32 at m = 256 and 4096).
set -u
S=${S:-.dev/s53}
export PATH=/usr/local/cuda/bin:$PATH
B=/tmp/bin; mkdir -p $B
for f in nmtune nmtune-ca; do gunzip -c "$S/$f.gz" > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt"
A=$B/nmtune B=$B/nmtune-ca WARM=1 bash scripts/device/ab-db.sh $S/ab/l32.sqlite 256 2
echo "m256: $SECONDS s"
A=$B/nmtune B=$B/nmtune-ca WARM=1 STOP_AFTER=420 bash scripts/device/ab-db.sh $S/ab/l32.sqlite 4096 2
echo "m4096: $SECONDS s"
R=$OUT/r; mkdir -p $R
KA=nm_spmm_bf16_wgmma_ms256_ns128_ks32_mt64_nt128_w16x1_n8m32l32_nopack_cp3_mb1_sk1
for side in nmtune nmtune-ca; do
  NMTUNE_CACHE_DIR=/tmp/cubins-$side timeout 60 ncu --kernel-name regex:tc_bf16 --launch-skip 2 \
    --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --metrics l1tex__t_sector_hit_rate.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_bypass.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio \
    $B/$side bench --m 256 --n 11008 --k 4096 --nm 8:32 --l 32 --a-layout col --dtype bf16 \
    --kernels $KA --runs 5 > "$R/ncu-$side.txt" 2>&1
done
tar czf "$OUT/ncu.tgz" -C "$R" .
echo "done $SECONDS s"
