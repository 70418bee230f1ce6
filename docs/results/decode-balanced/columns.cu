// Issue 14, session 54, second experiment: blocks of any whole number of lanes' columns.
//
// balanced.cu's even shares of (column block, window) units lost 1.2–1.6x against the
// winners (call1/balanced.txt): its workers read different rows of B' at the same moment,
// where the decode family's grid has every block sweep the same rows together (its blocks
// all start at row 0 and advance at one pace), so the DRAM pages each block opens are the
// ones the others read too. Here the grid keeps that sweep, unsplit, and balances the
// columns instead: a block owns NS = LANES · NT columns for any LANES ≤ 32, not only a power
// of two, so that n / NS blocks fill the SMs' slots evenly (n = 5120: NS = 40 gives 128
// blocks for 132 SMs, NS = 20 gives 256 for two a SM). A warp step covers RW = ⌊32 / LANES⌋
// rows; lanes past LANES · RW idle. The block's sums meet in shared memory ([warp][row][NS]),
// added in a fixed order (deterministic). Same loop and launch protocol as balanced.cu.
#define BALANCED_NO_MAIN
#include "balanced.cu"

namespace cols {

template <int LANES, int NT, int U, int WARPS, int N>
__global__ void __launch_bounds__(WARPS * 32)
    columns(const float* A, const float* __restrict__ B, const int* __restrict__ D, float* C,
            int n, int k) {
    constexpr int NS = LANES * NT, RW = 32 / LANES, VEC = NT / 4, M = WINDOW_M;
    static_assert(LANES >= 1 && LANES <= 32 && GROUP_L % NT == 0, "lanes and columns");
    __shared__ float red[WARPS * RW][NS];
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = lane / LANES, lc = (lane % LANES) * NT;
    const bool active = r < RW;
    const int col = blockIdx.x * NS + lc, g = col / GROUP_L, q = n / GROUP_L;
    const bool has_cols = active && col < n;
    const int w = k / M * N;
    float acc[NT] = {};
    bool waited = false;
    for (int base = warp * U * RW; base < w; base += WARPS * U * RW) {
        float4 b[U][VEC];
        int kk[U];
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const int u = base + j * RW + r;
            const bool ok = has_cols && u < w;
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
    if (active)
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

}  // namespace cols

template <int LANES, int NT, int U, int WARPS, int N>
void time_columns(cudaStream_t stream, Data& x, double copy) {
    auto kernel = cols::columns<LANES, NT, U, WARPS, N>;
    constexpr int NS = LANES * NT;
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, WARPS * 32, 0));
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
    snprintf(label, sizeof label, "columns ns%d (%d lanes) nt%d u%d w%d: %d blocks, %d/SM", NS,
             LANES, NT, U, WARPS, blocks, per_sm);
    report(label, time_bursts(stream, one), x, copy, err);
}

template <int N>
void columns_set(cudaStream_t stream, Data& x, double copy) {
    time_columns<4, 8, 4, 16, N>(stream, x, copy);   // ns32: the winners' lanes
    time_columns<8, 8, 4, 8, N>(stream, x, copy);    // ns64
    time_columns<5, 8, 4, 16, N>(stream, x, copy);   // ns40
    time_columns<5, 8, 4, 8, N>(stream, x, copy);
    time_columns<5, 8, 8, 8, N>(stream, x, copy);
    time_columns<5, 4, 4, 16, N>(stream, x, copy);   // ns20
    time_columns<5, 4, 8, 8, N>(stream, x, copy);
    time_columns<10, 4, 4, 16, N>(stream, x, copy);  // ns40 of 4-column lanes
    time_columns<10, 8, 4, 16, N>(stream, x, copy);  // ns80
    time_columns<3, 8, 4, 16, N>(stream, x, copy);   // ns24
}

struct ColumnsSet {
    template <int N>
    static void run(cudaStream_t stream, Data& x, int /*sms*/, double copy) {
        columns_set<N>(stream, x, copy);
    }
};

int main() { return run_problems<ColumnsSet>(); }
