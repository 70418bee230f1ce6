#!/usr/bin/env bash
# Where decode stands before a decode kernel family exists: the runtime's choice at m = 1 … 16
# (examples/llama_mlp: Llama-7B up_proj 11008x4096, row-major A) beside cuBLAS SGEMM.
B=${BIN:-.device/bin}
DB=${DB:-tuning-db/h100.sqlite}
for s in 16:32 12:32 8:32 4:32; do
  for m in 1 2 4 8 16; do
    echo "### m=$m $s"
    timeout 60 "$B/llama_mlp" --m "$m" --sparsity "$s" --db "$DB" 2>&1 | grep -E 'kernel|rule|relative|nmtune|cuBLAS SGEMM|speed-up'
  done
done
