#!/usr/bin/env bash
# Issue 14, session 60, call 2: the committed winners of the n = 5120 decode problems (m = 1,
# L = 32 and L = 1) beside the 16-warp 64-column block split 2, 3 and 4 ways and two other
# splits of 16-warp blocks (call2/n5120.list), nmtune bench, medians of 10 beside cuBLAS.
#   S=.dev/s60 bash docs/results/decode-cluster/run-time.sh   ($OUT/time.txt)
set -eu
S=${S:-.dev/s60} bash scripts/device/unpack.sh
bash scripts/device/session.sh time docs/results/decode-cluster/call2/n5120.list
