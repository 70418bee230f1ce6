// Issue 14, session 54: a balanced schedule for the vector-wise decode family, prototyped
// outside the build and timed beside the H200's committed winners (their own rendered
// sources, `nmtune kernel <name> --source`) in one program. nvcc on the device (run.sh).
//
// Why: of the 55 m = 1, L = 32 entries of tuning-db/h200-decode.sqlite whose weight is at
// least 32 MB, the two below issue 14's 85 % line are both n = 5120 layers (5120 × 5120 at
// 12:32, 79.6 %; 5120 × 13824 at 4:32, 77.7 %), and n = 5120 is 3 of the 7 misses at L = 1.
// 5120 columns make 80 or 160 column blocks on 132 SMs; the tuner's answer is split 3 (240
// blocks) and a reduction kernel. From the report, the time of the n = 5120 split-3 entries
// over their bytes is about 3.2 µs + bytes / 4.6 TB/s, that of the unsplit 13824-wide
// entries 1.4 µs + bytes / 4.5 TB/s: the split costs some 1.8 µs of fixed time.
//
// The balanced kernel: a grid of P workers (P = SMs × b) shares out the units (column block,
// pruning window) evenly, column block after column block, so every worker streams the same
// number of B' rows and all finish together whatever n is. A column block covered by one
// worker goes straight to C; one shared by several (at most two partial segments a worker,
// its first and its last) gets each one's sums in a workspace slot, and the last of them to
// arrive (a per-column-block counter, back at zero after every launch) adds the slots in
// worker order and stores C: deterministic, one launch, nobody waits for another block.
// Same loop as the decode family (U steps of B' and D loaded, then A and the FMAs), same
// launch protocol (the first step's loads before griddepcontrol.wait), m = 1, row-major A.
//
// Output: per problem the winner's time (main + reduction as programmatic dependents, the
// decode timing rule: bursts of 20 over rotating weight copies, median of 7 bursts) and each
// balanced variant's, with its error against a CPU reference on random data.
#define GEMV_NO_MAIN
#include "gemv.cu"

#include "winners.cuh"

#include <cmath>

namespace bal {

template <int NS, int NT, int U, int WARPS, int N>
__global__ void __launch_bounds__(WARPS * 32)
    balanced(const float* A, const float* __restrict__ B, const int* __restrict__ D,
             float* C, float* ws, unsigned* counters, int n, int k) {
    constexpr int LANES = NS / NT, RW = 32 / LANES, VEC = NT / 4, M = WINDOW_M;
    __shared__ float red[WARPS][NS];
    __shared__ bool last;
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = lane / LANES, lc = (lane % LANES) * NT;
    const int windows = k / M, q = n / GROUP_L;
    const long long total = static_cast<long long>(n / NS) * windows;
    const int P = gridDim.x, me = blockIdx.x;
    auto start_of = [&](int j) { return total * j / P; };
    long long u0 = start_of(me);
    const long long u1 = start_of(me + 1);
    bool waited = false;
    for (int seg = 0; u0 < u1; ++seg) {
        const int c = static_cast<int>(u0 / windows);
        const long long cend = static_cast<long long>(c + 1) * windows;
        const long long e = u1 < cend ? u1 : cend;
        const int w0 = static_cast<int>(u0 - static_cast<long long>(c) * windows);
        const int w1 = w0 + static_cast<int>(e - u0);
        const int col = c * NS + lc, g = col / GROUP_L;
        const int row_end = w1 * N;
        float acc[NT] = {};
        for (int base = w0 * N + warp * U * RW; base < row_end; base += WARPS * U * RW) {
            float4 b[U][VEC];
            int kk[U];
#pragma unroll
            for (int j = 0; j < U; ++j) {
                const int u = base + j * RW + r;
                const bool ok = u < row_end;
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
        if (!waited) {
            asm volatile("griddepcontrol.wait;\n" ::: "memory");
            waited = true;
        }
        // The block's sums of this segment, as the decode family adds them.
#pragma unroll
        for (int off = LANES; off < 32; off *= 2)
#pragma unroll
            for (int i = 0; i < NT; ++i) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], off);
        if (r == 0)
#pragma unroll
            for (int i = 0; i < NT; ++i) red[warp][lc + i] = acc[i];
        __syncthreads();
        const int t = threadIdx.x;
        float s = 0.0f;
        if (t < NS)
            for (int z = 0; z < WARPS; ++z) s += red[z][t];
        if (w0 == 0 && w1 == windows) {  // the whole column block: this worker's alone
            if (t < NS) C[c * NS + t] = s;
        } else {
            const int slot = seg == 0 ? 0 : 1;
            if (t < NS) {
                ws[(2 * me + slot) * NS + t] = s;
                __threadfence();
            }
            __syncthreads();
            // The workers sharing column block c: those whose ranges meet its units.
            const long long c0 = static_cast<long long>(c) * windows;
            int lo = static_cast<int>(c0 * P / total), hi = lo;
            while (lo > 0 && start_of(lo) > c0) --lo;
            while (start_of(lo + 1) <= c0) ++lo;
            hi = lo;
            while (hi + 1 < P && start_of(hi + 1) < cend) ++hi;
            if (t == 0) last = atomicAdd(&counters[c], 1u) == static_cast<unsigned>(hi - lo);
            __syncthreads();
            if (last) {
                __threadfence();
                if (t < NS) {
                    float sum = 0.0f;
                    for (int j = lo; j <= hi; ++j) {
                        const int sj = start_of(j) >= c0 ? 0 : 1;
                        sum += __ldcg(ws + (2 * j + sj) * NS + t);
                    }
                    C[c * NS + t] = sum;
                }
                if (t == 0) counters[c] = 0;
            }
        }
        __syncthreads();  // red and `last` are reused by the next segment
        u0 = e;
    }
}

}  // namespace bal

using Winner = void (*)(const float*, const float*, const int*, const int*, const int*, float*,
                        float*, int, int, int, float, float);

struct Data {
    int n, k, nkept, w;
    std::vector<float*> b;
    std::vector<int*> d;
    float *a, *c, *ws;
    unsigned* counters;
    std::vector<float> ref;
};

Data make_data(int n, int k, int nkept) {
    Data x;
    x.n = n;
    x.k = k;
    x.nkept = nkept;
    x.w = k / WINDOW_M * nkept;
    const int q = n / GROUP_L;
    std::mt19937 rng(54);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    std::vector<float> hb(static_cast<size_t>(x.w) * n), ha(k);
    std::vector<int> hd(static_cast<size_t>(x.w) * q);
    for (auto& v : hb) v = uni(rng);
    for (auto& v : ha) v = uni(rng);
    for (auto& v : hd) v = static_cast<int>(rng() % WINDOW_M);
    x.ref.assign(n, 0.0f);
    for (int col = 0; col < n; ++col) {
        double s = 0.0;
        for (int u = 0; u < x.w; ++u)
            s += static_cast<double>(hb[static_cast<size_t>(u) * n + col]) *
                 ha[(u / nkept) * WINDOW_M + hd[static_cast<size_t>(u) * q + col / GROUP_L]];
        x.ref[col] = static_cast<float>(s);
    }
    const size_t bbytes = sizeof(float) * hb.size(), dbytes = sizeof(int) * hd.size();
    const int copies = static_cast<int>((size_t(400) << 20) / (bbytes + dbytes)) + 1;
    for (int i = 0; i < copies; ++i) {
        float* b;
        int* d;
        CHECK(cudaMalloc(&b, bbytes));
        CHECK(cudaMalloc(&d, dbytes));
        CHECK(cudaMemcpy(b, hb.data(), bbytes, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(d, hd.data(), dbytes, cudaMemcpyHostToDevice));
        x.b.push_back(b);
        x.d.push_back(d);
    }
    CHECK(cudaMalloc(&x.a, sizeof(float) * k));
    CHECK(cudaMemcpy(x.a, ha.data(), sizeof(float) * k, cudaMemcpyHostToDevice));
    CHECK(cudaMalloc(&x.c, sizeof(float) * n));
    CHECK(cudaMalloc(&x.ws, sizeof(float) * size_t(8) * n + sizeof(float) * 2 * 4096 * 128));
    CHECK(cudaMalloc(&x.counters, sizeof(unsigned) * n));
    CHECK(cudaMemset(x.counters, 0, sizeof(unsigned) * n));
    return x;
}

void free_data(Data& x) {
    for (auto p : x.b) CHECK(cudaFree(p));
    for (auto p : x.d) CHECK(cudaFree(p));
    CHECK(cudaFree(x.a));
    CHECK(cudaFree(x.c));
    CHECK(cudaFree(x.ws));
    CHECK(cudaFree(x.counters));
}

// The largest error against the reference, relative to the largest |reference|.
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

double weight_mb(const Data& x) {
    return (4.0 * x.w * x.n + 4.0 * x.w * (x.n / GROUP_L)) / 1e6;
}

void report(const char* what, double us, const Data& x, double copy, double err) {
    printf("  %-44s %8.2f us  %5.1f %% of copy  error %.1e%s\n", what, us,
           100.0 * weight_mb(x) * 1e3 / us / copy, err, err < 1e-4 ? "" : "  WRONG");
}

// One launch of `kernel` on `stream` with grid and block as given, as a programmatic
// dependent of the kernel before it (the decode launches' attribute).
template <typename... Params, typename... Args>
void launch3(cudaStream_t stream, void (*kernel)(Params...), dim3 grid, int block, size_t smem,
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

using Main = void (*)(const float*, const float*, const int*, const int*, const int*, float*,
                      float*, int, int, int, float, float);
using Reduce = void (*)(const float*, float*, int, int, int, float, float);

// The committed winner as nmtune launches it: grid (n/NS, 1, split), then with split > 1 its
// reduction kernel over the n/4 vectors of C.
void time_winner(cudaStream_t stream, Data& x, Main main, Reduce reduce, int ns, int warps,
                 int split, const char* label, double copy) {
    const int copies = static_cast<int>(x.b.size());
    auto one = [&](int i) {
        launch3(stream, main, dim3(x.n / ns, 1, split), warps * 32, sizeof(float) * warps * ns,
                x.a, x.b[i % copies], x.d[i % copies], nullptr, nullptr, x.c, x.ws, 1, x.n, x.k,
                1.0f, 0.0f);
        if (split > 1)
            launch3(stream, reduce, dim3((x.n / 4 + 255) / 256), 256, 0, x.ws, x.c, 1, x.n, split,
                    1.0f, 0.0f);
    };
    CHECK(cudaMemset(x.c, 0, sizeof(float) * x.n));
    one(0);
    const double err = check(stream, x);
    report(label, time_bursts(stream, one), x, copy, err);
}

template <int NS, int NT, int U, int WARPS, int N>
void time_balanced(cudaStream_t stream, Data& x, int sms, double copy) {
    auto kernel = bal::balanced<NS, NT, U, WARPS, N>;
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, WARPS * 32, 0));
    const int copies = static_cast<int>(x.b.size());
    for (int b = 1; b <= std::min(per_sm, 4); ++b) {
        const int P = sms * b;
        auto one = [&](int i) {
            launch3(stream, kernel, dim3(P), WARPS * 32, 0, x.a, x.b[i % copies],
                    x.d[i % copies], x.c, x.ws, x.counters, x.n, x.k);
        };
        CHECK(cudaMemset(x.c, 0, sizeof(float) * x.n));
        one(0);
        const double err = check(stream, x);
        char label[96];
        snprintf(label, sizeof label, "balanced ns%d nt%d u%d w%d, P = %d x %d", NS, NT, U, WARPS,
                 sms, b);
        report(label, time_bursts(stream, one), x, copy, err);
    }
}

template <int N>
void balanced_set(cudaStream_t stream, Data& x, int sms, double copy) {
    time_balanced<64, 8, 4, 8, N>(stream, x, sms, copy);
    time_balanced<32, 8, 4, 16, N>(stream, x, sms, copy);
    time_balanced<64, 8, 4, 16, N>(stream, x, sms, copy);
    time_balanced<32, 8, 4, 8, N>(stream, x, sms, copy);
    time_balanced<32, 4, 4, 8, N>(stream, x, sms, copy);
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

// Every experiment of this folder: the four problems, two rounds, each problem's committed
// winner first, then the experiment's variants (`Set::template run<N>(stream, data, sms, copy)`).
template <typename Set>
int run_problems() {
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const double copy = copy_bandwidth(stream);
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount;
    printf("%s, %d SMs; copy %.1f GB/s\n", prop.name, sms, copy);
    for (int round = 0; round < 2; ++round) {
        printf("round %d\n", round + 1);
        {
            Data x = make_data(5120, 5120, 12);
            printf("1 x 5120 x 5120 at 12:32, %.1f MB\n", weight_mb(x));
            time_winner(stream, x, W12_5120_MAIN, W12_5120_REDUCE, 64, 8, 3, "winner ns64 w8 cp3 sk3", copy);
            Set::template run<12>(stream, x, sms, copy);
            free_data(x);
        }
        {
            Data x = make_data(5120, 13824, 4);
            printf("1 x 5120 x 13824 at 4:32, %.1f MB\n", weight_mb(x));
            time_winner(stream, x, W4_5120_MAIN, W4_5120_REDUCE, 64, 8, 3, "winner ns64 w8 cp3 sk3", copy);
            Set::template run<4>(stream, x, sms, copy);
            free_data(x);
        }
        {
            Data x = make_data(13824, 5120, 4);
            printf("1 x 13824 x 5120 at 4:32, %.1f MB (control)\n", weight_mb(x));
            time_winner(stream, x, W4_13824_MAIN, W4_13824_REDUCE, 64, 16, 1, "winner ns64 w16 cp1 sk1", copy);
            Set::template run<4>(stream, x, sms, copy);
            free_data(x);
        }
        {
            Data x = make_data(6656, 6656, 8);
            printf("1 x 6656 x 6656 at 8:32, %.1f MB (control)\n", weight_mb(x));
            time_winner(stream, x, W8_6656_MAIN, W8_6656_REDUCE, 32, 16, 1, "winner ns32 w16 cp1 sk1", copy);
            Set::template run<8>(stream, x, sms, copy);
            free_data(x);
        }
    }
    return 0;
}

#ifndef BALANCED_NO_MAIN
struct BalancedSet {
    template <int N>
    static void run(cudaStream_t stream, Data& x, int sms, double copy) {
        balanced_set<N>(stream, x, sms, copy);
    }
};

int main() { return run_problems<BalancedSet>(); }
#endif  // BALANCED_NO_MAIN
