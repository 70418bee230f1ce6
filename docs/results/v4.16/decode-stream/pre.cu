// Issue 14, session 24: does issuing more of B' before the launch protocol's wait pay? gemv.cu
// put the wait (after the first step's loads, griddepcontrol.wait, before A may be read) at
// about 2 µs of the H200's worst decode layer. Here the full rebuilt loop (gemv.cu's mode 3,
// A read unpredicated as the merged template does) loads PRE steps of B' and D into registers
// before the wait, PRE = 1 being the template's protocol. Same harness and timing rule as
// gemv.cu. Outside the build; nvcc on the device (run.sh).
#define GEMV_NO_MAIN
#include "gemv.cu"

template <int NS, int NT, int U, int WARPS, int PRE, int N, int MINB>
__global__ void __launch_bounds__(WARPS * 32, MINB)
    pre(const float* __restrict__ B, const int* __restrict__ D, const float* A, int w, int n,
        float* __restrict__ out) {
    constexpr int LANES = NS / NT, RW = 32 / LANES, VEC = NT / 4;
    __shared__ float red[WARPS][NS];
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int col = blockIdx.x * NS + (lane % LANES) * NT;
    const int r = lane / LANES, g = col / GROUP_L, q = n / GROUP_L;
    const int stride = WARPS * U * RW;
    float acc[NT] = {};
    struct Step {
        float4 b[U][VEC];
        int kk[U];
    };
    auto load = [&](Step& s, int base) {
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const int u = base + j * RW + r;
            const bool ok = u < w;
            s.kk[j] = ok ? (u / N) * WINDOW_M + __ldg(D + static_cast<size_t>(u) * q + g) : 0;
#pragma unroll
            for (int v = 0; v < VEC; ++v)
                s.b[j][v] = ok ? __ldcs(reinterpret_cast<const float4*>(B + static_cast<size_t>(u) * n + col + 4 * v))
                               : make_float4(0, 0, 0, 0);
        }
    };
    auto use = [&](const Step& s) {
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const float a = __ldca(A + s.kk[j]);
#pragma unroll
            for (int v = 0; v < VEC; ++v) {
                acc[4 * v + 0] = fmaf(a, s.b[j][v].x, acc[4 * v + 0]);
                acc[4 * v + 1] = fmaf(a, s.b[j][v].y, acc[4 * v + 1]);
                acc[4 * v + 2] = fmaf(a, s.b[j][v].z, acc[4 * v + 2]);
                acc[4 * v + 3] = fmaf(a, s.b[j][v].w, acc[4 * v + 3]);
            }
        }
    };
    const int first = warp * U * RW;
    Step early[PRE];
#pragma unroll
    for (int p = 0; p < PRE; ++p) load(early[p], first + p * stride);
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#pragma unroll
    for (int p = 0; p < PRE; ++p) use(early[p]);  // steps past w loaded zeros: they add nothing
    for (int base = first + PRE * stride; base < w; base += stride) {
        Step s;
        load(s, base);
        use(s);
    }
    block_sums<NS, NT, WARPS>(acc, red, warp, lane, out);
}

template <int NS, int NT, int U, int WARPS, int PRE, int N, int MINB = 1>
void run_pre(cudaStream_t stream, const Buffers& bf, double copy) {
    auto kernel = pre<NS, NT, U, WARPS, PRE, N, MINB>;
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, kernel));
    const double us = time_gemv(stream, bf, kernel, bf.n / NS, WARPS * 32);
    const double bytes = 4.0 * bf.w * bf.n + 4.0 * bf.w * (bf.n / GROUP_L);
    printf("  ns%d nt%d u%d w%d mb%d, %d step(s) before the wait: %3d registers, %3zu B local  %8.2f us  %5.1f %% of copy\n",
           NS, NT, U, WARPS, MINB, PRE, attr.numRegs, attr.localSizeBytes, us, 100.0 * bytes / (us * 1e-6) / 1e9 / copy);
}

template <int N>
void problem_pre(cudaStream_t stream, int n, int k, double copy) {
    Buffers bf = make_buffers(stream, n, k, N);
    printf("1 x %d x %d at %d:32\n", n, k, N);
    for (int round = 0; round < 2; ++round) {
        run_pre<32, 8, 4, 16, 1, N>(stream, bf, copy);
        run_pre<32, 8, 4, 16, 2, N>(stream, bf, copy);
        run_pre<32, 8, 4, 16, 2, N, 2>(stream, bf, copy);
        run_pre<32, 8, 4, 16, 3, N>(stream, bf, copy);
        run_pre<32, 4, 4, 16, 1, N>(stream, bf, copy);
        run_pre<32, 4, 4, 16, 2, N>(stream, bf, copy);
        run_pre<32, 4, 4, 16, 2, N, 2>(stream, bf, copy);
        run_pre<32, 4, 4, 16, 4, N, 2>(stream, bf, copy);
    }
    for (auto p : bf.b) CHECK(cudaFree(p));
    for (auto p : bf.d) CHECK(cudaFree(p));
    CHECK(cudaFree(bf.a));
    CHECK(cudaFree(bf.out));
}

int main() {
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const double copy = 4237.7;  // gemv.cu's copy figure on the H200 (h200-gemv.txt)
    printf("%% of %.1f GB/s\n", copy);
    problem_pre<4>(stream, 17920, 6656, copy);
    problem_pre<4>(stream, 19968, 6656, copy);
    problem_pre<8>(stream, 11008, 4096, copy);
    problem_pre<16>(stream, 4096, 4096, copy);
    problem_pre<16>(stream, 8192, 8192, copy);
    return 0;
}
