#!/usr/bin/env bash
# Issue 14, session 55: dpanel.cu (its header says what it runs), built with the device
# image's nvcc and run once, then its first two problems once more under ncu for the bytes
# each variant reads from DRAM and L2; a few minutes.
#   bash docs/results/ew-dpanel/run.sh   ($OUT/dpanel.txt, $OUT/dpanel-build.txt, $OUT/dpanel-ncu.csv)
set -u
here=$(dirname "$0")
OUT=${OUT:-/tmp/nmtune-out}
mkdir -p "$OUT"
if nvcc -O3 -arch=sm_90 -std=c++17 -Xptxas -v "$here/dpanel.cu" -o /tmp/dpanel > "$OUT/dpanel-build.txt" 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$OUT/dpanel.txt"
  timeout 300 /tmp/dpanel >> "$OUT/dpanel.txt" 2>&1 || echo "dpanel: exit $?" >> "$OUT/dpanel.txt"
  cat "$OUT/dpanel.txt"
  DPANEL_NCU=1 timeout 200 ncu --csv --kernel-name regex:'ewdrow|sweep' \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum \
    /tmp/dpanel > "$OUT/dpanel-ncu.csv" 2> "$OUT/dpanel-ncu.err" || echo "ncu: exit $?" >> "$OUT/dpanel-ncu.err"
  grep -c . "$OUT/dpanel-ncu.csv"; tail -3 "$OUT/dpanel-ncu.err"
else
  tail -20 "$OUT/dpanel-build.txt"
fi
