#!/usr/bin/env bash
# Session 58, fourth device call (H200), from the repository root:
#   S=.dev/s58 bash docs/results/warm-local/run4.sh
# $S holds nmtune.gz (this build: a tile whose rows are chunked may be longer than a whole
# unrolled one, so k_s = 128 at 12:32 with 16 × 8 thread tiles; reverted after call 5) and
# h200.sqlite.gz (call 3's database); local-warm.sh says what runs.
LOCAL_FILES="m4096-col12-all.yaml m256-col.yaml" LOCAL_LIMIT=150 LOCAL_BUDGET=575 \
  WARM_LIMIT=200 WARM_END=580 exec bash "$(dirname "$0")/local-warm.sh"
