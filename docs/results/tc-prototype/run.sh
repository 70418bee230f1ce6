# Issue 15's first tensor-core prototype on the device (nvcc and cuBLAS of the device image):
#   bash docs/results/tc-prototype/run.sh [tc0] [tc1]   (default both: $OUT/tc0.txt, $OUT/tc1.txt;
#   TC0_SET=wm runs only tc0's 256-row blocks beside the 128-row ones they grow; TC1_SET=sw
#   only tc1's 128-byte swizzled A beside its core-matrix A; session 41: TC1_SET=bulk (B' as a
#   prepared image by bulk copies, multicast over clusters), persist (a persistent grid),
#   c (C staged through shared memory), l32 (L = 32 likewise), w (more warps, a deeper ring;
#   session 42), ncu (the kernels ncu.sh tc1b profiles); session 42: d (parts left out, PROBE), i and j (the index table), q
#   (persistent with the table), e (the instruction diet); prepared, not run: g (a producer
#   warpgroup, PROD))
# Four shapes (4096³, 4096 × 11008 × 4096, 4096 × 4096 × 11008, 256 × 4096 × 4096) at 16:32,
# 12:32, 8:32 and 4:32, L = 128 and 32, then other block and stage shapes (wn/kw/st) on 4096³
# and 256 × 4096²: medians of 20 launches of the prototype and of cuBLAS BF16 (FP32 compute)
# on the dense weight, errors against the CPU reference and cuBLAS. About two minutes.
set -u
here=$(dirname "$0")
steps=" ${*:-tc0 tc1} "
# A failed build or run stops only its own prototype.
if [[ $steps == *" tc0 "* ]] &&
   nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v "$here/tc0.cu" -o /tmp/tc0 -lcublas > "$OUT/tc0-build.txt" 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/tc0.txt"
  timeout 300 /tmp/tc0 20 ${TC0_SET:-} >> "$OUT/tc0.txt" 2>&1 || echo "tc0: exit $?" >> "$OUT/tc0.txt"
fi
# The warpgroup-MMA version (tc1.cu, sm_90a): the same harness, B' transposed, both readings
# of the B descriptor's byte offsets per configuration.
if [[ $steps == *" tc1 "* ]] && nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17 -Xptxas -v "$here/tc1.cu" -o /tmp/tc1 -lcublas > "$OUT/tc1-build.txt" 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/tc1.txt"
  timeout 300 /tmp/tc1 20 ${TC1_SET:-} >> "$OUT/tc1.txt" 2>&1 || echo "tc1: exit $?" >> "$OUT/tc1.txt"
fi
