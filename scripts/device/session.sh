#!/usr/bin/env bash
# One call on the lent GPU machine (the device tool), from the repository root there:
#   bash scripts/device/session.sh STEP...
# Binaries come prebuilt from this machine in .device/bin (nmtune, the `gpu` test binary);
# the NM-SpMM comparator sources in .nmspmm (../shared/tools/nmspmm-compare/prepare.sh).
# Every step writes under $OUT; the last lines printed are a summary.
#
# Steps:
#   expect NAME stop the call (exit 3) unless the GPU's name contains NAME (H100, H200): a
#               call for one kind may run on another machine the session still holds
#   env         GPU name, driver, clocks
#   correct     tests/gpu.rs: every template family against the CPU reference
#   nmspmm      the NM-SpMM authors' kernels at 4096³ (and m = 256), best of their four;
#               $NMSPMM_SHAPES names a file of "m n k sparsity" lines to time instead
#   sweep FILE  tune the shapes in FILE with the sample strategy into $OUT/sweep.sqlite
#   tune FILE DB  tune FILE into DB (resumable; $TUNE_STRATEGY, default pruned: warm after a
#               template change; $TUNE_ARGS more arguments, e.g. "--retune --a-layout row"),
#               tidy it, and send it back as $OUT/<name>.gz; the log is
#               $OUT/tune-<FILE's stem>.log. Each tune stops in time for the call to end within
#               $CALL_BUDGET seconds (default 560; the device tool stops a call at 600)
#   ncu-best DB NM...  ncu (as `ncu`) of DB's stored 4096³ column-major best at each N:M
#   bench DB M  re-time DB's stored best kernels at m = M beside cuBLAS
#   ncu LIST    ncu speed-of-light, scheduler, warp-state, occupancy and memory sections of each kernel in
#               LIST (lines "M N K N:M LAYOUT KERNEL"), one launch each, into $OUT/ncu.txt
#   time LIST   nmtune bench of each line of LIST (same format, KERNEL may be a comma-separated
#               list, and a seventh field L, default 32), into $OUT/time.txt ($TIME_BIN
#               another nmtune binary, $TIME_TAG a suffix of the file's name)
#   sass LIST   ncu's per-instruction (SASS) warp-stall samples of each kernel in LIST, one CSV
#               per kernel ($OUT/sass-<N>-<M>-<LAYOUT>.csv; scripts/sass_stalls.py reads them)
#   tc          issue 15's tensor-core prototypes (docs/results/tc-prototype/run.sh); $TC_STEPS picks (tc0, tc1)
#   tc-ncu      ncu of tensor-core prototype kernels (docs/results/tc-prototype/ncu.sh;
#               $TC_STEPS picks tc0, tc1)
#   tests NAME  the test binary .device/bin/NAME (GPU tests included), into $OUT/NAME-test.log
#   example M NM  examples/llama_mlp (.device/bin/llama_mlp) at m = M, pattern NM
set -u
OUT=${OUT:-/tmp/nmtune-out}; export OUT
mkdir -p "$OUT"
BIN=$PWD/.device/bin
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
summary=()
note() { summary+=("$*"); echo "== $*"; }
# Fold the write-ahead log into the database file, so that the one file that comes back
# holds every row.
checkpoint() { python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('pragma wal_checkpoint(TRUNCATE)')" "$1"; }
limit() { timeout "$@"; }
# A consistent copy of database $1 (SQLite's backup API, safe while the tuner writes it),
# gzipped to $2 through a temporary file, so that $2 is always whole.
snapshot() {
  local copy=/tmp/nmtune-snapshot.sqlite
  rm -f "$copy"
  [ -e "$1" ] || return 0
  python3 -c "import sqlite3,sys; d=sqlite3.connect(sys.argv[2]); sqlite3.connect('file:' + sys.argv[1] + '?mode=ro', uri=True).backup(d); d.close()" \
    "$1" "$copy" && gzip -c "$copy" > "$2.part" && mv "$2.part" "$2"
  rm -f "$copy" "$2.part"
}
# While a tune runs, its database goes to $OUT every $SNAPSHOT_S seconds (default 60): the
# device tool stops a call at its limit, which is shorter than CALL_BUDGET when the session's
# budget runs low, and whatever is under $OUT then still comes back (session 28 lost an H200
# re-tune's 330 s because the database was sent back only when the tune ended).
# Stops when the file $1.stop exists, after the snapshot it may be taking.
snapshots() {
  local db=$1 out=$2 waited=0
  while [ ! -e "$db.stop" ]; do
    sleep 5; waited=$((waited + 5))
    if [ "$waited" -ge "${SNAPSHOT_S:-60}" ] && [ ! -e "$db.stop" ]; then snapshot "$db" "$out"; waited=0; fi
  done
}
# Seconds a tune may still run: its own limit, or what the call has left less a margin for
# tidying and packing the database.
tune_limit() {
  local left=$(( ${CALL_BUDGET:-560} - SECONDS - 40 ))
  local own=${TUNE_LIMIT:-500}
  echo $(( left < own ? left : own ))
}

nmspmm_shapes=("4096 4096 4096 0.5" "4096 4096 4096 0.625" "4096 4096 4096 0.75" "4096 4096 4096 0.875"
               "256 4096 4096 0.5" "256 4096 4096 0.875")
# Build the comparator in the background while the GPU runs other steps.
(cd .nmspmm && [ -x test_nmspmm ] || nvcc -O3 -arch=sm_90 -Xcompiler -fopenmp -Iinclude src/*.cu \
   tests/test_nmspmm.cu -o test_nmspmm -lgomp) > "$OUT/nmspmm-build.log" 2>&1 &
build_pid=$!

while [ $# -gt 0 ]; do
  step=$1; shift
  case $step in
    expect)
      name=$1; shift
      gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
      if [[ $gpu_name != *"$name"* ]]; then echo "expected an $name, this is: $gpu_name" >&2; exit 3; fi
      note "GPU: $gpu_name" ;;
    env)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv \
        | tee "$OUT/env.txt"
      note "$(tail -1 "$OUT/env.txt")" ;;
    correct)
      limit 300 "$BIN/gpu" --nocapture --test-threads 1 > "$OUT/gpu-test.log" 2>&1
      note "correct: rc=$? $(grep -E 'GPU correctness|test result' "$OUT/gpu-test.log" | tr '\n' ' ')" ;;
    nmspmm)
      wait $build_pid
      if [ -n "${NMSPMM_SHAPES:-}" ]; then mapfile -t nmspmm_shapes < "$NMSPMM_SHAPES"; fi
      limit "${NMSPMM_LIMIT:-240}" bash .nmspmm/run.sh "${nmspmm_shapes[@]}" > "$OUT/nmspmm.txt" 2>&1
      note "nmspmm: $(grep ROW "$OUT/nmspmm.txt" | awk '{printf "%s/%s/%s@%s=%sus ", $2,$3,$5,$8,$6}')" ;;
    sweep)
      file=$1; shift
      limit "${SWEEP_LIMIT:-300}" "$BIN/nmtune" --gpu auto --shapes "$file" --db "$OUT/sweep.sqlite" \
        --strategy sample > "$OUT/sweep.log" 2>&1
      note "sweep: rc=$? $(tail -1 "$OUT/sweep.log")"
      checkpoint "$OUT/sweep.sqlite"; rm -f "$OUT/sweep.sqlite-wal" "$OUT/sweep.sqlite-shm"
      "$BIN/nmtune" report --db "$OUT/sweep.sqlite" > "$OUT/sweep-report.txt" 2>&1
      cat "$OUT/sweep-report.txt" ;;
    tune)
      file=$1 db=$2; shift 2
      log="$OUT/tune-$(basename "$file" .yaml).log"
      secs=$(tune_limit)
      if [ "$secs" -lt 30 ]; then note "tune $file: skipped, ${secs} s left in the call"; continue; fi
      rm -f "$db.stop"; snapshots "$db" "$OUT/$(basename "$db").gz" & snap_pid=$!
      limit "$secs" "$BIN/nmtune" --gpu auto --shapes "$file" --db "$db" \
        --strategy "${TUNE_STRATEGY:-pruned}" ${TUNE_ARGS:-} >> "$log" 2>&1
      rc=$?; touch "$db.stop"; wait "$snap_pid"; rm -f "$db.stop"
      note "tune $file (limit $secs s): rc=$rc $(tail -1 "$log")"
      # Rows a finished re-tune superseded go before the file travels back (a file that comes
      # back is at most 16 MiB, and a re-tuned database holds both generations until tidied);
      # gzip for the same reason: gunzip it into tuning-db/ here.
      "$BIN/nmtune" tidy --db "$db" >> "$log" 2>&1
      checkpoint "$db"; gzip -c "$db" > "$OUT/$(basename "$db").gz" ;;
    ncu-best)
      db=$1; shift
      : > "$OUT/ncu-best.list"
      gpu=h100; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && gpu=h200
      while [ $# -gt 0 ] && [[ $1 == *:* ]]; do
        kernel=$("$BIN/nmtune" lookup --db "$db" --gpu "$gpu" --m 4096 --n 4096 --k 4096 \
          --nm "$1" --a-layout col --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["kernel"])')
        echo "4096 4096 4096 $1 col $kernel" >> "$OUT/ncu-best.list"; shift
      done
      set -- ncu "$OUT/ncu-best.list" "$@" ;;
    bench)
      db=$1 m=$2; shift 2
      limit 240 "$BIN/nmtune" bench --db "$db" --m "$m" > "$OUT/bench-m$m.txt" 2>&1
      note "bench m=$m: $(tail -8 "$OUT/bench-m$m.txt" | tr '\n' ' ')" ;;
    ncu)
      list=$1; shift
      while read -r m n k nm layout kernel; do
        [ -z "$kernel" ] && continue
        echo "#### $kernel at m=$m n=$n k=$k $nm $layout" >> "$OUT/ncu.txt"
        limit 120 ncu --clock-control none --kernel-name "$kernel" --launch-count 1 \
          --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy \
          --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis_Tables \
          --metrics smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__inst_executed.sum \
          "$BIN/nmtune" bench --m "$m" --n "$n" --k "$k" --nm "$nm" --a-layout "$layout" \
          --kernels "$kernel" --runs 1 >> "$OUT/ncu.txt" 2>&1
        echo "#### stall reasons of $kernel" >> "$OUT/ncu.txt"
        limit 120 ncu --clock-control none --kernel-name "$kernel" --launch-count 1 \
          --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
          "$BIN/nmtune" bench --m "$m" --n "$n" --k "$k" --nm "$nm" --a-layout "$layout" \
          --kernels "$kernel" --runs 1 >> "$OUT/ncu.txt" 2>&1
      done < "$list"
      note "ncu: $(grep -E 'smsp__issue_active.avg.per_cycle_active|smsp__warps_active.avg.per_cycle_active' "$OUT/ncu.txt" | awk '{print $NF}' | tr '\n' ' ')" ;;
    time)
      list=$1; shift
      while read -r m n k nm layout kernel l; do
        [ -z "$kernel" ] && continue
        limit 120 "${TIME_BIN:-$BIN/nmtune}" bench --m "$m" --n "$n" --k "$k" --nm "$nm" --a-layout "$layout" \
          --l "${l:-32}" --kernels "$kernel" --runs 10 >> "$OUT/time${TIME_TAG:-}.txt" 2>&1
      done < "$list"
      note "time${TIME_TAG:-}: $(grep -c nm_spmm "$OUT/time${TIME_TAG:-}.txt") lines" ;;
    sass)
      list=$1; shift
      while read -r m n k nm layout kernel; do
        [ -z "$kernel" ] && continue
        csv="$OUT/sass-${nm/:/-}-$layout.csv"
        limit 180 ncu --clock-control none --kernel-name "$kernel" --launch-count 1 \
          --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
          "$BIN/nmtune" bench --m "$m" --n "$n" --k "$k" --nm "$nm" --a-layout "$layout" \
          --kernels "$kernel" --runs 1 > "$csv" 2> "${csv%.csv}.err"
      done < "$list"
      note "sass: $(ls "$OUT"/sass-*.csv 2>/dev/null | wc -l) kernels" ;;
    tc)
      limit 400 bash docs/results/tc-prototype/run.sh ${TC_STEPS:-}
      note "tc: rc=$? $(grep -c speed-up "$OUT/tc0.txt" 2>/dev/null) tc0 lines, $(grep -c speed-up "$OUT/tc1.txt" 2>/dev/null) tc1 lines" ;;
    tc-ncu)
      limit 500 bash docs/results/tc-prototype/ncu.sh ${TC_STEPS:-}
      note "tc-ncu: rc=$? $(grep -c '^####' "$OUT/tc-ncu.txt" 2>/dev/null) kernels" ;;
    tests)
      name=$1; shift
      NMTUNE_BIN="$BIN/nmtune" NMTUNE_REQUIRE_GPU=1 limit 400 "$BIN/$name" --nocapture \
        --test-threads 1 > "$OUT/$name-test.log" 2>&1
      note "tests $name: rc=$? $(grep -E '^test result' "$OUT/$name-test.log" | tr '\n' ' ')" ;;
    example)
      m=$1 nm=$2; shift 2
      limit 120 "$BIN/llama_mlp" --m "$m" --sparsity "$nm" >> "$OUT/example.log" 2>&1
      note "example m=$m $nm: rc=$? $(tail -3 "$OUT/example.log" | tr '\n' ' ')" ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
# The device tool brings back at most 8 files: beyond that, everything but the databases
# travels in one archive (tar xzf results.tgz here).
if [ "$(find "$OUT" -maxdepth 1 -type f | wc -l)" -gt 8 ]; then
  (cd "$OUT" && find . -maxdepth 1 -type f ! -name '*.gz' -printf '%P\n' | tar czf /tmp/results.tgz -T - --remove-files) && mv /tmp/results.tgz "$OUT/"
  note "more than 8 files: all but the databases are in results.tgz"
fi
echo; echo "==== summary"; printf '%s\n' "${summary[@]}"
