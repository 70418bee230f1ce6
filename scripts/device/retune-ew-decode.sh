#!/usr/bin/env bash
# One device call that checks a build's element-wise kernels and re-tunes the element-wise
# decode problems (L = 1) of a decode database with it:
#   S=.dev/sNN GPU_NAME=h200 bash scripts/device/retune-ew-decode.sh
# $S holds nmtune.gz and gpu.gz (the build: `cargo build --release`,
# `cargo test --release --test gpu --no-run`) and $BASE (default $S) the database to start
# from, $GPU_NAME-decode.sqlite.gz (gzip of tuning-db/'s). Carry $S.
#   1. tests/gpu.rs's element-wise test of the build (both element-wise families, every
#      gather of A, against the CPU reference), unless GPU_TEST=0; a failure ends the call;
#   2. `--strategy warm --retune --l 1` over shapes/decode.yaml on that database, until the
#      call's LIMIT (default 585 s of this script) runs out; the database comes back as
#      $OUT/$GPU_NAME-decode.sqlite.gz, resumable: BASE=<folder it came back in> GPU_TEST=0.
# Then, here: `nmtune tidy`, `export --out`, `report`, `check-replay`; commit code and
# database together.
set -u
S=${S:?the carried folder} BASE=${BASE:-$S} LIMIT=${LIMIT:-585} GPU_NAME=${GPU_NAME:-h200}
export PATH=/usr/local/cuda/bin:$PATH NMTUNE_CACHE_DIR=/tmp/cubins
B=/tmp/bin; mkdir -p $B
for f in nmtune gpu; do gunzip -c "$S/$f.gz" > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt"
if [ "${GPU_TEST:-1}" = 1 ]; then
  timeout 240 $B/gpu --exact the_element_wise_family_matches_the_cpu_reference --nocapture \
    > "$OUT/gpu-ew${TAG:-}.log" 2>&1
  rc=$?
  echo "gpu ew rc=$rc $SECONDS s: $(grep -E 'pairs checked|^test result' "$OUT/gpu-ew${TAG:-}.log" | tr '\n' ' ')"
  [ "$rc" = 0 ] || { tail -c 3000 "$OUT/gpu-ew${TAG:-}.log"; exit 1; }
fi
db=/tmp/$GPU_NAME-decode.sqlite
gunzip -c "$BASE/$GPU_NAME-decode.sqlite.gz" > $db
left=$((LIMIT - SECONDS))
timeout "$left" $B/nmtune --gpu $GPU_NAME --shapes shapes/decode.yaml --db $db --l 1 \
  --strategy warm --retune > "$OUT/tune-ew-decode${TAG:-}.log" 2>&1
echo "tune rc=$? $SECONDS s: $(tail -1 "$OUT/tune-ew-decode${TAG:-}.log")"
python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('pragma wal_checkpoint(TRUNCATE)')" $db
gzip -c $db > "$OUT/$GPU_NAME-decode.sqlite.gz"
echo "done $SECONDS s"
