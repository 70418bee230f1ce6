#!/usr/bin/env bash
# Session 49's second and third device calls: B' multicast to the two blocks of a cluster
# along m (NMTUNE_EXP_MC=2, the experiment build `d` of patches/multicast.patch) against the
# same build without it, on the stored m = 4096, column-major, L = 128 BF16 winners
# (ab.sqlite, as run-next.sh), then every configuration at 4096 x {4096, 11008} x 4096 with
# tc_bench. One archive: $OUT/results.tgz.
#   second call (mc1/):  bash run-mc.sh                  (TC_MC="2 1", TC_S=150)
#   third call  (mc2/):  HEAD=1 TC_MC=2 TC_S=200 bash run-mc.sh, after the remote arrivals
#                        lost their cluster-scope release (a MEMBAR.ALL.GPU that waited for
#                        the copies in flight); HEAD=1 also times HEAD's build (nmtune-a).
set -u
S=${S:-.dev/s49}
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r; mkdir -p "$R"
B=/tmp/bin; mkdir -p $B
builds="nmtune-d tc_bench-d"; [ -n "${HEAD:-}" ] && builds="nmtune-a $builds"
for x in $builds; do gunzip -c "$S/$x.gz" > $B/$x; chmod +x $B/$x; done
gunzip -c "$S/ab.sqlite.gz" > /tmp/ab.sqlite
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/env.txt"
pack() { tar czf "$OUT/results.tgz" -C "$R" .; }
head_bench() { # runs, csv file tag or empty
  [ -n "${HEAD:-}" ] || return 0
  NMTUNE_CACHE_DIR=/tmp/cubins-a timeout 200 $B/nmtune-a bench --db /tmp/ab.sqlite --m 4096 --runs $1 \
    ${2:+--csv "$R/ab-$2.csv"} > "$R/${2:-warm-a}.txt" 2> "$R/ab-${2:-warm-a}.err"
}
for mc in 1 2; do
  NMTUNE_EXP_MC=$mc NMTUNE_CACHE_DIR=/tmp/cubins-$mc timeout 200 $B/nmtune-d bench --db /tmp/ab.sqlite --m 4096 --runs 1 \
    > "$R/warm-mc$mc.txt" 2>&1 &
done
head_bench 1 "" &
wait
bench() { # multicast, file tag
  NMTUNE_EXP_MC=$1 NMTUNE_CACHE_DIR=/tmp/cubins-$1 timeout 120 $B/nmtune-d bench --db /tmp/ab.sqlite --m 4096 --runs 10 \
    --csv "$R/ab-$2.csv" > /dev/null 2> "$R/ab-$2.err"
}
for round in 1 2; do
  head_bench 10 a$round
  bench 1 x$round
  bench 2 mc$round
  echo "round $round: $SECONDS s"; pack
done
for mc in ${TC_MC:-2 1}; do
  NMTUNE_EXP_MC=$mc NMTUNE_CACHE_DIR=/tmp/cubins-$mc timeout ${TC_S:-150} $B/tc_bench-d --shape 4096x4096x4096,4096x11008x4096 \
    --sparsity 8:32,4:32 --l 128 --runs 10 --cache /tmp/tcb-$mc > "$R/tc-bench-mc$mc.txt" 2>&1
  echo "tc_bench mc$mc: $SECONDS s"; pack
done
