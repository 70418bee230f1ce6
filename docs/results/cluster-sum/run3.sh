#!/usr/bin/env bash
# Session 59, third device call (H200), from the repository root, every large file parked:
#   S=.dev/s59c bash docs/results/cluster-sum/run3.sh
# $S holds nmtune.gz and llama_mlp.gz (this session's build), h200.sqlite.gz (call 2's
# database) and h200-decode.sqlite.gz (the committed one).
# 1. scripts/device/untuned-m.sh (issue 14's every-m line): the runtime at untuned m borrows
#    its neighbours' kernels, cluster-summed splits among them.
# 2. ncu of the column-major 12:32 winner's tile at 4096³ (unchunked and chunked by 8) beside
#    the 16:32 winner's (chunked by 8): issue, warp states, stall reasons.
set -u
OUT=${OUT:-/tmp/nmtune-out}; export OUT
S=$S bash scripts/device/unpack.sh
export PATH=/usr/local/cuda/bin:$PATH LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
timeout 320 bash scripts/device/untuned-m.sh > "$OUT/untuned-m.log" 2>&1
echo "untuned-m rc=$? $SECONDS s"
python3 scripts/untuned_m_summary.py "$OUT/untuned-m.log" > "$OUT/untuned-m-summary.txt" 2>&1
tail -5 "$OUT/untuned-m-summary.txt"
bash scripts/device/session.sh ncu docs/results/cluster-sum/ncu-12-16.list | tail -1
echo "end: $SECONDS s"
