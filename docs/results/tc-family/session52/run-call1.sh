#!/usr/bin/env bash
# Session 52, call 1 (H200): build t = branch s51-stream-k at ccf4497 (stream-K workers that
# fit the tile kernel's registers, so two-blocks-an-SM and four-warpgroup workers are in
# the space; one acq_rel fence at a split tile's arrival; the first worker's sums kept in
# registers). Its data-parallel and split kernels render the same source as main's.
# tests/gpu_tc.rs of build t, then the warm re-tune of main's committed BF16 and FP16
# databases with it (the steps of scripts/device/retune-tc.sh, which this call ran inline).
# Carried: .dev/s52 (nmtune.gz = build t, gpu_tc.gz, h200-{bf16,f16}.sqlite.gz = main's).
S=.dev/s52 TAG=-t bash scripts/device/retune-tc.sh
