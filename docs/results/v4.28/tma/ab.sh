# One device call (session 37, issue 11): the interior tiles' A and B' by tensor copies
# (`NMTUNE_TMA=1`, kernels::loaded encodes the maps; experiment, see tma.patch). First the
# GPU test of the path (its own configurations and test-kernels.txt, against the CPU
# reference), then every stored best entry of DB at m = 4096 and 256 (both A layouts), by the
# same binary without (A) and with (B) the tensor copies, `nmtune bench --db`, medians of 10,
# sides alternated, one process each, separate kernel caches. Entries the path does not
# serve (packing, stream-K, row-copying paths) run the same kernel on both sides: the noise.
#   bash docs/results/v4.28/tma/ab.sh tuning-db/h100.sqlite ["M:ROUND ..."]
set -u
db=$1 rounds=${2:-"4096:1 256:1"}
here=docs/results/v4.28/tma
BIN=$PWD/.device/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
cat "$OUT/env.txt"
NMTUNE_TMA=1 NMTUNE_TMA_LIST=$here/test-kernels.txt NMTUNE_CACHE_DIR=/tmp/cubins-B \
  timeout 200 "$BIN/gpu" the_tensor_copies --nocapture --test-threads 1 > "$OUT/gpu-test.log" 2>&1
echo "gpu test rc=$?"; grep -E "tensor copies:|test result|error|panicked" "$OUT/gpu-test.log" | head -20
: > "$OUT/ab.csv"
for run in $rounds; do
  IFS=: read -r m round <<< "$run"
  for side in A B; do
    tma=0; [ "$side" = B ] && tma=1
    start=$SECONDS
    NMTUNE_TMA=$tma NMTUNE_CACHE_DIR=/tmp/cubins-$side timeout 200 "$BIN/nmtune" bench --db "$db" \
      --m "$m" --runs 10 --csv /tmp/ab.csv > /dev/null 2> /tmp/err.txt
    echo "## m=$m round $round side $side: rc=$? $((SECONDS - start)) s"; tail -2 /tmp/err.txt
    sed "s/^/$side,$round,$m,/" /tmp/ab.csv | tail -n +2 >> "$OUT/ab.csv"
  done
done
python3 $here/summary.py "$OUT/ab.csv" | tee "$OUT/summary.txt"
