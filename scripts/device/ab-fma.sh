# A/B timing of two nmtune builds on the same kernels in one call: for each line of LIST
# ("M N K N:M LAYOUT KERNEL"), `nmtune bench` of build A then build B, twice, alternating, so
# that drift of the GPU falls on both. Usage: A=.device/bin/nmtune B=.device/bin/nmtune-fma \
#   bash scripts/device/ab-fma.sh LIST > $OUT/ab.txt
list=$1
for round in 1 2; do
  while read -r m n k nm layout kernel; do
    [ -z "$kernel" ] && continue
    for side in A B; do
      bin=${!side}
      echo "## round $round build $side"
      NMTUNE_CACHE_DIR=/tmp/nmtune-cubins-$side timeout 120 "$bin" bench --m "$m" --n "$n" --k "$k" \
        --nm "$nm" --a-layout "$layout" --kernels "$kernel" --runs 10 2>&1 | grep -v '^problem'
    done
  done < "$list"
done
