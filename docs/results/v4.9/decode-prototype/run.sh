# On the device: build and run the decode prototype, output under $OUT.
set -e
d=$(dirname "$0")
nvcc -O3 -arch=sm_90 -o /tmp/decode2 "$d/decode2.cu" -lcublas
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/env.txt"
nvcc --version | tail -2 >> "$OUT/env.txt"
/tmp/decode2 "$@" > "$OUT/decode2.txt" 2>&1
