// What the tensor-core prototypes share (tc0.cu, tc1.cu): error checks, pruning of a random
// weight to vector-wise N:M, timing, the two error measures against the CPU reference and
// cuBLAS, and the mbarrier helpers of their pipelines. Outside the build, included by each
// prototype's nvcc command line.
#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)
#define CHECK_BLAS(x)                                                       \
    do {                                                                    \
        cublasStatus_t s_ = (x);                                            \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                  \
            fprintf(stderr, "%s:%d %s: status %d\n", __FILE__, __LINE__, #x, (int)s_); \
            exit(1);                                                        \
        }                                                                   \
    } while (0)

using bf16 = __nv_bfloat16;

// Device side shared by the prototypes' mbarrier pipelines (tc0.cu's and tc1.cu's MBAR).
namespace pipe {
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// mbarriers (MBAR): a stage is full when every thread's copies into it have landed, and empty
// again when every warp has read it.
__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}
// Arrives on `bar` once all of this thread's earlier cp.async copies have completed.
__device__ __forceinline__ void mbar_arrive_copies(uint64_t* bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_u32(bar))
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(
                     smem_u32(bar))
                 : "memory");
}
// Thread 0 sets up the ring's `full` and `empty` mbarriers (`stages` of each), then the block
// waits for it: `full` completes when `full_count` threads' copies have landed, `empty` when
// `empty_count` warps have released the stage.
__device__ __forceinline__ void init_ring(uint64_t* full, uint64_t* empty, int stages,
                                          int full_count, int empty_count) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbar_init(&full[s], full_count);
            mbar_init(&empty[s], empty_count);
        }
    }
    __syncthreads();
}
// Waits until the phase of `bar` with this parity has completed. A wait that never ends (a
// deadlocked prototype: session 43's first producer kernel asked for more registers than its
// block had released, and its consumers waited for them for the rest of the call) traps after
// 2^22 failed tries, many orders more than any real stage takes, so the process fails at once
// instead of holding the GPU until the call's timeout.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, int parity) {
    uint32_t done = 0;
    for (uint32_t tries = 0; !done; ++tries) {
        if (tries == (1u << 22)) __trap();
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(smem_u32(bar)), "r"(parity)
            : "memory");
    }
}
}  // namespace pipe

// A configuration whose shared memory exceeds what a block may opt into on this GPU is
// reported and skipped, not fatal: the list of shapes is the same on every device.
static bool smem_fits(size_t bytes) {
    int dev = 0, limit = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (bytes <= static_cast<size_t>(limit)) return true;
    printf("skipped: needs %zu bytes of shared memory, a block may have %d\n", bytes, limit);
    return false;
}

struct Sparse {
    std::vector<bf16> values;  // w×n
    std::vector<int> index;    // w×q
    std::vector<bf16> dense;   // k×n, pruned (zeros where dropped), for cuBLAS and the check
};

// Keep the N rows of largest |sum| over the group's L columns in every window of M rows.
static Sparse prune(const std::vector<float>& W, int k, int n, int N, int M, int L) {
    const int w = k / M * N, q = n / L;
    Sparse s{std::vector<bf16>(static_cast<size_t>(w) * n), std::vector<int>(static_cast<size_t>(w) * q),
             std::vector<bf16>(static_cast<size_t>(k) * n, __float2bfloat16(0.0f))};
    std::vector<int> order(M);
    for (int g = 0; g < q; ++g)
        for (int win = 0; win < k / M; ++win) {
            std::vector<float> score(M, 0.0f);
            for (int r = 0; r < M; ++r)
                for (int c = 0; c < L; ++c)
                    score[r] += std::fabs(W[static_cast<size_t>(win * M + r) * n + g * L + c]);
            for (int r = 0; r < M; ++r) order[r] = r;
            std::partial_sort(order.begin(), order.begin() + N, order.end(),
                              [&](int a, int b) { return score[a] > score[b]; });
            std::sort(order.begin(), order.begin() + N);
            for (int j = 0; j < N; ++j) {
                const int u = win * N + j, kk = win * M + order[j];
                s.index[static_cast<size_t>(u) * q + g] = order[j];
                for (int c = 0; c < L; ++c) {
                    const bf16 v = __float2bfloat16(W[static_cast<size_t>(kk) * n + g * L + c]);
                    s.values[static_cast<size_t>(u) * n + g * L + c] = v;
                    s.dense[static_cast<size_t>(kk) * n + g * L + c] = v;
                }
            }
        }
    return s;
}

template <typename F>
static float median_ms(int runs, F launch) {
    std::vector<float> t(runs);
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    launch();
    launch();
    CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < runs; ++i) {
        CHECK(cudaEventRecord(a));
        launch();
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        CHECK(cudaEventElapsedTime(&t[i], a, b));
    }
    std::sort(t.begin(), t.end());
    return t[runs / 2];
}

// Relative L2 errors of C (bf16, m×n row-major): against a double-precision CPU sum of the
// same rounded values on 64 rows, reading the compressed form (B', D) as nmtune's CPU
// reference does, and over all of C against cuBLAS on the dense pruned weight (which checks
// the compression as well). A is column-major.
struct Errors {
    double cpu, cublas;
};
static Errors errors(const std::vector<bf16>& Ah, const Sparse& sp, const std::vector<bf16>& Ch,
                     const std::vector<bf16>& Cr, int m, int n, int k, int N, int M, int L) {
    const int w = k / M * N, q = n / L;
    double num = 0, den = 0;
    std::vector<double> sum(n);
    for (int t = 0; t < 64; ++t) {
        const int i = (t * 997) % m;
        std::fill(sum.begin(), sum.end(), 0.0);
        for (int u = 0; u < w; ++u)
            for (int g = 0; g < q; ++g) {
                const int kk = (u / N) * M + sp.index[static_cast<size_t>(u) * q + g];
                const double a = __bfloat162float(Ah[static_cast<size_t>(kk) * m + i]);
                for (int c = 0; c < L; ++c)
                    sum[g * L + c] += a * __bfloat162float(sp.values[static_cast<size_t>(u) * n + g * L + c]);
            }
        for (int j = 0; j < n; ++j) {
            const double d = __bfloat162float(Ch[static_cast<size_t>(i) * n + j]) - sum[j];
            num += d * d;
            den += sum[j] * sum[j];
        }
    }
    double bn = 0, bd = 0;
    for (size_t i = 0; i < Ch.size(); ++i) {
        const double r = __bfloat162float(Cr[i]);
        const double d = __bfloat162float(Ch[i]) - r;
        bn += d * d;
        bd += r * r;
    }
    return {std::sqrt(num / den), std::sqrt(bn / bd)};
}
