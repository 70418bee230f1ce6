#!/usr/bin/env bash
# Session 49's sixth device call: tuning-db/h200-bf16.sqlite re-tuned with build e (HEAD +
# patches/unroll.patch), --strategy warm over shapes/llama.yaml (both layouts, L = 128 and 32),
# stopped at $TUNE_S seconds (resumable), tidied, back as $OUT/h200-bf16.sqlite.gz.
set -u
S=${S:-.dev/s49}
export PATH=/usr/local/cuda/bin:$PATH
B=/tmp/bin; mkdir -p $B
gunzip -c "$S/nmtune-e.gz" > $B/nmtune; chmod +x $B/nmtune
gunzip -c "$S/h200-bf16.sqlite.gz" > /tmp/h200-bf16.sqlite
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt"
timeout "${TUNE_S:-190}" $B/nmtune --gpu auto --shapes shapes/llama.yaml --db /tmp/h200-bf16.sqlite --dtype bf16 \
  --a-layout row,col --l 128,32 --strategy warm > "$OUT/tune-bf16.log" 2>&1
echo "tune rc=$? $SECONDS s: $(tail -1 "$OUT/tune-bf16.log")"
$B/nmtune tidy --db /tmp/h200-bf16.sqlite >> "$OUT/tune-bf16.log" 2>&1
python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('pragma wal_checkpoint(TRUNCATE)')" /tmp/h200-bf16.sqlite
gzip -c /tmp/h200-bf16.sqlite > "$OUT/h200-bf16.sqlite.gz"
echo "done $SECONDS s"
