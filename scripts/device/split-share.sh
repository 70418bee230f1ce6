#!/usr/bin/env bash
# How much of a split-K winner's time is its reduction kernel: ncu's gpu__time_duration of
# every nm_spmm launch (main kernel, `_reduce`, `_transpose`) of `nmtune bench` on each line of
# LIST ("M N K N:M LAYOUT KERNEL"), clocks left as they are.
#   BIN=.device/bin bash scripts/device/split-share.sh LIST > $OUT/split-share.txt
#   python3 scripts/split_share_summary.py $OUT/split-share.txt
B=${BIN:-.device/bin}
while read -r m n k nm layout kernel; do
  [ -z "$kernel" ] && continue
  echo "#### $kernel at m=$m n=$n k=$k $nm $layout"
  timeout 120 ncu --clock-control none -k regex:nm_spmm --launch-count 12 \
    --metrics gpu__time_duration.sum "$B/nmtune" bench --m "$m" --n "$n" --k "$k" --nm "$nm" \
    --a-layout "$layout" --kernels "$kernel" --runs 3 2>&1 | grep -E '^  nm_spmm|gpu__time_duration'
done < "$1"
