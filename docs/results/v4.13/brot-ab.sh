# Session 18, issue 11: B' quads rotated in shared memory (branch `brot`) against main, in one
# call on the lent GPU. Binaries in .device/bin: nmtune-a (main), nmtune-b (brot), gpu (brot's
# tests/gpu.rs). Writes under $OUT.
set -u
BIN=$PWD/.device/bin
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > "$OUT/env.txt"
cat "$OUT/env.txt"
# Correctness first: every tiled configuration of the branch against the CPU reference.
NMTUNE_CACHE_DIR=/tmp/c-gpu timeout 240 "$BIN/gpu" every_template_family --nocapture \
  --test-threads 1 > "$OUT/gpu-test-brot.log" 2>&1
echo "gpu test rc=$? $(grep -E 'GPU correctness|test result' "$OUT/gpu-test-brot.log" | tr '\n' ' ')"
for m in ${AB_M:-4096}; do
  A=$BIN/nmtune-a B=$BIN/nmtune-b bash scripts/device/ab-db.sh tuning-db/h100.sqlite "$m" 2
done
# ncu of the two winners whose FFMAs lose most to same-bank pairs, both builds.
for side in a b; do
  while read -r m n k nm layout kernel; do
    echo "#### $side $kernel" >> "$OUT/ncu-brot.txt"
    NMTUNE_CACHE_DIR=/tmp/nmtune-cubins-${side^^} timeout 120 ncu --clock-control none \
      --kernel-name "$kernel" --launch-count 1 \
      --metrics smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active,smsp__inst_executed.sum,launch__registers_per_thread,'regex:smsp__average_warps_issue_stalled_(dispatch_stall|short_scoreboard|long_scoreboard|barrier|math_pipe_throttle|wait|not_selected|mio_throttle|lg_throttle)_per_issue_active\.ratio' \
      "$BIN/nmtune-$side" bench --m "$m" --n "$n" --k "$k" --nm "$nm" --a-layout "$layout" \
      --kernels "$kernel" --runs 1 >> "$OUT/ncu-brot.txt" 2>&1
  done < docs/results/v4.13/brot-ncu.list
done
grep -E '####|issue_active|dispatch_stall' "$OUT/ncu-brot.txt"
