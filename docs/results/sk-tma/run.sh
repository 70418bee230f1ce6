#!/usr/bin/env bash
# Session 56, one device call (H200), from the repository root of branch s56-sk-tma:
#   S=.dev/s56 bash docs/results/sk-tma/run.sh
# $S holds that branch's build: nmtune-sk.gz and gpu-sk.gz (the `gpu` test binary).
# 1. tests/gpu.rs's tensor-copy test (now with the stream-K schedule), $OUT/gpu-tma.log;
# 2. `nmtune bench` of every line of bench.list, $OUT/bench.txt.
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH NMTUNE_CACHE_DIR=/tmp/cubins
for f in nmtune-sk gpu-sk; do gunzip -c "$S/$f.gz" > /tmp/$f && chmod +x /tmp/$f; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/env.txt"
timeout 300 /tmp/gpu-sk --exact the_tensor_copies_match_the_cpu_reference --nocapture > "$OUT/gpu-tma.log" 2>&1
echo "gpu rc=$? $SECONDS s: $(grep -E 'pairs checked|^test result' "$OUT/gpu-tma.log" | tr '\n' ' ')"
grep -v '^#' "$here/bench.list" | while read -r n k nn kernels; do
  list=$(echo "$kernels" | sed 's/\(^\|,\)/\1nm_spmm_f32_/g')
  echo "### m=4096 n=$n k=$k $nn:32 col" >> "$OUT/bench.txt"
  timeout 150 /tmp/nmtune-sk bench --gpu h200 --m 4096 --n "$n" --k "$k" --nm "$nn:32" --a-layout col \
    --kernels "$list" >> "$OUT/bench.txt" 2>&1
  echo "bench $n $k $nn rc=$? $SECONDS s"
done
