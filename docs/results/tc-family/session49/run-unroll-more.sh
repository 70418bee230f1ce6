#!/usr/bin/env bash
# Session 49's last device call: the unrolled loop (build e) against HEAD (a) on two more
# sets of stored winners: FP16 at m = 4096 and BF16 at m = 256 (column-major, L = 128; a copy
# of each database with only those best rows). One round, medians of 10.
set -u
S=${S:-.dev/s49}
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r; mkdir -p "$R"
B=/tmp/bin; mkdir -p $B
for x in a e; do gunzip -c "$S/nmtune-$x.gz" > $B/nmtune-$x; chmod +x $B/nmtune-$x; done
for d in abf16 ab256; do gunzip -c "$S/$d.sqlite.gz" > /tmp/$d.sqlite; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/env.txt"
pack() { tar czf "$OUT/results.tgz" -C "$R" .; }
for x in a e; do
  for d in abf16:4096 ab256:256; do
    NMTUNE_CACHE_DIR=/tmp/cubins-$x timeout 100 $B/nmtune-$x bench --db /tmp/${d%%:*}.sqlite --m ${d#*:} --runs 1 \
      > "$R/warm-$x-${d%%:*}.txt" 2>&1 &
  done
done
wait
for x in a e; do
  for d in abf16:4096 ab256:256; do
    NMTUNE_CACHE_DIR=/tmp/cubins-$x timeout 60 $B/nmtune-$x bench --db /tmp/${d%%:*}.sqlite --m ${d#*:} --runs 10 \
      --csv "$R/${d%%:*}-$x.csv" > /dev/null 2> "$R/${d%%:*}-$x.err"
  done
  echo "$x: $SECONDS s"; pack
done
