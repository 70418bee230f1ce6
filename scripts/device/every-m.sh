#!/usr/bin/env bash
# The runtime's answer at untuned m (new rule: bin/llama_mlp; old nearest-on-a-log-scale rule:
# bin/llama_mlp_old) beside the tuned neighbours, up_proj 11008x4096, H100 database.
B=${BIN:-.device/bin}
for s in 16:32 4:32; do
  for m in 7 256 300 512 700 1024 1500 2048 3000 4096; do
    echo "### new m=$m $s"; timeout 60 $B/llama_mlp --m $m --sparsity $s --db tuning-db/h100.sqlite --check-rows 64 2>&1 | grep -E 'kernel|rule|relative|speed-up'
    case $m in 7|300|700|1500|3000)
      echo "### old m=$m $s"; timeout 60 $B/llama_mlp_old --m $m --sparsity $s --db tuning-db/h100.sqlite --check-rows 64 2>&1 | grep -E 'kernel|rule|relative|speed-up';;
    esac
  done
done
