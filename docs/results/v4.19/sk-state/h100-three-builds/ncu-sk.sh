# ncu of one problem's DP kernel and its stream-K twin by three builds (session 27)
set -u
B=.device/bin
run() { # bin kernel function m n k nm layout
  echo "#### $1 $2 ($3) m=$4 n=$5 k=$6 $7 $8"
  timeout 120 ncu --clock-control none --kernel-name "$3" --launch-count 1 \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio',smsp__issue_active.avg.per_cycle_active,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,gpu__time_duration.sum,smsp__warps_active.avg.per_cycle_active \
    "$B/$1" bench --m "$4" --n "$5" --k "$6" --nm "$7" --a-layout "$8" --kernels "$2" --runs 1 2>&1 | grep -vE '^==PROF==|^gpu,|^h100' 
}
for K in nm_spmm_f32_atrans_ms128_ns256_ks32_mt8_nt16_w16x2_n16m32l32_nopack_cp3_mb1_sk1:16:32 nm_spmm_f32_atrans_ms128_ns256_ks64_mt16_nt8_w8x4_n8m32l32_nopack_cp3_mb1_sk1:8:32; do
  nm=${K#*:}; K=${K%%:*}
  run nmtune "$K" "$K" 4096 12288 4096 "$nm" row
  for b in nmtune-main nmtune-v2 nmtune; do run $b "${K}_streamk" "${K}_streamk_stream" 4096 12288 4096 "$nm" row; done
done
