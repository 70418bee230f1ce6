# One device call (session 36, issue 11): a copy path's GPU test, then every stored row-major
# best entry of DB (A) beside a copy whose `atrans` winners are replaced by their twins on
# that path (B, twin_db.py), `nmtune bench --db`, medians of 10, same build, alternated:
# m = 4096 two rounds, m = 256 one.
#   bash docs/results/v4.28/in-loop/ab.sh tuning-db/h100.sqlite      (atransloop)
#   bash docs/results/v4.28/in-loop/ab.sh tuning-db/h100.sqlite the_in_grid_copy transposedingrid atransgrid
set -u
db=$1 test=${2:-the_in_loop_copy}
shift $(( $# < 2 ? $# : 2 ))
BIN=$PWD/.device/bin
export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
cat "$OUT/env.txt"
timeout 240 "$BIN/gpu" "$test" --nocapture --test-threads 1 > "$OUT/gpu-test.log" 2>&1
echo "gpu test rc=$?"; grep -E "copy:|test result|error" "$OUT/gpu-test.log" | head -20
python3 docs/results/v4.28/in-loop/twin_db.py "$db" /tmp/twin.sqlite "$@"
for run in "4096 1" "4096 2" "256 1"; do
  set -- $run; m=$1 round=$2
  for side in A B; do
    side_db=$db; [ "$side" = B ] && side_db=/tmp/twin.sqlite
    start=$SECONDS
    timeout 280 "$BIN/nmtune" bench --db "$side_db" --m "$m" --a-layout row --runs 10 \
      --csv "$OUT/ab-db-$side$round-m$m.csv" > /dev/null 2> /tmp/err.txt
    echo "## m=$m round $round side $side: rc=$? $((SECONDS - start)) s"; tail -3 /tmp/err.txt
  done
done
