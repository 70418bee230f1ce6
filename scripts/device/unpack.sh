#!/usr/bin/env bash
# The start of a device call (the device tool), from the repository root there:
#   S=DIR bash scripts/device/unpack.sh
# unpacks what this machine carried gzipped in $S: every NAME.sqlite.gz into
# tuning-db/NAME.sqlite, every other NAME.gz (a binary: nmtune, the `gpu` test binary, the
# llama_mlp example) into .device/bin/NAME; and appends the GPU's name, driver and clock to
# $OUT/env.txt.
set -eu
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT" .device/bin
for gz in "$S"/*.gz; do
  name=$(basename "$gz" .gz)
  case $name in
    *.sqlite) gunzip -c "$gz" > "tuning-db/$name" ;;
    *) gunzip -c "$gz" > ".device/bin/$name" && chmod +x ".device/bin/$name" ;;
  esac
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$OUT/env.txt"
