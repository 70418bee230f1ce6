# One device call (session 37, issue 11): do tensor copies open better tiles? The sample
# strategy's candidates (pruned + 256 pseudo-random valid configurations) of 4096³,
# column-major A, at the given patterns, timed by the same binary without (A) and with (B)
# NMTUNE_TMA=1 (`nmtune bench --strategy sample`, medians of 10, one process per side and
# pattern, separate kernel caches). Candidates the path does not serve are the same kernel.
#   bash docs/results/v4.28/tma/sweep.sh ["12:32 8:32"]
set -u
patterns=${1:-"12:32 8:32"}
BIN=$PWD/.device/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
: > "$OUT/sweep.csv"
for nm in $patterns; do
  for side in A B; do
    tma=0; [ "$side" = B ] && tma=1
    start=$SECONDS
    NMTUNE_TMA=$tma NMTUNE_CACHE_DIR=/tmp/cubins-$side timeout 280 "$BIN/nmtune" bench --m 4096 \
      --n 4096 --k 4096 --nm "$nm" --a-layout col --strategy sample --runs 10 --csv /tmp/sw.csv \
      > /dev/null 2> /tmp/err.txt
    echo "## $nm side $side: rc=$? $((SECONDS - start)) s"; tail -2 /tmp/err.txt
    sed "s/^/$side,$nm,/" /tmp/sw.csv | tail -n +2 >> "$OUT/sweep.csv"
  done
done
python3 docs/results/v4.28/tma/sweep_summary.py "$OUT/sweep.csv" | tee "$OUT/sweep-summary.txt"
