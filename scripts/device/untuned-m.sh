#!/usr/bin/env bash
# The runtime at untuned m (issue 14): examples/llama_mlp (.device/bin/llama_mlp) on the three
# Llama-7B layer shapes at the four sparsities, each untuned m beside its tuned neighbours,
# in one process per (layer, sparsity); the H100's or H200's prefill and decode databases.
#   bash scripts/device/untuned-m.sh > $OUT/untuned-m.log
#   python3 scripts/untuned_m_summary.py $OUT/untuned-m.log
B=${BIN:-.device/bin}
export NMTUNE_CACHE_DIR=${NMTUNE_CACHE_DIR:-/tmp/nmtune-cubins}
for layer in attn up down; do
  for s in 16:32 12:32 8:32 4:32; do
    echo "### layer=$layer sparsity=$s"
    timeout 240 "$B/llama_mlp" --layer "$layer" --sparsity "$s" --check-rows 16 --runs 20 \
      --m 4,6,7,8,256,300,320,384,512,700,768,1024,1500,1536,2048,3000,3072,4096 2>&1
  done
done
