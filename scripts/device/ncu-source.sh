#!/usr/bin/env bash
# Per-instruction (SASS) warp-stall samples of two 4096^3 winners, for the dispatch-stall study.
B=${BIN:-.device/bin}
export PATH=/usr/local/cuda/bin:$PATH
while read -r nm layout kernel; do
  ncu --clock-control none --kernel-name "$kernel" --launch-count 1 \
    --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    "$B/nmtune" bench --m 4096 --n 4096 --k 4096 --nm "$nm" --a-layout "$layout" --kernels "$kernel" --runs 1 \
    > "$OUT/sass-$nm-$layout.csv" 2> "$OUT/sass-$nm-$layout.err"
  echo "$kernel: $(wc -l < "$OUT/sass-$nm-$layout.csv") lines"
done <<'LIST'
16:32 col nm_spmm_f32_acol16_ms128_ns256_ks32_mt8_nt16_w16x2_n16m32l32_nopack_cp3_mb1_sk1
4:32 row nm_spmm_f32_arowk_ms128_ns256_ks64_mt16_nt8_w8x4_n4m32l32_nopack_cp3_mb1_sk1
LIST
