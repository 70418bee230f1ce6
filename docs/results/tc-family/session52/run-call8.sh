#!/usr/bin/env bash
# Session 52, call 8 (H200): tensor copies for part of A's kept rows (branch s52-tma-a: the
# `_tma<s>` configurations, the rows of the first s of a thread's copy slots as boxes of
# 64 m × 1 kept row through a tensor map of A with the 128-byte swizzle, issued by warp 0,
# the rest by cp.async; column-major A).
#   1. tests/gpu_tc.rs of the branch (every configuration, the `_tma` ones among them);
#   2. examples/tc_bench.rs at m = 256, 8:32, L = 32 (medians of 20 beside cuBLAS BF16).
# Carried: .dev/s52t (gpu_tc.gz, tc_bench.gz of the branch).
set -u
S=.dev/s52t
export PATH=/usr/local/cuda/bin:$PATH NMTUNE_CACHE_DIR=/tmp/cubins
B=/tmp/bin; mkdir -p $B
for f in gpu_tc tc_bench; do gunzip -c "$S/$f.gz" > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt"
timeout 200 $B/gpu_tc --nocapture --test-threads 1 > "$OUT/gpu_tc-t.log" 2>&1
echo "gpu_tc rc=$? $SECONDS s: $(grep -E 'products checked|^test result|panicked' "$OUT/gpu_tc-t.log" | head -3 | tr '\n' ' ')"
timeout 150 $B/tc_bench --shape 256x11008x4096,256x5120x5120,256x4096x4096,256x2048x2048 \
  --sparsity 8:32 --l 32 --runs 20 --cache /tmp/cubins-bench > "$OUT/tc-bench-t.txt" 2>&1
echo "tc_bench rc=$? $SECONDS s"
