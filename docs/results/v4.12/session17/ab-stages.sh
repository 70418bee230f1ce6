# Session 17, call 1: decode register double buffering (STAGES = 2) against main, m = 1.
# Builds (in .device/bin): nmtune-a = main at 03d9a1c; nmtune-b = the stream_rows loop with
# STAGES forced to 2 (next step's B'/D loads, __syncwarp, then this step's A loads and FMAs);
# nmtune-c = the stream_rows loop at the stored STAGES (1): same schedule as main.
# Usage on the device: bash docs/results/v4.12/session17/ab-stages.sh DB   (writes under $OUT)
set -u
db=$1
root=$OUT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$root/gpu.txt"
mkdir -p "$root/ab" "$root/ac"
OUT=$root/ab A=.device/bin/nmtune-a B=.device/bin/nmtune-b bash scripts/device/ab-db.sh "$db" 1 2
python3 scripts/ab_db_summary.py "$root"/ab/ab-db-*-m1.csv > "$root/ab/summary.txt" 2>&1
OUT=$root/ac A=.device/bin/nmtune-a B=.device/bin/nmtune-c bash scripts/device/ab-db.sh "$db" 1 1
python3 scripts/ab_db_summary.py "$root"/ac/ab-db-*-m1.csv > "$root/ac/summary.txt" 2>&1
