#!/usr/bin/env bash
# Decode blocks of 8 and 16 rows (branch decode-rows, build D) against the committed decode
# database's entries (build A = main) at m = 8 and 16 on the three Llama-7B shapes.
B=.device/bin
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
for m in 8 16; do
  for shape in "11008 4096" "4096 11008" "4096 4096"; do
    set -- $shape
    for s in 16:32 4:32; do
      echo "### D pruned m=$m n=$1 k=$2 $s"
      timeout 60 $B/nmtune-d bench --m $m --n $1 --k $2 --nm $s --strategy pruned --runs 10 2>&1 | grep -v '^problem'
    done
  done
  echo "### A db m=$m"
  timeout 120 $B/nmtune-a bench --db tuning-db/h100-decode.sqlite --m $m --runs 10 2>&1
done
