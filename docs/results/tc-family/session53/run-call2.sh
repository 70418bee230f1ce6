#!/usr/bin/env bash
# Session 53, call 2 (H200): build e (branch s53-early-l32: at L = 32 row-major A's
# transposing pass lets the main kernel launch at its start, `griddepcontrol.launch_dependents`
# first; at L = 128 at its end, as main) against main on main's BF16 winners of every
# row-major L = 32 problem at m = 256 and m = 4096 (scripts/device/ab-db.sh, medians of 10
# beside cuBLAS BF16, two rounds; results verified against cuBLAS as always).
# Carried: .dev/s53 (nmtune.gz = main, nmtune-e.gz, ab/l32row.sqlite: the committed BF16
# database with only the best entries of row-major L = 32 at m = 256 and 4096).
set -u
S=${S:-.dev/s53}
B=/tmp/bin; mkdir -p $B
for f in nmtune nmtune-e; do gunzip -c "$S/$f.gz" > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt"
for m in 256 4096; do
  A=$B/nmtune B=$B/nmtune-e WARM=1 STOP_AFTER=400 bash scripts/device/ab-db.sh $S/ab/l32row.sqlite $m 2
  echo "m$m: $SECONDS s"
done
