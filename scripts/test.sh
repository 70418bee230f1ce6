#!/usr/bin/env bash
# The test command of the README: every test, with NVRTC present so that every kernel
# configuration the generator can emit is compiled (GPU tests skip visibly without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/nvrtc-env.sh
export NMTUNE_REQUIRE_NVRTC=1
export NMTUNE_CACHE_DIR="${NMTUNE_CACHE_DIR:-$PWD/target/nvrtc-cache}"
cargo test --release --all-targets "$@" -- --nocapture
