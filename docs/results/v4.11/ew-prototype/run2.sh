#!/usr/bin/env bash
# On the device: build and run the second element-wise prototype (ew2.cu) beside cuBLAS SGEMM.
set -e
cd "$(dirname "$0")"
nvcc -O3 -arch=sm_90 -std=c++17 ew2.cu -lcublas -o /tmp/ew2
nvcc -O3 -arch=sm_90 -std=c++17 --resource-usage -c ew2.cu -o /tmp/ew2.o 2>&1 | grep -E 'registers|spill' | head -30
/tmp/ew2
