#!/usr/bin/env bash
# One device call that checks a build and re-tunes the committed 16-bit databases with it:
#   S=.dev/sNN bash scripts/device/retune-tc.sh
# $S holds nmtune.gz and gpu_tc.gz (the build: `cargo build --release`,
# `cargo test --release --test gpu_tc --no-run`) and $BASE (default $S) the databases to
# start from, h200-{bf16,f16}.sqlite.gz (gzip of tuning-db/'s). Carry $S.
#   1. tests/gpu_tc.rs of the build (every tensor-core configuration against the CPU
#      reference), unless GPU_TC=0; a failure ends the call;
#   2. the warm re-tune of the BF16 database, then the FP16 one, each until the call's
#      LIMIT (default 585 s of this script) runs out; each database comes back as
#      $OUT/h200-<type>.sqlite.gz, resumable: BASE=<folder they came back in> GPU_TC=0.
# Then, here: `nmtune tidy`, `export --out`, `report`, `check-replay`; commit templates, code
# and databases together (stale rows are ignored by the lookup).
set -u
S=${S:?the carried folder} BASE=${BASE:-$S} LIMIT=${LIMIT:-585}
export PATH=/usr/local/cuda/bin:$PATH NMTUNE_CACHE_DIR=/tmp/cubins
B=/tmp/bin; mkdir -p $B
for f in nmtune gpu_tc; do gunzip -c "$S/$f.gz" > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt"
if [ "${GPU_TC:-1}" = 1 ]; then
  timeout 200 $B/gpu_tc --nocapture --test-threads 1 > "$OUT/gpu_tc${TAG:-}.log" 2>&1
  tc_rc=$?
  echo "gpu_tc rc=$tc_rc $SECONDS s: $(grep -E 'products checked|^test result' "$OUT/gpu_tc${TAG:-}.log" | tr '\n' ' ')"
  [ "$tc_rc" = 0 ] || { tail -c 3000 "$OUT/gpu_tc${TAG:-}.log"; exit 1; }
fi
for T in bf16 f16; do
  left=$((LIMIT - SECONDS))
  [ "$left" -gt 30 ] || break
  gunzip -c "$BASE/h200-$T.sqlite.gz" > /tmp/h200-$T.sqlite
  timeout "$left" $B/nmtune --gpu auto --shapes shapes/llama.yaml --db /tmp/h200-$T.sqlite \
    --dtype $T --a-layout row,col --l 128,32 --strategy warm > "$OUT/tune-$T.log" 2>&1
  echo "tune $T rc=$? $SECONDS s: $(tail -1 "$OUT/tune-$T.log")"
  python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('pragma wal_checkpoint(TRUNCATE)')" /tmp/h200-$T.sqlite
  gzip -c /tmp/h200-$T.sqlite > "$OUT/h200-$T.sqlite.gz"
done
echo "done $SECONDS s"
