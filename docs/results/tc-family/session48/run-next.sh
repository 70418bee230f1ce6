#!/usr/bin/env bash
# Prepared in session 48 for session 49 (not run yet): one device call that times the two
# prepared variants against HEAD on the stored m = 4096, column-major, L = 128 BF16 winners.
# Run from the repository root on the device, with an ignored folder carried (here .dev/s49)
# that holds:
#   nmtune-a.gz   HEAD's release build
#   nmtune-b.gz   the build with patches/addr-ahead.patch applied
#   nmtune-c.gz   the build with patches/persist3.patch applied
#   ab.sqlite.gz  tuning-db/h200-bf16.sqlite with only those problems' best rows:
#                 sqlite3 ab.sqlite "delete from best where problem_id not in (select id from
#                 problems where m = 4096 and a_layout = 'col' and l = 128); vacuum;"
# Everything goes into one archive, $OUT/results.tgz: the device tool brings back eight files
# at most, and session 48 lost a build's timings to that.
set -u
S=${S:-.dev/s49}
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r; mkdir -p "$R"
B=/tmp/bin; mkdir -p $B
for x in a b c; do gunzip -c "$S/nmtune-$x.gz" > $B/nmtune-$x; chmod +x $B/nmtune-$x; done
gunzip -c "$S/ab.sqlite.gz" > /tmp/ab.sqlite
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/env.txt"
# Compile every build's kernels first, in parallel (one untimed pass each).
for x in a b c; do
  NMTUNE_CACHE_DIR=/tmp/cubins-$x timeout 200 $B/nmtune-$x bench --db /tmp/ab.sqlite --m 4096 --runs 1 \
    > "$R/warm-$x.txt" 2>&1 &
done
wait
pack() { tar czf "$OUT/results.tgz" -C "$R" .; }
bench() { # build, file tag, extra environment
  env $3 NMTUNE_CACHE_DIR=/tmp/cubins-$1 timeout 120 $B/nmtune-$1 bench --db /tmp/ab.sqlite --m 4096 --runs 10 \
    --csv "$R/ab-$2.csv" > /dev/null 2> "$R/ab-$2.err"
}
for round in 1 2; do
  bench a a$round ""
  bench b b$round ""
  bench c c$round ""
  # The persistent build with one tile a block: its code alone, against a's.
  bench c c-tiles$round NMTUNE_EXP_GRID=tiles
  echo "round $round: $SECONDS s"; pack
done
