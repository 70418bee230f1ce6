#!/usr/bin/env bash
# Prepared in session 46 and NOT run: the session's device time ran out before a machine
# could be started (docs/perf-log.md, "Session 46"). One call on an H200 (or H100), from the
# repository root there:
#   bash docs/results/tc-family/session46/run.sh
# Carried in .dev/run (ignored by git; made by prepare.sh beside this file):
#   nmtune-a.gz   nmtune at 2fed37b: every timed series as the host queues it
#   nmtune-b.gz   main from 64b43e9 on: the series queued behind the ~1 ms spin kernel
#   nmtune-c.gz   b with split-k.patch applied (split k in the tensor-core family; its
#                 template changed, so every tensor-core row is stale under it)
#   gpu_tc.gz, tc_bench.gz   the tensor-core GPU tests and tc_bench, of build c
#   cubins.tgz    the stored FP32 winners at m = 256, compiled here with NVRTC 13.0.88 (the
#                 device's CUDA 13.0: the cache key holds NVRTC's version), so the call
#                 compiles only the tensor-core kernels (about half a second each, on 16 cores)
#   h200-m256.sqlite, h200-bf16-m256.sqlite   the committed databases' m = 256 best entries
# Results go to $OUT/results.tgz (the device tool brings back at most 8 files). About 400 s.
set -u
OUT=${OUT:-/tmp/session46-out}
D=.dev/run R=$OUT/r
mkdir -p "$R"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NMTUNE_CACHE_DIR=$PWD/$D/cubins
for f in "$D"/*.gz; do gunzip -f "$f"; done
mkdir -p "$D/cubins" && tar xzf "$D/cubins.tgz" -C "$D/cubins"
chmod +x "$D"/nmtune-? "$D"/gpu_tc "$D"/tc_bench
# The results so far, packed after every step: a call cut short still brings back what ran.
step() { (cd "$OUT" && tar czf results.tgz.part r && mv results.tgz.part results.tgz); echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$R/env.txt"
cat "$R/env.txt"

step "1. every tensor-core configuration (splits included) against the CPU reference"
timeout "${GPU_TC_S:-150}" "$D/gpu_tc" --nocapture --test-threads 1 > "$R/gpu_tc-test.log" 2>&1
echo "gpu_tc rc=$? $(grep -E 'products checked|^test result' "$R/gpu_tc-test.log" | tr '\n' ' ')"

step "2. split k timed beside the unsplit kernels and cuBLAS (m = 256 layers)"
timeout "${TC_BENCH_S:-70}" "$D/tc_bench" --shape 256x2048x5632,256x4096x11008,256x5120x13824 \
  --sparsity 16:32,8:32 --l 128,32 --runs 10 --cache "$NMTUNE_CACHE_DIR" > "$R/split-time.txt" 2>&1
echo "tc_bench rc=$? $(grep -c ' best ' "$R/split-time.txt") problems"

# 3. The stored m = 256 winners re-timed by each build (medians of 10 beside cuBLAS):
#    b against a is the head start alone; c against b is the new template on unsplit kernels.
bench() {
  local build=$1 db=$2 tag=$3
  timeout "${BENCH_S:-35}" "$D/nmtune-$build" bench --db "$D/$db" --m 256 --runs 10 \
    --csv "$R/ab-db-$tag-m256.csv" > /dev/null 2> "$R/ab-db-$tag-m256.err"
  echo "bench $build $db: rc=$? $(($(wc -l < "$R/ab-db-$tag-m256.csv") - 1)) rows"
}
step "3. BF16 m = 256 winners: builds c, b, a"
bench c h200-bf16-m256.sqlite C1-bf16
bench b h200-bf16-m256.sqlite B1-bf16
bench a h200-bf16-m256.sqlite A1-bf16
step "4. FP32 m = 256 winners: builds a, b"
bench a h200-m256.sqlite A1-f32
bench b h200-m256.sqlite B1-f32
step done
rm -rf "$R"
