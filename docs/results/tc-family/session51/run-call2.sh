#!/usr/bin/env bash
# Session 51, call 2 (H200): the tensor-core stream-K schedule.
#   1. tests/gpu_tc.rs of build s (HEAD + session 50's pdl-late.patch for row-major A +
#      the stream-K schedule), which checks every configuration, stream-K ones at three
#      shares, against the CPU reference;
#   2. if they pass, the warm re-tune of the BF16 database with build s (its candidates now
#      include the stream-K variants of each problem's first picks where the tiles leave a
#      partial last wave), from the database build q re-tuned in call 1; then the FP16 one;
#      each until the call's time runs out (resumable: call 3 goes on from what comes back).
# Carried: .dev/s51 (nmtune.gz = build s, gpu_tc.gz, retune-q/h200-{bf16,f16}.sqlite.gz).
# Call 3 goes on: BASE=.dev/s51/call2 (the databases call 2 sent back) GPU_TC=0.
set -u
S=.dev/s51 BASE=${BASE:-.dev/s51/retune-q}
export PATH=/usr/local/cuda/bin:$PATH NMTUNE_CACHE_DIR=/tmp/cubins
B=/tmp/bin; mkdir -p $B
for f in nmtune gpu_tc; do gunzip -c "$S/$f.gz" > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt"
if [ "${GPU_TC:-1}" = 1 ]; then
  timeout 200 $B/gpu_tc --nocapture --test-threads 1 > "$OUT/gpu_tc-s.log" 2>&1
  tc_rc=$?
  echo "gpu_tc rc=$tc_rc $SECONDS s: $(grep -E 'products checked|^test result' "$OUT/gpu_tc-s.log" | tr '\n' ' ')"
  [ "$tc_rc" = 0 ] || { tail -c 3000 "$OUT/gpu_tc-s.log"; exit 1; }
fi
for T in bf16 f16; do
  left=$((575 - SECONDS))
  [ "$left" -gt 30 ] || break
  from="$BASE/h200-$T.sqlite.gz"; [ -e "$from" ] || from="$S/retune-q/h200-$T.sqlite.gz"
  gunzip -c "$from" > /tmp/h200-$T.sqlite
  timeout "$left" $B/nmtune --gpu auto --shapes shapes/llama.yaml --db /tmp/h200-$T.sqlite \
    --dtype $T --a-layout row,col --l 128,32 --strategy warm > "$OUT/tune-$T.log" 2>&1
  echo "tune $T rc=$? $SECONDS s: $(tail -1 "$OUT/tune-$T.log")"
  python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('pragma wal_checkpoint(TRUNCATE)')" /tmp/h200-$T.sqlite
  gzip -c /tmp/h200-$T.sqlite > "$OUT/h200-$T.sqlite.gz"
done
echo "done $SECONDS s"
