#!/usr/bin/env bash
# Session 59, fourth device call (H200), from the repository root, every large file parked:
#   S=.dev/s59d bash docs/results/cluster-sum/run4.sh
# $S holds nmtune.gz and llama_mlp.gz (this session's build with the runtime borrowing a
# cluster-summed split for another grid as its workspace twin, and row chunks of 12 and 16
# allowed), h200.sqlite.gz (call 2's database) and h200-decode.sqlite.gz (the committed one).
# 1. scripts/device/untuned-m.sh again (call 3 found Attn 8:32 at m = 700 at 70 %).
# 2. `nmtune bench` of the column-major 12:32 tile in row chunks of 12 (two a 24-row tile)
#    beside the unchunked and 8-row ones, and 16:32's 32-row tile in chunks of 16 beside 8
#    (ncu of call 3: the unchunked 12:32 tile stalls on instruction fetch, 0.25 a issue).
# 3. ncu of the 12:32 tile in chunks of 12.
set -u
OUT=${OUT:-/tmp/nmtune-out}; export OUT
S=$S bash scripts/device/unpack.sh
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bash scripts/device/session.sh time docs/results/cluster-sum/row-chunks.list | tail -1
echo "time: $SECONDS s"
bash scripts/device/session.sh ncu docs/results/cluster-sum/ncu-rc12.list | tail -1
echo "ncu: $SECONDS s"
timeout 320 bash scripts/device/untuned-m.sh > "$OUT/untuned-m.log" 2>&1
echo "untuned-m rc=$? $SECONDS s"
python3 scripts/untuned_m_summary.py "$OUT/untuned-m.log" > "$OUT/untuned-m-summary.txt" 2>&1
tail -3 "$OUT/untuned-m-summary.txt"
echo "end: $SECONDS s"
