#!/usr/bin/env bash
# Session 52, call 4 (H200): call 3 again with build y instead of x. Build y (HEAD + an
# experiment, not landed): each thread copies only the first half of its copy slots
# (i % PER_THREAD < (PER_THREAD + 1) / 2, a compile-time choice, so no instruction is
# added): at 32 kept rows a stage and one or four warpgroups, the first 16 kept rows of each
# group's stage; x's per-row test (row % 3) added instructions to every copy. Results wrong,
# times reported under NMTUNE_EXPERIMENT_UNVERIFIED. Main's build against y on main's BF16
# winners of the 40 m = 256, 8:32, L = 32 problems (scripts/device/ab-db.sh, medians of 10,
# two rounds).
# Carried: .dev/s52 (nmtune.gz = main's build, nmtune-y.gz, ab/m256.sqlite).
set -u
S=.dev/s52
B=/tmp/bin; mkdir -p $B
for f in nmtune nmtune-y; do gunzip -c "$S/$f.gz" > $B/$f; chmod +x $B/$f; done
export NMTUNE_EXPERIMENT_UNVERIFIED=1
A=$B/nmtune B=$B/nmtune-y WARM=1 bash scripts/device/ab-db.sh $S/ab/m256.sqlite 256 2
echo "done $SECONDS s"
