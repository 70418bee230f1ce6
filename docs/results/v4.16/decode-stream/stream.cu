// Issue 14: how fast can a decode kernel read a row-major B' at all? Outside the build; nvcc on
// the device (run.sh). Every kernel reads a rows × n FP32 matrix laid out as B' is (row-major,
// row stride n floats) once and writes one float per thread (so nothing is optimised away).
// The weight rotates over enough copies that no launch finds it in L2, and the launches run in
// bursts of 20 as programmatic dependents of each other, as the tuner times decode kernels
// (src/tuner/measure.rs): the figure is the burst's time per launch. Compared with a
// device-to-device cudaMemcpy of 1 GiB timed the same way as the tuner's copy_gbps.
//
//   seq        the matrix as one contiguous stream, float4 per lane, U loads per lane in flight
//   strip      what the decode family does: block x owns NSF columns (NSF·4 bytes of every
//              row), a warp step covers 32/(NSF/4) rows, U steps' loads in registers before
//              use; grid = n / NSF blocks ("ragged": as many blocks as strips) or one block per
//              resident slot looping over strips ("whole": whole waves)
//   async      strip, with the U steps' loads as 16-byte cp.async into a ring of STAGES steps in
//              shared memory, each lane reading back only what it copied (no barrier): bytes in
//              flight without registers
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

__device__ __forceinline__ void let_next_grid_launch() {
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

__device__ __forceinline__ float sum4(float4 v) { return v.x + v.y + v.z + v.w; }

template <int U>
__global__ void __launch_bounds__(256) seq(const float4* __restrict__ w, size_t vecs,
                                           float* __restrict__ out) {
    let_next_grid_launch();
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    float s = 0.0f;
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + (U - 1) * stride < vecs; i += U * stride) {
        float4 v[U];
#pragma unroll
        for (int j = 0; j < U; ++j) v[j] = __ldcs(w + i + j * stride);
#pragma unroll
        for (int j = 0; j < U; ++j) s += sum4(v[j]);
    }
    for (; i < vecs; i += stride) s += sum4(__ldcs(w + i));
    out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = s;
}

// One strip: lanes of a row segment (LANES = NSF/4, one float4 each), RW rows per warp step.
template <int NSF, int U, int WARPS>
__device__ __forceinline__ float strip_regs(const float* __restrict__ w, int rows, int n,
                                            int strip) {
    constexpr int LANES = NSF / 4;
    constexpr int RW = 32 / LANES;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int col = strip * NSF + (lane % LANES) * 4;
    const int r = lane / LANES;
    float s = 0.0f;
    for (int base = warp * U * RW; base < rows; base += WARPS * U * RW) {
        float4 v[U];
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const int u = base + j * RW + r;
            v[j] = u < rows ? __ldcs(reinterpret_cast<const float4*>(
                                  w + static_cast<size_t>(u) * n + col))
                            : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int j = 0; j < U; ++j) s += sum4(v[j]);
    }
    return s;
}

template <int NSF, int U, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) strip(const float* __restrict__ w, int rows, int n,
                                                    float* __restrict__ out) {
    let_next_grid_launch();
    float s = 0.0f;
    for (int x = blockIdx.x; x < n / NSF; x += gridDim.x) s += strip_regs<NSF, U, WARPS>(w, rows, n, x);
    out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = s;
}

__device__ __forceinline__ void cp16(void* smem, const void* g, bool ok) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(g),
                 "r"(ok ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int K>
__device__ __forceinline__ void wait_groups() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(K) : "memory");
}

// strip through a per-lane ring of STAGES steps of U float4 in shared memory.
template <int NSF, int U, int STAGES, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) async_strip(const float* __restrict__ w, int rows,
                                                          int n, float* __restrict__ out) {
    constexpr int LANES = NSF / 4;
    constexpr int RW = 32 / LANES;
    extern __shared__ float4 ring[];  // [STAGES][U][THREADS]
    let_next_grid_launch();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = lane / LANES;
    float s = 0.0f;
    auto slot = [&](int stage, int j) -> float4* {
        return &ring[(stage * U + j) * WARPS * 32 + threadIdx.x];
    };
    for (int x = blockIdx.x; x < n / NSF; x += gridDim.x) {
        const int col = x * NSF + (lane % LANES) * 4;
        const int first = warp * U * RW, step = WARPS * U * RW;
        auto issue = [&](int stage, int base) {
#pragma unroll
            for (int j = 0; j < U; ++j) {
                const int u = base + j * RW + r;
                const bool ok = u < rows;
                cp16(slot(stage, j), w + static_cast<size_t>(ok ? u : 0) * n + col, ok);
            }
            commit();
        };
#pragma unroll
        for (int p = 0; p < STAGES - 1; ++p) issue(p, first + p * step);
        int stage = 0;
        for (int base = first; base < rows; base += step) {
            issue((stage + STAGES - 1) % STAGES, base + (STAGES - 1) * step);
            wait_groups<STAGES - 1>();
#pragma unroll
            for (int j = 0; j < U; ++j) s += sum4(*slot(stage, j));
            stage = (stage + 1) % STAGES;
        }
        wait_groups<0>();  // the ring is reused by the next strip
    }
    out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = s;
}

struct Setup {
    int rows, n, copies;
    std::vector<float*> w;
    float* out;
    cudaStream_t stream;
};

template <typename K, typename... Args>
void launch(const Setup& st, K kernel, int grid, int block, size_t smem, Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(block);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st.stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

// Median over `bursts` of the time per launch of bursts of 20 launches (µs).
template <typename F>
double time_bursts(const Setup& st, F one, int bursts = 7) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    for (int i = 0; i < 20; ++i) one(i);  // warm-up
    std::vector<double> t;
    for (int r = 0; r < bursts; ++r) {
        CHECK(cudaEventRecord(a, st.stream));
        for (int i = 0; i < 20; ++i) one(i);
        CHECK(cudaEventRecord(b, st.stream));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1e3 / 20);
    }
    std::sort(t.begin(), t.end());
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    return t[t.size() / 2];
}

double copy_gbps(cudaStream_t stream) {
    const size_t bytes = size_t(1) << 30;
    void *src, *dst;
    CHECK(cudaMalloc(&src, bytes));
    CHECK(cudaMalloc(&dst, bytes));
    CHECK(cudaMemsetAsync(src, 1, bytes, stream));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    std::vector<double> t;
    for (int r = 0; r < 5; ++r) {
        CHECK(cudaEventRecord(a, stream));
        CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
        CHECK(cudaEventRecord(b, stream));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    CHECK(cudaFree(src));
    CHECK(cudaFree(dst));
    return 2.0 * bytes / (t[2] * 1e-3) / 1e9;
}

int sms;
double copy;

void report(const Setup& st, const char* what, double us) {
    const double bytes = 4.0 * st.rows * st.n;
    const double gbps = bytes / (us * 1e-6) / 1e9;
    printf("%-44s rows %5d n %6d  %8.2f us  %7.1f GB/s  %5.1f %% of copy\n", what, st.rows, st.n,
           us, gbps, 100.0 * gbps / copy);
}

template <int NSF, int U, int WARPS>
void run_strip(const Setup& st, bool whole) {
    auto k = strip<NSF, U, WARPS>;
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, WARPS * 32, 0));
    const int strips = st.n / NSF;
    const int grid = whole ? std::min(strips, per_sm * sms) : strips;
    const double us = time_bursts(st, [&](int i) {
        launch(st, k, grid, WARPS * 32, 0, (const float*)st.w[i % st.copies], st.rows, st.n, st.out);
    });
    char name[96];
    snprintf(name, sizeof name, "strip ns%d u%d w%d %s (%d x %d/SM)", NSF, U, WARPS,
             whole ? "whole" : "ragged", grid, per_sm);
    report(st, name, us);
}

template <int NSF, int U, int STAGES, int WARPS>
void run_async(const Setup& st, bool whole) {
    auto k = async_strip<NSF, U, STAGES, WARPS>;
    const size_t smem = sizeof(float4) * STAGES * U * WARPS * 32;
    CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, WARPS * 32, smem));
    const int strips = st.n / NSF;
    const int grid = whole ? std::min(strips, per_sm * sms) : strips;
    const double us = time_bursts(st, [&](int i) {
        launch(st, k, grid, WARPS * 32, smem, (const float*)st.w[i % st.copies], st.rows, st.n,
               st.out);
    });
    char name[96];
    snprintf(name, sizeof name, "async ns%d u%d s%d w%d %s (%d x %d/SM)", NSF, U, STAGES, WARPS,
             whole ? "whole" : "ragged", grid, per_sm);
    report(st, name, us);
}

template <int U>
void run_seq(const Setup& st, int blocks_per_sm) {
    const size_t vecs = static_cast<size_t>(st.rows) * st.n / 4;
    const int grid = blocks_per_sm * sms;
    const double us = time_bursts(st, [&](int i) {
        launch(st, seq<U>, grid, 256, 0, (const float4*)st.w[i % st.copies], vecs, st.out);
    });
    char name[96];
    snprintf(name, sizeof name, "seq u%d (%d x 256)", U, grid);
    report(st, name, us);
}

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    sms = prop.multiProcessorCount;
    Setup st;
    CHECK(cudaStreamCreateWithFlags(&st.stream, cudaStreamNonBlocking));
    copy = copy_gbps(st.stream);
    printf("%s, %d SMs, L2 %d MB; cudaMemcpy D2D 1 GiB: %.1f GB/s\n", prop.name, sms,
           prop.l2CacheSize >> 20, copy);
    CHECK(cudaMalloc(&st.out, sizeof(float) * 64 * 1024 * 1024));
    // (rows, n): B' of 17920 x 6656 at 4:32 (the H200's worst decode miss), 4096² at 16:32,
    // 11008 x 4096 at 8:32.
    const int shapes[][2] = {{832, 17920}, {2048, 4096}, {1024, 11008}};
    for (auto& sh : shapes) {
        st.rows = sh[0];
        st.n = sh[1];
        const size_t bytes = sizeof(float) * st.rows * st.n;
        st.copies = static_cast<int>((size_t(400) << 20) / bytes) + 1;
        st.w.resize(st.copies);
        for (auto& p : st.w) {
            CHECK(cudaMalloc(&p, bytes));
            CHECK(cudaMemsetAsync(p, 0, bytes, st.stream));
        }
        run_seq<4>(st, 4);
        run_seq<8>(st, 4);
        run_seq<8>(st, 8);
        for (bool whole : {false, true}) {
            run_strip<32, 4, 16>(st, whole);
            run_strip<32, 8, 16>(st, whole);
            run_strip<32, 8, 8>(st, whole);
            run_strip<64, 8, 8>(st, whole);
            run_strip<128, 8, 8>(st, whole);
            run_async<32, 4, 4, 8>(st, whole);
            run_async<32, 4, 8, 8>(st, whole);
            run_async<32, 8, 4, 8>(st, whole);
            run_async<64, 4, 4, 8>(st, whole);
            run_async<64, 8, 4, 8>(st, whole);
            run_async<128, 4, 4, 8>(st, whole);
            run_async<128, 8, 4, 4>(st, whole);
        }
        for (auto p : st.w) CHECK(cudaFree(p));
    }
    return 0;
}
