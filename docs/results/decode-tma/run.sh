#!/usr/bin/env bash
# Issue 14, session 56, one device call (H200), from the repository root:
#   S=.dev/s56 bash docs/results/decode-tma/run.sh
# 1. tma.cu (its header says what it times), built with the device image's nvcc, into
#    $OUT/tma.txt and $OUT/tma-global.txt ($OUT/*-build.txt: ptxas's report);
# 2. unless SAMPLE=0: `--strategy sample --retune` of m1-l1-5120.yaml on a copy of
#    tuning-db/h200-decode.sqlite ($S/h200-decode.sqlite.gz) with the build in $S/nmtune.gz,
#    the database back as $OUT/h200-decode.sqlite.gz, the log as $OUT/tune-sample.log.
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/env.txt"
# tma: the tensor maps as kernel parameters; tma-global: in global memory (-DTMA_GLOBAL_MAPS).
# With SANITIZE=1, compute-sanitizer runs the first first (it stops at the first fault).
for v in ${VARIANTS:-tma-global tma}; do
  flags=""; [ "$v" = tma-global ] && flags=-DTMA_GLOBAL_MAPS
  if nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v $flags -I"$here/../decode-balanced" \
      -I"$here/../v4.16/decode-stream" "$here/tma.cu" -o /tmp/$v > "$OUT/$v-build.txt" 2>&1; then
    if [ "${SANITIZE:-0}" = 1 ]; then
      timeout 120 compute-sanitizer --print-limit 4 /tmp/$v > "$OUT/$v-sanitize.txt" 2>&1
      echo "$v sanitize rc=$? $SECONDS s"
    fi
    cp "$OUT/env.txt" "$OUT/$v.txt"
    timeout ${TMA_LIMIT:-150} /tmp/$v >> "$OUT/$v.txt" 2>&1 || echo "$v: exit $?" >> "$OUT/$v.txt"
    echo "$v done $SECONDS s"
  else
    tail -20 "$OUT/$v-build.txt"
  fi
done
# 1b. with NCU=1: the L2 promotions (TMA_PROMO 0 and 128 beside the default 256) of the
#     first build, then ncu of the 13824-wide control's winner and two tensor-copy kernels
#     (TMA_NCU), into $OUT/tma-promo-*.txt and $OUT/tma-ncu.txt.
if [ "${NCU:-0}" = 1 ]; then
  v=${VARIANTS%% *}; v=${v:-tma}
  for p in 0 128; do
    TMA_PROMO=$p timeout 150 /tmp/$v > "$OUT/tma-promo-$p.txt" 2>&1; echo "promo $p rc=$? $SECONDS s"
  done
  for k in 'drow' 'tma_gemv<64' 'tma_gemv<32'; do
    TMA_NCU=1 timeout 120 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis \
      --section SchedulerStats --section WarpStateStats --section Occupancy \
      --kernel-name-base demangled -k "regex:$k" --launch-skip 5 --launch-count 1 /tmp/$v \
      >> "$OUT/tma-ncu.txt" 2>&1
    echo "ncu $k rc=$? $SECONDS s"
  done
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
