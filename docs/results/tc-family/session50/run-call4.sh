#!/usr/bin/env bash
# Session 50's fourth device call: three builds (v, q, s below) on the re-tuned row-major BF16 winners
# (ab3.sqlite: m = 256 at L = 32 and 128, m = 4096 at L = 128), medians of 10, two rounds:
#   v  HEAD (40f9ebd);
#   (p  the main kernel as the transposing pass's programmatic dependent, the pass letting it
#      launch at once: patches/pdl.patch, timed in call 3;)
#   q  p with the pass letting it launch only after the pass's own stores (pdl-late.patch);
#   s  p with the dependent's shared memory padded so that an SM holds no more of its blocks
#      than its configuration's blocks an SM (pdl-pad.patch).
# Each patch is whole, against 40f9ebd.
# One archive: $OUT/results.tgz.
set -u
S=${S:-.dev/s50}
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r; mkdir -p "$R"
B=/tmp/bin; mkdir -p $B
builds="v q s"  # p was timed in call 3; the budget left held three builds
for x in $builds; do gunzip -c "$S/nmtune-$x.gz" > $B/nmtune-$x; chmod +x $B/nmtune-$x; done
gunzip -c "$S/ab3.sqlite.gz" > /tmp/ab3.sqlite
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/env.txt"
pack() { tar czf "$OUT/results.tgz" -C "$R" .; }
for x in $builds; do
  ( for m in 256 4096; do
      NMTUNE_CACHE_DIR=/tmp/cubins-$x timeout 150 $B/nmtune-$x bench --db /tmp/ab3.sqlite --m $m \
        --runs 1 > "$R/warm-$x-m$m.txt" 2>&1
    done ) &
done
wait; echo "warm: $SECONDS s"
for round in 1 2; do
  for x in $builds; do
    for m in 256 4096; do
      NMTUNE_CACHE_DIR=/tmp/cubins-$x timeout 100 $B/nmtune-$x bench --db /tmp/ab3.sqlite --m $m \
        --runs 10 --csv "$R/ab-$x$round-m$m.csv" > /dev/null 2> "$R/ab-$x$round-m$m.err"
    done
  done
  echo "round $round: $SECONDS s"; pack
  [ $SECONDS -gt 250 ] && break
done
pack; echo "done $SECONDS s"
