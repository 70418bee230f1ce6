#!/usr/bin/env bash
# Prepared in session 49 for session 50: tuning-db/h200-$T.sqlite (T = bf16 or f16) re-tuned
# with the build that has patches/unroll.patch applied, --strategy warm over shapes/llama.yaml
# (both A layouts, L = 128 and 32), stopped at $TUNE_S seconds (resumable: run it again with
# the database it sent back), tidied, back as $OUT/h200-$T.sqlite.gz; then, when $GPU_TC is
# set, the tensor-core GPU tests of that build. Carried folder $S holds nmtune.gz,
# h200-$T.sqlite.gz and (for GPU_TC) gpu_tc.gz.
set -u
S=${S:-.dev/s50}; T=${T:?bf16 or f16}
export PATH=/usr/local/cuda/bin:$PATH
B=/tmp/bin; mkdir -p $B
gunzip -c "$S/nmtune.gz" > $B/nmtune; chmod +x $B/nmtune
gunzip -c "$S/h200-$T.sqlite.gz" > /tmp/h200-$T.sqlite
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt"
timeout "${TUNE_S:-400}" $B/nmtune --gpu auto --shapes shapes/llama.yaml --db /tmp/h200-$T.sqlite --dtype $T \
  --a-layout row,col --l 128,32 --strategy warm > "$OUT/tune-$T.log" 2>&1
echo "tune rc=$? $SECONDS s: $(tail -1 "$OUT/tune-$T.log")"
$B/nmtune tidy --db /tmp/h200-$T.sqlite >> "$OUT/tune-$T.log" 2>&1
python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('pragma wal_checkpoint(TRUNCATE)')" /tmp/h200-$T.sqlite
gzip -c /tmp/h200-$T.sqlite > "$OUT/h200-$T.sqlite.gz"
if [ -n "${GPU_TC:-}" ]; then
  gunzip -c "$S/gpu_tc.gz" > $B/gpu_tc; chmod +x $B/gpu_tc
  timeout 150 $B/gpu_tc --nocapture --test-threads 1 > "$OUT/gpu_tc-test.log" 2>&1
  echo "gpu_tc rc=$? $(grep -E 'products checked|^test result' "$OUT/gpu_tc-test.log" | tr '\n' ' ')"
fi
echo "done $SECONDS s"
