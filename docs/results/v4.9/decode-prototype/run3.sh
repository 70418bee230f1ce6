# On the device: build and run the third decode prototype, output under $OUT.
set -e
d=$(dirname "$0")
nvcc -O3 -arch=sm_90 -o /tmp/decode3 "$d/decode3.cu" -lcublas
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/env.txt"
nvcc --version | tail -2 >> "$OUT/env.txt"
/tmp/decode3 "$@" > "$OUT/decode3.txt" 2>&1
