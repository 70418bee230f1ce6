#!/usr/bin/env bash
# Session 52, call 6 (H200): the shared A tile, second prototype (branch s52-union at
# 0376c3c: call 5's with wait<0> after each stage's wgmma, so that ptxas no longer serialises
# them, its C7513): the steps of run-call5.sh on that build.
# Carried: .dev/s52v (gpu_tc.gz, tc_bench.gz of the branch).
S=.dev/s52v TAG=v bash docs/results/tc-family/session52/run-call5.sh
