#!/usr/bin/env bash
# Session 49's fifth device call: the main loop unrolled by STAGES (build e: every ring slot a
# constant, no division by STAGES; patches/unroll.patch) against HEAD (a) on the stored
# m = 4096, column-major, L = 128 BF16 winners (ab.sqlite, as run-next.sh); the tensor-core
# GPU tests of build e; tc_bench of build e at 4096 x {4096, 11008} x 4096, 8:32 and 4:32.
# One archive: $OUT/results.tgz.
set -u
S=${S:-.dev/s49}
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r; mkdir -p "$R"
B=/tmp/bin; mkdir -p $B
for x in nmtune-a nmtune-e tc_bench-e gpu_tc-e; do gunzip -c "$S/$x.gz" > $B/$x; chmod +x $B/$x; done
gunzip -c "$S/ab.sqlite.gz" > /tmp/ab.sqlite
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/env.txt"
pack() { tar czf "$OUT/results.tgz" -C "$R" .; }
for x in a e; do
  NMTUNE_CACHE_DIR=/tmp/cubins-$x timeout 200 $B/nmtune-$x bench --db /tmp/ab.sqlite --m 4096 --runs 1 \
    > "$R/warm-$x.txt" 2>&1 &
done
wait
for round in 1 2; do
  for x in a e; do
    NMTUNE_CACHE_DIR=/tmp/cubins-$x timeout 120 $B/nmtune-$x bench --db /tmp/ab.sqlite --m 4096 --runs 10 \
      --csv "$R/ab-$x$round.csv" > /dev/null 2> "$R/ab-$x$round.err"
  done
  echo "round $round: $SECONDS s"; pack
done
NMTUNE_CACHE_DIR=/tmp/cubins-gpu timeout 150 $B/gpu_tc-e --nocapture --test-threads 1 > "$R/gpu_tc-test.log" 2>&1
echo "gpu_tc rc=$? $(grep -E 'products checked|^test result' "$R/gpu_tc-test.log" | tr '\n' ' ') $SECONDS s"; pack
timeout 150 $B/tc_bench-e --shape 4096x4096x4096,4096x11008x4096 --sparsity 8:32,4:32 --l 128 --runs 10 \
  --cache /tmp/tcb-e > "$R/tc-bench-e.txt" 2>&1
echo "tc_bench e: $SECONDS s"; pack
