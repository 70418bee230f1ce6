#!/usr/bin/env bash
# Session 52, call 3 (H200): what a third fewer copies of A would give at L = 32. Build x
# (HEAD + an experiment, not landed: each stage copies the kept rows r with r % 3 != 2
# only, 22 of 32, about the 21.9 that the union of a 128-column block's four groups' kept
# rows a window is at 8:32; results wrong, times reported anyway under
# NMTUNE_EXPERIMENT_UNVERIFIED) against main's build, on main's BF16 winners of the 40
# m = 256, 8:32, L = 32 problems (scripts/device/ab-db.sh, medians of 10, two rounds).
# Carried: .dev/s52 (nmtune.gz = main's build, nmtune-x.gz, ab/m256.sqlite: the committed
# database with only those 40 best entries).
set -u
S=.dev/s52
B=/tmp/bin; mkdir -p $B
for f in nmtune nmtune-x; do gunzip -c "$S/$f.gz" > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt"
export NMTUNE_EXPERIMENT_UNVERIFIED=1
A=$B/nmtune B=$B/nmtune-x WARM=1 bash scripts/device/ab-db.sh $S/ab/m256.sqlite 256 2
tar czf "$OUT/ab.tgz" -C "$OUT" --exclude ab.tgz .
echo "done $SECONDS s"
