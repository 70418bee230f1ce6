#!/usr/bin/env bash
# Session 50's first device call. Build u = HEAD + session 49's patches/unroll.patch, build
# v = u + patches/transpose16.patch (the 16-byte transposing pass for row-major A).
# 1. A/B of u and v on the stored row-major BF16 winners at m = 4096 and 256, L = 128 and 32
#    (ab-row.sqlite: a copy of tuning-db/h200-bf16.sqlite holding only those best rows;
#    medians of 10, two rounds, alternating builds).
# 2. tests/gpu_tc.rs of build v.
# 3. The build that wins (v if it passed and is not slower in geometric mean, else u) re-tunes
#    tuning-db/h200-bf16.sqlite (--strategy warm over shapes/llama.yaml, resumable) for the
#    rest of the call; back as $OUT/h200-bf16.sqlite.gz. Everything else in $OUT/results.tgz.
set -u
S=${S:-.dev/s50}
export PATH=/usr/local/cuda/bin:$PATH
R=$OUT/r; mkdir -p "$R"
B=/tmp/bin; mkdir -p $B
for x in nmtune-u nmtune-v gpu_tc-v; do gunzip -c "$S/$x.gz" > $B/$x; chmod +x $B/$x; done
gunzip -c "$S/ab-row.sqlite.gz" > /tmp/ab-row.sqlite
gunzip -c "$S/h200-bf16.sqlite.gz" > /tmp/h200-bf16.sqlite
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$R/env.txt"
pack() { tar czf "$OUT/results.tgz" -C "$R" .; }
for x in u v; do
  ( for m in 4096 256; do
      NMTUNE_CACHE_DIR=/tmp/cubins-$x timeout 150 $B/nmtune-$x bench --db /tmp/ab-row.sqlite --m $m \
        --runs 1 > "$R/warm-$x-m$m.txt" 2>&1
    done ) &
done
wait; echo "warm: $SECONDS s"
for round in 1 2; do
  for x in u v; do
    for m in 4096 256; do
      NMTUNE_CACHE_DIR=/tmp/cubins-$x timeout 100 $B/nmtune-$x bench --db /tmp/ab-row.sqlite --m $m \
        --runs 10 --csv "$R/ab-$x$round-m$m.csv" > /dev/null 2> "$R/ab-$x$round-m$m.err"
    done
  done
  echo "round $round: $SECONDS s"; pack
  [ $SECONDS -gt 200 ] && break
done
NMTUNE_CACHE_DIR=/tmp/cubins-gpu timeout 100 $B/gpu_tc-v --nocapture --test-threads 1 > "$R/gpu_tc-v.log" 2>&1
tc_rc=$?
echo "gpu_tc v rc=$tc_rc $(grep -E 'products checked|^test result' "$R/gpu_tc-v.log" | tr '\n' ' ') $SECONDS s"
cd "$R" && python3 - "$tc_rc" > decision.txt <<'PY'
import csv, glob, math, sys, collections
def load(tag):
    best = {}
    for f in glob.glob(f"ab-{tag}[12]-m*.csv"):
        for r in csv.DictReader(open(f)):
            if r["median_us"] and not r["error"]:
                t = float(r["median_us"]); best[r["problem"]] = min(t, best.get(r["problem"], t))
    return best
u, v = load("u"), load("v")
groups = collections.defaultdict(list)
for p in u:
    if p in v:
        m = p.split("_")[0]; l = p.split("_")[4]; nm = p.split("_")[3]
        groups[(m, l, nm)].append(v[p] / u[p]); groups["all"].append(v[p] / u[p])
gm = lambda x: math.exp(sum(map(math.log, x)) / len(x))
for key in sorted(groups, key=str): print(key, len(groups[key]), f"{gm(groups[key]):.3f}")
ok = sys.argv[1] == "0" and groups["all"] and gm(groups["all"]) <= 1.0
print("winner", "v" if ok else "u")
PY
cd - > /dev/null
cat "$R/decision.txt"; pack
w=$(awk '/^winner/ {print $2}' "$R/decision.txt"); cp $B/nmtune-$w $B/nmtune
tune_s=$((560 - SECONDS)); echo "tuning with build $w for $tune_s s"
timeout $tune_s $B/nmtune --gpu auto --shapes shapes/llama.yaml --db /tmp/h200-bf16.sqlite --dtype bf16 \
  --a-layout row,col --l 128,32 --strategy warm > "$R/tune-bf16.log" 2>&1
echo "tune rc=$? $SECONDS s: $(tail -1 "$R/tune-bf16.log")"
$B/nmtune tidy --db /tmp/h200-bf16.sqlite >> "$R/tune-bf16.log" 2>&1
python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('pragma wal_checkpoint(TRUNCATE)')" /tmp/h200-bf16.sqlite
gzip -c /tmp/h200-bf16.sqlite > "$OUT/h200-bf16.sqlite.gz"; pack
echo "done $SECONDS s"
