#!/usr/bin/env bash
# One call on the lent GPU machine (the device tool), from the repository root there:
#   bash scripts/device/session.sh STEP...
# Binaries come prebuilt from this machine in .device/bin (nmtune, the `gpu` test binary);
# the NM-SpMM comparator sources in .nmspmm (../shared/tools/nmspmm-compare/prepare.sh).
# Every step writes under $OUT; the last lines printed are a summary.
#
# Steps:
#   env         GPU name, driver, clocks
#   correct     tests/gpu.rs: every template family against the CPU reference
#   nmspmm      the NM-SpMM authors' kernels at 4096³ (and m = 256), best of their four
#   sweep FILE  tune the shapes in FILE with the sample strategy into $OUT/sweep.sqlite
#   tune FILE DB  tune FILE with the default strategy into DB (resumable), report to $OUT
#   bench DB M  re-time DB's stored best kernels at m = M beside cuBLAS
set -u
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
BIN=$PWD/.device/bin
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
summary=()
note() { summary+=("$*"); echo "== $*"; }
limit() { timeout "$@"; }

nmspmm_shapes=("4096 4096 4096 0.5" "4096 4096 4096 0.625" "4096 4096 4096 0.75" "4096 4096 4096 0.875"
               "256 4096 4096 0.5" "256 4096 4096 0.875")
# Build the comparator in the background while the GPU runs other steps.
(cd .nmspmm && [ -x test_nmspmm ] || nvcc -O3 -arch=sm_90 -Xcompiler -fopenmp -Iinclude src/*.cu \
   tests/test_nmspmm.cu -o test_nmspmm -lgomp) > "$OUT/nmspmm-build.log" 2>&1 &
build_pid=$!

while [ $# -gt 0 ]; do
  step=$1; shift
  case $step in
    env)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv \
        | tee "$OUT/env.txt"
      note "$(tail -1 "$OUT/env.txt")" ;;
    correct)
      limit 300 "$BIN/gpu" --nocapture --test-threads 1 > "$OUT/gpu-test.log" 2>&1
      note "correct: rc=$? $(grep -E 'GPU correctness|test result' "$OUT/gpu-test.log" | tr '\n' ' ')" ;;
    nmspmm)
      wait $build_pid
      limit 240 bash .nmspmm/run.sh "${nmspmm_shapes[@]}" > "$OUT/nmspmm.txt" 2>&1
      note "nmspmm: $(grep ROW "$OUT/nmspmm.txt" | awk '{printf "%s/%s/%s@%s=%sus ", $2,$3,$5,$8,$6}')" ;;
    sweep)
      file=$1; shift
      limit "${SWEEP_LIMIT:-300}" "$BIN/nmtune" --gpu auto --shapes "$file" --db "$OUT/sweep.sqlite" \
        --strategy sample --quiet > "$OUT/sweep.log" 2>&1
      note "sweep: rc=$? $(tail -1 "$OUT/sweep.log")"
      "$BIN/nmtune" report --db "$OUT/sweep.sqlite" > "$OUT/sweep-report.txt" 2>&1
      cat "$OUT/sweep-report.txt" ;;
    tune)
      file=$1 db=$2; shift 2
      limit "${TUNE_LIMIT:-500}" "$BIN/nmtune" --gpu auto --shapes "$file" --db "$db" --quiet \
        > "$OUT/tune.log" 2>&1
      note "tune: rc=$? $(tail -1 "$OUT/tune.log")"
      cp "$db" "$OUT/" ;;
    bench)
      db=$1 m=$2; shift 2
      limit 240 "$BIN/nmtune" bench --db "$db" --m "$m" > "$OUT/bench-m$m.txt" 2>&1
      note "bench m=$m: $(tail -8 "$OUT/bench-m$m.txt" | tr '\n' ' ')" ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
echo; echo "==== summary"; printf '%s\n' "${summary[@]}"
