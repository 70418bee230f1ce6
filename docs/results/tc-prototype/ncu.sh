# Issue 15: ncu of tensor-core prototype kernels at 4096³, 16:32, L = 128 (on the device):
#   bash docs/results/tc-prototype/ncu.sh [tc0] [tc1] [tc1s] [tc1b] [tc1b-sass] [tc1i] [tc1p] [tc1d] [tc1g]   (default tc1; writes $OUT/tc-ncu.txt)
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
# Per-instruction (SASS) warp-stall samples of one tc1 kernel, one CSV:
#   sass_samples TAG N REGEX SET   -> $OUT/TAG-sass-N.csv.gz (scripts/sass_stalls.py reads them)
# SET is tc1's argument that runs the kernel (its set letter).
sass_samples() {
  timeout 200 ncu --clock-control none --kernel-name-base mangled --kernel-name "regex:$3" \
    --launch-count 1 --section SourceCounters --section WarpStateStats --page source \
    --print-source sass --csv /tmp/tc1 1 "$4" 2> "$OUT/$1-sass-$2.err" | gzip > "$OUT/$1-sass-$2.csv.gz"
}
# Kernels of the image (session 41) and table (session 42) families at 16:32 and 4:32
# (4096³): per selection, the set that runs them and the mangled-name tail after N:M
# ("ILi<N>ELi32E…"). tc1b-sass takes only the samples; the others also the sections below.
tc1_selection() {
  case $1 in
    tc1b-sass) echo "n ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb0E" ;;  # the B' image kernel
    tc1i) echo "k ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb0ELb1ELi1ELi0ELb1E" ;;  # + IDX
    tc1p) echo "r ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb1ELb0ELi1ELi0ELb1ELb1E" ;;  # persistent, QST
    tc1d) echo "f ELi128ELi64ELi4ELi1ELb1ELb1ELi4ELb1ELb1ELi1ELb0ELb1ELi1ELi0ELb1ELb0ELb1E" ;;  # + DIET
    tc1g) echo "h ELi128ELi64ELi4ELi4ELi104ELb0E" ;;  # the diet kernel with a producer warpgroup
  esac
}
for sel in tc1b-sass tc1i tc1p tc1d tc1g; do
  [[ " ${*:-tc1} " == *" $sel "* ]] || continue
  # run.sh's build of the same source, if this call made one (a build takes about 2 minutes).
  [ /tmp/tc1 -nt "$here/tc1.cu" ] && [ /tmp/tc1 -nt "$here/harness.h" ] ||
    nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 "$here/tc1.cu" -o /tmp/tc1 -lcublas || exit 1
  read -r set tail <<< "$(tc1_selection "$sel")"
  for nm in 16 4; do
    k="ILi${nm}ELi32${tail}"
    [ "$sel" = tc1b-sass ] || kernels+=("tc1 $set $k")
    sass_samples "${sel%-sass}" "$nm" "$k" "$set"
  done
done
for pk in "${kernels[@]}"; do
  set -- $pk; prog=$1 set=$2 k=$3
  echo "#### $prog $k" >> "$OUT/tc-ncu.txt"
  timeout 150 ncu --clock-control none --kernel-name-base mangled --kernel-name "regex:$k" \
    --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables \
    --section SchedulerStats --section WarpStateStats --section Occupancy \
    --section SourceCounters --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,lts__t_bytes.sum.per_second,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum \
    "/tmp/$prog" 1 $set >> "$OUT/tc-ncu.txt" 2>&1
done
