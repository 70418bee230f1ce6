#!/usr/bin/env bash
# Session 57, fifth device call (H200): run4.sh twice more with the instruction and memory
# counts that tell the stream-K workers' extra L2 reads apart (ncu-sk-a.txt, ncu-sk-b.txt).
#   S=.dev/s57b bash docs/results/sk-many/run5.sh
here=$(dirname "$0")
NCU_TAG=-a NCU_METRICS=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_op_read.sum,dram__bytes_read.sum \
  bash "$here/run4.sh"
NCU_TAG=-b NCU_METRICS=gpu__time_duration.sum,smsp__sass_inst_executed_op_ldgsts.sum,smsp__sass_inst_executed_op_shared_ld.sum,smsp__inst_executed_op_ldgsts.sum \
  bash "$here/run4.sh"
