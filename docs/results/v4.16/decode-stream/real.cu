// Issue 14, session 24: the decode winner's own source (winner.cuh, `nmtune kernel
// nm_spmm_f32_drow_ms1_ns32_ks4_mt1_nt8_w16x1_n4m32l32_nopack_cp1_mb1_sk1 --source`) timed by
// gemv.cu's harness beside gemv.cu's rebuilt loop (mode 3, same shape), on the problem it won:
// 1 × 17920 × 6656 at 4:32. If the two differ, the difference is in the kernel's code; if
// they agree, in how nmtune times it. Then three edits of that source (winner_v*.cuh, written
// by variants.sh, valid for m = 1 only): v1 reads A without the rows predicate, v2 also
// addresses A with 32-bit ints, v3 also drops the split-K row bounds. Outside the build; nvcc
// on the device (run.sh).
#define GEMV_NO_MAIN
#include "gemv.cu"
#include "winner.cuh"
#include "winner_v1.cuh"
#include "winner_v2.cuh"
#include "winner_v3.cuh"

int main() {
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const int n = 17920, k = 6656, nkept = 4;
    Buffers bf = make_buffers(stream, n, k, nkept);
    const int copies = static_cast<int>(bf.b.size());
    float* ws;
    CHECK(cudaMalloc(&ws, sizeof(float) * 16));
    const double mb = (4.0 * bf.w * n + 4.0 * bf.w * (n / GROUP_L)) / 1e6;
    const double copy = 4237.7;  // gemv.cu's copy figure on the H200 (h200-gemv.txt)
    printf("1 x %d x %d at 4:32, %.1f MB; %% of %.1f GB/s\n", n, k, mb, copy);
    for (int round = 0; round < 2; ++round) {
        run<32, 8, 4, 16, 3, 4>(stream, bf, copy);
        using Kernel = void (*)(const float*, const float*, const int*, const int*, const int*,
                                float*, float*, int, int, int, float, float);
        const Kernel kernels[] = {nm_spmm_f32_drow_ms1_ns32_ks4_mt1_nt8_w16x1_n4m32l32_nopack_cp1_mb1_sk1,
                                  nm_spmm_f32_drow_ms1_ns32_ks4_mt1_nt8_w16x1_n4m32l32_nopack_cp1_mb1_sk1_v1,
                                  nm_spmm_f32_drow_ms1_ns32_ks4_mt1_nt8_w16x1_n4m32l32_nopack_cp1_mb1_sk1_v2,
                                  nm_spmm_f32_drow_ms1_ns32_ks4_mt1_nt8_w16x1_n4m32l32_nopack_cp1_mb1_sk1_v3};
        const char* names[] = {"winner's source", "v1 (no rows predicate)", "v2 (+ 32-bit A index)",
                               "v3 (+ no split bounds)"};
        for (int v = 0; v < 4; ++v) {
            for (int pdl = 1; pdl >= (v == 0 ? 0 : 1); --pdl) {
                const double us = time_bursts(stream, [&](int i) {
                    launch(stream, kernels[v], n / 32, 512, 2048, pdl == 1, bf.a, bf.b[i % copies],
                           bf.d[i % copies], nullptr, nullptr, bf.out, ws, 1, n, k, 1.0f, 0.0f);
                });
                printf("  %-24s %s: %8.2f us  %5.1f %% of copy\n", names[v],
                       pdl ? "programmatic" : "plain launch", us, 100.0 * mb * 1e3 / us / copy);
            }
        }
    }
    return 0;
}
