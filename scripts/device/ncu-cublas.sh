# ncu of cuBLAS SGEMM's kernel at 4096³ (the baseline `nmtune bench` times beside a kernel),
# with the scheduler and stall figures the perf log compares against nmtune's winners.
# Usage (on the device, from the repository root): BIN=.device/bin bash scripts/device/ncu-cublas.sh
BIN=${BIN:-$PWD/.device/bin}
# The 16:32 winners of the committed H100 database: the bench needs a kernel to time beside.
kernel_for() {
  case $1 in
    col) echo nm_spmm_f32_acol16_ms128_ns256_ks32_mt8_nt16_w16x2_n16m32l32_nopack_cp3_mb1_sk1 ;;
    row) echo nm_spmm_f32_atrans_ms128_ns256_ks32_mt8_nt16_w16x2_n16m32l32_nopack_cp3_mb1_sk1 ;;
  esac
}
for layout in col row; do
  echo "#### cuBLAS SGEMM at m=n=k=4096, A $layout"
  timeout 180 ncu --clock-control none --kernel-name regex:'gemm|xmma|cutlass' --launch-skip 0 --launch-count 1 \
    --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
    --metrics smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active,smsp__inst_executed.sum,smsp__inst_executed_pipe_fma.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
    "$BIN/nmtune" bench --m 4096 --n 4096 --k 4096 --nm 16:32 --a-layout $layout \
    --kernels "$(kernel_for $layout)" --runs 1
done
echo "#### nmtune's column-major 16:32 winner at m=n=k=4096, the same metrics"
timeout 180 ncu --clock-control none --kernel-name "$(kernel_for col)" --launch-count 1 \
  --metrics smsp__issue_active.avg.per_cycle_active,smsp__warps_active.avg.per_cycle_active,smsp__inst_executed.sum,smsp__inst_executed_pipe_fma.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
  "$BIN/nmtune" bench --m 4096 --n 4096 --k 4096 --nm 16:32 --a-layout col \
  --kernels "$(kernel_for col)" --runs 1
