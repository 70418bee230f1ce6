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
mkdir -p "$OUT" .device/bin
gunzip -c "$S/llama_mlp.gz" > .device/bin/llama_mlp && chmod +x .device/bin/llama_mlp
for db in h200 h200-decode; do gunzip -c "$S/$db.sqlite.gz" > tuning-db/$db.sqlite; done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$OUT/env.txt"
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
timeout 250 bash scripts/device/untuned-m.sh > "$OUT/untuned-m.log" 2>&1
echo "untuned-m rc=$? $SECONDS s"
python3 scripts/untuned_m_summary.py "$OUT/untuned-m.log" > "$OUT/untuned-m-summary.txt" 2>&1
tail -5 "$OUT/untuned-m-summary.txt"
