#!/usr/bin/env bash
# Session 51, call 3 (H200): are build s's column-major kernels slower than main's, or was it
# the GPU? Against session 50's database, call 1's re-tune (build q, now main) put
# column-major kernel times 2 % above it at L = 32 and 1 % below at L = 128; call 2's
# (build s) 2–3 % above at both, with cuBLAS within 1.5 % in all.
# A/B (scripts/device/ab-db.sh) on main's BF16 database's column-major winners at m = 256
# and 4096, L = 32 and 128: A = main's build (q, the winners' own), B = build s (call 2's);
# medians of 10, one round per m.
# Carried: .dev/s51 (nmtune.gz = build s, nmtune-main.gz, ab/col.sqlite).
set -u
S=.dev/s51
B=/tmp/bin; mkdir -p $B /tmp/ab
for f in nmtune nmtune-main; do gunzip -c "$S/$f.gz" > $B/$f; chmod +x $B/$f; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/env.txt"
pack() { tar czf "$OUT/ab.tgz" -C /tmp/ab .; }
for m in 256 4096; do
  OUT=/tmp/ab A=$B/nmtune-main B=$B/nmtune WARM=1 bash scripts/device/ab-db.sh $S/ab/col.sqlite $m 1
  echo "m = $m done: $SECONDS s"
  pack
done
echo "done $SECONDS s"
