// Issue 15, first prototype (session 17; run on an H100 in session 18 with WN = 32, KW = 32,
// STAGES = 3: h100-tc0.txt; every shape in session 22, which added 256-row blocks (WM) and
// the mbarrier pipeline (MBAR): session22/ and docs/perf-log.md):
// vector-wise N:M sparse times dense on BF16 tensor cores, FP32 accumulation, L = 128 (one
// column group per block), 64 or 32 (two or four), timed beside cuBLAS BF16 (cublasGemmEx, FP32 compute) on the
// dense weight of the same shape, checked against a CPU reference on the same rounded inputs
// and against cuBLAS on the pruned weight. Outside the build, like the element-wise prototype
// (docs/results/v4.11/ew-prototype/): nvcc -O3 -arch=sm_90 tc0.cu -lcublas -o tc0.
// (Its host side, shared with tc1.cu, moved to harness.h in session 21.) `tc0 RUNS` runs the
// session-18 list; `tc0 RUNS wm`, `mb` and `k` the session-22 comparisons.
//
//   C (m×n, row-major, bf16) = A (m×k, column-major: element (i, kk) at kk·m + i, bf16)
//                              × W, W given as B' (w×n row-major bf16, w = k·N/M: the kept
//                              rows) and D (w×q int, q = n/L: window position of kept row u
//                              of column group g)
//
// How (docs/design.md "Tensor cores: what bounds a BF16/FP16 N:M kernel (planned)"):
// * Block MS = 64·WM rows (WM = 2: 128; WM = 4, session 22: 256) × NS = 4·WN columns = G = NS/L
//   column groups, WM (m) × 4 (n) warps,
//   warp tile 64 × WN (inside one group: WN divides L): 4 m16 by WN/8 n8
//   `mma.sync.m16n8k16` tiles, 2·WN FP32 accumulators per thread.
// * A k-stage is KW consecutive kept rows u (KW·M/N rows of k). Its copy gathers, for
//   each group g and kept row u, the column kk = (u/N)·M + D[u][g] of A (m contiguous bf16 in
//   column-major A: 16 cp.async of 16 bytes for 128 rows) into the group's dense k-major tile
//   As[g][KW][128 + 8], and copies the KW rows of B' into Bs[KW][NS + 8]. So the tensor-core
//   loop sees dense 128 × KW by KW × L products per stage; the G groups gather A separately
//   (G times the A copies; the union of their rows would be less at G = 4, design.md).
//   Rows padded by 8 bf16 (16 bytes): the 8 row addresses of an ldmatrix phase fall in 8
//   different 16-byte bank groups.
// * Fragments: `ldmatrix.x4.trans` for A (the tile is A transposed) and for B' (k rows of n).
// * STAGES-deep cp.async ring, one barrier per stage (MBAR: per-stage "full" and "empty"
//   mbarriers instead, see the main loop); the D indices of a stage are loaded one stage
//   ahead into registers, so no global load sits between the barrier and the copies.
// Shapes: m and n multiples of 128, w a multiple of KW.
#include "harness.h"

namespace tc {
constexpr int PAD = 8;           // bf16 of padding per shared row

// The tunable part (session 18 ran WN = 32, KW = 32, STAGES = 3 only): warp tile 64 x WN,
// WM x 4 warps, block MS = 64·WM rows x NS = 4·WN columns, KW kept rows per stage. WM = 4
// (session 22) lets each B' tile serve 256 rows: a quarter fewer L2 bytes per FLOP at L = 128,
// where the 128-row blocks are bound by L2 (docs/results/tc-prototype/session22).
template <int WN, int KW, int STAGES, int WM = 2>
struct Shape {
    static constexpr int MS = 64 * WM;                 // rows of C per block
    static constexpr int THREADS = 128 * WM;           // WM (m) x 4 (n) warps
    static constexpr int ROW_A = MS + PAD;             // As row length
    static constexpr int NS = 4 * WN;                  // columns of C per block
    static constexpr int ROW_B = NS + PAD;             // Bs row length
    static constexpr int TILE_A = KW * ROW_A;          // bf16 per group's A tile
    static constexpr int TILE_B = KW * ROW_B;          // bf16 per B' tile
    static constexpr int A_CHUNKS = KW * MS / 8;       // 16-byte copies per group's A tile
    static constexpr int B_CHUNKS = KW * NS / 8;       // 16-byte copies per B' tile
    static constexpr int A_PER_THREAD = A_CHUNKS / THREADS;
    static constexpr int B_PER_THREAD = B_CHUNKS / THREADS;
    static_assert(A_CHUNKS % THREADS == 0 && B_CHUNKS % THREADS == 0, "whole copies per thread");
    static_assert(WN % 16 == 0 && KW % 16 == 0 && STAGES >= 2, "shape");
    template <int L>
    __host__ __device__ static constexpr size_t smem_bytes() {
        return static_cast<size_t>(STAGES) * ((NS / L) * TILE_A + TILE_B) * 2;
    }
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const bf16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
}  // namespace tc

template <int N, int M, int L, int WN, int KW, int STAGES, int WM, bool MBAR, int PROD>
__global__ void __launch_bounds__(tc::Shape<WN, KW, STAGES, WM>::THREADS + 32 * PROD)
    nm_tc_bf16(const bf16* __restrict__ A, const bf16* __restrict__ B, const int* __restrict__ D,
               bf16* __restrict__ C, int m, int n, int k) {
    using namespace tc;
    using S = Shape<WN, KW, STAGES, WM>;
    constexpr int NS = S::NS, TILE_A = S::TILE_A, TILE_B = S::TILE_B, ROW_B = S::ROW_B;
    constexpr int MS = S::MS, THREADS = S::THREADS, ROW_A = S::ROW_A;
    constexpr int PER_THREAD = S::A_PER_THREAD;
    constexpr int G = NS / L;  // column groups per block
    constexpr int A_PER_THREAD = G * PER_THREAD;
    static_assert(NS % L == 0 && L % WN == 0, "a warp's WN columns lie in one group");
    // PROD producer warps (session 22) do every copy; the THREADS threads only compute. The
    // producers are written for one column group and 256-row blocks: a lane copies one
    // 16-byte piece of each kept column its warp takes (every PROD-th).
    static_assert(PROD == 0 || (MBAR && G == 1 && MS / 8 == 32 && KW % 32 == 0 && KW % (PROD > 0 ? PROD : 1) == 0),
                  "producer warps: with MBAR, L = NS, 256 rows, KW a multiple of 32");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    bf16* As = reinterpret_cast<bf16*>(smem_raw);  // [STAGES][G][KW][ROW_A]
    bf16* Bs = As + STAGES * G * TILE_A;           // [STAGES][KW][ROW_B]
    // MBAR: full[STAGES], empty[STAGES] after the tiles.
    uint64_t* full = reinterpret_cast<uint64_t*>(smem_raw + S::template smem_bytes<L>());
    uint64_t* empty = full + STAGES;

    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid / 32;
    const int m0 = blockIdx.y * MS;
    const int n0 = blockIdx.x * NS;
    const int g0 = n0 / L;  // the block's first column group
    const int q = n / L;
    const int w = k / M * N;
    const int stages_total = w / KW;

    // This thread's A copies: chunk c = tid + THREADS·i (of A_CHUNKS per group's tile) is kept
    // row c / 16 of the stage, 16-byte piece c % 16 of it; A copy i of group i / PER_THREAD.
    // B' copies likewise with NS / 8 pieces per row.
    auto row_of = [&](int i) { return (tid + THREADS * (i % PER_THREAD)) / (MS / 8); };
    auto piece_of = [&](int i) { return (tid + THREADS * (i % PER_THREAD)) % (MS / 8); };
    auto b_row_of = [&](int i) { return (tid + THREADS * i) / (NS / 8); };
    auto b_piece_of = [&](int i) { return (tid + THREADS * i) % (NS / 8); };
    // Column of A of each A copy's kept row, for the stage issued next.
    int next_col[A_PER_THREAD];
    auto load_cols = [&](int stage, int (&col)[A_PER_THREAD]) {
#pragma unroll
        for (int i = 0; i < A_PER_THREAD; ++i) {
            const int u = stage * KW + row_of(i);
            const int g = g0 + i / PER_THREAD;
            col[i] = stage < stages_total ? (u / N) * M + __ldg(D + static_cast<size_t>(u) * q + g)
                                          : 0;
        }
    };
    auto issue = [&](int stage, const int (&col)[A_PER_THREAD]) {
        if (stage < stages_total) {
            bf16* as = As + (stage % STAGES) * G * TILE_A;
            bf16* bs = Bs + (stage % STAGES) * TILE_B;
#pragma unroll
            for (int i = 0; i < A_PER_THREAD; ++i) {
                const int r = row_of(i), p = piece_of(i) * 8;
                cp_async16(as + (i / PER_THREAD) * TILE_A + r * ROW_A + p,
                           A + static_cast<size_t>(col[i]) * m + m0 + p);
            }
#pragma unroll
            for (int i = 0; i < S::B_PER_THREAD; ++i) {
                const int r = b_row_of(i), p = b_piece_of(i) * 8;
                const int u = stage * KW + r;
                cp_async16(bs + r * ROW_B + p, B + static_cast<size_t>(u) * n + n0 + p);
            }
        }
        if constexpr (MBAR) {
            if (stage < stages_total) pipe::mbar_arrive_copies(&full[stage % STAGES]);
        } else {
            cp_commit();  // an empty group past the end keeps the wait counts uniform
        }
    };

    // MBAR (session 22) replaces the block-wide barrier of every stage by mbarriers: a warp
    // waits only for the stage it reads to be full, and a thread refills a slot once every
    // warp has released it. The copies then run AHEAD = STAGES - 2 stages ahead, so that the
    // slot refilled at stage s was read at stage s - 2: one stage of slack between the
    // fastest warp and the slowest.
    constexpr int AHEAD = MBAR ? STAGES - 2 : STAGES - 1;
    static_assert(AHEAD >= 1, "MBAR needs 3 stages or more");
    if constexpr (MBAR)
        pipe::init_ring(full, empty, STAGES, PROD > 0 ? 32 * PROD : THREADS, THREADS / 32);
    if constexpr (PROD > 0) {
        if (tid >= THREADS) {
            const int pw = (tid - THREADS) / 32;  // producer warp
            // The producer: stage st into its slot once every computing warp has released
            // the slot's previous stage. The indices of stage st + 1 load while stage st's
            // copies go out (KW / 32 per lane, handed to every lane by shuffles).
            constexpr int IW = KW / 32;
            int idx[IW], next[IW];
            auto load_idx = [&](int st, int (&out)[IW]) {
#pragma unroll
                for (int t = 0; t < IW; ++t) {
                    const int u = st * KW + lane + 32 * t;
                    out[t] = st < stages_total ? (u / N) * M + __ldg(D + static_cast<size_t>(u) * q + g0) : 0;
                }
            };
            load_idx(0, next);
            for (int st = 0; st < stages_total; ++st) {
#pragma unroll
                for (int t = 0; t < IW; ++t) idx[t] = next[t];
                load_idx(st + 1, next);
                if (st >= STAGES) pipe::mbar_wait(&empty[st % STAGES], (st / STAGES + 1) & 1);
                bf16* as = As + (st % STAGES) * TILE_A;
                bf16* bs = Bs + (st % STAGES) * TILE_B;
#pragma unroll 8
                for (int j = pw; j < KW; j += PROD) {
                    const int col = __shfl_sync(0xffffffffu, idx[j / 32], j % 32);
                    cp_async16(as + j * ROW_A + 8 * lane, A + static_cast<size_t>(col) * m + m0 + 8 * lane);
                }
#pragma unroll 8
                for (int c = tid - THREADS; c < S::B_CHUNKS; c += 32 * PROD) {
                    const int r = c / (NS / 8), p = (c % (NS / 8)) * 8;
                    cp_async16(bs + r * ROW_B + p, B + static_cast<size_t>(st * KW + r) * n + n0 + p);
                }
                pipe::mbar_arrive_copies(&full[st % STAGES]);
            }
            cp_wait<0>();
            return;
        }
    }
    if constexpr (PROD == 0) {
        for (int s = 0; s < AHEAD; ++s) {
            int col[A_PER_THREAD];
            load_cols(s, col);
            issue(s, col);
        }
        load_cols(AHEAD, next_col);
    }

    constexpr int NJ = WN / 8;        // n8 tiles per warp
    const int wm = (warp / 4) * 64;  // warp tile origin in the block
    const int wn = (warp % 4) * WN;
    float acc[4][NJ][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    // ldmatrix lane roles: matrix j = lane / 8, its row r = lane % 8.
    const int lj = lane / 8, lr = lane % 8;
    for (int s = 0; s < stages_total; ++s) {
        if constexpr (PROD > 0) {
            // nothing to copy: the producer warp does
        } else if constexpr (MBAR) {
            // Stage s + AHEAD reuses the slot of stage s + AHEAD - STAGES: the phase that
            // every warp's release of it completed has parity ((s + AHEAD) / STAGES + 1) % 2.
            const int ahead = s + AHEAD;
            if (ahead < stages_total && ahead >= STAGES)
                pipe::mbar_wait(&empty[ahead % STAGES], (ahead / STAGES + 1) & 1);
        } else {
            cp_wait<STAGES - 2>();
            __syncthreads();  // stage s landed; every warp is done with slot (s - 1) % STAGES
        }
        if constexpr (PROD == 0) {
            int col[A_PER_THREAD];
#pragma unroll
            for (int i = 0; i < A_PER_THREAD; ++i) col[i] = next_col[i];
            issue(s + AHEAD, col);
            load_cols(s + AHEAD + 1, next_col);
        }
        if constexpr (MBAR) pipe::mbar_wait(&full[s % STAGES], (s / STAGES) & 1);

        const bf16* as = As + ((s % STAGES) * G + wn / L) * TILE_A;  // the warp's group
        const bf16* bs = Bs + (s % STAGES) * TILE_B;
#pragma unroll
        for (int k16 = 0; k16 < KW; k16 += 16) {
            uint32_t a[4][4], b[NJ / 2][4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                // matrices: (m +0, k +0), (m +8, k +0), (m +0, k +8), (m +8, k +8)
                const int kk = k16 + lr + 8 * (lj >> 1);
                const int mm = wm + 16 * i + 8 * (lj & 1);
                tc::ldsm_x4_trans(a[i], as + kk * ROW_A + mm);
            }
#pragma unroll
            for (int jj = 0; jj < NJ / 2; ++jj) {
                // matrices: (k +0, n +0), (k +8, n +0), (k +0, n +8), (k +8, n +8)
                const int kk = k16 + lr + 8 * (lj & 1);
                const int nn = wn + 16 * jj + 8 * (lj >> 1);
                tc::ldsm_x4_trans(b[jj], bs + kk * ROW_B + nn);
            }
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < NJ; ++j)
                    tc::mma_bf16(acc[i][j], a[i], b[j / 2][2 * (j % 2)], b[j / 2][2 * (j % 2) + 1]);
        }
        if constexpr (MBAR) {
            // Every lane's fragment loads of the stage were consumed by the MMAs above.
            __syncwarp();
            if (lane == 0) pipe::mbar_arrive(&empty[s % STAGES]);
        }
    }
    tc::cp_wait<0>();

    // C fragment: c0, c1 at (row gid, cols 2·tig, +1), c2, c3 at row gid + 8.
    const int gid = lane / 4, tig = lane % 4;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + wm + 16 * i + gid + 8 * h;
                const int cn = n0 + wn + 8 * j + 2 * tig;
                const __nv_bfloat162 v =
                    __floats2bfloat162_rn(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                *reinterpret_cast<__nv_bfloat162*>(C + static_cast<size_t>(row) * n + cn) = v;
            }
}

// ---------------------------------------------------------------------------------------------
// Host: random data, pruning, CPU reference, cuBLAS, timing.

template <int N, int M, int L, int WN = 32, int KW = 32, int STAGES = 3, int WM = 2,
          bool MBAR = false, int PROD = 0>
static void run(cublasHandle_t h, int m, int n, int k, int runs, std::mt19937& rng) {
    const size_t smem = tc::Shape<WN, KW, STAGES, WM>::template smem_bytes<L>() +
                        (MBAR ? 2 * STAGES * sizeof(uint64_t) : 0);
    if (!smem_fits(smem)) return;
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> Wf(static_cast<size_t>(k) * n);
    for (auto& x : Wf) x = dist(rng);
    std::vector<bf16> Ah(static_cast<size_t>(m) * k);  // column-major
    for (auto& x : Ah) x = __float2bfloat16(dist(rng));
    const Sparse sp = prune(Wf, k, n, N, M, L);
    std::vector<bf16> Wdense(static_cast<size_t>(k) * n);  // the unpruned weight, rounded
    for (size_t i = 0; i < Wdense.size(); ++i) Wdense[i] = __float2bfloat16(Wf[i]);

    bf16 *dA, *dB, *dC, *dW, *dWp, *dCref;
    int* dD;
    CHECK(cudaMalloc(&dA, Ah.size() * 2));
    CHECK(cudaMalloc(&dB, sp.values.size() * 2));
    CHECK(cudaMalloc(&dD, sp.index.size() * 4));
    CHECK(cudaMalloc(&dC, static_cast<size_t>(m) * n * 2));
    CHECK(cudaMalloc(&dCref, static_cast<size_t>(m) * n * 2));
    CHECK(cudaMalloc(&dW, Wdense.size() * 2));
    CHECK(cudaMalloc(&dWp, sp.dense.size() * 2));
    CHECK(cudaMemcpy(dA, Ah.data(), Ah.size() * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, sp.values.data(), sp.values.size() * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dD, sp.index.data(), sp.index.size() * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dW, Wdense.data(), Wdense.size() * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dWp, sp.dense.data(), sp.dense.size() * 2, cudaMemcpyHostToDevice));

    using S = tc::Shape<WN, KW, STAGES, WM>;
    const auto kernel = nm_tc_bf16<N, M, L, WN, KW, STAGES, WM, MBAR, PROD>;
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(smem)));
    const dim3 grid(n / S::NS, m / S::MS);
    auto ours = [&] { kernel<<<grid, S::THREADS + 32 * PROD, smem>>>(dA, dB, dD, dC, m, n, k); };
    // cuBLAS, column-major: C^T (n×m) = W^T (n×k, ld n) · A^T (A: m×k column-major, ld m).
    const float one = 1.0f, zero = 0.0f;
    auto blas = [&](const bf16* w, bf16* c) {
        CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, n, m, k, &one, w, CUDA_R_16BF, n, dA,
                                CUDA_R_16BF, m, &zero, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    };
    ours();
    CHECK(cudaGetLastError());
    blas(dWp, dCref);
    CHECK(cudaDeviceSynchronize());

    std::vector<bf16> Ch(static_cast<size_t>(m) * n), Cr(static_cast<size_t>(m) * n);
    CHECK(cudaMemcpy(Ch.data(), dC, Ch.size() * 2, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(Cr.data(), dCref, Cr.size() * 2, cudaMemcpyDeviceToHost));
    const Errors err = errors(Ah, sp, Ch, Cr, m, n, k, N, M, L);

    const float t_ours = median_ms(runs, ours);
    const float t_blas = median_ms(runs, [&] { blas(dW, dCref); });
    const double flop = 2.0 * m * n * k;
    printf("%s%s%swn%d kw%d st%d  m=%d n=%d k=%d %d:%d L=%d  ours %.1f us  cuBLAS bf16 dense %.1f us (%.0f TFLOP/s)  "
           "speed-up %.3f  err vs CPU %.2e  vs cuBLAS pruned %.2e\n",
           PROD ? "prod " : "", MBAR ? "mbar " : "", WM == 2 ? "" : (WM == 4 ? "wm4 " : "wm? "), WN, KW, STAGES, m, n,
           k, N, M, L, t_ours * 1e3, t_blas * 1e3, flop / (t_blas * 1e-3) / 1e12,
           t_blas / t_ours, err.cpu, err.cublas);
    fflush(stdout);
    for (void* p : {(void*)dA, (void*)dB, (void*)dD, (void*)dC, (void*)dCref, (void*)dW, (void*)dWp})
        CHECK(cudaFree(p));
}

int main(int argc, char** argv) {
    const int runs = argc > 1 ? atoi(argv[1]) : 20;
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    std::mt19937 rng(17);
    const int shapes[][3] = {{4096, 4096, 4096}, {4096, 11008, 4096}, {4096, 4096, 11008},
                             {256, 4096, 4096}};
    // `tc0 RUNS p`: a producer warpgroup (4 warps copy, 16 compute) beside the mbarrier
    // pipeline where every warp does both, 256 rows, KW 64, L = 128.
    if (argc > 2 && argv[2][0] == 'p') {
        for (const auto& s : {shapes[0], shapes[1]}) {
            run<16, 32, 128, 32, 64, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 128, 32, 64, 4, 4, true, 4>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 128, 32, 32, 6, 4, true, 4>(h, s[0], s[1], s[2], runs, rng);
            run<12, 32, 128, 32, 64, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<12, 32, 128, 32, 64, 4, 4, true, 4>(h, s[0], s[1], s[2], runs, rng);
            run<8, 32, 128, 32, 64, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<8, 32, 128, 32, 64, 4, 4, true, 4>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 128, 32, 64, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 128, 32, 64, 4, 4, true, 4>(h, s[0], s[1], s[2], runs, rng);
        }
        CHECK_BLAS(cublasDestroy(h));
        return 0;
    }
    // `tc0 RUNS k`: the mbarrier pipeline's larger k-tiles at every sparsity, L = 128.
    if (argc > 2 && argv[2][0] == 'k') {
        for (const auto& s : {shapes[0], shapes[1]}) {
            run<16, 32, 128, 32, 64, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 128, 32, 64, 4, 2, true>(h, s[0], s[1], s[2], runs, rng);
            run<12, 32, 128, 32, 64, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<12, 32, 128, 32, 32, 5, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<8, 32, 128, 32, 64, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<8, 32, 128, 32, 64, 4, 2, true>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 128, 32, 64, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 128, 32, 64, 4, 2, true>(h, s[0], s[1], s[2], runs, rng);
            // One producer warp copies, 16 warps compute (256 rows, L = 128).
            run<16, 32, 128, 32, 64, 4, 4, true, 1>(h, s[0], s[1], s[2], runs, rng);
            // 64 × 64 warp tiles: as many FLOP per shared byte as the tensor cores need
            // (docs/design.md's table), two column groups per block at L = 128.
            run<16, 32, 128, 64, 32, 4, 2, true>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 128, 64, 64, 3, 2, true>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 128, 64, 32, 4, 2, true>(h, s[0], s[1], s[2], runs, rng);
        }
        CHECK_BLAS(cublasDestroy(h));
        return 0;
    }
    // `tc0 RUNS mb`: the mbarrier pipeline (session 22) beside the barrier one it replaces.
    if (argc > 2 && argv[2][0] == 'm') {
        for (const auto& s : {shapes[0], shapes[1], shapes[3]}) {
            run<16, 32, 128>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 128, 32, 32, 4, 2, true>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 128, 32, 32, 5, 2, true>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 128, 32, 32, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 128, 32, 32, 5, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 128, 32, 64, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<8, 32, 128>(h, s[0], s[1], s[2], runs, rng);
            run<8, 32, 128, 32, 32, 4, 2, true>(h, s[0], s[1], s[2], runs, rng);
            run<8, 32, 128, 32, 32, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 128>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 128, 32, 32, 4, 2, true>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 128, 32, 32, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 32>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 32, 32, 32, 4, 2, true>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 32, 32, 32, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 32>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 32, 32, 32, 4, 4, true>(h, s[0], s[1], s[2], runs, rng);
        }
        CHECK_BLAS(cublasDestroy(h));
        return 0;
    }
    // `tc0 RUNS wm`: only session 22's 256-row blocks, each beside the 128-row block it grows.
    if (argc > 2 && argv[2][0] == 'w') {
        for (const auto& s : {shapes[0], shapes[1], shapes[3]}) {
            run<16, 32, 128>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 128, 32, 32, 3, 4>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 128, 32, 32, 4, 4>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 128, 32, 64, 3, 4>(h, s[0], s[1], s[2], runs, rng);
            run<12, 32, 128, 32, 32, 3, 4>(h, s[0], s[1], s[2], runs, rng);
            run<8, 32, 128>(h, s[0], s[1], s[2], runs, rng);
            run<8, 32, 128, 32, 32, 3, 4>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 128>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 128, 32, 32, 3, 4>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 32>(h, s[0], s[1], s[2], runs, rng);
            run<16, 32, 32, 32, 32, 3, 4>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 32>(h, s[0], s[1], s[2], runs, rng);
            run<4, 32, 32, 32, 32, 3, 4>(h, s[0], s[1], s[2], runs, rng);
        }
        CHECK_BLAS(cublasDestroy(h));
        return 0;
    }
    for (const auto& s : shapes) {
        run<16, 32, 128>(h, s[0], s[1], s[2], runs, rng);
        run<12, 32, 128>(h, s[0], s[1], s[2], runs, rng);
        run<8, 32, 128>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 128>(h, s[0], s[1], s[2], runs, rng);
    }
    for (const auto& s : shapes) {
        run<16, 32, 32>(h, s[0], s[1], s[2], runs, rng);
        run<8, 32, 32>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 32>(h, s[0], s[1], s[2], runs, rng);
    }
    // Block and stage shapes beyond session 18's (warp tile 64 x WN, KW kept rows per stage),
    // on 4096³ and 256 x 4096 x 4096: fewer instructions and barriers per MMA.
    for (const auto& s : {shapes[0], shapes[3]}) {
        run<16, 32, 128, 32, 64, 3>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 64, 32, 3>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 64, 64, 2>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 64, 64, 3>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 128, 32, 64, 3>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 128, 64, 64, 2>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 32, 32, 64, 3>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 32, 32, 64, 3>(h, s[0], s[1], s[2], runs, rng);
    }
    CHECK_BLAS(cublasDestroy(h));
    return 0;
}
