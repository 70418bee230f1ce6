#!/usr/bin/env bash
# Session 58, third device call (H200), from the repository root:
#   S=.dev/s58 bash docs/results/warm-local/run3.sh
# $S holds nmtune.gz (this build: the local strategy) and h200.sqlite.gz (call 2's database);
# local-warm.sh says what runs.
LOCAL_FILES="m256-col.yaml m4096-col12-all.yaml" LOCAL_LIMIT=220 LOCAL_BUDGET=575 \
  WARM_LIMIT=500 WARM_END=580 exec bash "$(dirname "$0")/local-warm.sh"
