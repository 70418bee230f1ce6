#!/usr/bin/env bash
# Issue 14, session 56, one device call (H200), from the repository root:
#   S=.dev/s56 bash docs/results/decode-tma/run.sh
# 1. tma.cu (its header says what it times), built with the device image's nvcc, into
#    $OUT/tma.txt ($OUT/tma-build.txt: ptxas's report);
# 2. unless SAMPLE=0: `--strategy sample --retune` of m1-l1-5120.yaml on a copy of
#    tuning-db/h200-decode.sqlite ($S/h200-decode.sqlite.gz) with the build in $S/nmtune.gz,
#    the database back as $OUT/h200-decode.sqlite.gz, the log as $OUT/tune-sample.log.
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/env.txt"
if nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v -I"$here/../decode-balanced" \
    -I"$here/../v4.16/decode-stream" "$here/tma.cu" -o /tmp/tma > "$OUT/tma-build.txt" 2>&1; then
  cp "$OUT/env.txt" "$OUT/tma.txt"
  timeout ${TMA_LIMIT:-240} /tmp/tma >> "$OUT/tma.txt" 2>&1 || echo "tma: exit $?" >> "$OUT/tma.txt"
  echo "tma done $SECONDS s"
else
  tail -20 "$OUT/tma-build.txt"
fi
[ "${SAMPLE:-1}" = 1 ] || exit 0
gunzip -c "$S/nmtune.gz" > /tmp/nmtune && chmod +x /tmp/nmtune
db=/tmp/h200-decode.sqlite
gunzip -c "$S/h200-decode.sqlite.gz" > $db
export NMTUNE_CACHE_DIR=/tmp/cubins
timeout $((${LIMIT:-570} - SECONDS)) /tmp/nmtune --gpu h200 --shapes "$here/m1-l1-5120.yaml" \
  --db $db --strategy sample --retune > "$OUT/tune-sample.log" 2>&1
echo "sample rc=$? $SECONDS s: $(tail -1 "$OUT/tune-sample.log")"
python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('pragma wal_checkpoint(TRUNCATE)')" $db
gzip -c $db > "$OUT/h200-decode.sqlite.gz"
echo "done $SECONDS s"
