#!/usr/bin/env bash
# On the device: build and run the element-wise N:M prototype (ew1.cu) beside cuBLAS SGEMM.
set -e
cd "$(dirname "$0")"
nvcc -O3 -arch=sm_90 -std=c++17 ew1.cu -lcublas -o /tmp/ew1
nvcc -O3 -arch=sm_90 -std=c++17 --resource-usage -c ew1.cu -o /tmp/ew1.o 2>&1 | grep -E 'registers|spill' | head -15
/tmp/ew1
