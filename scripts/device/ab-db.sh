# A/B of nmtune builds on a tuning database's stored best kernels, in one call:
#   A=.device/bin/nmtune-a B=.device/bin/nmtune-b bash scripts/device/ab-db.sh DB M [ROUNDS]
# `nmtune bench --db DB --m M` with build A, then build B, ROUNDS times (default 2),
# alternating so that drift of the GPU falls on both; medians of 10 runs per kernel, cuBLAS
# beside every problem. Writes $OUT/ab-db-<side><round>-m<M>.csv; summarise with
# `python3 scripts/ab_db_summary.py $OUT/ab-db-*-m<M>.csv` (every build against A).
# Optional environment:
#   SIDES="A B C"    more builds, each named by the variable of its letter (C=..., default "A B");
#   DB_<side>=X      that build benches database X instead of DB (e.g. the same build on a copy
#                    whose winners were replaced by variants);
#   WARM=1           first one untimed pass of every build at once, so that compiling the
#                    kernels (into each build's own cache) is out of the timed rounds;
#   STOP_AFTER=S     start no round after S seconds of this script (a call's time limit).
set -u
db=$1 m=$2 rounds=${3:-2}
sides=${SIDES:-A B}
bench() {  # side, database, runs, extra arguments
  local side=$1 side_db=$2 runs=$3; shift 3
  NMTUNE_CACHE_DIR=/tmp/nmtune-cubins-$side timeout 300 "${!side}" bench --db "$side_db" --m "$m" \
    --runs "$runs" "$@"
}
side_db() { local var="DB_$1"; echo "${!var:-$db}"; }
if [ -n "${WARM:-}" ]; then
  for side in $sides; do
    bench "$side" "$(side_db "$side")" 1 > "$OUT/ab-db-warm-$side-m$m.txt" 2>&1 &
  done
  wait
  echo "## warm: $SECONDS s"
fi
for round in $(seq 1 "$rounds"); do
  if [ -n "${STOP_AFTER:-}" ] && [ "$SECONDS" -gt "$STOP_AFTER" ]; then
    echo "## round $round not started: $SECONDS s > STOP_AFTER=$STOP_AFTER"; break
  fi
  for side in $sides; do
    echo "## round $round build $side: ${!side} bench --db $(side_db "$side") --m $m"
    bench "$side" "$(side_db "$side")" 10 --csv "$OUT/ab-db-$side$round-m$m.csv" > /dev/null \
      2> "$OUT/ab-db-$side$round-m$m.err" \
      || { echo "build $side round $round failed:"; tail -5 "$OUT/ab-db-$side$round-m$m.err"; }
  done
done
