#!/usr/bin/env bash
# Session 58, sixth device call (H200), from the repository root, with every large file
# parked (scripts/device/park.sh) and $S holding gzipped copies of tuning-db/h200.sqlite,
# tuning-db/h200-decode.sqlite and this build's examples/llama_mlp:
#   S=.dev/s58c bash docs/results/warm-local/run6.sh
# scripts/device/untuned-m.sh (issue 14's every-m line) with the re-tuned prefill database:
# the runtime at untuned m borrows its neighbours' kernels, now the layout twins' and local
# winners among them. $OUT/untuned-m.log and its summary.
set -u
OUT=${OUT:-/tmp/nmtune-out}; export OUT
S=$S bash scripts/device/unpack.sh
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
timeout 250 bash scripts/device/untuned-m.sh > "$OUT/untuned-m.log" 2>&1
echo "untuned-m rc=$? $SECONDS s"
python3 scripts/untuned_m_summary.py "$OUT/untuned-m.log" > "$OUT/untuned-m-summary.txt" 2>&1
tail -5 "$OUT/untuned-m-summary.txt"
