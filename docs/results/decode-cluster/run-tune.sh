#!/usr/bin/env bash
# Issue 14, session 60, calls 3 and 4: shapes/decode.yaml re-searched with the pruned
# strategy on the H200, timing only the candidates the database had never timed (among them
# the decode seeds' shared split factors, tuner::search::with_shared_splits). Call 3 stopped
# at its 500 s limit with 468 of the 800 problems done; call 4 resumed from its database.
#   S=.dev/s60 bash scripts/device/unpack.sh   (nmtune.gz, h200-decode.sqlite.gz)
#   CALL_BUDGET=580 TUNE_LIMIT=530 TUNE_ARGS="--retune" \
#     bash scripts/device/session.sh tune shapes/decode.yaml tuning-db/h200-decode.sqlite
# Here: nmtune tidy, report, export, then
#   nmtune report --db tuning-db/h200-decode.sqlite --format csv | python3 scripts/decode_targets.py
set -eu
S=${S:-.dev/s60} bash scripts/device/unpack.sh
CALL_BUDGET=${CALL_BUDGET:-580} TUNE_LIMIT=${TUNE_LIMIT:-530} TUNE_ARGS="--retune" \
  bash scripts/device/session.sh tune shapes/decode.yaml tuning-db/h200-decode.sqlite
