# Issue 15: ncu of tensor-core prototype kernels at 4096³, 16:32, L = 128 (on the device):
#   bash docs/results/tc-prototype/ncu.sh [tc0] [tc1] [tc1s] [tc1b] [tc1b-sass] [tc1i] [tc1p] [tc1d]   (default tc1; writes $OUT/tc-ncu.txt)
# tc0: the mma.sync kernel (WN 32, KW 32, 3 stages; 128- and 256-row blocks), and the mbarrier
# pipeline (256 rows, KW 64, 4 stages) with and without a producer warpgroup. tc1: A from registers (KW 32, 3 stages),
# A from shared memory (3 stages, every stage waited for), A from shared memory with one stage
# of wgmma in flight (4 stages, two blocks per SM).
set -u
here=$(dirname "$0")
kernels=()
if [[ " ${*:-tc1} " == *" tc0 "* ]]; then
  nvcc -O3 -arch=sm_90 -std=c++17 "$here/tc0.cu" -o /tmp/tc0 -lcublas || exit 1
  kernels+=("tc0 wm _Z10nm_tc_bf16ILi16ELi32ELi128ELi32ELi32ELi3ELi2E"
            "tc0 wm _Z10nm_tc_bf16ILi16ELi32ELi128ELi32ELi32ELi3ELi4E"
            "tc0 p _Z10nm_tc_bf16ILi16ELi32ELi128ELi32ELi64ELi4ELi4ELb1ELi0E"
            "tc0 p _Z10nm_tc_bf16ILi16ELi32ELi128ELi32ELi64ELi4ELi4ELb1ELi4E")
fi
if [[ " ${*:-tc1} " == *" tc1s "* ]]; then
  # Session 23: A in the 128-byte swizzled layout (256 rows, KW 64, 4 stages, mbarriers) at
  # 16:32 and 12:32, beside the core-matrix layout it replaced.
  nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 "$here/tc1.cu" -o /tmp/tc1 -lcublas || exit 1
  for k in ILi16ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1E ILi12ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1E \
           ILi16ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb0E; do kernels+=("tc1 s $k"); done
fi
if [[ " ${*:-tc1} " == *" tc1b "* ]]; then
  # Session 41: the B' image kernel (bulk copies) at 16:32 and 4:32, and its persistent grid at 4:32.
  nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 "$here/tc1.cu" -o /tmp/tc1 -lcublas || exit 1
  for k in ILi16ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb0E ILi4ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb0E \
           ILi4ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb1E; do kernels+=("tc1 n $k"); done
fi
if [[ " ${*:-tc1} " == *" tc1 "* ]]; then
  nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 "$here/tc1.cu" -o /tmp/tc1 -lcublas || exit 1
  for k in ILi16ELi32ELi128ELi32ELi3ELi1ELb0ELb0E ILi16ELi32ELi128ELi32ELi3ELi1ELb0ELb1E \
           ILi16ELi32ELi128ELi32ELi4ELi2ELb1ELb1E; do kernels+=("tc1 - $k"); done
fi
if [[ " ${*:-tc1} " == *" tc1b-sass "* ]]; then
  # Session 41: per-instruction (SASS) warp-stall samples of the B' image kernel at 16:32 and
  # 4:32 (4096³), one CSV each ($OUT/tc1b-sass-<N>.csv.gz; scripts/sass_stalls.py reads them).
  nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 "$here/tc1.cu" -o /tmp/tc1 -lcublas || exit 1
  for nk in "16 ILi16ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb0E" \
            "4 ILi4ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb0E"; do
    set -- $nk
    timeout 200 ncu --clock-control none --kernel-name-base mangled --kernel-name "regex:$2" \
      --launch-count 1 --section SourceCounters --section WarpStateStats --page source \
      --print-source sass --csv /tmp/tc1 1 n 2> "$OUT/tc1b-sass-$1.err" | gzip > "$OUT/tc1b-sass-$1.csv.gz"
  done
fi
if [[ " ${*:-tc1} " == *" tc1i "* ]]; then
  # Session 42: the index-table kernel (IDX; image, staged C) at 16:32 and 4:32 (4096³): the
  # sections below, and per-instruction warp-stall samples ($OUT/tc1i-sass-<N>.csv.gz).
  nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 "$here/tc1.cu" -o /tmp/tc1 -lcublas || exit 1
  for nk in "16 ILi16ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb0ELb1ELi1ELi0ELb1E" \
            "4 ILi4ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb0ELb1ELi1ELi0ELb1E"; do
    set -- $nk
    kernels+=("tc1 k $2")
    timeout 200 ncu --clock-control none --kernel-name-base mangled --kernel-name "regex:$2" \
      --launch-count 1 --section SourceCounters --section WarpStateStats --page source \
      --print-source sass --csv /tmp/tc1 1 k 2> "$OUT/tc1i-sass-$1.err" | gzip > "$OUT/tc1i-sass-$1.csv.gz"
  done
fi
if [[ " ${*:-tc1} " == *" tc1p "* ]]; then
  # Session 42: the persistent index-table kernel (QST) at 16:32 and 4:32 (4096³), likewise
  # ($OUT/tc1p-sass-<N>.csv.gz).
  nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 "$here/tc1.cu" -o /tmp/tc1 -lcublas || exit 1
  for nk in "16 ILi16ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb1ELb0ELi1ELi0ELb1ELb1E" \
            "4 ILi4ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb1ELb0ELi1ELi0ELb1ELb1E"; do
    set -- $nk
    kernels+=("tc1 r $2")
    timeout 200 ncu --clock-control none --kernel-name-base mangled --kernel-name "regex:$2" \
      --launch-count 1 --section SourceCounters --section WarpStateStats --page source \
      --print-source sass --csv /tmp/tc1 1 r 2> "$OUT/tc1p-sass-$1.err" | gzip > "$OUT/tc1p-sass-$1.csv.gz"
  done
fi
if [[ " ${*:-tc1} " == *" tc1d "* ]]; then
  # Session 42 (not run yet): the diet kernel (table, staged C) at 16:32 and 4:32 (4096³),
  # likewise ($OUT/tc1d-sass-<N>.csv.gz).
  nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 "$here/tc1.cu" -o /tmp/tc1 -lcublas || exit 1
  for nk in "16 ILi16ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb0ELb1ELi1ELi0ELb1ELb0ELb1E" \
            "4 ILi4ELi32ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb0ELb1ELi1ELi0ELb1ELb0ELb1E"; do
    set -- $nk
    kernels+=("tc1 f $2")
    timeout 200 ncu --clock-control none --kernel-name-base mangled --kernel-name "regex:$2" \
      --launch-count 1 --section SourceCounters --section WarpStateStats --page source \
      --print-source sass --csv /tmp/tc1 1 f 2> "$OUT/tc1d-sass-$1.err" | gzip > "$OUT/tc1d-sass-$1.csv.gz"
  done
fi
for pk in "${kernels[@]}"; do
  set -- $pk; prog=$1 set=$2 k=$3
  echo "#### $prog $k" >> "$OUT/tc-ncu.txt"
  timeout 150 ncu --clock-control none --kernel-name-base mangled --kernel-name "regex:$k" \
    --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables \
    --section SchedulerStats --section WarpStateStats --section Occupancy \
    --section SourceCounters --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,lts__t_bytes.sum.per_second,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum \
    "/tmp/$prog" 1 $set >> "$OUT/tc-ncu.txt" 2>&1
done
