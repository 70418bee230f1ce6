// Issue 14, session 54, third experiment: more of the weight in flight without registers.
//
// columns.cu (call2/columns.txt) found that an n = 5120 layer at m = 1 lacks bytes in flight,
// not balance: one 16-warp block an SM streamed 22.5 GB/s, two 35 GB/s, because a warp's
// loads of one step are all it has in flight (the index, A and the FMAs follow them). Here
// the unsplit decode loop (columns.cu's kernel at NS = 32 or 64) also asks L2 for the lines
// of the rows it will read PF steps later (`prefetch.global.L2`, one lane per 128-byte line
// of B' and per index word), so DRAM works ahead of the registers. PF = 0 is the plain loop.
#define BALANCED_NO_MAIN
#include "balanced.cu"

namespace pref {

__device__ __forceinline__ void prefetch_l2(const void* p) {
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p));
}

template <int LANES, int NT, int U, int WARPS, int N, int PF>
__global__ void __launch_bounds__(WARPS * 32)
    ahead(const float* A, const float* __restrict__ B, const int* __restrict__ D, float* C, int n,
          int k) {
    constexpr int NS = LANES * NT, RW = 32 / LANES, VEC = NT / 4, M = WINDOW_M;
    constexpr int LINE_LANES = 128 / (NT * 4);  // lanes whose columns share a 128-byte line
    static_assert(LANES * RW == 32 && LANES % LINE_LANES == 0, "whole lanes, whole lines");
    __shared__ float red[WARPS][NS];
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = lane / LANES, lc = (lane % LANES) * NT;
    const int col = blockIdx.x * NS + lc, g = col / GROUP_L, q = n / GROUP_L;
    const bool line_lane = (lane % LANES) % LINE_LANES == 0;
    const int w = k / M * N;
    constexpr int STRIDE = WARPS * U * RW;
    float acc[NT] = {};
    bool waited = false;
    for (int base = warp * U * RW; base < w; base += STRIDE) {
        if constexpr (PF > 0) {
#pragma unroll
            for (int j = 0; j < U; ++j) {
                const int u = base + PF * STRIDE + j * RW + r;
                if (u < w && line_lane) prefetch_l2(B + static_cast<size_t>(u) * n + col);
                if (u < w && lane % LANES == 0) prefetch_l2(D + static_cast<size_t>(u) * q + g);
            }
        }
        float4 b[U][VEC];
        int kk[U];
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const int u = base + j * RW + r;
            const bool ok = u < w;
            kk[j] = ok ? (u / N) * M + __ldg(D + static_cast<size_t>(u) * q + g) : 0;
#pragma unroll
            for (int v = 0; v < VEC; ++v)
                b[j][v] = ok ? __ldcs(reinterpret_cast<const float4*>(
                                   B + static_cast<size_t>(u) * n + col + 4 * v))
                             : make_float4(0, 0, 0, 0);
        }
        if (!waited) {
            asm volatile("griddepcontrol.wait;\n" ::: "memory");
            waited = true;
        }
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const float a = __ldca(A + kk[j]);
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
#pragma unroll
    for (int off = LANES; off < 32; off *= 2)
#pragma unroll
        for (int i = 0; i < NT; ++i) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], off);
    if (r == 0)
#pragma unroll
        for (int i = 0; i < NT; ++i) red[warp][lc + i] = acc[i];
    __syncthreads();
    for (int t = threadIdx.x; t < NS; t += WARPS * 32) {
        float s = 0.0f;
        for (int z = 0; z < WARPS; ++z) s += red[z][t];
        C[blockIdx.x * NS + t] = s;
    }
}

}  // namespace pref

template <int LANES, int NT, int U, int WARPS, int N, int PF>
void time_ahead(cudaStream_t stream, Data& x, double copy) {
    auto kernel = pref::ahead<LANES, NT, U, WARPS, N, PF>;
    constexpr int NS = LANES * NT;
    const int copies = static_cast<int>(x.b.size());
    auto one = [&](int i) {
        launch3(stream, kernel, dim3(x.n / NS), WARPS * 32, 0, x.a, x.b[i % copies],
                x.d[i % copies], x.c, x.n, x.k);
    };
    CHECK(cudaMemset(x.c, 0, sizeof(float) * x.n));
    one(0);
    const double err = check(stream, x);
    char label[96];
    snprintf(label, sizeof label, "ns%d nt%d u%d w%d, prefetch %d steps ahead", NS, NT, U, WARPS,
             PF);
    report(label, time_bursts(stream, one), x, copy, err);
}

template <int N>
void ahead_set(cudaStream_t stream, Data& x, double copy) {
    time_ahead<4, 8, 4, 16, N, 0>(stream, x, copy);
    time_ahead<4, 8, 4, 16, N, 1>(stream, x, copy);
    time_ahead<4, 8, 4, 16, N, 2>(stream, x, copy);
    time_ahead<4, 8, 4, 16, N, 4>(stream, x, copy);
    time_ahead<8, 8, 4, 8, N, 0>(stream, x, copy);
    time_ahead<8, 8, 4, 8, N, 1>(stream, x, copy);
    time_ahead<8, 8, 4, 8, N, 2>(stream, x, copy);
    time_ahead<8, 8, 4, 16, N, 0>(stream, x, copy);
    time_ahead<8, 8, 4, 16, N, 1>(stream, x, copy);
    time_ahead<8, 8, 4, 16, N, 2>(stream, x, copy);
    time_ahead<8, 4, 4, 16, N, 0>(stream, x, copy);
    time_ahead<8, 4, 4, 16, N, 2>(stream, x, copy);
}

struct PrefetchSet {
    template <int N>
    static void run(cudaStream_t stream, Data& x, int /*sms*/, double copy) {
        ahead_set<N>(stream, x, copy);
    }
};

int main() { return run_problems<PrefetchSet>(); }
