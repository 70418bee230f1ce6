#!/usr/bin/env bash
# What split-K costs a small problem (issue 11, m = 256): each listed kernel timed at every
# split factor (`nmtune bench`, medians of 20), then ncu's duration of every kernel one bench
# launch runs (the main kernel and its reduction apart), then the `sample` strategy's
# candidates for the same problem, for the first SAMPLE_MAX (2) lines (is there a faster
# kernel the search does not reach?).
#   bash scripts/device/split-cost.sh LIST > $OUT/split-cost.txt
# LIST: lines "m n k N:M layout kernel" (kernel with any _skN; the factor is replaced).
B=${BIN:-.device/bin}
export NMTUNE_CACHE_DIR=${NMTUNE_CACHE_DIR:-/tmp/nmtune-cubins}
while read -r m n k nm layout kernel; do
  [ -z "$kernel" ] && continue
  args=(--m "$m" --n "$n" --k "$k" --nm "$nm" --a-layout "$layout")
  echo "### splits of $kernel at ${m}x${n}x${k} $nm $layout"
  for s in 1 2 3 4 6 8; do   # one process each: a factor invalid for k fails alone
    timeout 60 "$B/nmtune" bench "${args[@]}" --kernels "$(sed -E "s/_sk[0-9]+/_sk$s/" <<< "$kernel")" \
      --runs 20 2>&1 < /dev/null | grep -E 'nm_spmm|error'
  done
  echo "### ncu durations, $kernel"
  timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum \
    "$B/nmtune" bench "${args[@]}" --kernels "$kernel" --runs 3 2>&1 < /dev/null |
    grep -E '^  [a-zA-Z_].*\(|gpu__time_duration' | sed -E 's/\(.*//' | tail -24
  samples=$((${samples:-0} + 1))
  [ "$samples" -gt "${SAMPLE_MAX:-2}" ] && continue
  echo "### sample strategy at ${m}x${n}x${k} $nm $layout"
  timeout 150 "$B/nmtune" bench "${args[@]}" --strategy sample --runs 10 --csv "$OUT/sample-${m}x${n}x${k}-${nm/:/_}-$layout.csv" 2>&1 < /dev/null | tail -4
done < "$1"
