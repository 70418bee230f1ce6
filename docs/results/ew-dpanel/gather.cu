// Issue 14, session 55, call 3: what the element-wise decode loop's gather of A costs, and
// whether warp shuffles gather it cheaper. Outside the build; nvcc on the device (run.sh).
//
// Calls 1 and 2 (dpanel.cu) found the bare sweep of B' and D (no A, no FMAs) at 79–80 % of
// the copy bandwidth at n = 4096 with D as committed, 83–84 % with a lane's 8 bytes of a D
// row in one load, 89–90 % with D in column panels, while the winners stayed at 74–75 %
// (1 × 4096 × 4096 16:32) whichever D they read. So the rest is the loop's own work: per
// value a byte of D extracted, the column of A computed, A loaded through L1 (`__ldca`), an
// FMA, the load depending on D.
//
// Here the sweep gets that work back in two ways (AMODE), each with D as committed (DMODE 1)
// and with one load per lane and row (DMODE 3):
//   AMODE 1: as the template: a = __ldca(A + window · 32 + position) per value;
//   AMODE 2: by shuffles: with M = 32 a pruning window of A is 32 floats, one a lane; for
//            each step of U rows the lane loads A[(w0 + q) · 32 + lane] for the S windows the
//            step's rows touch (w0 its first), with the step's B' and D loads (before they are
//            used, independent of D), and a value's A is __shfl_sync(av[q], position): no
//            memory round trip after D arrives, one load per window instead of one a value.
// Same grid, block and launch protocol as dpanel.cu's sweep; each AMODE 2 output is compared
// with the AMODE 1 output of the same D mode, which must be bit-identical (same products,
// same order of additions). Timing: the decode rule, two rounds, the committed winner first.
#define DPANEL_NO_MAIN
#include "dpanel.cu"

// Windows a step of RW consecutive rows (starting at a multiple of RW) can touch at N kept
// rows a window.
__host__ __device__ constexpr int step_windows(int rw, int n) {
    return n % rw == 0 ? 1 : rw % n == 0 ? rw / n : rw / n + 2;
}

template <int NS, int NT, int U, int WARPS, int DMODE, int AMODE, int N>
__global__ void __launch_bounds__(WARPS * 32)
    math_sweep(const float* A, const float* __restrict__ B, const unsigned char* __restrict__ D,
               int w, int n, int k, float* __restrict__ out) {
    constexpr int LANES = NS / NT, RW = 32 / LANES, VEC = NT / 4, S = step_windows(RW, N);
    static_assert(WINDOW_M == 32, "a window of A is one value a lane");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int col = blockIdx.x * NS + (lane % LANES) * NT, r = lane / LANES;
    float acc[NT] = {};
    bool waited = false;
    for (int base = warp * U * RW; base < w; base += WARPS * U * RW) {
        float4 b[U][VEC];
        unsigned d[U][VEC];
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const int u = base + j * RW + r;
            const bool ok = u < w;
            const size_t at0 = static_cast<size_t>(u) * n + col;
#pragma unroll
            for (int v = 0; v < VEC; ++v) {
                b[j][v] = ok ? __ldcs(reinterpret_cast<const float4*>(B + at0 + 4 * v)) : make_float4(0, 0, 0, 0);
                if (DMODE == 1)
                    d[j][v] = ok ? __ldcs(reinterpret_cast<const unsigned*>(D + at0 + 4 * v)) : 0u;
            }
            if (DMODE == 3) {
                if constexpr (VEC == 2) {
                    const uint2 p = ok ? __ldcs(reinterpret_cast<const uint2*>(D + at0)) : make_uint2(0u, 0u);
                    d[j][0] = p.x;
                    d[j][1] = p.y;
                } else {
                    d[j][0] = ok ? __ldcs(reinterpret_cast<const unsigned*>(D + at0)) : 0u;
                }
            }
        }
        if (!waited) {
            asm volatile("griddepcontrol.wait;\n" ::: "memory");
            waited = true;
        }
        float av[U][S];
        if (AMODE == 2) {
#pragma unroll
            for (int j = 0; j < U; ++j) {
                const int w0 = (base + j * RW) / N;
#pragma unroll
                for (int q = 0; q < S; ++q) {
                    const int at = (w0 + q) * WINDOW_M + lane;
                    av[j][q] = at < k ? __ldca(A + at) : 0.0f;
                }
            }
        }
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const int u = base + j * RW + r;
            const int win = u / N;
            const int w0 = (base + j * RW) / N;
#pragma unroll
            for (int v = 0; v < VEC; ++v)
#pragma unroll
                for (int c = 0; c < 4; ++c) {
                    const int p = static_cast<int>((d[j][v] >> (8 * c)) & 0xffu);
                    float a;
                    if (AMODE == 1) {
                        a = __ldca(A + win * WINDOW_M + p);
                    } else {
                        a = __shfl_sync(0xffffffffu, av[j][0], p);
#pragma unroll
                        for (int q = 1; q < S; ++q) {
                            const float t = __shfl_sync(0xffffffffu, av[j][q], p);
                            a = win - w0 == q ? t : a;
                        }
                    }
                    const float bv = c == 0 ? b[j][v].x : c == 1 ? b[j][v].y : c == 2 ? b[j][v].z : b[j][v].w;
                    acc[4 * v + c] = fmaf(a, bv, acc[4 * v + c]);
                }
        }
    }
    if (!waited) asm volatile("griddepcontrol.wait;\n" ::: "memory");
#pragma unroll
    for (int c = 0; c < NT; ++c)
        out[(static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) * NT + c] = acc[c];
}

// Times math_sweep<…, DMODE, AMODE>; with `keep`, copies its output there (for the comparison).
template <int NS, int NT, int U, int WARPS, int DMODE, int AMODE, int N>
void time_math(cudaStream_t stream, Data& x, double copy, std::vector<float>* keep) {
    auto kernel = math_sweep<NS, NT, U, WARPS, DMODE, AMODE, N>;
    const int copies = static_cast<int>(x.b.size());
    auto one = [&](int i) {
        launch(stream, kernel, dim3(x.n / NS), WARPS * 32, 0, x.a, x.b[i % copies],
               x.d[i % copies], x.w, x.n, x.k, x.sink);
    };
    one(0);
    CHECK(cudaStreamSynchronize(stream));
    const size_t outs = static_cast<size_t>(x.n / NS) * WARPS * 32 * NT;
    std::vector<float> got(outs);
    CHECK(cudaMemcpy(got.data(), x.sink, sizeof(float) * outs, cudaMemcpyDeviceToHost));
    char label[112];
    snprintf(label, sizeof label, "sweep ns%d nt%d u%d w%d D %s, A %s", NS, NT, U, WARPS,
             DMODE == 1 ? "as committed" : "one load", AMODE == 1 ? "__ldca" : "shuffles");
    const double us = time_bursts(stream, one);
    printf("  %-52s %8.2f us  %5.1f %% of copy", label, us, 100.0 * weight_bytes(x) / 1e3 / us / copy);
    if (keep && keep->empty()) {
        *keep = got;
    } else if (keep) {
        printf("  %s", got == *keep ? "same sums as __ldca" : "SUMS DIFFER FROM __ldca");
    }
    printf("\n");
}

template <int NS, int NT, int N>
void math_set(cudaStream_t stream, Data& x, double copy) {
    for (int dm = 0; dm < 2; ++dm) {
        std::vector<float> ref;
        if (dm == 0) {
            time_math<NS, NT, 4, 16, 1, 1, N>(stream, x, copy, &ref);
            time_math<NS, NT, 4, 16, 1, 2, N>(stream, x, copy, &ref);
        } else {
            time_math<NS, NT, 4, 16, 3, 1, N>(stream, x, copy, &ref);
            time_math<NS, NT, 4, 16, 3, 2, N>(stream, x, copy, &ref);
        }
    }
}

template <int N>
void problem(cudaStream_t stream, const Entry& e, double copy) {
    Data x = make_data(e.n, e.k, e.nkept, e.ns);
    printf("1 x %d x %d at %d:32, L = 1, B' and D %.1f MB\n", e.n, e.k, e.nkept, weight_bytes(x) / 1e6);
    char label[96];
    snprintf(label, sizeof label, "winner %s", e.label);
    time_winner(stream, x, e.main, e.reduce, false, e.ms, e.warps, e.split, label, copy);
    if (e.ns == 32) {
        time_sweep<32, 8, 4, 16, 1>(stream, x, copy);
        math_set<32, 8, N>(stream, x, copy);
        math_set<32, 4, N>(stream, x, copy);
    } else {
        time_sweep<64, 4, 4, 16, 1>(stream, x, copy);
        math_set<64, 4, N>(stream, x, copy);
        math_set<64, 8, N>(stream, x, copy);
    }
    free_data(x);
}

int main() {
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const double copy = copy_bandwidth(stream);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs; copy %.1f GB/s\n", prop.name, prop.multiProcessorCount, copy);
    for (int round = 0; round < 2; ++round) {
        printf("round %d\n", round + 1);
        problem<16>(stream, ENTRY(E16_4096_4096, 4096, 4096, 16, 1, 32, 16, 1, "ns32 nt8 w16 cp2"), copy);
        problem<8>(stream, ENTRY(E8_4096_11008, 4096, 11008, 8, 1, 32, 16, 1, "ns32 nt8 w16 cp2"), copy);
        problem<8>(stream, ENTRY(E8_6656_6656, 6656, 6656, 8, 2, 32, 16, 1, "ms2 ns32 nt4 w16 cp1"), copy);
        problem<4>(stream, ENTRY(E4_6656_17920, 6656, 17920, 4, 1, 64, 32, 1, "ns64 nt4 w32 cp1"), copy);
        problem<4>(stream, ENTRY(E4_13824_5120, 13824, 5120, 4, 1, 64, 16, 1, "ns64 nt4 w16 cp1 (control)"), copy);
        problem<12>(stream, ENTRY(E12_6656_6656, 6656, 6656, 12, 1, 64, 32, 1, "ns64 nt4 w32 cp1 (control)"), copy);
    }
    return 0;
}
