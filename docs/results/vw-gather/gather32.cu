// Issue 14, session 55: does the vector-wise decode loop (L = 32) gain from gathering A by
// warp shuffles, as the element-wise one did (docs/results/ew-dpanel/gather.cu: 9–15 %)?
// Outside the build; nvcc on the device (run.sh). The harness, problems and committed
// winners are session 54's (docs/results/decode-balanced/balanced.cu, `run_problems`).
//
// The loop is the decode family's unsplit one (columns.cu's, whole power-of-two lane
// counts): U rows of B' and D a lane, then per row one A value, read either through L1
// (AMODE 1: __ldca(A + window·32 + D), as the template) or by shuffles (AMODE 2: the lane
// loads its column of the one or two pruning windows each step of RW rows touches, before
// it reads D; a row's A is __shfl_sync from the lane its D entry names). Same grid, block
// and launch protocol both ways; results checked against the CPU reference.
#define BALANCED_NO_MAIN
#include "balanced.cu"

namespace vwg {

__host__ __device__ constexpr int step_windows(int rw, int n) {
    return n % rw == 0 ? 1 : rw % n == 0 ? rw / n : rw / n + 2;
}

template <int LANES, int NT, int U, int WARPS, int AMODE, int N>
__global__ void __launch_bounds__(WARPS * 32)
    gather(const float* A, const float* __restrict__ B, const int* __restrict__ D, float* C,
           int n, int k) {
    constexpr int NS = LANES * NT, RW = 32 / LANES, VEC = NT / 4, M = WINDOW_M;
    constexpr int SW = step_windows(RW, N);
    static_assert(32 % LANES == 0 && SW <= 2, "whole lanes, one or two windows a step");
    __shared__ float red[WARPS * RW][NS];
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = lane / LANES, lc = (lane % LANES) * NT;
    const int col = blockIdx.x * NS + lc, g = col / GROUP_L, q = n / GROUP_L;
    const bool has_cols = col < n;
    const int w = k / M * N;
    float acc[NT] = {};
    bool waited = false;
    for (int base = warp * U * RW; base < w; base += WARPS * U * RW) {
        float4 b[U][VEC];
        int d[U];
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const int u = base + j * RW + r;
            const bool ok = has_cols && u < w;
            d[j] = ok ? __ldg(D + static_cast<size_t>(u) * q + g) : 0;
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
        float win[U][SW];
        if (AMODE == 2) {
#pragma unroll
            for (int j = 0; j < U; ++j)
#pragma unroll
                for (int s = 0; s < SW; ++s) {
                    const int kk = ((base + j * RW) / N + s) * M + lane;
                    win[j][s] = kk < k ? __ldca(A + kk) : 0.0f;
                }
        }
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const int u = base + j * RW + r;
            float a;
            if (AMODE == 1) {
                a = __ldca(A + (u / N) * M + d[j]);
            } else {
                const int own = u / N - (base + j * RW) / N;
                a = __shfl_sync(0xffffffffu, win[j][0], d[j]);
#pragma unroll
                for (int s = 1; s < SW; ++s) {
                    const float other = __shfl_sync(0xffffffffu, win[j][s], d[j]);
                    a = own == s ? other : a;
                }
            }
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
    for (int i = 0; i < NT; ++i) red[warp * RW + r][lc + i] = acc[i];
    __syncthreads();
    for (int t = threadIdx.x; t < NS; t += WARPS * 32) {
        if (blockIdx.x * NS + t >= n) continue;
        float s = 0.0f;
        for (int z = 0; z < WARPS * RW; ++z) s += red[z][t];
        C[blockIdx.x * NS + t] = s;
    }
}

}  // namespace vwg

template <int LANES, int NT, int U, int WARPS, int AMODE, int N>
void time_gather(cudaStream_t stream, Data& x, double copy) {
    auto kernel = vwg::gather<LANES, NT, U, WARPS, AMODE, N>;
    constexpr int NS = LANES * NT;
    const int copies = static_cast<int>(x.b.size());
    const int blocks = (x.n + NS - 1) / NS;
    auto one = [&](int i) {
        launch3(stream, kernel, dim3(blocks), WARPS * 32, 0, x.a, x.b[i % copies], x.d[i % copies],
                x.c, x.n, x.k);
    };
    CHECK(cudaMemset(x.c, 0, sizeof(float) * x.n));
    one(0);
    const double err = check(stream, x);
    char label[96];
    snprintf(label, sizeof label, "ns%d nt%d u%d w%d, A %s", NS, NT, U, WARPS,
             AMODE == 1 ? "__ldca" : "shuffles");
    report(label, time_bursts(stream, one), x, copy, err);
}

template <int LANES, int NT, int U, int WARPS, int N>
void both(cudaStream_t stream, Data& x, double copy) {
    time_gather<LANES, NT, U, WARPS, 1, N>(stream, x, copy);
    time_gather<LANES, NT, U, WARPS, 2, N>(stream, x, copy);
}

struct GatherSet {
    template <int N>
    static void run(cudaStream_t stream, Data& x, int /*sms*/, double copy) {
        both<4, 8, 4, 16, N>(stream, x, copy);  // ns32, the 6656² winner's lanes
        both<8, 8, 4, 16, N>(stream, x, copy);  // ns64, the 13824-wide winner's
        both<8, 8, 4, 8, N>(stream, x, copy);   // ns64 of 8 warps, the n = 5120 winners'
        both<8, 4, 4, 16, N>(stream, x, copy);  // ns32 of 4-column lanes
    }
};

int main() { return run_problems<GatherSet>(); }
