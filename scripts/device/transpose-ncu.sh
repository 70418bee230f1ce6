# ncu of the atrans path's transposing pass: duration and DRAM throughput, at m = 4096 and 256.
BIN=$PWD/.device/bin
for m in 4096 256; do
  echo "#### transpose pass at m=$m n=4096 k=4096 4:32"
  timeout 120 ncu --clock-control none --kernel-name regex:_transpose --launch-count 1 \
    --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum \
    "$BIN/nmtune" bench --m $m --n 4096 --k 4096 --nm 4:32 --a-layout row \
    --kernels nm_spmm_f32_atrans_ms128_ns32_ks256_mt4_nt8_w16x2_n4m32l32_pack_cp2_mb3_sk1 --runs 1
done
