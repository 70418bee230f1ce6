# One device call (session 36, issue 11): what the `atransgrid` twins' time is made of. Every
# row-major best entry of DB (A: as stored), its `atransgrid` twin (B), and the same twin with
# NMTUNE_GRID_WAVE=1000000 (C: the first pass copies every strip, no copier blocks: the second
# entry, its tickets and counters without the copiers), `nmtune bench --db`, medians of 10,
# one process per side, m = 4096 and 256, sides alternated.
#   bash docs/results/v4.28/in-grid/ablation.sh tuning-db/h100.sqlite
set -u
db=$1
BIN=$PWD/.device/bin
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
python3 docs/results/v4.28/in-loop/twin_db.py "$db" /tmp/twin.sqlite transposedingrid atransgrid
for m in 4096 256; do
  for side in A B C; do
    side_db=/tmp/twin.sqlite; [ "$side" = A ] && side_db=$db
    wave=; [ "$side" = C ] && wave=1000000
    start=$SECONDS
    NMTUNE_GRID_WAVE=$wave timeout 280 "$BIN/nmtune" bench --db "$side_db" --m "$m" --a-layout row \
      --runs 10 --csv "$OUT/abl-$side-m$m.csv" > /dev/null 2> /tmp/err.txt
    echo "## m=$m side $side: rc=$? $((SECONDS - start)) s"; tail -3 /tmp/err.txt
  done
done
