#!/usr/bin/env bash
# Ran in session 47 at 6d984a6, with split-k.patch beside it (merged since, in the commit that
# added split k to the tensor-core family; the patch file is gone). It made .dev/run for run.sh:
#   bash docs/results/tc-family/session46/prepare.sh
# Builds a (2fed37b) and b (HEAD) in a worktree (/work/wt-a, target /work/target-wt), and c
# (HEAD with split-k.patch applied) in this tree, then takes the patch out again. NVRTC
# 13.0.88 (the device's CUDA 13.0) from PyPI in /work/nvrtc130 compiles the FP32 winners, so
# that their cubins' cache keys match the device's. Then, before the call, park the large
# tracked files (the device tool carries at most 64 MiB):
#   bash scripts/device/park.sh   (and `bash scripts/device/park.sh --restore` after)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../../.."
a=2fed37b b=$(git rev-parse HEAD) run=.dev/run
mkdir -p "$run"
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo /.dev/ >> .git/info/exclude
[ -d /work/nvrtc130 ] || python3 -m pip install --quiet --no-deps --target /work/nvrtc130 'nvidia-cuda-nvrtc==13.0.88'
[ -d /work/wt-a ] || git worktree add -q /work/wt-a "$a"
for side in a b; do
  commit=$a; [ $side = b ] && commit=$b
  (cd /work/wt-a && git checkout -q "$commit" && CARGO_TARGET_DIR=/work/target-wt cargo build -q --release --bin nmtune)
  gzip -c /work/target-wt/release/nmtune > "$run/nmtune-$side.gz"
done
git apply "$here/split-k.patch"
cargo build -q --release --bin nmtune --example tc_bench
cargo test -q --release --test gpu_tc --no-run
gzip -c target/release/nmtune > "$run/nmtune-c.gz"
gzip -c target/release/examples/tc_bench > "$run/tc_bench.gz"
gzip -c "$(ls -t target/release/deps/gpu_tc-* | grep -v '\.d$' | head -1)" > "$run/gpu_tc.gz"
git apply -R "$here/split-k.patch"
python3 "$here/best_at_m.py" tuning-db/h200.sqlite "$run/h200-m256.sqlite" 256
python3 "$here/best_at_m.py" tuning-db/h200-bf16.sqlite "$run/h200-bf16-m256.sqlite" 256
python3 -c "import sqlite3,sys; print('\n'.join(sorted({r[0] for r in sqlite3.connect(sys.argv[1]).execute('select kernel_name from measurements')})))" \
  "$run/h200-m256.sqlite" > /tmp/f32-winners.txt
mkdir -p /tmp/session46-cubins
while read -r kernel; do
  LD_LIBRARY_PATH=/work/nvrtc130/nvidia/cu13/lib target/release/nmtune kernel "$kernel" --arch sm_90 \
    --cache-dir /tmp/session46-cubins > /dev/null
done < /tmp/f32-winners.txt
tar czf "$run/cubins.tgz" -C /tmp/session46-cubins .
du -sh "$run"
