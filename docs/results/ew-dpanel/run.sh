#!/usr/bin/env bash
# Issue 14, session 55: dpanel.cu (calls 1 and 2) and gather.cu (call 3), each file's header
# says what it runs, built with the device image's nvcc and run once each; dpanel's first two
# problems then once more under ncu for the bytes and L2 requests each variant reads.
#   bash docs/results/ew-dpanel/run.sh [dpanel] [gather]   ($OUT/<name>.txt, <name>-build.txt, dpanel-ncu.csv)
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
for name in ${*:-dpanel gather}; do
  if nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v "$here/$name.cu" -o "/tmp/$name" > "$OUT/$name-build.txt" 2>&1; then
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/$name.txt"
    timeout 300 "/tmp/$name" >> "$OUT/$name.txt" 2>&1 || echo "$name: exit $?" >> "$OUT/$name.txt"
    cat "$OUT/$name.txt"
  else
    tail -20 "$OUT/$name-build.txt"
    continue
  fi
  if [ "$name" = dpanel ]; then
    DPANEL_NCU=1 timeout 200 ncu --csv --kernel-name regex:'ewdrow|sweep' \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum \
      /tmp/dpanel > "$OUT/dpanel-ncu.csv" 2> "$OUT/dpanel-ncu.err" || echo "ncu: exit $?" >> "$OUT/dpanel-ncu.err"
    grep -c . "$OUT/dpanel-ncu.csv"; tail -3 "$OUT/dpanel-ncu.err"
  fi
done
