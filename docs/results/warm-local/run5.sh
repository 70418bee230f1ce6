#!/usr/bin/env bash
# Session 58, fifth device call (H200), from the repository root:
#   S=.dev/s58 bash docs/results/warm-local/run5.sh
# $S holds nmtune.gz (this build: a neighbour whose tile runs only chunked keeps its own row
# chunk where the winner's does not fit, so the winners that chunk nothing reach the longer
# tiles of call 4's build) and h200.sqlite.gz (call 4's database); local-warm.sh says what
# runs.
LOCAL_FILES="m4096-col12-all.yaml m256-col.yaml" LOCAL_LIMIT=170 LOCAL_BUDGET=440 \
  WARM_LIMIT=150 WARM_END=470 exec bash "$(dirname "$0")/local-warm.sh"
