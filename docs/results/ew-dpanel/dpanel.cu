// Issue 14, session 55: does the layout of D cost the element-wise decode family its
// bandwidth? Outside the build; nvcc on the device (run.sh).
//
// Why: at m = 1 the element-wise (L = 1) entries of tuning-db/h200-decode.sqlite reach less of
// the copy bandwidth than the vector-wise ones on the same layers (1 × 4096 × 4096 at 16:32:
// 75.7 % against the L = 32 entry's 88 %+), and seven of the 55 large ones miss issue 14's
// 80 % line. At L = 1 D is as long as B': w × n bytes, row-major, so a block of NS columns
// reads NS bytes of each D row (32 or 64 B: one or two sectors) beside its NS · 4 bytes of
// B' (one or two lines), and the next block reads the neighbouring sectors at about the same
// time but not together. If DRAM pays a whole burst for each such sector, the D reads cost up
// to twice their bytes. The panel layout puts a block's D rows one after another (n / NS
// panels of w × NS bytes), so a warp step's D reads are one contiguous run.
//
// Two measurements, both by the decode timing rule (bursts of 20 programmatic launches over
// rotating weight copies, median of 7 bursts), two rounds:
//  1. stream: the decode sweep with no math (each lane loads its B' float4s and D words of U
//     rows, sums them), D row-major against D in panels, and B' alone: what the access
//     pattern costs with nothing else in the way.
//  2. winners: the committed winners of the seven misses and two controls, as rendered
//     (winners.cuh, make-winners.sh), against their panel twins (the same source with a lane's
//     D offset computed for the panel layout), on random data checked against a CPU
//     reference; and the one-stage siblings of the two two-stage winners, whose panel twins
//     spill at 128 registers. Call 2 adds a third twin, "wide" (make-winners.sh, wide.py): D
//     row-major as committed, but a lane's 8 bytes of a D row (NT = 8) loaded as one uint2
//     instead of two words, and the sweep the same way (DMODE 3): call 1 found D's layout
//     costing the sweep 10 points of the copy bandwidth at n = 4096 with the DRAM bytes equal,
//     and L2 requests 1.6 times the panels'.
// run.sh then counts, with ncu, the DRAM and L2 bytes each variant reads on the first two
// problems: whether D's row-major sectors cost more DRAM bytes than they hold.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "winners.cuh"

#define CHECK(x)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (x);                                                                 \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

constexpr int WINDOW_M = 32;

// DPANEL_NCU set: one round of the first entries, each variant launched once (for ncu's
// byte counts, run.sh), no timing.
static const bool for_ncu = getenv("DPANEL_NCU") != nullptr;

template <typename K>
double time_bursts(cudaStream_t stream, K launch_one) {
    if (for_ncu) {
        launch_one(1);
        CHECK(cudaStreamSynchronize(stream));
        return 1.0;
    }
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
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

// One launch as a programmatic dependent of the kernel before it (the decode launches').
template <typename... Params, typename... Args>
void launch(cudaStream_t stream, void (*kernel)(Params...), dim3 grid, int block, size_t smem,
            Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(block);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute la[1];
    la[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    la[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = la;
    cfg.numAttrs = 1;
    CHECK(cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...));
}

// ---- 1. the sweep alone -------------------------------------------------------------------
// DMODE 0: no D; 1: D row-major (w × n bytes); 2: D in panels of NS columns; 3: D row-major,
// a lane's VEC words of a row as one load (uint2 where VEC = 2).
template <int NS, int NT, int U, int WARPS, int DMODE>
__global__ void __launch_bounds__(WARPS * 32)
    sweep(const float* __restrict__ B, const unsigned char* __restrict__ D, int w, int n,
          float* __restrict__ out) {
    constexpr int LANES = NS / NT, RW = 32 / LANES, VEC = NT / 4;
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int lc = (lane % LANES) * NT, col = blockIdx.x * NS + lc, r = lane / LANES;
    float s = 0.0f;
    unsigned x = 0;
    bool waited = false;
    for (int base = warp * U * RW; base < w; base += WARPS * U * RW) {
        float4 b[U][VEC];
        unsigned d[U][VEC];
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const int u = base + j * RW + r;
            const bool ok = u < w;
#pragma unroll
            for (int v = 0; v < VEC; ++v) {
                const size_t at = static_cast<size_t>(u) * n + col + 4 * v;
                b[j][v] = ok ? __ldcs(reinterpret_cast<const float4*>(B + at)) : make_float4(0, 0, 0, 0);
                size_t dat = at;
                if (DMODE == 2)
                    dat = static_cast<size_t>(blockIdx.x) * w * NS + static_cast<size_t>(u) * NS + lc + 4 * v;
                if (DMODE != 3)
                    d[j][v] = DMODE != 0 && ok ? __ldcs(reinterpret_cast<const unsigned*>(D + dat)) : 0u;
            }
            if (DMODE == 3) {
                const size_t at0 = static_cast<size_t>(u) * n + col;
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
#pragma unroll
        for (int j = 0; j < U; ++j)
#pragma unroll
            for (int v = 0; v < VEC; ++v) {
                s += b[j][v].x + b[j][v].y + b[j][v].z + b[j][v].w;
                x ^= d[j][v];
            }
    }
    if (!waited) asm volatile("griddepcontrol.wait;\n" ::: "memory");
    out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = s + static_cast<float>(x & 1u);
}

// ---- the problems -------------------------------------------------------------------------
struct Data {
    int n, k, nkept, w, ns;
    std::vector<float*> b;
    std::vector<unsigned char*> d, dp;  // D row-major, D in panels of ns columns
    float *a, *c, *ws, *sink;
    std::vector<float> ref;
};

// B' and A uniform in [-1, 1); each column keeps nkept distinct sorted positions of every
// window (as pruning writes them).
Data make_data(int n, int k, int nkept, int ns) {
    Data x;
    x.n = n;
    x.k = k;
    x.nkept = nkept;
    x.ns = ns;
    x.w = k / WINDOW_M * nkept;
    std::mt19937 rng(55);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    std::vector<float> hb(static_cast<size_t>(x.w) * n), ha(k);
    std::vector<unsigned char> hd(hb.size()), hp(hb.size());
    for (auto& v : hb) v = uni(rng);
    for (auto& v : ha) v = uni(rng);
    std::vector<int> pos(WINDOW_M);
    for (int win = 0; win < k / WINDOW_M; ++win)
        for (int col = 0; col < n; ++col) {
            for (int i = 0; i < WINDOW_M; ++i) pos[i] = i;
            for (int i = 0; i < nkept; ++i) std::swap(pos[i], pos[i + rng() % (WINDOW_M - i)]);
            std::sort(pos.begin(), pos.begin() + nkept);
            for (int i = 0; i < nkept; ++i)
                hd[static_cast<size_t>(win * nkept + i) * n + col] = static_cast<unsigned char>(pos[i]);
        }
    for (int u = 0; u < x.w; ++u)
        for (int col = 0; col < n; ++col)
            hp[static_cast<size_t>(col / ns) * x.w * ns + static_cast<size_t>(u) * ns + col % ns] =
                hd[static_cast<size_t>(u) * n + col];
    x.ref.assign(n, 0.0f);
    for (int col = 0; col < n; ++col) {
        double s = 0.0;
        for (int u = 0; u < x.w; ++u) {
            const size_t at = static_cast<size_t>(u) * n + col;
            s += static_cast<double>(hb[at]) * ha[(u / nkept) * WINDOW_M + hd[at]];
        }
        x.ref[col] = static_cast<float>(s);
    }
    const size_t bb = sizeof(float) * hb.size(), db = hd.size();
    const int copies = static_cast<int>((size_t(400) << 20) / (bb + db)) + 1;
    for (int i = 0; i < copies; ++i) {
        float* b;
        unsigned char *d, *p;
        CHECK(cudaMalloc(&b, bb));
        CHECK(cudaMalloc(&d, db));
        CHECK(cudaMalloc(&p, db));
        CHECK(cudaMemcpy(b, hb.data(), bb, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d, hd.data(), db, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(p, hp.data(), db, cudaMemcpyHostToDevice));
        x.b.push_back(b);
        x.d.push_back(d);
        x.dp.push_back(p);
    }
    CHECK(cudaMalloc(&x.a, sizeof(float) * k));
    CHECK(cudaMemcpy(x.a, ha.data(), sizeof(float) * k, cudaMemcpyHostToDevice));
    CHECK(cudaMalloc(&x.c, sizeof(float) * n));
    CHECK(cudaMalloc(&x.ws, sizeof(float) * size_t(8) * n));
    CHECK(cudaMalloc(&x.sink, sizeof(float) * size_t(n) * 128));  // gather.cu: n/NS blocks · 512 lanes · NT
    return x;
}

void free_data(Data& x) {
    for (auto p : x.b) CHECK(cudaFree(p));
    for (auto p : x.d) CHECK(cudaFree(p));
    for (auto p : x.dp) CHECK(cudaFree(p));
    CHECK(cudaFree(x.a));
    CHECK(cudaFree(x.c));
    CHECK(cudaFree(x.ws));
    CHECK(cudaFree(x.sink));
}

double check(cudaStream_t stream, const Data& x) {
    CHECK(cudaStreamSynchronize(stream));
    std::vector<float> out(x.n);
    CHECK(cudaMemcpy(out.data(), x.c, sizeof(float) * x.n, cudaMemcpyDeviceToHost));
    double worst = 0.0, scale = 0.0;
    for (int i = 0; i < x.n; ++i) {
        worst = std::max(worst, std::fabs(static_cast<double>(out[i]) - x.ref[i]));
        scale = std::max(scale, std::fabs(static_cast<double>(x.ref[i])));
    }
    return worst / scale;
}

double weight_bytes(const Data& x) { return 5.0 * x.w * x.n; }  // B' and D

void report(const char* what, double us, double bytes, double copy, double err) {
    printf("  %-40s %8.2f us  %5.1f %% of copy", what, us, 100.0 * bytes / 1e3 / us / copy);
    if (err >= 0.0) printf("  error %.1e%s", err, err < 1e-4 ? "" : "  WRONG");
    printf("\n");
}

template <int NS, int NT, int U, int WARPS, int DMODE>
void time_sweep(cudaStream_t stream, Data& x, double copy) {
    auto kernel = sweep<NS, NT, U, WARPS, DMODE>;
    const int copies = static_cast<int>(x.b.size());
    const unsigned char* const* d = DMODE == 2 ? x.dp.data() : x.d.data();
    auto one = [&](int i) {
        launch(stream, kernel, dim3(x.n / NS), WARPS * 32, 0, x.b[i % copies], d[i % copies], x.w,
               x.n, x.sink);
    };
    char label[96];
    snprintf(label, sizeof label, "sweep ns%d nt%d u%d w%d %s", NS, NT, U, WARPS,
             DMODE == 0 ? "B' only" : DMODE == 1 ? "D row-major" : DMODE == 2 ? "D panels" : "D row-major, one load");
    const double bytes = DMODE == 0 ? 4.0 * x.w * x.n : weight_bytes(x);
    report(label, time_bursts(stream, one), bytes, copy, -1.0);
}

using Main = void (*)(const float*, const float*, const unsigned char*, float*, float*, int, int,
                      int, float, float);
using Reduce = void (*)(const float*, float*, int, int, int, float, float);

// A winner as nmtune launches it: grid (n/NS, 1, split), shared memory WARPS·MS·NS floats,
// then with split > 1 its reduction over the n/4 vectors of C.
void time_winner(cudaStream_t stream, Data& x, Main main, Reduce reduce, bool panel, int ms,
                 int warps, int split, const char* label, double copy) {
    const int copies = static_cast<int>(x.b.size());
    const std::vector<unsigned char*>& d = panel ? x.dp : x.d;
    auto one = [&](int i) {
        launch(stream, main, dim3(x.n / x.ns, 1, split), warps * 32,
               sizeof(float) * warps * ms * x.ns, x.a, x.b[i % copies], d[i % copies], x.c, x.ws,
               1, x.n, x.k, 1.0f, 0.0f);
        if (split > 1)
            launch(stream, reduce, dim3((x.n / 4 + 255) / 256), 256, 0, x.ws, x.c, 1, x.n, split,
                   1.0f, 0.0f);
    };
    CHECK(cudaMemset(x.c, 0, sizeof(float) * x.n));
    one(0);
    const double err = check(stream, x);
    report(label, time_bursts(stream, one), weight_bytes(x), copy, err);
}

double copy_bandwidth(cudaStream_t stream) {
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
    for (auto& v : ms) {
        CHECK(cudaEventRecord(e0, stream));
        CHECK(cudaMemcpyAsync(t, s, cb, cudaMemcpyDeviceToDevice, stream));
        CHECK(cudaEventRecord(e1, stream));
        CHECK(cudaEventSynchronize(e1));
        CHECK(cudaEventElapsedTime(&v, e0, e1));
    }
    std::sort(ms.begin(), ms.end());
    CHECK(cudaFree(s));
    CHECK(cudaFree(t));
    return 2.0 * cb / (ms[2] * 1e-3) / 1e9;
}

struct Entry {
    int n, k, nkept, ms, ns, warps, split;
    Main main, panel, wide;
    Reduce reduce;
    const char* label;
};

#define ENTRY(P, n, k, nkept, ms, ns, warps, split, what) \
    Entry { n, k, nkept, ms, ns, warps, split, P##_MAIN, P##_PANEL, P##_WIDE, P##_REDUCE, what }

#ifndef DPANEL_NO_MAIN
int main() {
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const double copy = copy_bandwidth(stream);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("%s, %d SMs; copy %.1f GB/s\n", prop.name, prop.multiProcessorCount, copy);
    const Entry entries[] = {
        ENTRY(E16_4096_4096, 4096, 4096, 16, 1, 32, 16, 1, "ns32 nt8 w16 cp2"),
        ENTRY(E8_4096_11008, 4096, 11008, 8, 1, 32, 16, 1, "ns32 nt8 w16 cp2"),
        ENTRY(E12_5120_5120, 5120, 5120, 12, 1, 64, 8, 4, "ns64 nt4 w8 cp1 sk4"),
        ENTRY(E16_5120_5120, 5120, 5120, 16, 1, 32, 8, 2, "ns32 nt4 w8 cp1 sk2"),
        ENTRY(E4_5120_13824, 5120, 13824, 4, 1, 64, 8, 3, "ns64 nt8 w8 cp3 sk3"),
        ENTRY(E8_6656_6656, 6656, 6656, 8, 2, 32, 16, 1, "ms2 ns32 nt4 w16 cp1"),
        ENTRY(E4_6656_17920, 6656, 17920, 4, 1, 64, 32, 1, "ns64 nt4 w32 cp1"),
        ENTRY(E4_13824_5120, 13824, 5120, 4, 1, 64, 16, 1, "ns64 nt4 w16 cp1 (control)"),
        ENTRY(E12_6656_6656, 6656, 6656, 12, 1, 64, 32, 1, "ns64 nt4 w32 cp1 (control)"),
        ENTRY(C16_4096_4096, 4096, 4096, 16, 1, 32, 16, 1, "ns32 nt8 w16 cp1 (sibling)"),
        ENTRY(C8_4096_11008, 4096, 11008, 8, 1, 32, 16, 1, "ns32 nt8 w16 cp1 (sibling)"),
    };
    for (int round = 0; round < (for_ncu ? 1 : 2); ++round) {
        printf("round %d\n", round + 1);
        for (const Entry& e : entries) {
            if (for_ncu && &e - entries >= 2) break;
            Data x = make_data(e.n, e.k, e.nkept, e.ns);
            printf("1 x %d x %d at %d:32, L = 1, B' and D %.1f MB\n", e.n, e.k, e.nkept,
                   weight_bytes(x) / 1e6);
            char label[96];
            snprintf(label, sizeof label, "winner %s", e.label);
            time_winner(stream, x, e.main, e.reduce, false, e.ms, e.warps, e.split, label, copy);
            snprintf(label, sizeof label, "panel twin %s", e.label);
            time_winner(stream, x, e.panel, e.reduce, true, e.ms, e.warps, e.split, label, copy);
            snprintf(label, sizeof label, "wide twin %s", e.label);
            time_winner(stream, x, e.wide, e.reduce, false, e.ms, e.warps, e.split, label, copy);
            if (e.ns == 32) {
                time_sweep<32, 8, 4, 16, 0>(stream, x, copy);
                time_sweep<32, 8, 4, 16, 1>(stream, x, copy);
                time_sweep<32, 8, 4, 16, 2>(stream, x, copy);
                time_sweep<32, 8, 4, 16, 3>(stream, x, copy);
            } else {
                time_sweep<64, 4, 4, 16, 0>(stream, x, copy);
                time_sweep<64, 4, 4, 16, 1>(stream, x, copy);
                time_sweep<64, 4, 4, 16, 2>(stream, x, copy);
            }
            free_data(x);
        }
    }
    return 0;
}
#endif  // DPANEL_NO_MAIN
