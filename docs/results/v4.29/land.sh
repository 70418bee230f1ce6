# Session 38's first step (docs/perf-log.md "Next (session 38)"): put v4.29 and the H100's
# re-tuned large-m database into the working tree, build the device binaries, and check that
# the database is current under the patch. The re-tunes that follow need a GPU:
#   bash .device/call.sh H200 570 tune shapes/llama.yaml tuning-db/h200.sqlite   (then the
#   rest of llama.yaml and shapes/llama7b-between.yaml in a second call), and on each GPU
#   tune shapes/decode.yaml and shapes/llama7b-decode-between.yaml into tuning-db/<gpu>-decode.sqlite.
#   bash docs/results/v4.29/land.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=docs/results/v4.29
git apply "$here/tma.patch"
gunzip -c "$here/retune-h100/h100.sqlite.gz" > tuning-db/h100.sqlite
gunzip -c "$here/retune-h100/h100.measurements.jsonl.gz" > tuning-db/h100.measurements.jsonl
cp "$here/retune-h100/h100-report.txt" tuning-db/h100-report.txt
cargo build --release
nmtune=target/release/nmtune
"$nmtune" check-replay --db tuning-db/h100.sqlite --measurements tuning-db/h100.measurements.jsonl
current=$("$nmtune" report --db tuning-db/h100.sqlite --format csv | awk -F, 'NR > 1 && $20 == "true"' | wc -l)
echo "land: $current of 1056 H100 large-m entries current under v4.29"
cargo test --release --no-run --test gpu
mkdir -p .device/bin
cp "$nmtune" .device/bin/nmtune
cp "$(ls -t target/release/deps/gpu-* | grep -v '\.d$' | head -1)" .device/bin/gpu
strip .device/bin/nmtune .device/bin/gpu
