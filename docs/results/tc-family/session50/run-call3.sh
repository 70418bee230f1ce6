#!/usr/bin/env bash
# Session 50's third device call: build p (the main kernel of a row-major configuration
# launched as the transposing pass's programmatic dependent; its first B' copies and the
# first stages' kept rows before `griddepcontrol.wait`) against build v (HEAD, 40f9ebd) on
# the re-tuned BF16 winners (ab2.sqlite: row-major m = 256 at L = 32 and 128, row-major
# m = 4096 at L = 128, column-major m = 256 at L = 32 and 128), medians of 10, two rounds;
# then tests/gpu_tc.rs of build p. One archive: $OUT/results.tgz.
set -u
S=${S:-.dev/s50}
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r; mkdir -p "$R"
B=/tmp/bin; mkdir -p $B
for x in nmtune-v nmtune-p gpu_tc-p; do gunzip -c "$S/$x.gz" > $B/$x; chmod +x $B/$x; done
gunzip -c "$S/ab2.sqlite.gz" > /tmp/ab2.sqlite
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/env.txt"
pack() { tar czf "$OUT/results.tgz" -C "$R" .; }
for x in v p; do
  ( for m in 256 4096; do
      NMTUNE_CACHE_DIR=/tmp/cubins-$x timeout 150 $B/nmtune-$x bench --db /tmp/ab2.sqlite --m $m \
        --runs 1 > "$R/warm-$x-m$m.txt" 2>&1
    done ) &
done
wait; echo "warm: $SECONDS s"
for round in 1 2; do
  for x in v p; do
    for m in 256 4096; do
      NMTUNE_CACHE_DIR=/tmp/cubins-$x timeout 100 $B/nmtune-$x bench --db /tmp/ab2.sqlite --m $m \
        --runs 10 --csv "$R/ab-$x$round-m$m.csv" > /dev/null 2> "$R/ab-$x$round-m$m.err"
    done
  done
  echo "round $round: $SECONDS s"; pack
  [ $SECONDS -gt 330 ] && break
done
NMTUNE_CACHE_DIR=/tmp/cubins-gpu timeout 100 $B/gpu_tc-p --nocapture --test-threads 1 > "$R/gpu_tc-p.log" 2>&1
echo "gpu_tc p rc=$? $(grep -E 'products checked|^test result' "$R/gpu_tc-p.log" | tr '\n' ' ') $SECONDS s"
pack; echo "done $SECONDS s"
