# A/B of two nmtune builds on a tuning database's stored best kernels, in one call:
#   A=.device/bin/nmtune-a B=.device/bin/nmtune-b bash scripts/device/ab-db.sh DB M [ROUNDS]
# `nmtune bench --db DB --m M` with build A, then build B, ROUNDS times (default 2),
# (DB_B=OTHER.sqlite: build B benches that database instead, e.g. the same build on a copy
# whose winners were replaced by variants),
# alternating so that drift of the GPU falls on both; medians of 10 runs per kernel, cuBLAS
# SGEMM beside every problem. Writes $OUT/ab-db-<side><round>-m<M>.csv; summarise with
# `python3 scripts/ab_db_summary.py $OUT/ab-db-*-m<M>.csv`.
set -u
db=$1 m=$2 rounds=${3:-2}
for round in $(seq 1 "$rounds"); do
  for side in A B; do
    side_db=$db; [ "$side" = B ] && side_db=${DB_B:-$db}
    echo "## round $round build $side: ${!side} bench --db $side_db --m $m"
    NMTUNE_CACHE_DIR=/tmp/nmtune-cubins-$side timeout 300 "${!side}" bench --db "$side_db" --m "$m" \
      --runs 10 --csv "$OUT/ab-db-$side$round-m$m.csv" > /dev/null 2> "$OUT/ab-db-$side$round-m$m.err" \
      || { echo "build $side round $round failed:"; tail -5 "$OUT/ab-db-$side$round-m$m.err"; }
  done
done
