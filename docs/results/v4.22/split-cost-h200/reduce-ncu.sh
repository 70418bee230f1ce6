B=.device/bin/nmtune; export NMTUNE_CACHE_DIR=/tmp/nmtune-cubins
for s in 2 4 6; do
  k=nm_spmm_f32_arowk_ms64_ns128_ks32_mt8_nt8_w8x4_n8m32l32_nopack_cp2_mb1_sk$s
  echo "#### reduce of $k at 256x2048x2048 8:32 row"
  timeout 100 ncu --clock-control none --kernel-name regex:_reduce --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section LaunchStats --section MemoryWorkloadAnalysis --section Occupancy \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__cycles_active.avg,gpc__cycles_elapsed.max \
    $B bench --m 256 --n 2048 --k 2048 --nm 8:32 --a-layout row --kernels $k --runs 3 < /dev/null 2>&1 | grep -vE "^==PROF==|^nmtune" 
done > $OUT/reduce-ncu.txt
grep -E "####|Duration|gpu__time|dram__bytes|lts__t_bytes|Grid Size|Registers|Achieved Occupancy|Memory Throughput" $OUT/reduce-ncu.txt
