// Issue 14, session 24: where the decode kernel's time goes beyond reading B'. Outside the
// build; nvcc on the device (run.sh). stream.cu showed a kernel with the decode winner's grid
// (560 blocks of 16 warps, 32 columns each) reading the B' of 1 × 17920 × 6656 at 4:32 in
// 14.3 µs, where the winner takes 19.4. Here the winner's loop is rebuilt one piece at a time,
// same grid, same timing rule (bursts of 20 programmatic dependents over rotating weight
// copies, median of 7 bursts), each step adding to the one before:
//   0  B' rows, U steps of loads in registers before use, summed (as stream.cu's strip), with
//      the launch protocol of the decode kernels: the first step's loads, then
//      griddepcontrol.wait (A is the previous layer's output)
//   1  + the row's D word (__ldg), and its column of A computed
//   2  + A read at that column (__ldca) and FMAs into NT accumulators (the decode math)
//   3  + the block's reduction: shuffles, then the warps' sums through shared memory
// D holds random window positions; the results are not checked (stream.cu's kernels neither):
// this measures time only.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CHECK(x)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

constexpr int GROUP_L = 32, WINDOW_M = 32;

// The decode kernels' reduction: lanes with the same columns add with shuffles, then the
// warps' sums meet in shared memory and one thread per column adds them in warp order.
template <int NS, int NT, int WARPS>
__device__ __forceinline__ void block_sums(float (&acc)[NT], float (&red)[WARPS][NS], int warp,
                                           int lane, float* __restrict__ out) {
    constexpr int LANES = NS / NT;
#pragma unroll
    for (int off = LANES; off < 32; off *= 2)
#pragma unroll
        for (int c = 0; c < NT; ++c) acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], off);
    if (lane < LANES)
#pragma unroll
        for (int c = 0; c < NT; ++c) red[warp][lane * NT + c] = acc[c];
    __syncthreads();
    if (threadIdx.x < NS) {
        float s = 0.0f;
        for (int z = 0; z < WARPS; ++z) s += red[z][threadIdx.x];
        out[blockIdx.x * NS + threadIdx.x] = s;
    }
}

template <int NS, int NT, int U, int WARPS, int MODE, int N>
__global__ void __launch_bounds__(WARPS * 32)
    gemv(const float* __restrict__ B, const int* __restrict__ D, const float* A, int w, int n,
         float* __restrict__ out) {
    constexpr int LANES = NS / NT, RW = 32 / LANES, VEC = NT / 4;
    __shared__ float red[WARPS][NS];
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int col = blockIdx.x * NS + (lane % LANES) * NT;
    const int r = lane / LANES, g = col / GROUP_L, q = n / GROUP_L;
    float acc[NT] = {};
    bool waited = false;
    for (int base = warp * U * RW; base < w; base += WARPS * U * RW) {
        float4 b[U][VEC];
        int kk[U];
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const int u = base + j * RW + r;
            const bool ok = u < w;
            kk[j] = MODE >= 1 && ok ? (u / N) * WINDOW_M + __ldg(D + static_cast<size_t>(u) * q + g) : 0;
#pragma unroll
            for (int v = 0; v < VEC; ++v)
                b[j][v] = ok ? __ldcs(reinterpret_cast<const float4*>(B + static_cast<size_t>(u) * n + col + 4 * v))
                             : make_float4(0, 0, 0, 0);
        }
        if (!waited) {
            asm volatile("griddepcontrol.wait;\n" ::: "memory");
            waited = true;
        }
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const float a = MODE >= 2 ? __ldca(A + kk[j]) : MODE == 1 ? static_cast<float>(kk[j]) : 1.0f;
#pragma unroll
            for (int v = 0; v < VEC; ++v) {
                acc[4 * v + 0] = fmaf(a, b[j][v].x, acc[4 * v + 0]);
                acc[4 * v + 1] = fmaf(a, b[j][v].y, acc[4 * v + 1]);
                acc[4 * v + 2] = fmaf(a, b[j][v].z, acc[4 * v + 2]);
                acc[4 * v + 3] = fmaf(a, b[j][v].w, acc[4 * v + 3]);
            }
        }
    }
    if (!waited) asm volatile("griddepcontrol.wait;\n" ::: "memory");
    if constexpr (MODE >= 3) {
        block_sums<NS, NT, WARPS>(acc, red, warp, lane, out);
    } else {
        float s = 0.0f;
#pragma unroll
        for (int c = 0; c < NT; ++c) s += acc[c];
        out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = s;
    }
}

struct Problem {
    const char* name;
    int n, k, nkept;  // C columns, A columns (k), N of N:WINDOW_M
};

template <typename K>
double time_bursts(cudaStream_t stream, K launch_one) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 20; ++i) launch_one(i);
    std::vector<double> t;
    for (int r = 0; r < 7; ++r) {
        CHECK(cudaEventRecord(a, stream));
        for (int i = 0; i < 20; ++i) launch_one(i);
        CHECK(cudaEventRecord(b, stream));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1e3 / 20);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

struct Buffers {
    std::vector<float*> b;
    std::vector<int*> d;
    float* a;
    float* out;
    int w, n, k;
};

// One launch on `stream`, as a programmatic dependent of the kernel before it (pdl) or plainly.
template <typename... Params, typename... Args>
void launch(cudaStream_t stream, void (*kernel)(Params...), int grid, int block, size_t smem,
            bool pdl, Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(block);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute la[1];
    la[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    la[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = la;
    cfg.numAttrs = pdl ? 1 : 0;
    CHECK(cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...));
}

// Time per launch of a kernel with gemv's arguments over bf's rotating weight copies, launched
// as programmatic dependents (the decode rule).
template <typename Kernel>
double time_gemv(cudaStream_t stream, const Buffers& bf, Kernel kernel, int grid, int block) {
    const int copies = static_cast<int>(bf.b.size());
    return time_bursts(stream, [&](int i) {
        launch(stream, kernel, grid, block, 0, true, bf.b[i % copies], bf.d[i % copies], bf.a,
               bf.w, bf.n, bf.out);
    });
}

template <int NS, int NT, int U, int WARPS, int MODE, int N>
void run(cudaStream_t stream, const Buffers& bf, double copy_gbps) {
    auto kernel = gemv<NS, NT, U, WARPS, MODE, N>;
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, kernel));
    const double us = time_gemv(stream, bf, kernel, bf.n / NS, WARPS * 32);
    const double bytes = 4.0 * bf.w * bf.n + 4.0 * bf.w * (bf.n / GROUP_L);
    const double gbps = bytes / (us * 1e-6) / 1e9;
    printf("  ns%d nt%d u%d w%d mode %d: %3d registers  %8.2f us  %7.1f GB/s  %5.1f %% of copy\n", NS, NT,
           U, WARPS, MODE, attr.numRegs, us, gbps, 100.0 * gbps / copy_gbps);
}

template <int NS, int NT, int U, int WARPS, int N>
void modes(cudaStream_t stream, const Buffers& bf, double copy) {
    run<NS, NT, U, WARPS, 0, N>(stream, bf, copy);
    run<NS, NT, U, WARPS, 1, N>(stream, bf, copy);
    run<NS, NT, U, WARPS, 2, N>(stream, bf, copy);
    run<NS, NT, U, WARPS, 3, N>(stream, bf, copy);
}

// B' (zeros: the time is the bytes) and D (random window positions) of a 1 × n × k problem
// at N:32, in enough copies to rotate past L2, with A and an output buffer.
Buffers make_buffers(cudaStream_t stream, int n, int k, int nkept) {
    Buffers bf;
    bf.n = n;
    bf.k = k;
    bf.w = k / WINDOW_M * nkept;
    const size_t bytes = sizeof(float) * bf.w * n;
    const int copies = static_cast<int>((size_t(400) << 20) / bytes) + 1;
    std::mt19937 rng(1);
    std::vector<int> d(static_cast<size_t>(bf.w) * (n / GROUP_L));
    for (auto& x : d) x = static_cast<int>(rng() % WINDOW_M);
    for (int c = 0; c < copies; ++c) {
        float* b;
        int* dd;
        CHECK(cudaMalloc(&b, bytes));
        CHECK(cudaMemsetAsync(b, 0, bytes, stream));
        CHECK(cudaMalloc(&dd, sizeof(int) * d.size()));
        CHECK(cudaMemcpy(dd, d.data(), sizeof(int) * d.size(), cudaMemcpyHostToDevice));
        bf.b.push_back(b);
        bf.d.push_back(dd);
    }
    CHECK(cudaMalloc(&bf.a, sizeof(float) * k));
    CHECK(cudaMemsetAsync(bf.a, 0, sizeof(float) * k, stream));
    CHECK(cudaMalloc(&bf.out, sizeof(float) * 64 * 1024 * 1024));
    return bf;
}

template <int N>
void problem(cudaStream_t stream, int n, int k, double copy) {
    Buffers bf = make_buffers(stream, n, k, N);
    printf("1 x %d x %d at %d:%d (B' %d x %d, %.1f MB with D)\n", n, k, N, WINDOW_M, bf.w, n,
           (4.0 * bf.w * n + 4.0 * bf.w * (n / GROUP_L)) / 1e6);
    modes<32, 8, 4, 16, N>(stream, bf, copy);  // the H200 winner's shape
    modes<32, 4, 4, 16, N>(stream, bf, copy);
    modes<64, 8, 4, 8, N>(stream, bf, copy);
    modes<32, 4, 8, 16, N>(stream, bf, copy);
    for (auto p : bf.b) CHECK(cudaFree(p));
    for (auto p : bf.d) CHECK(cudaFree(p));
    CHECK(cudaFree(bf.a));
    CHECK(cudaFree(bf.out));
}

#ifndef GEMV_NO_MAIN
int main() {
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    // copy_gbps as nmtune measures it: a 1 GiB device-to-device copy, read + write counted.
    const size_t cb = size_t(1) << 30;
    void *s, *t;
    CHECK(cudaMalloc(&s, cb));
    CHECK(cudaMalloc(&t, cb));
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    std::vector<float> ms(5);
    CHECK(cudaMemcpyAsync(t, s, cb, cudaMemcpyDeviceToDevice, stream));
    for (auto& x : ms) {
        CHECK(cudaEventRecord(e0, stream));
        CHECK(cudaMemcpyAsync(t, s, cb, cudaMemcpyDeviceToDevice, stream));
        CHECK(cudaEventRecord(e1, stream));
        CHECK(cudaEventSynchronize(e1));
        CHECK(cudaEventElapsedTime(&x, e0, e1));
    }
    std::sort(ms.begin(), ms.end());
    const double copy = 2.0 * cb / (ms[2] * 1e-3) / 1e9;
    CHECK(cudaFree(s));
    CHECK(cudaFree(t));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s; copy %.1f GB/s\n", prop.name, copy);
    problem<4>(stream, 17920, 6656, copy);
    problem<8>(stream, 11008, 4096, copy);
    problem<16>(stream, 8192, 8192, copy);
    return 0;
}
#endif  // GEMV_NO_MAIN
