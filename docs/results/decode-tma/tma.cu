// Issue 14, session 56: the vector-wise decode loop (m = 1, L = 32) fed by tensor copies,
// prototyped outside the build and timed beside the H200's committed winners (their own
// rendered sources, ../decode-balanced/winners.cuh) in one program, with session 54's harness
// (../decode-balanced/balanced.cu: the four problems, two rounds, the decode timing rule).
//
// Why: the two m = 1, L = 32 entries under issue 14's 85 % line are n = 5120 layers, where
// session 54 found that what the decode family lacks is bytes in flight: every warp's step is
// a dependent chain (D, then A, then the FMAs) and its loads live in registers, so bytes in
// flight per SM follow the warps resident, and 5,120 columns give too few warps without a
// split of k (whose reduction costs a launch). Session 24's shared-memory ring moved B' by
// cp.async, one 16-byte copy a lane: the same registers and LSU queue in another form.
//
// Here one producer thread a block streams the block's column panel of B' (R kept rows ×
// NS columns, one tensor copy a stage) and its rows of D (R rows × 4 groups, one tensor
// copy) into a ring of S stages; WARPS consumer warps read each stage from shared memory.
// The bytes in flight are S stages a block, whatever the warps: no register holds a load.
// A (the split's windows of it) is copied to shared memory once, after griddepcontrol.wait
// (A is the previous layer's output; B' and D are not, so their first copies go out before).
// A split of k (gridDim.y = SPLIT) writes each split's sums to a workspace slot, and the last
// split of a column block to arrive adds the slots in split order: one launch, deterministic.
#define BALANCED_NO_MAIN
#include "balanced.cu"

#include <cuda.h>

namespace tq {

__device__ __forceinline__ unsigned sa(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void bar_init(unsigned bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_expect(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void bar_arrive(unsigned bar) {
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar)
                 : "memory");
}
__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}
__device__ __forceinline__ void tma2d(unsigned dst, const CUtensorMap* map, int c0, int c1,
                                      unsigned bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}

constexpr int DW = 4;  // D's box: 4 groups (16 bytes, the least a tensor copy moves a row)

template <int NS, int R, int S>
struct Layout {
    static constexpr unsigned B_BYTES = R * NS * 4, D_BYTES = R * DW * 4;
    static constexpr unsigned RING = S * (B_BYTES + D_BYTES);
    static constexpr unsigned BARS = RING;                // full[S], then empty[S]
    static constexpr unsigned A_OFF = RING + 16 * S;      // the split's A, floats
    // + 1 KB: the kernel aligns the ring's start to 1,024 bytes itself (tensor copies land on
    // 128-byte boundaries; the dynamic window's alignment is not promised).
    static size_t bytes(int a_floats) { return 1024 + A_OFF + 4 * static_cast<size_t>(a_floats); }
};

// The tensor maps as kernel parameters, or (built with -DTMA_GLOBAL_MAPS) in global memory.
#ifdef TMA_GLOBAL_MAPS
#define TMA_MAPS const CUtensorMap *tbp, const CUtensorMap *tdp
#define TB tbp
#define TD tdp
#else
#define TMA_MAPS const __grid_constant__ CUtensorMap tb, const __grid_constant__ CUtensorMap td
#define TB (&tb)
#define TD (&td)
#endif

template <int NS, int R, int S, int WARPS, int N>
__global__ void __launch_bounds__((WARPS + 1) * 32)
    tma_gemv(TMA_MAPS, const float* A, float* C, float* ws, unsigned* counters, int n, int k) {
    using Lay = Layout<NS, R, S>;
    constexpr int M = WINDOW_M, LANES = NS / 4, RW = 32 / LANES, STEPS = R / (WARPS * RW);
    static_assert(R % (WARPS * RW) == 0, "whole steps a stage");
    extern __shared__ __align__(16) unsigned char window[];
    unsigned char* smem = window + ((1024 - sa(window) % 1024) % 1024);
    float* Bs = reinterpret_cast<float*>(smem);
    int* Ds = reinterpret_cast<int*>(smem + S * Lay::B_BYTES);
    unsigned long long* full = reinterpret_cast<unsigned long long*>(smem + Lay::BARS);
    unsigned long long* empty = full + S;
    float* As = reinterpret_cast<float*>(smem + Lay::A_OFF);
    __shared__ float red[WARPS][NS];
    __shared__ bool last;

    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int w = k / M * N;
    const int split = gridDim.y, z = blockIdx.y;
    const int stages_all = (w + R - 1) / R;
    const int per = (stages_all + split - 1) / split;
    const int it0 = z * per, it1 = min(stages_all, it0 + per);
    const int iters = max(it1 - it0, 0);
    const int col0 = blockIdx.x * NS;
    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < S; ++s) {
            bar_init(sa(&full[s]), 1);
            bar_init(sa(&empty[s]), WARPS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    // D's box starts at a multiple of 4 groups: a tensor copy whose first column is not
    // 16-byte aligned stops on an illegal instruction (call 2).
    const int g_box = col0 / GROUP_L / DW * DW;
    const int r = lane / LANES, c4 = (lane % LANES) * 4;
    const int g = col0 / GROUP_L - g_box + c4 / GROUP_L;
    if (warp == WARPS) {
        // The producer: stage i of this split's rows into slot i % S once its last use ended.
        if (lane == 0) {
            for (int i = 0; i < iters; ++i) {
                const int s = i % S;
                if (i >= S) bar_wait(sa(&empty[s]), ((i / S) - 1) & 1);
                bar_expect(sa(&full[s]), Lay::B_BYTES + Lay::D_BYTES);
                const int row = (it0 + i) * R;
                tma2d(sa(Bs + s * R * NS), TB, col0, row, sa(&full[s]));
                tma2d(sa(Ds + s * R * DW), TD, g_box, row, sa(&full[s]));
            }
        }
        __syncwarp();
    } else {
        asm volatile("griddepcontrol.wait;\n" ::: "memory");
        const int u0 = it0 * R, u1 = min(w, it1 * R);
        const int a0 = (u0 / N) * M, a1 = min(k, ((u1 + N - 1) / N) * M);
        for (int i = threadIdx.x; i < a1 - a0; i += WARPS * 32) As[i] = A[a0 + i];
        asm volatile("bar.sync 1, %0;\n" ::"n"(WARPS * 32) : "memory");
        for (int i = 0; i < iters; ++i) {
            const int s = i % S;
            bar_wait(sa(&full[s]), (i / S) & 1);
            const float* bst = Bs + s * R * NS;
            const int* dst = Ds + s * R * DW;
#pragma unroll
            for (int j = 0; j < STEPS; ++j) {
                const int rr = (j * WARPS + warp) * RW + r;
                const int u = (it0 + i) * R + rr;
                const float4 b = *reinterpret_cast<const float4*>(bst + rr * NS + c4);
                const int idx = (u / N) * M + dst[rr * DW + g] - a0;
                const float a = u < w ? As[idx] : 0.0f;
                acc.x = fmaf(a, b.x, acc.x);
                acc.y = fmaf(a, b.y, acc.y);
                acc.z = fmaf(a, b.z, acc.z);
                acc.w = fmaf(a, b.w, acc.w);
            }
            __syncwarp();
            if (lane == 0) bar_arrive(sa(&empty[s]));
        }
#pragma unroll
        for (int off = LANES; off < 32; off *= 2) {
            acc.x += __shfl_xor_sync(0xffffffffu, acc.x, off);
            acc.y += __shfl_xor_sync(0xffffffffu, acc.y, off);
            acc.z += __shfl_xor_sync(0xffffffffu, acc.z, off);
            acc.w += __shfl_xor_sync(0xffffffffu, acc.w, off);
        }
        if (r == 0) {
            red[warp][c4] = acc.x;
            red[warp][c4 + 1] = acc.y;
            red[warp][c4 + 2] = acc.z;
            red[warp][c4 + 3] = acc.w;
        }
    }
    __syncthreads();
    const int t = threadIdx.x;
    float sum = 0.0f;
    if (t < NS)
        for (int z2 = 0; z2 < WARPS; ++z2) sum += red[z2][t];
    if (split == 1) {
        if (t < NS) C[col0 + t] = sum;
        return;
    }
    if (t < NS) {
        ws[static_cast<size_t>(z) * n + col0 + t] = sum;
        __threadfence();
    }
    __syncthreads();
    if (t == 0) last = atomicAdd(&counters[blockIdx.x], 1u) == static_cast<unsigned>(split - 1);
    __syncthreads();
    if (!last) return;
    __threadfence();
    if (t < NS) {
        float s2 = 0.0f;
        for (int z2 = 0; z2 < split; ++z2) s2 += __ldcg(ws + static_cast<size_t>(z2) * n + col0 + t);
        C[col0 + t] = s2;
    }
    if (t == 0) counters[blockIdx.x] = 0;
}

using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                            const cuuint64_t*, const cuuint32_t*, const cuuint32_t*,
                            CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                            CUtensorMapFloatOOBfill);

Encode encoder() {
    static Encode fn = nullptr;
    if (!fn) {
        cudaDriverEntryPointQueryResult q;
        CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&fn),
                                               12000, cudaEnableDefault, &q));
        if (q != cudaDriverEntryPointSuccess) {
            fprintf(stderr, "no cuTensorMapEncodeTiled\n");
            exit(1);
        }
    }
    return fn;
}

// The tensor maps' L2 promotion: $TMA_PROMO = 0 (none), 64, 128 or 256 (the default, as
// nmtune's tiled family asks). A 128-byte box row promoted to 256 bytes fetches the next
// block's columns too.
CUtensorMapL2promotion promotion() {
    const char* v = getenv("TMA_PROMO");
    const int bytes = v ? atoi(v) : 256;
    return bytes == 0     ? CU_TENSOR_MAP_L2_PROMOTION_NONE
           : bytes == 64  ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
           : bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                          : CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
}

// A row-major rows × cols matrix of 4-byte elements, copied in boxes of box_cols × box_rows.
CUtensorMap map2d(void* ptr, CUtensorMapDataType type, int rows, int cols, int box_cols,
                  int box_rows) {
    CUtensorMap m;
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(cols) * 4};
    const cuuint32_t box[2] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows)};
    const cuuint32_t steps[2] = {1, 1};
    const CUresult r = encoder()(&m, type, 2, ptr, dims, strides, box, steps,
                                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                 promotion(), CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled: %d\n", static_cast<int>(r));
        exit(1);
    }
    return m;
}

template <int NS, int R, int S, int WARPS, int N>
void time_tma(cudaStream_t stream, Data& x, int split, double copy) {
    using Lay = Layout<NS, R, S>;
    auto kernel = tma_gemv<NS, R, S, WARPS, N>;
    const int stages_all = (x.w + R - 1) / R;
    const int per = (stages_all + split - 1) / split;
    const int a_floats = (per * R / N + 2) * WINDOW_M;
    const size_t smem = Lay::bytes(a_floats);
    char label[96];
    snprintf(label, sizeof label, "tma ns%d r%d s%d w%d sk%d (%zu KB)", NS, R, S, WARPS, split,
             smem >> 10);
    if (smem > 227 * 1024) {
        printf("  %-44s skipped: shared memory\n", label);
        return;
    }
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(smem)));
    const int q = x.n / GROUP_L, copies = static_cast<int>(x.b.size());
    std::vector<CUtensorMap> tb, td;
    for (int i = 0; i < copies; ++i) {
        tb.push_back(map2d(x.b[i], CU_TENSOR_MAP_DATA_TYPE_FLOAT32, x.w, x.n, NS, R));
        td.push_back(map2d(x.d[i], CU_TENSOR_MAP_DATA_TYPE_INT32, x.w, q, DW, R));
    }
#ifdef TMA_GLOBAL_MAPS
    CUtensorMap* maps;
    CHECK(cudaMalloc(&maps, sizeof(CUtensorMap) * 2 * copies));
    for (int i = 0; i < copies; ++i) {
        CHECK(cudaMemcpy(maps + 2 * i, &tb[i], sizeof(CUtensorMap), cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(maps + 2 * i + 1, &td[i], sizeof(CUtensorMap), cudaMemcpyHostToDevice));
    }
    auto one = [&](int i) {
        launch3(stream, kernel, dim3(x.n / NS, split), (WARPS + 1) * 32, smem,
                maps + 2 * (i % copies), maps + 2 * (i % copies) + 1, x.a, x.c, x.ws,
                x.counters, x.n, x.k);
    };
#else
    auto one = [&](int i) {
        launch3(stream, kernel, dim3(x.n / NS, split), (WARPS + 1) * 32, smem, tb[i % copies],
                td[i % copies], x.a, x.c, x.ws, x.counters, x.n, x.k);
    };
#endif
    CHECK(cudaMemset(x.c, 0, sizeof(float) * x.n));
    one(0);
    const double err = check(stream, x);
    report(label, time_bursts(stream, one), x, copy, err);
#ifdef TMA_GLOBAL_MAPS
    CHECK(cudaFree(maps));
#endif
}

template <int NS, int R, int S, int WARPS, int N>
void tma_splits(cudaStream_t stream, Data& x, double copy) {
    for (int split = 1; split <= 3; ++split) time_tma<NS, R, S, WARPS, N>(stream, x, split, copy);
}

}  // namespace tq

struct TmaSet {
    template <int N>
    static void run(cudaStream_t stream, Data& x, int, double copy) {
        tq::tma_splits<32, 64, 4, 4, N>(stream, x, copy);
        tq::tma_splits<32, 64, 8, 4, N>(stream, x, copy);
        tq::tma_splits<32, 64, 8, 8, N>(stream, x, copy);
        tq::tma_splits<32, 128, 4, 8, N>(stream, x, copy);
        tq::tma_splits<32, 128, 6, 8, N>(stream, x, copy);
        tq::tma_splits<64, 64, 4, 4, N>(stream, x, copy);
        tq::tma_splits<64, 64, 8, 8, N>(stream, x, copy);
        tq::tma_splits<64, 128, 4, 8, N>(stream, x, copy);
    }
};

// $TMA_NCU set: for ncu, one problem (the 13824-wide control), its winner and one tensor-copy
// kernel, each timed once as above.
int main() {
    if (!getenv("TMA_NCU")) return run_problems<TmaSet>();
    cudaStream_t stream;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    Data x = make_data(13824, 5120, 4);
    time_winner(stream, x, W4_13824_MAIN, W4_13824_REDUCE, 64, 16, 1, "winner ns64 w16 cp1 sk1", 4200.0);
    tq::time_tma<64, 64, 4, 4, 4>(stream, x, 1, 4200.0);
    tq::time_tma<32, 64, 8, 8, 4>(stream, x, 1, 4200.0);
    return 0;
}
