// Issue 14, session 60: the vector-wise decode family's split of k summed without a second
// kernel, prototyped outside the build and timed beside the H200's committed winners (their
// own rendered sources, ../decode-balanced/winners.cuh) in one program, with session 54's
// harness (../decode-balanced/balanced.cu: data, CPU reference, the decode timing rule of
// bursts of 20 programmatic launches over rotating weight copies, median of 7 bursts).
//
// Why: the two m = 1, L = 32 entries of tuning-db/h200-decode.sqlite under issue 14's 85 %
// line (1 × 5120 × 5120 at 12:32, 79.6 %; 1 × 5120 × 13824 at 4:32, 77.7 %) both split k
// three ways (240 blocks on 132 SMs) and pay a reduction kernel: read off the report, split
// entries cost about 3.2 µs + bytes / 4.6 TB/s, unsplit ones 1.4 µs + bytes / 4.5 TB/s.
// Session 54 found the split itself necessary (it is how 5,120 columns get enough warps).
// What is left to remove is the second kernel. Two ways, one launch each:
//
// * cluster: the split blocks of a column block form a cluster along z (rank = blockIdx.z =
//   the k slice); each puts its block sums in shared memory, the cluster meets at a
//   barrier, block r adds up the columns t ≡ r (mod split) of every block's sums in rank
//   order (distributed shared memory) and stores C, and a second barrier keeps the sums
//   alive until all are read. The same additions as the reduction kernel, in its order.
// * last: each block writes its sums to the workspace, and the last of a column block's
//   split blocks to arrive (a counter per column block, back at zero after each launch)
//   adds the slices in z order and stores C.
//
// Output: per problem, the committed winner (main + reduction kernel), this file's copy of
// its loop with the same reduction kernel (a control of the copy), then each variant, with
// the number of clusters the GPU can hold at once (cudaOccupancyMaxActiveClusters) and its
// error against the CPU reference.
#define BALANCED_NO_MAIN
#include "balanced.cu"

#include <initializer_list>
#include <string>

namespace cl {

enum Sum { REDUCE = 0, CLUSTER = 1, LAST = 2 };

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ unsigned map_to_rank(unsigned addr, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
    return r;
}

__device__ __forceinline__ float ld_cluster(unsigned addr) {
    float v;
    asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
    return v;
}

__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wait_prev() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

// The decode family's loop for m = 1, row-major A (nm_spmm_decode.cu.tera, stream_rows with
// STAGES 1 or 3), then the block's sums as store_block_sums adds them, then SUM.
template <int NS, int NT, int U, int WARPS, int STAGES, int N, int SUM>
__global__ void __launch_bounds__(WARPS * 32)
    decode(const float* A, const float* __restrict__ B, const int* __restrict__ D, float* C,
           float* ws, unsigned* counters, int n, int k) {
    constexpr int LANES = NS / NT, RW = 32 / LANES, VEC = NT / 4, M = WINDOW_M;
    __shared__ float red[WARPS][NS];
    __shared__ float part[NS];
    __shared__ bool last;
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int r = lane / LANES, lc = (lane % LANES) * NT;
    const int col = blockIdx.x * NS + lc, g = col / GROUP_L, q = n / GROUP_L;
    const int windows = k / M, w = windows * N;
    const int split = gridDim.z, z = blockIdx.z;
    const int per = (windows + split - 1) / split;
    const int start = min(w, z * per * N), end = min(w, start + per * N);
    float acc[NT];
#pragma unroll
    for (int i = 0; i < NT; ++i) acc[i] = 0.0f;
    struct Rows {
        float4 b[U][VEC];
        int kk[U];
    };
    auto load = [&](Rows& x, int base) {
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const int u = base + j * RW + r;
            const bool ok = u < end;
            x.kk[j] = ok ? (u / N) * M + __ldg(D + static_cast<size_t>(u) * q + g) : 0;
#pragma unroll
            for (int v = 0; v < VEC; ++v)
                x.b[j][v] = ok ? __ldcs(reinterpret_cast<const float4*>(
                                     B + static_cast<size_t>(u) * n + col + 4 * v))
                               : make_float4(0, 0, 0, 0);
        }
    };
    auto use = [&](const Rows& x) {
#pragma unroll
        for (int j = 0; j < U; ++j) {
            const float a = __ldca(A + x.kk[j]);
#pragma unroll
            for (int v = 0; v < VEC; ++v) {
                acc[4 * v + 0] = fmaf(a, x.b[j][v].x, acc[4 * v + 0]);
                acc[4 * v + 1] = fmaf(a, x.b[j][v].y, acc[4 * v + 1]);
                acc[4 * v + 2] = fmaf(a, x.b[j][v].z, acc[4 * v + 2]);
                acc[4 * v + 3] = fmaf(a, x.b[j][v].w, acc[4 * v + 3]);
            }
        }
    };
    const int first = start + warp * U * RW, stride = WARPS * U * RW;
    if constexpr (STAGES == 1) {
        bool waited = false;
        for (int base = first; base < end; base += stride) {
            Rows cur;
            load(cur, base);
            if (!waited) {
                wait_prev();
                waited = true;
            }
            use(cur);
        }
        if (!waited) wait_prev();
    } else {
        Rows early[2];
        load(early[0], first);
        load(early[1], first + stride);
        wait_prev();
        use(early[0]);
        use(early[1]);
        for (int base = first + 2 * stride; base < end; base += stride) {
            Rows cur;
            load(cur, base);
            use(cur);
        }
    }
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
        for (int zz = 0; zz < WARPS; ++zz) s += red[zz][t];
    const int c0 = blockIdx.x * NS;
    if constexpr (SUM == REDUCE) {
        if (t < NS) ws[static_cast<size_t>(z) * n + c0 + t] = s;
    } else if constexpr (SUM == CLUSTER) {
        if (t < NS) part[t] = s;
        cluster_sync();
        if (t < NS && t % split == z) {
            const unsigned at = smem_u32(&part[t]);
            float v = ld_cluster(map_to_rank(at, 0));
            for (int zz = 1; zz < split; ++zz) v += ld_cluster(map_to_rank(at, zz));
            C[c0 + t] = v;
        }
        cluster_sync();
    } else {
        if (t < NS) {
            ws[static_cast<size_t>(z) * n + c0 + t] = s;
            __threadfence();
        }
        __syncthreads();
        if (t == 0) last = atomicAdd(&counters[blockIdx.x], 1u) == static_cast<unsigned>(split - 1);
        __syncthreads();
        if (last) {
            __threadfence();
            if (t < NS) {
                float v = __ldcg(ws + c0 + t);
                for (int zz = 1; zz < split; ++zz) v += __ldcg(ws + static_cast<size_t>(zz) * n + c0 + t);
                C[c0 + t] = v;
            }
            if (t == 0) counters[blockIdx.x] = 0;
        }
    }
}

}  // namespace cl

// A launch as a programmatic dependent (pdl) in clusters of (1, 1, cluster_z); returns the
// launch's error instead of stopping, so that a refused combination skips one variant.
template <typename... Params, typename... Args>
cudaError_t launch_cluster(cudaStream_t stream, void (*kernel)(Params...), dim3 grid, int block,
                           int cluster_z, bool pdl, Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(block);
    cfg.stream = stream;
    cudaLaunchAttribute la[2];
    la[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    la[0].val.programmaticStreamSerializationAllowed = 1;
    la[1].id = cudaLaunchAttributeClusterDimension;  // first when pdl is off
    la[1].val.clusterDim.x = 1;
    la[1].val.clusterDim.y = 1;
    la[1].val.clusterDim.z = cluster_z;
    cfg.attrs = pdl ? la : la + 1;
    cfg.numAttrs = (pdl ? 1 : 0) + (cluster_z > 1 ? 1 : 0);
    return cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...);
}

Reduce g_reduce = nullptr;  // the problem's winner's reduction kernel (same for every split)

template <int NS, int NT, int U, int WARPS, int STAGES, int N, int SUM>
void time_variant(cudaStream_t stream, Data& x, int split, double copy) {
    auto kernel = cl::decode<NS, NT, U, WARPS, STAGES, N, SUM>;
    const dim3 grid(x.n / NS, 1, split);
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, kernel));
    int clusters = 0;
    if (SUM == cl::CLUSTER) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = dim3(WARPS * 32);
        cudaLaunchAttribute la[1];
        la[0].id = cudaLaunchAttributeClusterDimension;
        la[0].val.clusterDim.x = 1;
        la[0].val.clusterDim.y = 1;
        la[0].val.clusterDim.z = split;
        cfg.attrs = la;
        cfg.numAttrs = 1;
        CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg));
    }
    const int copies = static_cast<int>(x.b.size());
    bool pdl = true;
    cudaError_t failed = cudaSuccess;
    auto one = [&](int i) {
        const cudaError_t e = launch_cluster(stream, kernel, grid, WARPS * 32,
                                             SUM == cl::CLUSTER ? split : 1, pdl, x.a,
                                             x.b[i % copies], x.d[i % copies], x.c, x.ws,
                                             x.counters, x.n, x.k);
        if (e != cudaSuccess && failed == cudaSuccess) failed = e;
        if (SUM == cl::REDUCE && split > 1)
            launch3(stream, g_reduce, dim3((x.n / 4 + 255) / 256), 256, 0, x.ws, x.c, 1, x.n,
                    split, 1.0f, 0.0f);
    };
    CHECK(cudaMemset(x.c, 0, sizeof(float) * x.n));
    one(0);
    if (failed != cudaSuccess) {  // e.g. clusters refused as programmatic dependents
        printf("  (%s with pdl: %s; retried without)\n", SUM == cl::CLUSTER ? "cluster" : "launch",
               cudaGetErrorString(failed));
        cudaGetLastError();
        failed = cudaSuccess;
        pdl = false;
        one(0);
        if (failed != cudaSuccess) {
            printf("  skipped: %s\n", cudaGetErrorString(failed));
            cudaGetLastError();
            return;
        }
    }
    const double err = check(stream, x);
    static const char* names[] = {"reduce", "cluster", "last"};
    char label[128];
    const std::string extra =
        (SUM == cl::CLUSTER ? ", " + std::to_string(clusters) + " clusters at once" : "") +
        (pdl ? "" : ", no pdl");
    snprintf(label, sizeof label, "%s ns%d w%d cp%d sk%d (%d regs, %d blocks%s)", names[SUM], NS,
             WARPS, STAGES, split, attr.numRegs, x.n / NS * split, extra.c_str());
    report(label, time_bursts(stream, one), x, copy, err);
}

struct ClusterSet {
    template <int N>
    static void run(cudaStream_t stream, Data& x, int, double copy) {
        time_variant<64, 8, 4, 8, 3, N, cl::REDUCE>(stream, x, 3, copy);
        for (int s : {2, 3, 4}) time_variant<64, 8, 4, 8, 3, N, cl::CLUSTER>(stream, x, s, copy);
        for (int s : {2, 3, 4}) time_variant<64, 8, 4, 8, 3, N, cl::LAST>(stream, x, s, copy);
        for (int s : {2, 3}) time_variant<64, 8, 4, 16, 1, N, cl::CLUSTER>(stream, x, s, copy);
        for (int s : {2, 3}) time_variant<64, 8, 4, 16, 1, N, cl::LAST>(stream, x, s, copy);
        for (int s : {2, 3}) time_variant<64, 8, 4, 16, 3, N, cl::CLUSTER>(stream, x, s, copy);
        for (int s : {2, 3}) time_variant<32, 8, 4, 8, 3, N, cl::CLUSTER>(stream, x, s, copy);
        for (int s : {2, 3}) time_variant<32, 8, 4, 8, 3, N, cl::LAST>(stream, x, s, copy);
        for (int s : {2}) time_variant<32, 8, 4, 16, 1, N, cl::CLUSTER>(stream, x, s, copy);
        for (int s : {2}) time_variant<32, 8, 4, 16, 1, N, cl::LAST>(stream, x, s, copy);
    }
};

int main() {
    g_reduce = W12_5120_REDUCE;  // every decode winner's reduction kernel is the same code
    return run_problems<ClusterSet>();
}
