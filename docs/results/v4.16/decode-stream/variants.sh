#!/usr/bin/env bash
# The three edits of the winner's rendered source that real.cu times (winner_v1.cuh …
# winner_v3.cuh, written into the directory $1; each valid for m = 1 only): v1 reads A without the
# rows predicate, v2 also indexes A with 32-bit ints, v3 also drops the split-K row bounds.
# Each renames the kernel and its namespace so that all four link into one program.
set -eu
here=$(dirname "$0")
out=$1
mkdir -p "$out"
K=nm_spmm_f32_drow_ms1_ns32_ks4_mt1_nt8_w16x1_n4m32l32_nopack_cp1_mb1_sk1
rename() { sed -e "s/namespace nmd/namespace nmd$1/; s/using namespace nmd;/using namespace nmd$1;/; s/nmd::/nmd$1::/g; s/${K}/${K}_v$1/g"; }
unpredicated='s/a\[i\] = i < rows ? __ldca(A + at) : 0.0f;/a[i] = __ldca(A + at);/'
index32='s/a\[i\] = i < rows ? __ldca(A + at) : 0.0f;/a[i] = __ldca(A + static_cast<int>(at));/; s/const size_t at = A_COL ? static_cast<size_t>(kk) \* m + row0 + i/const int at = A_COL ? kk * m + row0 + i/; s/: static_cast<size_t>(row0 + i) \* k + kk;/: (row0 + i) * k + kk;/'
nobounds='s/const int start = min(w, static_cast<int>(blockIdx.z) \* per \* N);/const int start = 0;/; s/const int end = min(w, start + per \* N);/const int end = w;/'
rename 1 < "$here/winner.cuh" | sed -e "$unpredicated" > "$out/winner_v1.cuh"
rename 2 < "$here/winner.cuh" | sed -e "$index32" > "$out/winner_v2.cuh"
rename 3 < "$here/winner.cuh" | sed -e "$index32" -e "$nobounds" > "$out/winner_v3.cuh"
