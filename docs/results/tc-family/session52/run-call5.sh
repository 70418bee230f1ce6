#!/usr/bin/env bash
# Session 52, call 5 (H200): the shared A tile, first prototype (branch s52-union: the
# `_union` configurations, a block's groups copying the union of their kept rows once a
# stage and gathering A fragments from it with ldmatrix for wgmma with A from registers).
#   1. tests/gpu_tc.rs of the branch: every configuration, the union ones among them,
#      against the CPU reference;
#   2. examples/tc_bench.rs (every configuration of the family verified against cuBLAS and
#      timed, medians of 20, cuBLAS BF16 in the same process) at m = 256, 8:32 and 16:32,
#      L = 32, column-major A.
# Carried: .dev/s52u (gpu_tc.gz, tc_bench.gz of the branch). Call 6 ran this script with
# S=.dev/s52v TAG=v (run-call6.sh).
set -u
S=${S:-.dev/s52u} TAG=${TAG:-u}
export PATH=/usr/local/cuda/bin:$PATH NMTUNE_CACHE_DIR=/tmp/cubins
B=/tmp/bin; mkdir -p $B
for f in gpu_tc tc_bench; do gunzip -c "$S/$f.gz" > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt"
timeout 240 $B/gpu_tc --nocapture --test-threads 1 > "$OUT/gpu_tc-$TAG.log" 2>&1
echo "gpu_tc rc=$? $SECONDS s: $(grep -E 'products checked|^test result|panicked' "$OUT/gpu_tc-$TAG.log" | head -3 | tr '\n' ' ')"
timeout 240 $B/tc_bench --shape 256x11008x4096,256x5120x5120,256x4096x4096,256x2048x5632 \
  --sparsity 8:32,16:32 --l 32 --runs 20 --cache /tmp/cubins-bench > "$OUT/tc-bench-$TAG.txt" 2>&1
echo "tc_bench rc=$? $SECONDS s"
