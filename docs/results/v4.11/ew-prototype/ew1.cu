// Element-wise N:M (L = 1) prototype, FP32, large m: how close a plain shared-memory kernel
// comes to the bound docs/design.md derives (every FMA reads its own 4-byte A value from shared
// memory: 128 B per SM per clock feed 32 FMAs, a quarter of the FP32 peak). Not part of the
// build; nvcc on the device:  nvcc -O3 -arch=sm_90 ew1.cu -lcublas -o ew1 && ./ew1
//
// C (m×n, row-major) = A (m×k, column-major, the paper's layout, so that a k-row of the A tile
// is a contiguous 16-byte copy) times the weight held as B' (w×n, w = k·N/M, row-major) and D
// (w×n bytes: the window offset of kept row p of column j). A block owns 128 rows of C (a warp's
// 32 lanes × 4 consecutive rows) and WN·NT columns (warp w owns NT of them); it stages one
// pruning window (M rows of k) of A, B' and D per k-step in a cp.async ring. Per kept row p
// and four columns: one broadcast 16-byte load of B', one broadcast 4-byte load of four
// indices, four 16-byte A loads (the lanes read consecutive rows: no bank conflicts), 16 FMAs.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); exit(1);} } while (0)

constexpr int MS = 128;

__device__ __forceinline__ void cp16(void* dst, const void* src) {
    unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int P> __device__ __forceinline__ void wait_group() { asm volatile("cp.async.wait_group %0;\n" ::"n"(P) : "memory"); }

template <int N, int M, int NT, int WN, int STAGES>
__global__ void __launch_bounds__(32 * WN) ew_kernel(const float* __restrict__ A, const float* __restrict__ Bv,
                                                     const uint8_t* __restrict__ D, float* __restrict__ C,
                                                     int m, int n, int k) {
    constexpr int NS = NT * WN, THREADS = 32 * WN, WS = N;
    constexpr int A_FL = M * MS, B_FL = WS * NS, D_FL = (WS * NS + 15) / 16 * 4;
    constexpr int STAGE_FL = A_FL + B_FL + D_FL;
    extern __shared__ float4 smem4[];
    float* sm = reinterpret_cast<float*>(smem4);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int bm = blockIdx.y * MS, bn = blockIdx.x * NS;
    const int windows = k / M;
    auto issue = [&](int win, int s) {
        float* st = sm + s * STAGE_FL;
        for (int e = tid; e < M * MS / 4; e += THREADS) {
            const int col = e / (MS / 4), v = e % (MS / 4);
            cp16(st + col * MS + 4 * v, A + static_cast<size_t>(win * M + col) * m + bm + 4 * v);
        }
        for (int e = tid; e < WS * NS / 4; e += THREADS) {
            const int r = e / (NS / 4), v = e % (NS / 4);
            cp16(st + A_FL + r * NS + 4 * v, Bv + static_cast<size_t>(win * WS + r) * n + bn + 4 * v);
        }
        uint8_t* ds = reinterpret_cast<uint8_t*>(st + A_FL + B_FL);
        for (int e = tid; e < WS * NS / 16; e += THREADS) {
            const int r = e / (NS / 16), v = e % (NS / 16);
            cp16(ds + r * NS + 16 * v, D + static_cast<size_t>(win * WS + r) * n + bn + 16 * v);
        }
    };
    float acc[4][NT];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int j = 0; j < NT; ++j) acc[r][j] = 0.f;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < windows) issue(s, s);
        commit();
    }
    for (int win = 0; win < windows; ++win) {
        const int ahead = win + STAGES - 1;
        if (ahead < windows) issue(ahead, ahead % STAGES);
        commit();
        wait_group<STAGES - 1>();
        __syncthreads();
        const float* st = sm + (win % STAGES) * STAGE_FL;
        const float* As = st + 4 * lane;
        const float* Bs = st + A_FL + warp * NT;
        const uint8_t* Ds = reinterpret_cast<const uint8_t*>(st + A_FL + B_FL) + warp * NT;
#pragma unroll
        for (int p = 0; p < WS; ++p) {
#pragma unroll
            for (int j4 = 0; j4 < NT / 4; ++j4) {
                const float4 b = *reinterpret_cast<const float4*>(Bs + p * NS + 4 * j4);
                const uint32_t d4 = *reinterpret_cast<const uint32_t*>(Ds + p * NS + 4 * j4);
                const float bq[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const int d = (d4 >> (8 * q)) & 0xff;
                    const float4 a = *reinterpret_cast<const float4*>(As + d * MS);
                    acc[0][4 * j4 + q] = fmaf(a.x, bq[q], acc[0][4 * j4 + q]);
                    acc[1][4 * j4 + q] = fmaf(a.y, bq[q], acc[1][4 * j4 + q]);
                    acc[2][4 * j4 + q] = fmaf(a.z, bq[q], acc[2][4 * j4 + q]);
                    acc[3][4 * j4 + q] = fmaf(a.w, bq[q], acc[3][4 * j4 + q]);
                }
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        float* row = C + static_cast<size_t>(bm + 4 * lane + r) * n + bn + warp * NT;
#pragma unroll
        for (int j = 0; j < NT; j += 4)
            *reinterpret_cast<float4*>(row + j) = make_float4(acc[r][j], acc[r][j + 1], acc[r][j + 2], acc[r][j + 3]);
    }
}

struct Problem {
    int m, n, k, N, M;
};

template <int N, int NT, int WN, int STAGES>
float run(const Problem& p, const float* A, const float* B, const uint8_t* D, float* C, int runs) {
    constexpr int M = 32, NS = NT * WN, WS = N;
    constexpr int STAGE_FL = M * MS + WS * NS + (WS * NS + 15) / 16 * 4;
    const size_t smem = static_cast<size_t>(STAGES) * STAGE_FL * 4;
    auto kern = ew_kernel<N, M, NT, WN, STAGES>;
    CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    dim3 grid(p.n / NS, p.m / MS), block(32 * WN);
    std::vector<float> ms;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int i = 0; i < runs + 2; ++i) {
        cudaEventRecord(e0);
        kern<<<grid, block, smem>>>(A, B, D, C, p.m, p.n, p.k);
        cudaEventRecord(e1);
        CHECK(cudaEventSynchronize(e1));
        float t;
        cudaEventElapsedTime(&t, e0, e1);
        if (i >= 2) ms.push_back(t);
    }
    CHECK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

int main() {
    int dev = 0, sms = 0, clock_khz = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, dev);
    const double bound_fma_per_s = 32.0 * sms * clock_khz * 1e3;  // shared memory: 32 FMAs/clk/SM
    printf("%s, %d SMs, %.0f MHz: shared-memory bound %.2f T useful FMA/s (%.1f TFLOP/s)\n", prop.name, sms,
           clock_khz / 1e3, bound_fma_per_s / 1e12, 2 * bound_fma_per_s / 1e12);
    cublasHandle_t blas;
    cublasCreate(&blas);
    const int runs = 20;
    for (int n_keep : {4, 8, 16}) {
        Problem p{4096, 4096, 4096, n_keep, 32};
        const int w = p.k / p.M * p.N;
        std::mt19937 rng(42 + n_keep);
        std::uniform_real_distribution<float> u(-1.f, 1.f);
        std::vector<float> a(static_cast<size_t>(p.m) * p.k), b(static_cast<size_t>(w) * p.n);
        std::vector<uint8_t> d(static_cast<size_t>(w) * p.n);
        for (auto& x : a) x = u(rng);
        for (auto& x : b) x = u(rng);
        std::vector<int> perm(p.M);
        for (int win = 0; win < p.k / p.M; ++win)
            for (int j = 0; j < p.n; ++j) {
                for (int i = 0; i < p.M; ++i) perm[i] = i;
                std::shuffle(perm.begin(), perm.end(), rng);
                std::sort(perm.begin(), perm.begin() + p.N);
                for (int q = 0; q < p.N; ++q) d[static_cast<size_t>(win * p.N + q) * p.n + j] = perm[q];
            }
        float *A, *B, *C, *Bd, *Cd;
        uint8_t* D;
        CHECK(cudaMalloc(&A, a.size() * 4));
        CHECK(cudaMalloc(&B, b.size() * 4));
        CHECK(cudaMalloc(&D, d.size()));
        CHECK(cudaMalloc(&C, static_cast<size_t>(p.m) * p.n * 4));
        CHECK(cudaMalloc(&Bd, static_cast<size_t>(p.k) * p.n * 4));
        CHECK(cudaMalloc(&Cd, static_cast<size_t>(p.m) * p.n * 4));
        CHECK(cudaMemcpy(A, a.data(), a.size() * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(B, b.data(), b.size() * 4, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(D, d.data(), d.size(), cudaMemcpyHostToDevice));
        CHECK(cudaMemset(Bd, 0, static_cast<size_t>(p.k) * p.n * 4));
        // cuBLAS SGEMM on a dense k×n weight, same shape (values do not change its time).
        std::vector<float> ms;
        const float one = 1.f, zero = 0.f;
        for (int i = 0; i < runs + 2; ++i) {
            cudaEvent_t e0, e1;
            cudaEventCreate(&e0);
            cudaEventCreate(&e1);
            cudaEventRecord(e0);
            cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, &one, Bd, p.n, A, p.k, &zero, Cd, p.n);
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            float t;
            cudaEventElapsedTime(&t, e0, e1);
            if (i >= 2) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const float cublas_ms = ms[ms.size() / 2];
        const double fmas = static_cast<double>(p.m) * p.n * p.k * p.N / p.M;
        auto report = [&](const char* name, float t) {
            // Check 64 rows against the CPU.
            std::vector<float> c(static_cast<size_t>(p.m) * p.n);
            CHECK(cudaMemcpy(c.data(), C, c.size() * 4, cudaMemcpyDeviceToHost));
            double err = 0, ref = 0;
            for (int i = 0; i < p.m; i += p.m / 64)
                for (int j = 0; j < p.n; ++j) {
                    double s = 0;
                    for (int q = 0; q < w; ++q)
                        s += static_cast<double>(a[static_cast<size_t>((q / p.N) * p.M + d[static_cast<size_t>(q) * p.n + j]) * p.m + i]) *
                             b[static_cast<size_t>(q) * p.n + j];
                    err = std::max(err, std::abs(s - c[static_cast<size_t>(i) * p.n + j]));
                    ref = std::max(ref, std::abs(s));
                }
            printf("  %d:32 %-22s %8.1f us  %6.2f T FMA/s = %5.1f%% of the bound  cuBLAS %8.1f us  speed-up %.2fx (bound %.2fx)  max err %.1e (of %.1f)\n",
                   p.N, name, t * 1e3, fmas / (t * 1e-3) / 1e12, 100 * fmas / (t * 1e-3) / bound_fma_per_s,
                   cublas_ms * 1e3, cublas_ms / t, cublas_ms * 1e-3 * bound_fma_per_s / fmas, err, ref);
        };
#define RUN(NK, NT, WN, ST)                                                                         \
    if (n_keep == NK) report("nt" #NT " wn" #WN " st" #ST, run<NK, NT, WN, ST>(p, A, B, D, C, runs));
        RUN(4, 8, 4, 2) RUN(4, 16, 4, 2) RUN(4, 16, 4, 3) RUN(4, 16, 8, 3) RUN(4, 8, 8, 3)
        RUN(8, 8, 4, 2) RUN(8, 16, 4, 2) RUN(8, 16, 4, 3) RUN(8, 16, 8, 3) RUN(8, 8, 8, 3)
        RUN(16, 8, 4, 2) RUN(16, 16, 4, 2) RUN(16, 16, 4, 3) RUN(16, 16, 8, 3) RUN(16, 8, 8, 3)
        cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(D); cudaFree(Bd); cudaFree(Cd);
    }
    return 0;
}
