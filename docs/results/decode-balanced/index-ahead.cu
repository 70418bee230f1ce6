// Issue 14, session 54, fourth experiment: the index chain taken off a step's critical path.
//
// columns.cu and prefetch.cu (call2, call3) found that an n = 5120 layer at m = 1 streams what
// its warps keep in flight, and a decode warp's step is a chain: the loads of its B' rows and
// of their index words go out together, then the A values the indices name (from L1/L2),
// then the FMAs. A step therefore lasts a DRAM round trip plus an L2 round trip. Here the
// index words of the next step are loaded during this one (AHEAD = 1), so a step's A loads
// go out with its B' loads and the step lasts one DRAM round trip; AHEAD = 2 also loads the
// next step's A values at the end of this one, so a step's FMAs wait for B' alone.
// AHEAD = 0 is the decode family's loop (columns.cu's kernel at NS = 32 or 64).
#define BALANCED_NO_MAIN
#include "balanced.cu"

namespace idx {

template <int LANES, int NT, int U, int WARPS, int N, int AHEAD>
__global__ void __launch_bounds__(WARPS * 32)
    ahead(const float* A, const float* __restrict__ B, const int* __restrict__ D, float* C, int n,
          int k) {
    constexpr int NS = LANES * NT, RW = 32 / LANES, VEC = NT / 4, M = WINDOW_M;
    static_assert(LANES * RW == 32, "whole lanes");
    __shared__ float red[WARPS][NS];
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = lane / LANES, lc = (lane % LANES) * NT;
    const int col = blockIdx.x * NS + lc, g = col / GROUP_L, q = n / GROUP_L;
    const int w = k / M * N;
    constexpr int STRIDE = WARPS * U * RW;
    // The column of A that row u multiplies (0 past the last row: its B' reads as 0).
    auto column = [&](int u) {
        return u < w ? (u / N) * M + __ldg(D + static_cast<size_t>(u) * q + g) : 0;
    };
    float acc[NT] = {};
    const int first = warp * U * RW;
    int kk[U];
    float a[U];
#pragma unroll
    for (int j = 0; j < U; ++j) kk[j] = AHEAD > 0 ? column(first + j * RW + r) : 0;
    bool waited = false;
    for (int base = first; base < w; base += STRIDE) {
        float4 b[U][VEC];
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const int u = base + j * RW + r;
            const bool ok = u < w;
            if constexpr (AHEAD == 0) kk[j] = column(u);
#pragma unroll
            for (int v = 0; v < VEC; ++v)
                b[j][v] = ok ? __ldcs(reinterpret_cast<const float4*>(
                                   B + static_cast<size_t>(u) * n + col + 4 * v))
                             : make_float4(0, 0, 0, 0);
        }
        if (!waited) {  // the first step's weight loads are out: now wait to read A
            asm volatile("griddepcontrol.wait;\n" ::: "memory");
            waited = true;
            if constexpr (AHEAD == 2) {
#pragma unroll
                for (int j = 0; j < U; ++j) a[j] = __ldca(A + kk[j]);
            }
        }
        float a_now[U];
        int kk_next[U];
#pragma unroll
        for (int j = 0; j < U; ++j) {
            a_now[j] = AHEAD == 2 ? a[j] : __ldca(A + kk[j]);
            if constexpr (AHEAD > 0) kk_next[j] = column(base + STRIDE + j * RW + r);
        }
#pragma unroll
        for (int j = 0; j < U; ++j) {
#pragma unroll
            for (int v = 0; v < VEC; ++v) {
                acc[4 * v + 0] = fmaf(a_now[j], b[j][v].x, acc[4 * v + 0]);
                acc[4 * v + 1] = fmaf(a_now[j], b[j][v].y, acc[4 * v + 1]);
                acc[4 * v + 2] = fmaf(a_now[j], b[j][v].z, acc[4 * v + 2]);
                acc[4 * v + 3] = fmaf(a_now[j], b[j][v].w, acc[4 * v + 3]);
            }
        }
        if constexpr (AHEAD > 0) {
#pragma unroll
            for (int j = 0; j < U; ++j) kk[j] = kk_next[j];
        }
        if constexpr (AHEAD == 2) {
#pragma unroll
            for (int j = 0; j < U; ++j) a[j] = __ldca(A + kk[j]);
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

}  // namespace idx

template <int LANES, int NT, int U, int WARPS, int N, int AHEAD>
void time_ahead(cudaStream_t stream, Data& x, double copy) {
    auto kernel = idx::ahead<LANES, NT, U, WARPS, N, AHEAD>;
    constexpr int NS = LANES * NT;
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, kernel));
    const int copies = static_cast<int>(x.b.size());
    auto one = [&](int i) {
        launch3(stream, kernel, dim3(x.n / NS), WARPS * 32, 0, x.a, x.b[i % copies],
                x.d[i % copies], x.c, x.n, x.k);
    };
    CHECK(cudaMemset(x.c, 0, sizeof(float) * x.n));
    one(0);
    const double err = check(stream, x);
    char label[96];
    snprintf(label, sizeof label, "ns%d nt%d u%d w%d, ahead %d (%d regs)", NS, NT, U, WARPS,
             AHEAD, attr.numRegs);
    report(label, time_bursts(stream, one), x, copy, err);
}

template <int LANES, int NT, int U, int WARPS, int N>
void three(cudaStream_t stream, Data& x, double copy) {
    time_ahead<LANES, NT, U, WARPS, N, 0>(stream, x, copy);
    time_ahead<LANES, NT, U, WARPS, N, 1>(stream, x, copy);
    time_ahead<LANES, NT, U, WARPS, N, 2>(stream, x, copy);
}

template <int N>
void ahead_set(cudaStream_t stream, Data& x, double copy) {
    three<4, 8, 4, 16, N>(stream, x, copy);  // ns32, the winners' lanes
    three<4, 8, 4, 8, N>(stream, x, copy);
    three<8, 8, 4, 16, N>(stream, x, copy);  // ns64
    three<8, 8, 4, 8, N>(stream, x, copy);
    three<8, 4, 4, 16, N>(stream, x, copy);  // ns32 of 4-column lanes
}

struct IndexAheadSet {
    template <int N>
    static void run(cudaStream_t stream, Data& x, int /*sms*/, double copy) {
        ahead_set<N>(stream, x, copy);
    }
};

int main() { return run_problems<IndexAheadSet>(); }
