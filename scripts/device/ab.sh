# A/B of two nmtune builds on the same kernels in one call. Each line of LIST is
# "M N K N:M LAYOUT KERNEL".
#   A=.device/bin/nmtune B=.device/bin/nmtune-x bash scripts/device/ab.sh time LIST > $OUT/ab.txt
#     `nmtune bench` of build A then build B per line, two rounds, alternating, so that drift
#     of the GPU falls on both (medians of 10 runs each).
#   A=... B=... bash scripts/device/ab.sh ncu LIST > $OUT/ab-ncu.txt
#     ncu of each line's kernel with each build (one launch): issue rate, active warps,
#     instructions, registers and every stall reason per issue.
mode=$1 list=$2
bench() {  # bench BIN M N K NM LAYOUT KERNEL RUNS
  timeout 120 "$1" bench --m "$2" --n "$3" --k "$4" --nm "$5" --a-layout "$6" --kernels "$7" --runs "$8"
}
case $mode in
  time)
    for round in 1 2; do
      while read -r m n k nm layout kernel; do
        [ -z "$kernel" ] && continue
        for side in A B; do
          echo "## round $round build $side"
          NMTUNE_CACHE_DIR=/tmp/nmtune-cubins-$side \
            bench "${!side}" "$m" "$n" "$k" "$nm" "$layout" "$kernel" 10 2>&1 | grep -v '^problem'
        done
      done < "$list"
    done ;;
  ncu)
    while read -r m n k nm layout kernel; do
      [ -z "$kernel" ] && continue
      for side in A B; do
        echo "#### build $side: $kernel at m=$m n=$n k=$k $nm $layout"
        NMTUNE_CACHE_DIR=/tmp/nmtune-cubins-$side timeout 120 ncu --clock-control none \
          --kernel-name "$kernel" --launch-count 1 \
          --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio',smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active,smsp__inst_executed.sum,launch__registers_per_thread \
          "${!side}" bench --m "$m" --n "$n" --k "$k" --nm "$nm" --a-layout "$layout" \
          --kernels "$kernel" --runs 1 2>&1 | grep -E '^ +(smsp|launch)__'
      done
    done < "$list" ;;
  *) echo "usage: A=BIN B=BIN bash scripts/device/ab.sh time|ncu LIST" >&2; exit 2 ;;
esac
