// Issue 15, second prototype (written offline in session 21, first run in session 22, results
// in docs/perf-log.md): the tc0.cu scheme with Hopper's warpgroup MMA instead of mma.sync.
// Outside the build, like tc0.cu: nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++17
// tc1.cu -lcublas -o tc1 (plain -arch=sm_90a also embeds compute_90 PTX, which has no wgmma).
//
//   C (m×n, row-major, bf16) = A (m×k, column-major bf16) × W, W given as B'ᵀ (n×w row-major
//   bf16: the kept rows of each column contiguous, w = k·N/M; the weight preparation stores
//   it so) and D (w×q int, q = n/L: window position of kept row u of column group g).
//
// How, against tc0.cu; the design is in
// docs/design.md "Tensor cores: what bounds a BF16/FP16 N:M kernel (planned)":
// * Block 128 rows × NS = 128 columns, G = NS/L column groups, 256 threads = 2 warpgroups,
//   warpgroup r computes rows 64r … 64r + 63 of every group with
//   `wgmma.mma_async.m64nLk16` (one instruction per group and 16 kept rows, L/2 FP32
//   accumulators per thread and group: 64 in all).
// * A is gathered exactly as in tc0.cu (kept columns of column-major A into a dense k-major
//   tile per group, As[g][KW][128 + 8]) and reaches the MMA from registers: each warp loads
//   its 16 rows with `ldmatrix.x4.trans`, the mma.m16n8k16 fragment that wgmma's register
//   form of A takes per warp. wgmma cannot gather, and its shared-memory form of A would need
//   the gathered tile in the core-matrix layout, which 16-byte copies of m-contiguous A
//   cannot write.
// * B'ᵀ is K-major, so the stage's B tile is copied 16 bytes (8 kept rows of one column) at a
//   time straight into wgmma's canonical no-swizzle layout: 8×8 core matrices of 128 bytes,
//   core matrix (n/8, k/8) at ((n/8)·KW/8 + k/8)·128 bytes, row n % 8 at +16·(n % 8). Its
//   descriptor: leading byte offset (next core matrix along k) 128, stride byte offset (next
//   along n) KW/8·128 (the swapped reading, also tried in session 22, is wrong).
// * Per stage: wait for the copies, `fence.proxy.async.shared::cta` (the copies are generic-
//   proxy writes that wgmma reads through the async proxy), barrier, issue the copies of the
//   stage STAGES-1 ahead, load every A fragment of the stage, `wgmma.fence`, the G·KW/16
//   wgmma, commit, wait for them before the next barrier reuses a slot.
// * Variants (template arguments): MINB blocks per SM for `__launch_bounds__` (2 holds the
//   kernel to 128 registers; at 146 only one block fits an SM and nothing overlaps its
//   waits), and DEFER, which waits only for the stage before (`wgmma.wait_group 1`): the
//   next stage's fragments load while this stage's wgmma run, into the other of two register
//   buffers, and the copies run STAGES-2 stages ahead so that no slot in use is overwritten.
// Shapes: m and n multiples of 128, w a multiple of KW.
#include "harness.h"

#include <cuda.h>  // CUtensorMap (TMA_A, session 42)

namespace tc {
constexpr int NS = 128;          // columns of C per block
constexpr int PAD = 8;           // bf16 of padding per As row (ldmatrix without conflicts)
constexpr int REG_COPY = 56;     // registers of a producer thread after setmaxnreg (session 42)

// WG warpgroups along m (2: the session-21 block of 128 rows; 4: 256 rows, session 22), each
// of them NH times along n (session 41: NH = 2 halves a warpgroup's accumulators).
template <int L, int KW, int STAGES, bool ASMEM = false, int WG = 2, int NH = 1>
struct Shape {
    static constexpr int MS = 64 * WG;                   // rows of C per block
    static constexpr int THREADS = 128 * WG * NH;
    static constexpr int ROW_A = MS + PAD;
    static constexpr int G = NS / L;                     // column groups per block
    // bf16 per group's A tile: padded k-major rows for ldmatrix, or core matrices (ASMEM)
    static constexpr int TILE_A = ASMEM ? MS * KW : KW * ROW_A;
    static constexpr int TILE_B = NS * KW;               // bf16 of the B tile (core matrices)
    static constexpr int A_CHUNKS = KW * MS / 8;         // 16-byte copies per group's A tile
    static constexpr int B_CHUNKS = NS * KW / 8;
    static constexpr int A_PER_THREAD = A_CHUNKS / THREADS;
    static constexpr int B_PER_THREAD = B_CHUNKS / THREADS;
    static_assert(A_CHUNKS % THREADS == 0, "whole copies per thread");
    static_assert(NS % L == 0 && KW % 16 == 0 && STAGES >= 2, "shape");
    // The tiles, then (MBAR) the full[STAGES] and empty[STAGES] mbarriers.
    __host__ __device__ static constexpr size_t tiles_bytes() {
        return static_cast<size_t>(STAGES) * (G * TILE_A + TILE_B) * 2;
    }
    __host__ __device__ static constexpr size_t smem_bytes(bool mbar) {
        return tiles_bytes() + (mbar ? 2 * STAGES * sizeof(uint64_t) : 0);
    }
};

// bf16 offset of (kept row r, 16-byte piece p of m) in an A tile in wgmma's MN-major 128-byte
// swizzled layout: each 64 rows of m (one warpgroup's) are KW/8 atoms of 1,024 bytes, atom j
// holding kept rows 8j … 8j + 7 as eight 128-byte lines of 64 consecutive m; the 16-byte
// chunk c of line r sits at chunk c ^ (r % 8).
template <int KW>
__host__ __device__ constexpr int sw128_offset(int r, int p) {
    return (p / 8) * (KW * 64) + (r / 8) * 512 + (r % 8) * 64 + (((p % 8) ^ (r % 8)) * 8);
}

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
__device__ __forceinline__ void fence_async_shared() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// CL >= 1 (session 41): the bulk-copy and cluster helpers of the B' image path.
__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::
                     : "memory");
}
// The phase of `bar` now also waits for `bytes` more bytes of bulk copies (no arrival).
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
}
// `bytes` contiguous bytes from global `src` to `dst` in this CTA (CL = 1) or, at the same
// offset, in every CTA of `mask` (multicast), each completing them on its own `bar`.
template <int CL>
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
    if constexpr (CL == 1) {
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                smem_addr(dst)),
            "l"(src), "r"(bytes), "r"(smem_addr(bar))
            : "memory");
    } else {
        const uint16_t mask = (1u << CL) - 1;
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
            "[%0], [%1], %2, [%3], %4;\n" ::"r"(smem_addr(dst)),
            "l"(src), "r"(bytes), "r"(smem_addr(bar)), "h"(mask)
            : "memory");
    }
}
// Arrive on the mbarrier at `bar`'s offset in every CTA of the cluster (CL of them).
template <int CL>
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar) {
    if constexpr (CL <= 1) {
        pipe::mbar_arrive(bar);
    } else {
#pragma unroll
        for (uint32_t c = 0; c < CL; ++c) {
            uint32_t remote;
            asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_addr(bar)), "r"(c));
            asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote)
                         : "memory");
        }
    }
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const bf16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void wgmma_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Shared-memory matrix descriptor, no swizzle: start address, leading and stride byte
// offsets, each in units of 16 bytes.
__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) |
           (static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16) |
           (static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32);
}

// The same with the 128-byte swizzle (layout type 1 in bits 62–63); the matrix's atoms must
// start on 1,024-byte boundaries (base offset 0).
__device__ __forceinline__ uint64_t make_desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo) {
    return make_desc(addr, lbo, sbo) | (static_cast<uint64_t>(1) << 62);
}

template <int N> struct Wgmma;
template <> struct Wgmma<32> {
    static __device__ __forceinline__ void run(float (&d)[16], const uint32_t (&a)[4], uint64_t desc, int scale_d) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
            "{" 
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
            "}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(scale_d));
    }
};
template <> struct Wgmma<64> {
    static __device__ __forceinline__ void run(float (&d)[32], const uint32_t (&a)[4], uint64_t desc, int scale_d) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
            "{" 
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
            "}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(scale_d));
    }
};
template <> struct Wgmma<128> {
    static __device__ __forceinline__ void run(float (&d)[64], const uint32_t (&a)[4], uint64_t desc, int scale_d) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
            "{" 
            "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
            "}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(scale_d));
    }
};
// Both operands from shared memory: A MN-major (imm-trans-a 1: m contiguous in a core
// matrix row), B' K-major (imm-trans-b 0); scale-d true (accumulate; acc starts at zero).
template <int N> struct WgmmaSS;
template <> struct WgmmaSS<32> {
    static __device__ __forceinline__ void run(float (&d)[16], uint64_t da, uint64_t db) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, 1, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
            : "l"(da), "l"(db), "r"(1));
    }
};
template <> struct WgmmaSS<64> {
    static __device__ __forceinline__ void run(float (&d)[32], uint64_t da, uint64_t db) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 1, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "l"(da), "l"(db), "r"(1));
    }
};
template <> struct WgmmaSS<128> {
    static __device__ __forceinline__ void run(float (&d)[64], uint64_t da, uint64_t db) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 1, 0;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "l"(da), "l"(db), "r"(1));
    }
};
}  // namespace tc

// CL (session 41): 0 copies B' from B'ᵀ with 16-byte cp.async per thread (as before). CL >= 1
// reads B' as an image prepared with the weight: for every 128-column block and stage the
// stage's B tile exactly as it lies in shared memory (16 KB at KW = 64), so thread 0 copies it
// with one bulk copy completing on the stage's `full` mbarrier (no per-thread B copies). With
// CL > 1 the grid runs in clusters of CL blocks along m, which read the same B' tiles: each
// copies 1/CL of the image to all of them (multicast), so B' crosses L2 once per cluster, and
// a stage's slot is free again only when every warp of the cluster has released it.
// PERSIST (session 41): a grid of one block per resident slot, each taking tiles
// blockIdx.x, + gridDim.x, … in turn; its stage ring runs on across tiles, so the next tile's
// first copies are in flight while this tile's last stages compute and its C is stored.
// PROBE (session 42), bits that leave work out to see what each part costs (the results are
// wrong then, and say so): 1 no copies of A (the slots keep what they held), 2 no wgmma, 4 no
// index loads (kept row j of a window read as row j, as if D held 0 … N - 1).
// IDX (session 42): the block's window positions (D's columns for its groups, one byte each,
// transposed by the weight preparation into Dt, q × w) go to shared memory once, by 16-byte
// cp.async issued before the first stages; every stage after those reads its positions there.
// The per-stage __ldg of D otherwise leaves its latency in every stage: leaving the index
// loads out (PROBE 4) made 16:32 1.39× faster at 4096³.
// With PERSIST the table is per tile: three buffers, thread 0 fetching tile t + 1's with one
// bulk copy (on the buffer's own mbarrier) when the load cursor enters tile t; the buffer it
// overwrites, tile t - 2's, was last read at least a tile's stages before (each thread's load
// cursor runs at most AHEAD + 1 stages ahead of the slowest thread's copies).
// QST (session 42): C leaves from the accumulators in 16-byte stores without shared memory:
// the four threads of a quad hold 2 columns each of four n8 blocks of a row; a 4×4 transpose
// by shuffles gives each thread one whole n8 block (so a persistent grid, whose ring holds the
// next tile's stages, can write C 16 bytes at a time too).
// DIET (session 42): fewer instructions a stage. ncu counted 269 warp instructions a stage at
// 16:32 (4 LDGSTS and 4 HGMMA among them, 51 IMAD, 24 LEA): 16 warps × 269 over 4 schedulers
// is more issue slots than the stage's 1,024 tensor clocks. So: the table holds each kept
// row's k itself (u16: no division by N, no multiply by M), A's offsets are 32-bit, and the
// wgmma descriptors are built once and advanced by adding the slot's offset (its address
// field counts 16-byte units; the byte offsets are constants, not kernel arguments).
// SC (session 41): C goes out through shared memory (the ring, free after the last stage) in
// 16-byte stores along its rows, instead of 4-byte stores straight from the accumulators:
// ncu put 12 % (16:32) to 30 % (4:32) of the warp-stall samples on those stores (LSU queue).
template <int N, int M, int L, int KW, int STAGES, int MINB, bool DEFER, bool ASMEM, int WG,
          bool MBAR, bool SWZ, int CL = 0, bool PERSIST = false, bool SC = false, int NH = 1,
          int PROBE = 0, bool IDX = false, bool QST = false, bool DIET = false>
__global__ void __launch_bounds__(tc::Shape<L, KW, STAGES, ASMEM, WG, NH>::THREADS, MINB)
    nm_wgmma_bf16(const bf16* __restrict__ A, const bf16* __restrict__ Bt, const int* __restrict__ D,
                  const uint8_t* __restrict__ Dt,
                  bf16* __restrict__ C, int m, int n, int k, uint32_t lbo, uint32_t sbo,
                  uint32_t albo, uint32_t asbo) {
    using namespace tc;
    using S = Shape<L, KW, STAGES, ASMEM, WG, NH>;
    constexpr int G = S::G, TILE_A = S::TILE_A, TILE_B = S::TILE_B;
    constexpr int MS = S::MS, THREADS = S::THREADS, ROW_A = S::ROW_A;
    static_assert(!MBAR || (ASMEM && DEFER), "the mbarrier pipeline takes A from shared memory");
    static_assert(!SWZ || ASMEM, "the swizzled layout is a shared-memory A layout");
    static_assert(CL == 0 || (MBAR && SWZ), "the B' image path is built on the sw128 mbarrier kernel");
    static_assert(!PERSIST || CL == 1, "the persistent grid is built on the B' image path");
    static_assert(!SC || (MBAR && !PERSIST), "C staged through the ring after the last stage");
    static_assert(NH == 1 || (SWZ && S::G == 1), "column halves: one group a block, A from shared memory");
    static_assert(!IDX || MBAR, "the index table is built on the mbarrier pipeline");
    static_assert(!DIET || (IDX && SWZ && CL == 1 && NH == 1), "the diet is built on the index table");
    static_assert(!QST || (!SC && (L / NH / 8) % 4 == 0), "quad-transposed stores: whole quads of n8 blocks");
    static_assert(CL >= 1 || S::B_CHUNKS % THREADS == 0, "whole B' copies per thread");
    constexpr int PER_THREAD = S::A_PER_THREAD;
    constexpr int A_PER_THREAD = G * PER_THREAD;
    constexpr int KC = KW / 8;  // 16-byte chunks (core-matrix columns) per B row of a stage
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    bf16* As = reinterpret_cast<bf16*>(smem_raw);  // [STAGES][G][KW][ROW_A]
    bf16* Bs = As + STAGES * G * TILE_A;           // [STAGES][NS/8][KC][8][8]
    uint64_t* full = reinterpret_cast<uint64_t*>(smem_raw + S::tiles_bytes());  // MBAR
    uint64_t* empty = full + STAGES;
    // IDX: the table buffers' mbarriers (PERSIST), then the TBUF buffers of G·w bytes
    uint64_t* table_full = reinterpret_cast<uint64_t*>(smem_raw + S::smem_bytes(true));
    constexpr int TBUF = PERSIST ? 3 : 1;
    uint8_t* positions = reinterpret_cast<uint8_t*>(table_full + 4);
    const uint16_t* kept_k = reinterpret_cast<const uint16_t*>(positions);  // DIET's table
    constexpr int TABLE_BYTES = DIET ? 2 : 1;  // a table entry

    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid / 32;
    const int m0 = blockIdx.y * MS;
    const int n0 = blockIdx.x * NS;
    const int g0 = n0 / L;
    const int q = n / L;
    const int w = k / M * N;
    const int stages_total = w / KW;  // per tile
    // Stage S of this block (counted over its tiles) belongs to tile tile_of(S).
    const int tiles_n = n / NS;
    const int my_tiles =
        PERSIST ? (tiles_n * (m / MS) - static_cast<int>(blockIdx.x) + gridDim.x - 1) / gridDim.x : 1;
    const int total = my_tiles * stages_total;
    // Three cursors walk the block's stages in order, one for the index loads, one for the
    // copies and one for the MMAs, each knowing its stage's tile without a division per stage
    // (a first version divided: 1.2–1.4× slower, docs/perf-log.md session 41).
    struct Cursor {
        int sl, tile, bx, by, nth;  // stage within the tile, tile, its column and row block,
                                    // and which of the block's tiles it is
    };
    auto cursor_at = [&](int tile, int nth) { return Cursor{0, tile, tile % tiles_n, tile / tiles_n, nth}; };
    auto advance = [&](Cursor& c) {
        if (++c.sl == stages_total) c = cursor_at(c.tile + static_cast<int>(gridDim.x), c.nth + 1);
    };
    Cursor at_load = cursor_at(blockIdx.x, 0), at_copy = at_load, at_mma = at_load;
    const int tiles_total = tiles_n * (m / MS);
    // PERSIST + IDX: thread 0 fetches the table of the block's nth tile (if it has one).
    auto fetch_table = [&](int nth, int tile) {
        if (!(IDX && PERSIST) || tid != 0 || tile >= tiles_total) return;
        uint64_t* bar = &table_full[nth % TBUF];
        const uint32_t bytes = G * w * TABLE_BYTES;
        mbar_expect_tx(bar, bytes);
        bulk_copy<1>(positions + (nth % TBUF) * bytes,
                     Dt + static_cast<size_t>(tile % tiles_n) * (NS / L) * w * TABLE_BYTES, bytes, bar);
        pipe::mbar_arrive(bar);
    };
    const uint32_t crank = CL > 1 ? cluster_rank() : 0;
    constexpr uint32_t B_BYTES = TILE_B * 2;

    // The thread's i-th 16-byte copy of A: kept row (k) `row_of` of the stage, rows
    // 8·piece_of … + 7 of the block's m. For ASMEM, eight consecutive threads fill one 128-byte
    // core matrix (eight k of one 8-row piece of m), so a warp's copies land on distinct banks.
    auto chunk = [&](int i) { return tid + THREADS * (i % PER_THREAD); };
    // SWZ (session 23) maps copies as the register path does: MS/8 consecutive threads copy
    // one kept column of A whole (256 bytes for 128 rows), so a warp's copies read two or
    // four whole columns.
    constexpr bool CORE = ASMEM && !SWZ;
    auto row_of = [&](int i) {
        return CORE ? chunk(i) / MS * 8 + chunk(i) % 8 : chunk(i) / (MS / 8);
    };
    auto piece_of = [&](int i) {
        return CORE ? chunk(i) / 8 % (MS / 8) : chunk(i) % (MS / 8);
    };
    // bf16 offset of (kept row r, piece p) in a group's A tile: core matrix (p, r/8) of 64
    // bf16, k-adjacent core matrices 128 bytes apart, m-adjacent ones KW/8·128 apart.
    // SWZ: wgmma's MN-major 128-byte-swizzle layout (sw128_offset).
    auto a_offset = [&](int r, int p) {
        if constexpr (SWZ) return sw128_offset<KW>(r, p);
        return ASMEM ? (p * (KW / 8) + r / 8) * 64 + (r % 8) * 8 : r * ROW_A + p * 8;
    };
    // DEFER keeps one stage of wgmma in flight while the next stage's fragments load, so a
    // slot is free again only two stages later: the copies run AHEAD = STAGES - 2 stages
    // ahead instead of STAGES - 1.
    // MBAR (session 22, as tc0.cu's) hands stages over through mbarriers instead of a
    // block-wide barrier: a warp waits for the stage it reads to be full and, once its wgmma
    // of the stage have completed (one stage later, DEFER), releases it on `empty`.
    constexpr int AHEAD = DEFER ? STAGES - 2 : STAGES - 1;
    static_assert(AHEAD >= 1, "DEFER needs 3 stages or more");
    int next_col[A_PER_THREAD];
    auto load_cols = [&](int stage, int (&col)[A_PER_THREAD]) {
        if constexpr (IDX && PERSIST) {
            if (at_load.sl == 0 && stage < total) {
                fetch_table(at_load.nth + 1, at_load.tile + static_cast<int>(gridDim.x));
                pipe::mbar_wait(&table_full[at_load.nth % TBUF], (at_load.nth / TBUF) & 1);
            }
        }
#pragma unroll
        for (int i = 0; i < A_PER_THREAD; ++i) {
            const int u = (PERSIST ? at_load.sl : stage) * KW + row_of(i);
            const int g = (PERSIST ? at_load.bx * (NS / L) : g0) + i / PER_THREAD;
            if constexpr (DIET) {
                if (PERSIST || stage > AHEAD) {
                    col[i] = stage < total ? kept_k[((PERSIST ? at_load.nth % TBUF : 0) * G + i / PER_THREAD) * w + u] : 0;
                    continue;
                }
            }
            const int in_window = (PROBE & 4)           ? u % N
                                  : (IDX && PERSIST) ? positions[((at_load.nth % TBUF) * G + i / PER_THREAD) * w + u]
                                  : (IDX && stage > AHEAD) ? positions[(i / PER_THREAD) * w + u]
                                                           : __ldg(D + static_cast<size_t>(u) * q + g);
            col[i] = stage < total ? (u / N) * M + in_window : 0;
        }
        if constexpr (PERSIST) advance(at_load);
    };
    auto issue = [&](int stage, const int (&col)[A_PER_THREAD]) {
        if (stage < total) {
            const int a_m0 = PERSIST ? at_copy.by * MS : m0;
            bf16* as = As + (stage % STAGES) * G * TILE_A;
            bf16* bs = Bs + (stage % STAGES) * TILE_B;
#pragma unroll
            for (int i = 0; i < ((PROBE & 1) ? 0 : A_PER_THREAD); ++i) {
                const int r = row_of(i), p = piece_of(i);
                if constexpr (DIET) {
                    cp_async16(as + (i / PER_THREAD) * TILE_A + a_offset(r, p),
                               A + (static_cast<uint32_t>(col[i]) * static_cast<uint32_t>(m) +
                                    static_cast<uint32_t>(a_m0 + 8 * p)));
                } else {
                    cp_async16(as + (i / PER_THREAD) * TILE_A + a_offset(r, p),
                               A + static_cast<size_t>(col[i]) * m + a_m0 + 8 * p);
                }
            }
            if constexpr (CL >= 1) {
                if (tid == 0) {
                    uint64_t* bar = &full[stage % STAGES];
                    mbar_expect_tx(bar, B_BYTES);
                    const bf16* image =
                        Bt + (static_cast<size_t>(PERSIST ? at_copy.bx : blockIdx.x) * stages_total +
                              (PERSIST ? at_copy.sl : stage)) *
                                 TILE_B;
                    constexpr int SHARE = TILE_B / (CL > 1 ? CL : 1);
                    bulk_copy<CL>(bs + crank * SHARE, image + crank * SHARE, SHARE * 2, bar);
                }
            } else {
#pragma unroll
                for (int i = 0; i < S::B_PER_THREAD; ++i) {
                    const int c = tid + THREADS * i;
                    const int nn = c / KC, kc = c % KC;
                    cp_async16(bs + ((nn / 8) * KC + kc) * 64 + (nn % 8) * 8,
                               Bt + static_cast<size_t>(n0 + nn) * w + stage * KW + kc * 8);
                }
            }
        }
        if constexpr (MBAR) {
            if (stage < total) pipe::mbar_arrive_copies(&full[stage % STAGES]);
            if constexpr (PERSIST) advance(at_copy);
        } else {
            cp_commit();
        }
    };

    if constexpr (IDX && PERSIST) {
        if (tid == 0)
            for (int b = 0; b < TBUF; ++b) pipe::mbar_init(&table_full[b], 1);
    } else if constexpr (IDX) {
        // Its own cp.async group: the A copies of the mbarrier pipeline are never committed,
        // so waiting for the groups below waits for this table alone.
        for (int i = tid; i < G * w * TABLE_BYTES / 16; i += THREADS)
            cp_async16(positions + 16 * i, Dt + static_cast<size_t>(g0) * w * TABLE_BYTES + 16 * i);
        cp_commit();
    }
    if constexpr (MBAR) pipe::init_ring(full, empty, STAGES, THREADS, (CL > 1 ? CL : 1) * THREADS / 32);
    if constexpr (CL > 1) {
        // Every CTA's mbarriers exist before any peer copies into it or arrives on them.
        if (tid == 0) asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        cluster_sync();
    }
    fetch_table(0, static_cast<int>(blockIdx.x));
    for (int s = 0; s < AHEAD; ++s) {
        int col[A_PER_THREAD];
        load_cols(s, col);
        issue(s, col);
    }
    load_cols(AHEAD, next_col);
    if constexpr (IDX && !PERSIST) {
        cp_wait<0>();
        __syncthreads();
    }

    constexpr int LN = L / NH;  // columns of a group a warpgroup computes
    constexpr int ND = LN / 2;  // accumulators per thread and group
    float acc[G][ND];
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
        for (int e = 0; e < ND; ++e) acc[g][e] = 0.0f;

    const int wg = warp / 4 % WG;             // warpgroup: rows 64·wg …
    const int nh = warp / 4 / WG;             // … and columns nh·LN … of each group
    const int mm0 = 64 * wg + 16 * (warp % 4);  // the warp's 16 rows of A
    const int lj = lane / 8, lr = lane % 8;
    // One stage: its copies landed (groups committed so far: AHEAD + s), the copies of stage
    // s + AHEAD go to the slot stage s + AHEAD - STAGES used, whose wgmma every thread has
    // waited for before this barrier; the fragments of A go to the register buffer `a`.
    // D fragment of m64nLk16, per warp (its 16 rows): for each n8 block j, acc[4j], acc[4j+1]
    // at row lane/4, columns 8j + 2·(lane%4) and + 1; acc[4j+2], acc[4j+3] at row lane/4 + 8.
    auto store_tile = [&](int tm0, int tn0) {
        const int gid = lane / 4, tig = lane % 4;
        if constexpr (QST) {
#pragma unroll
            for (int g = 0; g < G; ++g)
#pragma unroll
                for (int jb = 0; jb < LN / 32; ++jb)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        uint32_t p[4], q[4];
#pragma unroll
                        for (int jj = 0; jj < 4; ++jj) {
                            const int j = 4 * jb + jj;
                            const __nv_bfloat162 v =
                                __floats2bfloat162_rn(acc[g][4 * j + 2 * h], acc[g][4 * j + 2 * h + 1]);
                            p[jj] = *reinterpret_cast<const uint32_t*>(&v);
                        }
                        // Round r: send p[(tig - r) % 4] to lane tig - r, receive q[(tig + r) % 4]
                        // from lane tig + r (all within the quad).
#pragma unroll
                        for (int r = 0; r < 4; ++r) {
                            const int send_i = (tig - r + 4) % 4, recv_i = (tig + r) % 4;
                            uint32_t send = p[0];
#pragma unroll
                            for (int x = 1; x < 4; ++x) send = send_i == x ? p[x] : send;
                            const uint32_t got = __shfl_sync(0xffffffffu, send, (lane & ~3) | recv_i);
#pragma unroll
                            for (int x = 0; x < 4; ++x)
                                if (recv_i == x) q[x] = got;
                        }
                        const int row = tm0 + mm0 + gid + 8 * h;
                        const int cn = tn0 + g * L + nh * LN + 8 * (4 * jb + tig);
                        *reinterpret_cast<uint4*>(C + static_cast<size_t>(row) * n + cn) =
                            make_uint4(q[0], q[1], q[2], q[3]);
                    }
        } else {
#pragma unroll
            for (int g = 0; g < G; ++g)
#pragma unroll
                for (int j = 0; j < LN / 8; ++j)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int row = tm0 + mm0 + gid + 8 * h;
                        const int cn = tn0 + g * L + nh * LN + 8 * j + 2 * tig;
                        const __nv_bfloat162 v =
                            __floats2bfloat162_rn(acc[g][4 * j + 2 * h], acc[g][4 * j + 2 * h + 1]);
                        *reinterpret_cast<__nv_bfloat162*>(C + static_cast<size_t>(row) * n + cn) = v;
                    }
        }
    };
    // DIET: slot 0's descriptors (the byte offsets as the host passes them: 128 along k, KW/8
    // core matrices along n for B'; KW·128 and 1,024 for the swizzled A).
    const uint64_t desc_a0 = make_desc_sw128(smem_addr(As) + wg * (KW * 128), KW * 128, 1024);
    const uint64_t desc_b0 = make_desc(smem_addr(Bs), 128, (KW / 8) * 128);
    using AFrag = uint32_t[G][KW / 16][4];
    auto step = [&](int s, AFrag& a) {
        if constexpr (MBAR) {
            // The slot of stage s + AHEAD was last read by stage s + AHEAD - STAGES = s - 2,
            // which every warp released in iteration s - 1.
            const int ahead = s + AHEAD;
            if (ahead < total && ahead >= STAGES)
                pipe::mbar_wait(&empty[ahead % STAGES], (ahead / STAGES + 1) & 1);
        } else {
            cp_wait<AHEAD - 1>();
            fence_async_shared();
            __syncthreads();
        }
        int col[A_PER_THREAD];
#pragma unroll
        for (int i = 0; i < A_PER_THREAD; ++i) col[i] = next_col[i];
        issue(s + AHEAD, col);
        load_cols(s + AHEAD + 1, next_col);
        if constexpr (MBAR) {
            pipe::mbar_wait(&full[s % STAGES], (s / STAGES) & 1);
            fence_async_shared();  // the copies (generic proxy) before this thread's wgmma
        }

        const bf16* as = As + (s % STAGES) * G * TILE_A;
        const uint32_t bs = smem_addr(Bs + (s % STAGES) * TILE_B);
        if constexpr (DIET && !(PROBE & 2)) {
            // Slot (s % STAGES)'s descriptors: the slot-0 ones plus the slot's offset in 16-byte
            // units (the address field's unit), then + k16 step t.
            const uint32_t slot = static_cast<uint32_t>(s % STAGES);
            const uint64_t da = desc_a0 + slot * ((G * TILE_A * 2) >> 4);
            const uint64_t db = desc_b0 + slot * ((TILE_B * 2) >> 4);
            wgmma_fence();
#pragma unroll
            for (int g = 0; g < G; ++g)
#pragma unroll
                for (int t = 0; t < KW / 16; ++t)
                    WgmmaSS<LN>::run(acc[g], da + ((g * TILE_A * 2 + t * 2048) >> 4),
                                     db + (((g * L / 8) * KC + 2 * t) * 128 >> 4));
        } else {
            if constexpr (!ASMEM) {
#pragma unroll
                for (int g = 0; g < G; ++g)
#pragma unroll
                    for (int t = 0; t < KW / 16; ++t) {
                        // matrices: (m +0, k +0), (m +8, k +0), (m +0, k +8), (m +8, k +8)
                        const int kk = 16 * t + lr + 8 * (lj >> 1);
                        const int mm = mm0 + 8 * (lj & 1);
                        ldsm_x4_trans(a[g][t], as + g * TILE_A + kk * ROW_A + mm);
                    }
            }
            wgmma_fence();
#pragma unroll
            for (int g = 0; g < ((PROBE & 2) ? 0 : G); ++g)
#pragma unroll
                for (int t = 0; t < KW / 16; ++t) {
                    // The group's L columns start at core-matrix row g·L/8; k16 step t covers
                    // core-matrix columns 2t and 2t + 1.
                    const uint32_t start = bs + ((g * L / 8 + nh * LN / 8) * KC + 2 * t) * 128;
                    if constexpr (SWZ) {
                        // The warpgroup's 64 rows are atoms KW/8·wg …; k16 step t covers two
                        // atoms (stride byte offset 1,024 between them).
                        const uint32_t a_start =
                            smem_addr(as + g * TILE_A) + wg * (KW * 128) + t * 2048;
                        WgmmaSS<LN>::run(acc[g], make_desc_sw128(a_start, KW * 128, 1024),
                                        make_desc(start, lbo, sbo));
                    } else if constexpr (ASMEM) {
                        // The warpgroup's 64 rows start at core-matrix row 8·wg of the A tile.
                        const uint32_t a_start =
                            smem_addr(as + g * TILE_A) + ((8 * wg) * (KW / 8) + 2 * t) * 128;
                        WgmmaSS<L>::run(acc[g], make_desc(a_start, albo, asbo),
                                        make_desc(start, lbo, sbo));
                    } else {
                        Wgmma<L>::run(acc[g], a[g][t], make_desc(start, lbo, sbo), 1);
                    }
                }
        }
        wgmma_commit();
        if constexpr (DEFER) {
            wgmma_wait<1>();
        } else {
            wgmma_wait<0>();
        }
        if constexpr (PERSIST) {
            // The tile's last stage: its sums are complete once every wgmma is; store them and
            // start the next tile's from zero (its first stages' copies are in flight).
            if (at_mma.sl == stages_total - 1) {
                wgmma_wait<0>();
                store_tile(at_mma.by * MS, at_mma.bx * NS);
#pragma unroll
                for (int g = 0; g < G; ++g)
#pragma unroll
                    for (int e = 0; e < ND; ++e) acc[g][e] = 0.0f;
            }
            advance(at_mma);
        }
        if constexpr (MBAR) {
            // This thread's wgmma of stage s - 1 have completed; once the warp's all have,
            // the stage is released.
            __syncwarp();
            if (s >= 1 && lane == 0) mbar_arrive_cluster<CL>(&empty[(s - 1) % STAGES]);
        }
    };
    // Two register buffers for A, alternating by stage (unrolled by hand: an array indexed by
    // s % 2 would live in local memory).
    AFrag a0, a1;
    for (int s = 0; s < total; s += 2) {
        step(s, a0);
        if (s + 1 < total) step(s + 1, a1);
    }
    wgmma_wait<0>();
    cp_wait<0>();
    // No CTA leaves while a peer may still arrive on its mbarriers.
    if constexpr (CL > 1) cluster_sync();

    if constexpr (SC) {
        // Every warp's wgmma have completed (above) and no copy is outstanding (every stage
        // issued was waited for), so the ring is free once all warps are here.
        constexpr int ROW = NS + 8;  // bf16 per staged row: padded against bank conflicts
        static_assert(MS * ROW * 2 <= S::tiles_bytes(), "C tile fits the ring");
        bf16* Cs = reinterpret_cast<bf16*>(smem_raw);
        __syncthreads();
        const int gid = lane / 4, tig = lane % 4;
#pragma unroll
        for (int g = 0; g < G; ++g)
#pragma unroll
            for (int j = 0; j < LN / 8; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int r = mm0 + gid + 8 * h, c = g * L + nh * LN + 8 * j + 2 * tig;
                    *reinterpret_cast<__nv_bfloat162*>(Cs + r * ROW + c) =
                        __floats2bfloat162_rn(acc[g][4 * j + 2 * h], acc[g][4 * j + 2 * h + 1]);
                }
        __syncthreads();
        constexpr int CHUNKS = NS / 8;  // 16-byte pieces per row
#pragma unroll
        for (int i = tid; i < MS * CHUNKS; i += THREADS) {
            const int r = i / CHUNKS, c = (i % CHUNKS) * 8;
            *reinterpret_cast<uint4*>(C + static_cast<size_t>(m0 + r) * n + n0 + c) =
                *reinterpret_cast<const uint4*>(Cs + r * ROW + c);
        }
    } else if constexpr (!PERSIST) {
        store_tile(m0, n0);
    }
}

// Session 42 (prepared, not run yet): the diet kernel with one producer warpgroup. The WG
// consumer warpgroups only wait for a stage, run its `wgmma` and release it; warpgroup WG
// copies: its 128 threads issue every 16-byte copy of A (KW·MS/8/128 a thread and stage, each
// kept row's k from the u16 table) and its thread 0 the stage's bulk copy of B'. The producer
// can fill every slot of the ring (the consumers' one stage of `wgmma` in flight no longer
// holds the copies back STAGES - 2 stages), and the consumers issue no copy arithmetic.
// `setmaxnreg` moves registers from the producer (REG_COPY) to the consumers (REG_MMA).
// Layout, table, image and epilogue as nm_wgmma_bf16<…, IDX, DIET, SC>.
// TMA_A (prepared, not run): the producer copies A with tensor copies instead, one per kept
// row and 64 rows of m (a 128-byte line of the swizzled tile; the TMA unit applies the
// 128-byte swizzle from the destination address, which is the layout the descriptors read),
// through the tensor map g_a_map (A as a 2-D tensor: m contiguous, k rows): 8× fewer copy
// instructions than 16-byte cp.async. Each producer warp's elected lane issues the copies of
// a quarter of the stage's kept rows; thread 0 arrives on the stage's full mbarrier with the
// stage's bytes (A and B'), the only arrival it counts.
__constant__ CUtensorMap g_a_map;

template <int N, int M, int L, int KW, int STAGES, int WG, int REG_MMA, bool TMA_A = false>
__global__ void __launch_bounds__(128 * (WG + 1), 1)
    nm_wgmma_bf16_producer(const bf16* __restrict__ A, const bf16* __restrict__ Bt,
                           const int* __restrict__ D, const uint8_t* __restrict__ Dt,
                           bf16* __restrict__ C, int m, int n, int k, uint32_t, uint32_t,
                           uint32_t, uint32_t) {
    using namespace tc;
    using S = Shape<L, KW, STAGES, true, WG, 1>;
    static_assert(S::G == 1, "one column group a block (L = 128)");
    constexpr int MS = S::MS, TILE_A = S::TILE_A, TILE_B = S::TILE_B, KC = KW / 8;
    constexpr int CONSUMERS = 128 * WG;
    constexpr int COPIES = KW * MS / 8 / 128;  // 16-byte copies of A a producer thread and stage
    static_assert(KW * MS / 8 % 128 == 0, "whole copies per producer thread");
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    bf16* As = reinterpret_cast<bf16*>(smem_raw);  // [STAGES][KW·MS], sw128 MN-major
    bf16* Bs = As + STAGES * TILE_A;                // [STAGES][TILE_B], the image's layout
    uint64_t* full = reinterpret_cast<uint64_t*>(smem_raw + S::tiles_bytes());
    uint64_t* empty = full + STAGES;
    uint16_t* kept_k = reinterpret_cast<uint16_t*>(smem_raw + S::smem_bytes(true) + 32);

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int m0 = blockIdx.y * MS, n0 = blockIdx.x * NS, g0 = n0 / L;
    const int w = k / M * N, total = w / KW;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {
            pipe::mbar_init(&full[s], TMA_A ? 1 : 128);  // the producer's threads, after their copies
            pipe::mbar_init(&empty[s], WG * 4);     // the consumers' warps
        }
    }
    __syncthreads();  // the mbarriers exist

    if (warp / 4 == WG) {
        // Producer. Copy i of a thread: kept row r = c / (MS/8), piece p = c % (MS/8) of the
        // stage, c = ptid + 128·i (MS/8 consecutive threads copy one kept row of A whole).
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(tc::REG_COPY));
        const int ptid = tid - CONSUMERS;
        // The table, by the producer alone (its own cp.async group; named barrier 2), while
        // the consumers already wait for the first stage.
        for (int i = ptid; i < w * 2 / 16; i += 128)
            cp_async16(reinterpret_cast<uint8_t*>(kept_k) + 16 * i,
                       Dt + static_cast<size_t>(g0) * w * 2 + 16 * i);
        cp_commit();
        cp_wait<0>();
        asm volatile("bar.sync 2, 128;\n" ::: "memory");
        for (int s = 0; s < total; ++s) {
            const int slot = s % STAGES;
            if (s >= STAGES) pipe::mbar_wait(&empty[slot], (s / STAGES + 1) & 1);
            bf16* as = As + slot * TILE_A;
            if constexpr (TMA_A) {
                if (ptid == 0) {
                    asm volatile(
                        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(&full[slot])),
                        "r"(static_cast<uint32_t>((TILE_A + TILE_B) * 2))
                        : "memory");
                    bulk_copy<1>(Bs + slot * TILE_B,
                                 Bt + (static_cast<size_t>(blockIdx.x) * total + s) * TILE_B, TILE_B * 2,
                                 &full[slot]);
                }
                if (lane == 0) {
                    constexpr int ROWS = KW / 4;  // kept rows a producer warp copies
                    const int pw = warp - 4 * WG;
                    for (int r = pw * ROWS; r < (pw + 1) * ROWS; ++r) {
                        const int kk = kept_k[s * KW + r];
#pragma unroll
                        for (int h = 0; h < MS / 64; ++h) {
                            const bf16* dst = as + h * (KW * 64) + (r / 8) * 512 + (r % 8) * 64;
                            asm volatile(
                                "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
                                "[%0], [%1, {%2, %3}], [%4];\n" ::"r"(smem_addr(dst)),
                                "l"(reinterpret_cast<uint64_t>(&g_a_map)), "r"(m0 + 64 * h), "r"(kk),
                                "r"(smem_addr(&full[slot]))
                                : "memory");
                        }
                    }
                }
                __syncwarp();
            } else {
#pragma unroll 4
                for (int i = 0; i < COPIES; ++i) {
                    const int c = ptid + 128 * i, r = c / (MS / 8), p = c % (MS / 8);
                    const uint32_t kk = kept_k[s * KW + r];
                    cp_async16(as + sw128_offset<KW>(r, p),
                               A + (kk * static_cast<uint32_t>(m) + static_cast<uint32_t>(m0 + 8 * p)));
                }
                if (ptid == 0) {
                    mbar_expect_tx(&full[slot], TILE_B * 2);
                    bulk_copy<1>(Bs + slot * TILE_B,
                                 Bt + (static_cast<size_t>(blockIdx.x) * total + s) * TILE_B, TILE_B * 2,
                                 &full[slot]);
                }
                pipe::mbar_arrive_copies(&full[slot]);
            }
        }
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        return;
    }

    // Consumers: warpgroup wg computes rows 64·wg … of the block's 128 columns.
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REG_MMA));
    const int wg = warp / 4;
    float acc[L / 2];
#pragma unroll
    for (int e = 0; e < L / 2; ++e) acc[e] = 0.0f;
    const uint64_t desc_a0 = make_desc_sw128(smem_addr(As) + wg * (KW * 128), KW * 128, 1024);
    const uint64_t desc_b0 = make_desc(smem_addr(Bs), 128, KC * 128);
    for (int s = 0; s < total; ++s) {
        const uint32_t slot = static_cast<uint32_t>(s % STAGES);
        pipe::mbar_wait(&full[slot], (s / STAGES) & 1);
        fence_async_shared();
        const uint64_t da = desc_a0 + slot * ((TILE_A * 2) >> 4);
        const uint64_t db = desc_b0 + slot * ((TILE_B * 2) >> 4);
        wgmma_fence();
#pragma unroll
        for (int t = 0; t < KW / 16; ++t)
            WgmmaSS<L>::run(acc, da + ((t * 2048) >> 4), db + ((2 * t * 128) >> 4));
        wgmma_commit();
        wgmma_wait<1>();
        // This warp's wgmma of stage s - 1 are complete: release its slot.
        __syncwarp();
        if (s >= 1 && lane == 0) pipe::mbar_arrive(&empty[(s - 1) % STAGES]);
    }
    wgmma_wait<0>();
    // C through shared memory (the ring: every stage has been read and no copy is in flight
    // once all consumers are here, the producer's last copies having been waited for), among
    // the consumers only (named barrier 1).
    constexpr int ROW = NS + 8;
    static_assert(MS * ROW * 2 <= S::tiles_bytes(), "C tile fits the ring");
    bf16* Cs = reinterpret_cast<bf16*>(smem_raw);
    asm volatile("bar.sync 1, %0;\n" ::"n"(CONSUMERS));
    const int gid = lane / 4, tig = lane % 4, mm0 = 64 * wg + 16 * (warp % 4);
#pragma unroll
    for (int j = 0; j < L / 8; ++j)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh)
            *reinterpret_cast<__nv_bfloat162*>(Cs + (mm0 + gid + 8 * hh) * ROW + 8 * j + 2 * tig) =
                __floats2bfloat162_rn(acc[4 * j + 2 * hh], acc[4 * j + 2 * hh + 1]);
    asm volatile("bar.sync 1, %0;\n" ::"n"(CONSUMERS));
    constexpr int CHUNKS = NS / 8;
    for (int i = tid; i < MS * CHUNKS; i += CONSUMERS) {
        const int r = i / CHUNKS, c = (i % CHUNKS) * 8;
        *reinterpret_cast<uint4*>(C + static_cast<size_t>(m0 + r) * n + n0 + c) =
            *reinterpret_cast<const uint4*>(Cs + r * ROW + c);
    }
}

// ---------------------------------------------------------------------------------------------
// Host: random data, pruning, CPU reference, cuBLAS, timing (as tc0.cu, with B' transposed).

template <int N, int M, int L, int KW = 32, int STAGES = 3, int MINB = 1, bool DEFER = false,
          bool ASMEM = false, int WG = 2, bool MBAR = false, bool SWZ = false, int CL = 0,
          bool PERSIST = false, bool SC = false, int NH = 1, int PROBE = 0, bool IDX = false,
          bool QST = false, bool DIET = false, bool PROD = false, bool TMA_A = false>
static void run(cublasHandle_t h, int m, int n, int k, int runs, std::mt19937& rng) {
    using S = tc::Shape<L, KW, STAGES, ASMEM, WG, NH>;
    const size_t smem =
        S::smem_bytes(MBAR) +
        (IDX ? 32 + (PERSIST ? 3 : 1) * static_cast<size_t>(S::G) * (k / M * N) * (DIET ? 2 : 1) : 0);
    static_assert(!PROD || (DIET && IDX && SC && !PERSIST && CL == 1 && L == 128),
                  "the producer kernel is the diet kernel with a producer warpgroup");
    // PROD: consumers' registers after setmaxnreg. `setmaxnreg.inc` takes registers only from
    // those the block's own `setmaxnreg.dec` released (not the SM's free ones): with every
    // thread launched at REG_LAUNCH, the consumers may grow by the producer's release shared
    // among them, in steps of 8. Session 43: 112 for WG 4 (96 at launch) asked for 8,192
    // registers where the producer had released 5,120, and the first run hung.
    constexpr int REG_LAUNCH = 65536 / (128 * (WG + 1)) / 8 * 8;  // ptxas's cap at 1 block/SM
    constexpr int REG_MMA = REG_LAUNCH + (REG_LAUNCH - tc::REG_COPY) / WG / 8 * 8;
    static_assert(!PROD || (WG >= 2 && REG_MMA <= 256), "setmaxnreg's range");
    const int threads = PROD ? 128 * (WG + 1) : S::THREADS;
    if (!smem_fits(smem)) return;
    if ((k / M * N) % KW != 0 || (IDX && (k / M * N) % 16 != 0)) return;  // whole stages only (session 42: KW 48 ran off w's end)
    if (CL > 1 && (m / S::MS) % (CL > 1 ? CL : 1) != 0) return;  // no whole clusters
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> Wf(static_cast<size_t>(k) * n);
    for (auto& x : Wf) x = dist(rng);
    std::vector<bf16> Ah(static_cast<size_t>(m) * k);  // column-major
    for (auto& x : Ah) x = __float2bfloat16(dist(rng));
    const Sparse sp = prune(Wf, k, n, N, M, L);
    const int w = k / M * N;
    std::vector<bf16> Bt(static_cast<size_t>(n) * w);  // B' transposed: n×w
    for (int u = 0; u < w; ++u)
        for (int j = 0; j < n; ++j) Bt[static_cast<size_t>(j) * w + u] = sp.values[static_cast<size_t>(u) * n + j];
    if constexpr (CL >= 1) {
        // The B' image (see the kernel): per 128-column block and stage of KW kept rows, the
        // stage's tile in the no-swizzle K-major core-matrix layout the kernel reads.
        constexpr int KC = KW / 8, TILE = tc::NS * KW;
        const int stages = w / KW;
        std::vector<bf16> image(Bt.size());
        for (int bx = 0; bx < n / tc::NS; ++bx)
            for (int st = 0; st < stages; ++st)
                for (int nn = 0; nn < tc::NS; ++nn)
                    for (int kc = 0; kc < KC; ++kc)
                        for (int e = 0; e < 8; ++e)
                            image[(static_cast<size_t>(bx) * stages + st) * TILE +
                                  ((nn / 8) * KC + kc) * 64 + (nn % 8) * 8 + e] =
                                Bt[static_cast<size_t>(bx * tc::NS + nn) * w + st * KW + kc * 8 + e];
        Bt.swap(image);
    }
    std::vector<bf16> Wdense(static_cast<size_t>(k) * n);
    for (size_t i = 0; i < Wdense.size(); ++i) Wdense[i] = __float2bfloat16(Wf[i]);

    bf16 *dA, *dB, *dC, *dW, *dWp, *dCref;
    int* dD;
    uint8_t* dDt;
    CHECK(cudaMalloc(&dA, Ah.size() * 2));
    CHECK(cudaMalloc(&dB, Bt.size() * 2));
    CHECK(cudaMalloc(&dD, sp.index.size() * 4));
    CHECK(cudaMalloc(&dDt, sp.index.size() * 2));
    CHECK(cudaMalloc(&dC, static_cast<size_t>(m) * n * 2));
    CHECK(cudaMalloc(&dCref, static_cast<size_t>(m) * n * 2));
    CHECK(cudaMalloc(&dW, Wdense.size() * 2));
    CHECK(cudaMalloc(&dWp, sp.dense.size() * 2));
    CHECK(cudaMemcpy(dA, Ah.data(), Ah.size() * 2, cudaMemcpyHostToDevice));
    if constexpr (TMA_A) {
        // A (column-major m × k) as a 2-D tensor for the TMA unit: m contiguous, rows of k;
        // boxes of 64 × 1 (one 128-byte line), 128-byte swizzle.
        using Encode = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                    const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                    CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found;
        CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
        if (!fn || found != cudaDriverEntryPointSuccess) {
            printf("tmaA: cuTensorMapEncodeTiled not found\n");
            return;
        }
        CUtensorMap map;
        const cuuint64_t dims[2] = {static_cast<cuuint64_t>(m), static_cast<cuuint64_t>(k)};
        const cuuint64_t strides[1] = {static_cast<cuuint64_t>(m) * 2};
        const cuuint32_t box[2] = {64, 1}, unit[2] = {1, 1};
        const CUresult r = reinterpret_cast<Encode>(fn)(
            &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, dA, dims, strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE,
            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
        if (r != CUDA_SUCCESS) {
            printf("tmaA: cuTensorMapEncodeTiled failed (%d)\n", static_cast<int>(r));
            return;
        }
        CHECK(cudaMemcpyToSymbol(g_a_map, &map, sizeof map));
    }
    CHECK(cudaMemcpy(dB, Bt.data(), Bt.size() * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dD, sp.index.data(), sp.index.size() * 4, cudaMemcpyHostToDevice));
    {
        // IDX: D transposed (group by group), one byte a position (M <= 256).
        const int q = n / L;
        // DIET: each kept row's k instead (u16).
        std::vector<uint8_t> Dt(sp.index.size());
        std::vector<uint16_t> Dk(sp.index.size());
        for (int u = 0; u < w; ++u)
            for (int g = 0; g < q; ++g) {
                const int pos = sp.index[static_cast<size_t>(u) * q + g];
                Dt[static_cast<size_t>(g) * w + u] = static_cast<uint8_t>(pos);
                Dk[static_cast<size_t>(g) * w + u] = static_cast<uint16_t>(u / N * M + pos);
            }
        if (DIET) CHECK(cudaMemcpy(dDt, Dk.data(), Dk.size() * 2, cudaMemcpyHostToDevice));
        else CHECK(cudaMemcpy(dDt, Dt.data(), Dt.size(), cudaMemcpyHostToDevice));
    }
    CHECK(cudaMemcpy(dW, Wdense.data(), Wdense.size() * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dWp, sp.dense.data(), sp.dense.size() * 2, cudaMemcpyHostToDevice));

    const auto kernel = [] {
        if constexpr (PROD)
            return nm_wgmma_bf16_producer<N, M, L, KW, STAGES, WG, REG_MMA, TMA_A>;
        else
            return nm_wgmma_bf16<N, M, L, KW, STAGES, MINB, DEFER, ASMEM, WG, MBAR, SWZ, CL, PERSIST, SC, NH,
                                 PROBE, IDX, QST, DIET>;
    }();
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(smem)));
    if constexpr (PROD) {
        // The consumers' `setmaxnreg.inc` waits forever unless the launch allocation is the
        // REG_LAUNCH the release was computed from.
        cudaFuncAttributes fa{};
        CHECK(cudaFuncGetAttributes(&fa, kernel));
        if (fa.numRegs != REG_LAUNCH) {
            printf("producer kernel: %d registers at launch, not %d: skipped\n", fa.numRegs, REG_LAUNCH);
            return;
        }
    }
    dim3 grid(n / tc::NS, m / S::MS);
    if constexpr (PERSIST) {
        // One block per slot the GPU holds at once, or one per tile if there are fewer.
        int dev = 0, sms = 0, per_sm = 0;
        CHECK(cudaGetDevice(&dev));
        CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, S::THREADS, smem));
        grid = dim3(std::min(grid.x * grid.y, static_cast<unsigned>(sms * per_sm)));
    }
    const float one = 1.0f, zero = 0.0f;
    auto blas = [&](const bf16* wt, bf16* c) {
        CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, n, m, k, &one, wt, CUDA_R_16BF, n, dA,
                                CUDA_R_16BF, m, &zero, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    };
    blas(dWp, dCref);
    CHECK(cudaDeviceSynchronize());
    std::vector<bf16> Ch(static_cast<size_t>(m) * n), Cr(static_cast<size_t>(m) * n);
    CHECK(cudaMemcpy(Cr.data(), dCref, Cr.size() * 2, cudaMemcpyDeviceToHost));

    // The descriptor's leading byte offset runs along k, the stride byte offset along n (the
    // swapped reading gave errors of order 1 on the H100 and H200, session 22).
    // A in shared memory (ASMEM) is MN-major, for which the manual's reading of the two
    // offsets was not checked on a GPU: both orders run, each printing its error.
    const uint32_t along_k = 128, along_n = (KW / 8) * 128;
    const uint32_t lbo = along_k, sbo = along_n;
    const uint32_t a_orders[2][2] = {{along_k, along_n}, {along_n, along_k}};
    for (int o = 0; o < (ASMEM && !MBAR && !SWZ ? 2 : 1); ++o) {
        const uint32_t albo = a_orders[o][0], asbo = a_orders[o][1];
        auto ours = [&] {
            if constexpr (CL > 1) {
                cudaLaunchConfig_t cfg = {};
                cfg.gridDim = grid;
                cfg.blockDim = dim3(S::THREADS);
                cfg.dynamicSmemBytes = smem;
                cudaLaunchAttribute attr[1];
                attr[0].id = cudaLaunchAttributeClusterDimension;
                attr[0].val.clusterDim.x = 1;
                attr[0].val.clusterDim.y = CL;
                attr[0].val.clusterDim.z = 1;
                cfg.attrs = attr;
                cfg.numAttrs = 1;
                CHECK(cudaLaunchKernelEx(&cfg, kernel, (const bf16*)dA, (const bf16*)dB, (const int*)dD, (const uint8_t*)dDt, dC,
                                         m, n, k, lbo, sbo, albo, asbo));
            } else {
                kernel<<<grid, threads, smem>>>(dA, dB, dD, dDt, dC, m, n, k, lbo, sbo, albo, asbo);
            }
        };
        CHECK(cudaMemset(dC, 0, Ch.size() * 2));
        ours();
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(Ch.data(), dC, Ch.size() * 2, cudaMemcpyDeviceToHost));
        const Errors err = errors(Ah, sp, Ch, Cr, m, n, k, N, M, L);
        const float t_ours = median_ms(runs, ours);
        const float t_blas = median_ms(runs, [&] { blas(dW, dCref); });
        const double flop = 2.0 * m * n * k;
        if (IDX) printf("idx ");
        if (QST) printf("qst ");
        if (DIET) printf("diet ");
        if (PROD) printf("producer ");
        if (TMA_A) printf("tmaA ");
        if (PROBE) printf("probe%d (no%s%s%s) ", PROBE, (PROBE & 1) ? " A copies" : "",
                          (PROBE & 2) ? " wgmma" : "", (PROBE & 4) ? " index loads" : "");
        if (PERSIST) printf("persist ");
        printf("wgmma%s%s%s%s kw%d st%d mb%d defer%d  m=%d n=%d k=%d %d:%d L=%d  ours %.1f us  cuBLAS bf16 dense %.1f us "
               "(%.0f TFLOP/s)  speed-up %.3f  err vs CPU %.2e  vs cuBLAS pruned %.2e\n",
               SWZ ? " smemA(sw128)" : ASMEM ? (o == 0 ? " smemA(lbo k)" : " smemA(lbo m)") : "",
               MBAR ? (WG == 4 ? " mbar wg4" : " mbar") : (WG == 4 ? " wg4" : ""),
               CL == 0 ? "" : CL == 1 ? (PERSIST ? " Bimage persist" : SC ? " Bimage stagedC" : " Bimage") : CL == 2 ? " Bimage cl2" : CL == 4 ? " Bimage cl4" : " Bimage cl?",
               NH == 2 ? " nh2" : "", KW, STAGES, MINB,
               int(DEFER), m, n, k, N, M, L, t_ours * 1e3, t_blas * 1e3,
               flop / (t_blas * 1e-3) / 1e12, t_blas / t_ours, err.cpu, err.cublas);
        fflush(stdout);
    }
    for (void* p : {(void*)dA, (void*)dB, (void*)dD, (void*)dDt, (void*)dC, (void*)dCref, (void*)dW, (void*)dWp})
        CHECK(cudaFree(p));
}

// Session 41's sets ('p', 'c', 'w' below): the same configurations at 16:32, 12:32, 8:32 and
// 4:32 on 4096³, 4096 × 11008 × 4096 and 256 × 4096².
constexpr int kSession41Shapes[][3] = {{4096, 4096, 4096}, {4096, 11008, 4096}, {256, 4096, 4096}};
struct SetPersist {
    template <int N>
    static void at(cublasHandle_t h, int m, int n, int k, int runs, std::mt19937& rng) {
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1>(h, m, n, k, runs, rng);
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 1, true, true, 4, true, true, 1>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 1, true, true, 4, true, true, 1, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 2, true, true, 2, true, true, 1>(h, m, n, k, runs, rng);
    }
};

struct SetStagedC {
    template <int N>
    static void at(cublasHandle_t h, int m, int n, int k, int runs, std::mt19937& rng) {
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1>(h, m, n, k, runs, rng);
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 2, true, true, 2, true, true, 1, false, true>(h, m, n, k, runs, rng);
    }
};

struct SetWarps {
    template <int N>
    static void at(cublasHandle_t h, int m, int n, int k, int runs, std::mt19937& rng) {
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 2>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 2, true, true, 2, true, true, 1, false, true, 2>(h, m, n, k, runs, rng);
        run<N, 32, 128, 48, 5, 1, true, true, 4, true, true, 1, false, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 1, true, true, 4, true, true, 1, false, true, 2>(h, m, n, k, runs, rng);
    }
};

// Session 42's decomposition ('d'): the image + staged-C kernel with parts left out (PROBE),
// at 16:32 and 4:32, and on the dense weight (32:32, the gather then reads A in order).
template <int N, int PROBE>
static void probe_fast(cublasHandle_t h, int m, int n, int k, int runs, std::mt19937& rng) {
    run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, PROBE>(h, m, n, k, runs, rng);
}
template <int N>
static void probe_set(cublasHandle_t h, int m, int n, int k, int runs, std::mt19937& rng) {
    probe_fast<N, 0>(h, m, n, k, runs, rng);
    probe_fast<N, 4>(h, m, n, k, runs, rng);
    probe_fast<N, 1>(h, m, n, k, runs, rng);
    probe_fast<N, 2>(h, m, n, k, runs, rng);
    probe_fast<N, 6>(h, m, n, k, runs, rng);
    probe_fast<N, 3>(h, m, n, k, runs, rng);
}

// Session 42's index table ('i'): the image + staged-C kernels (256 rows, 64 kept rows a
// stage; 128 rows two to an SM, 32 kept rows, 6 stages) without and with IDX.
struct SetIndexTable {
    template <int N>
    static void at(cublasHandle_t h, int m, int n, int k, int runs, std::mt19937& rng) {
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 2, true, true, 2, true, true, 1, false, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 2, true, true, 2, true, true, 1, false, true, 1, 0, true>(h, m, n, k, runs, rng);
    }
};

// Session 42's second index-table set ('j'), 4096³: other ring shapes with IDX at L = 128,
// and L = 32 (four groups a block) without and with it, 4096³ and 256 × 4096².
template <int N>
static void index_table_more(cublasHandle_t h, int runs, std::mt19937& rng) {
    run<N, 32, 128, 32, 6, 1, true, true, 4, true, true, 1, false, true, 1, 0, true>(h, 4096, 4096, 4096, runs, rng);
    run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 2, 0, true>(h, 4096, 4096, 4096, runs, rng);
    for (const int m : {4096, 256}) {
        run<N, 32, 32, 32, 4, 1, true, true, 2, true, true, 1, false, true>(h, m, 4096, 4096, runs, rng);
        run<N, 32, 32, 32, 4, 1, true, true, 2, true, true, 1, false, true, 1, 0, true>(h, m, 4096, 4096, runs, rng);
        run<N, 32, 32, 32, 6, 1, true, true, 2, true, true, 1, false, true, 1, 0, true>(h, m, 4096, 4096, runs, rng);
    }
}

// Session 42's persistent set ('q'): the index-table kernel with C staged (SC) beside C stored
// from the accumulators by quad transposes (QST), and persistent grids with QST (256 rows with
// 64 or 32 kept rows a stage; 128 rows two to an SM).
struct SetPersistIdx {
    template <int N>
    static void at(cublasHandle_t h, int m, int n, int k, int runs, std::mt19937& rng) {
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, false, 1, 0, true, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, true, false, 1, 0, true, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 1, true, true, 4, true, true, 1, true, false, 1, 0, true, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 2, true, true, 2, true, true, 1, false, true, 1, 0, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 2, true, true, 2, true, true, 1, true, false, 1, 0, true, true>(h, m, n, k, runs, rng);
    }
};

// Session 42's diet set ('e'): the persistent index-table kernel without and with DIET, and
// the non-persistent 256-row and 128-row (two to an SM) kernels with C staged, with DIET.
struct SetDiet {
    template <int N>
    static void at(cublasHandle_t h, int m, int n, int k, int runs, std::mt19937& rng) {
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, true, false, 1, 0, true, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, true, false, 1, 0, true, true, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true, false, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 2, true, true, 2, true, true, 1, false, true, 1, 0, true, false, true>(h, m, n, k, runs, rng);
    }
};

// Session 42's producer set ('g', prepared, not run yet): the diet kernel (256 and 128 rows)
// beside the same with one producer warpgroup (PROD), and with A by tensor copies (TMA_A).
struct SetProducer {
    template <int N>
    static void at(cublasHandle_t h, int m, int n, int k, int runs, std::mt19937& rng) {
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true, false, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true, false, true, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 1, true, true, 4, true, true, 1, false, true, 1, 0, true, false, true, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 32, 6, 2, true, true, 2, true, true, 1, false, true, 1, 0, true, false, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 64, 4, 1, true, true, 2, true, true, 1, false, true, 1, 0, true, false, true, true>(h, m, n, k, runs, rng);
        run<N, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true, false, true, true, true>(h, m, n, k, runs, rng);
    }
};

// One of the sets above at every sparsity and shape.
template <typename Set>
static void run_session41_set(cublasHandle_t h, int runs, std::mt19937& rng) {
    for (const auto& s : kSession41Shapes) {
        Set::template at<16>(h, s[0], s[1], s[2], runs, rng);
        Set::template at<12>(h, s[0], s[1], s[2], runs, rng);
        Set::template at<8>(h, s[0], s[1], s[2], runs, rng);
        Set::template at<4>(h, s[0], s[1], s[2], runs, rng);
    }
}

// The modes `tc1 RUNS <set>` runs (the first letter of its second argument picks one; no
// second argument runs the session-21 set at the end of main).
constexpr int kShapes[][3] = {{4096, 4096, 4096}, {256, 4096, 4096}};

// `tc1 RUNS bulk`: the sw128 kernel (256 rows, KW 64, 4 stages) beside the same with B'
// as a prepared image copied by one bulk copy a stage (CL 1), multicast over clusters of
// 2 and 4 blocks along m (session 41); 4096 × 11008 × 4096 too.
static void mode_b(cublasHandle_t h, int runs, std::mt19937& rng) {
    for (const auto& s : kSession41Shapes) {
        run<16, 32, 128, 64, 4, 1, true, true, 4, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 64, 4, 1, true, true, 4, true, true, 1>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 64, 4, 1, true, true, 4, true, true, 2>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 64, 4, 1, true, true, 4, true, true, 4>(h, s[0], s[1], s[2], runs, rng);
        run<12, 32, 128, 64, 4, 1, true, true, 4, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<12, 32, 128, 64, 4, 1, true, true, 4, true, true, 2>(h, s[0], s[1], s[2], runs, rng);
        run<8, 32, 128, 64, 4, 1, true, true, 4, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<8, 32, 128, 64, 4, 1, true, true, 4, true, true, 1>(h, s[0], s[1], s[2], runs, rng);
        run<8, 32, 128, 64, 4, 1, true, true, 4, true, true, 2>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 128, 64, 4, 1, true, true, 4, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 128, 64, 4, 1, true, true, 4, true, true, 1>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 128, 64, 4, 1, true, true, 4, true, true, 2>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 128, 64, 4, 1, true, true, 4, true, true, 4>(h, s[0], s[1], s[2], runs, rng);
        // 128-row blocks: two along m at m = 256, so a cluster of 2 fits there too.
        run<8, 32, 128, 64, 4, 1, true, true, 2, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<8, 32, 128, 64, 4, 1, true, true, 2, true, true, 2>(h, s[0], s[1], s[2], runs, rng);
    }
}

// `tc1 RUNS c`: the B' image kernel with C staged through shared memory (SC) beside the same
// without, and the 128-row blocks two to an SM likewise (session 41).
static void mode_c(cublasHandle_t h, int runs, std::mt19937& rng) {
    run_session41_set<SetStagedC>(h, runs, rng);
}

// `tc1 RUNS warps` (prepared in session 41, not yet run): more warps an SM for the image +
// staged-C kernel: each warpgroup half of a group's columns (NH 2, m64n64, 32
// accumulators a thread), with 256 rows (1,024 threads; 64 or 32 kept rows a stage) or 128
// rows two blocks to an SM; and a deeper ring of 48 kept rows a stage (5 stages).
static void mode_w(cublasHandle_t h, int runs, std::mt19937& rng) {
    run_session41_set<SetWarps>(h, runs, rng);
}

// `tc1 RUNS decompose` (session 42): what each part of the image + staged-C kernel costs
// (PROBE), at 4096³ on the dense weight and at 16:32 and 4:32.
static void mode_d(cublasHandle_t h, int runs, std::mt19937& rng) {
    run<32, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true>(h, 4096, 4096, 4096, runs, rng);
    probe_set<16>(h, 4096, 4096, 4096, runs, rng);
    probe_set<4>(h, 4096, 4096, 4096, runs, rng);
}

// `tc1 RUNS idx` (session 42): the index table (IDX) at every sparsity and shape, and the
// dense weight with it.
static void mode_i(cublasHandle_t h, int runs, std::mt19937& rng) {
    run<32, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true>(h, 4096, 4096, 4096, runs, rng);
    run_session41_set<SetIndexTable>(h, runs, rng);
}

// `tc1 RUNS j` (session 42): index_table_more at every sparsity.
static void mode_j(cublasHandle_t h, int runs, std::mt19937& rng) {
    index_table_more<16>(h, runs, rng);
    index_table_more<12>(h, runs, rng);
    index_table_more<8>(h, runs, rng);
    index_table_more<4>(h, runs, rng);
}

// `tc1 RUNS k` (session 42): the index-table kernel at 16:32 and 4:32 on 4096³, for ncu
// (docs/results/tc-prototype/ncu.sh tc1i).
static void mode_k(cublasHandle_t h, int runs, std::mt19937& rng) {
    run<16, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true>(h, 4096, 4096, 4096, runs, rng);
    run<4, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true>(h, 4096, 4096, 4096, runs, rng);
}

// `tc1 RUNS q` (session 42): SetPersistIdx at every sparsity and shape.
static void mode_q(cublasHandle_t h, int runs, std::mt19937& rng) {
    run_session41_set<SetPersistIdx>(h, runs, rng);
}

// `tc1 RUNS r` (session 42): the persistent index-table kernel (QST) at 16:32 and 4:32 on
// 4096³, for ncu (docs/results/tc-prototype/ncu.sh tc1p).
static void mode_r(cublasHandle_t h, int runs, std::mt19937& rng) {
    run<16, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, true, false, 1, 0, true, true>(h, 4096, 4096, 4096, runs, rng);
    run<4, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, true, false, 1, 0, true, true>(h, 4096, 4096, 4096, runs, rng);
}

// `tc1 RUNS e` (session 42): SetDiet at every sparsity and shape.
static void mode_e(cublasHandle_t h, int runs, std::mt19937& rng) {
    run_session41_set<SetDiet>(h, runs, rng);
}

// `tc1 RUNS f` (session 42; run in session 43): the diet kernel (table, staged C) at 16:32 and
// 4:32 on 4096³, for ncu (docs/results/tc-prototype/ncu.sh tc1d).
static void mode_f(cublasHandle_t h, int runs, std::mt19937& rng) {
    run<16, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true, false, true>(h, 4096, 4096, 4096, runs, rng);
    run<4, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true, false, true>(h, 4096, 4096, 4096, runs, rng);
}

// `tc1 RUNS g` (session 42, prepared, not run yet): SetProducer at every sparsity and shape.
static void mode_g(cublasHandle_t h, int runs, std::mt19937& rng) {
    run_session41_set<SetProducer>(h, runs, rng);
}

// `tc1 RUNS h` (session 43): the producer kernel (256 rows, KW 64, 4 stages, A by cp.async) at
// 16:32 and 4:32 on 4096³, for ncu (docs/results/tc-prototype/ncu.sh tc1g).
static void mode_h(cublasHandle_t h, int runs, std::mt19937& rng) {
    run<16, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true, false, true, true>(h, 4096, 4096, 4096, runs, rng);
    run<4, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, false, true, 1, 0, true, false, true, true>(h, 4096, 4096, 4096, runs, rng);
}

// `tc1 RUNS l32`: L = 32 (four column groups a block) with the B' image and C staged, 128-row
// blocks with 32 kept rows a stage, beside the session-23 kernel (session 41).
static void mode_l(cublasHandle_t h, int runs, std::mt19937& rng) {
    for (const auto& s : kShapes) {
        const int m = s[0], n = s[1], k = s[2];
        run<16, 32, 32, 32, 3, 1, true, true, 2, true, true>(h, m, n, k, runs, rng);
        run<16, 32, 32, 32, 4, 1, true, true, 2, true, true, 1, false, true>(h, m, n, k, runs, rng);
        run<12, 32, 32, 32, 4, 1, true, true, 2, true, true, 1, false, true>(h, m, n, k, runs, rng);
        run<8, 32, 32, 32, 4, 1, true, true, 2, true, true, 1, false, true>(h, m, n, k, runs, rng);
        run<4, 32, 32, 32, 3, 1, true, true, 2, true, true>(h, m, n, k, runs, rng);
        run<4, 32, 32, 32, 4, 1, true, true, 2, true, true, 1, false, true>(h, m, n, k, runs, rng);
    }
}

// `tc1 RUNS ncu`: 4096³ only, the B' image kernel at 16:32 and 4:32 and the persistent one at
// 4:32, for ncu (docs/results/tc-prototype/ncu.sh tc1b; session 41).
static void mode_n(cublasHandle_t h, int runs, std::mt19937& rng) {
    run<16, 32, 128, 64, 4, 1, true, true, 4, true, true, 1>(h, 4096, 4096, 4096, runs, rng);
    run<4, 32, 128, 64, 4, 1, true, true, 4, true, true, 1>(h, 4096, 4096, 4096, runs, rng);
    run<4, 32, 128, 64, 4, 1, true, true, 4, true, true, 1, true>(h, 4096, 4096, 4096, runs, rng);
}

// `tc1 RUNS persist`: the B' image kernel (CL 1) with 64 and 32 kept rows a stage, as a
// persistent grid, and 128-row blocks two to an SM (session 41).
static void mode_p(cublasHandle_t h, int runs, std::mt19937& rng) {
    run_session41_set<SetPersist>(h, runs, rng);
}

// `tc1 RUNS sw`: A in the 128-byte swizzled layout (whole columns per copy), behind the
// mbarrier pipeline, beside the core-matrix layout it replaces (session 23).
static void mode_s(cublasHandle_t h, int runs, std::mt19937& rng) {
    for (const auto& s : kShapes) {
        run<16, 32, 128, 64, 4, 1, true, true, 4, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 64, 4, 1, true, true, 4, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 32, 4, 1, true, true, 4, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 64, 4, 1, true, true, 2, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 32, 6, 1, true, true, 4, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<12, 32, 128, 64, 4, 1, true, true, 4, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<8, 32, 128, 64, 4, 1, true, true, 4, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 128, 64, 4, 1, true, true, 4, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 32, 32, 3, 1, true, true, 2, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 32, 32, 3, 1, true, true, 2, true, true>(h, s[0], s[1], s[2], runs, rng);
    }
}

// `tc1 RUNS mb`: A and B' from shared memory behind the mbarrier pipeline, 128 and 256
// rows per block, beside the session-21 kernel.
static void mode_m(cublasHandle_t h, int runs, std::mt19937& rng) {
    for (const auto& s : kShapes) {
        run<16, 32, 128>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 32, 4, 1, true, true, 2, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 32, 4, 1, true, true, 4, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 64, 4, 1, true, true, 4, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 32, 6, 1, true, true, 4, true>(h, s[0], s[1], s[2], runs, rng);
        run<8, 32, 128, 64, 4, 1, true, true, 4, true>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 128, 64, 4, 1, true, true, 4, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 32, 32, 4, 1, true, true, 4, true>(h, s[0], s[1], s[2], runs, rng);
    }
}

using Mode = void (*)(cublasHandle_t, int, std::mt19937&);
struct NamedMode {
    char letter;
    Mode run;
};
constexpr NamedMode kModes[] = {
    {'b', mode_b}, {'c', mode_c}, {'w', mode_w}, {'d', mode_d}, {'i', mode_i}, {'j', mode_j},
    {'k', mode_k}, {'q', mode_q}, {'r', mode_r}, {'e', mode_e}, {'f', mode_f}, {'g', mode_g}, {'h', mode_h},
    {'l', mode_l}, {'n', mode_n}, {'p', mode_p}, {'s', mode_s}, {'m', mode_m},
};

int main(int argc, char** argv) {
    const int runs = argc > 1 ? atoi(argv[1]) : 20;
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    std::mt19937 rng(17);
    if (argc > 2)
        for (const NamedMode& mode : kModes)
            if (argv[2][0] == mode.letter) {
                mode.run(h, runs, rng);
                CHECK_BLAS(cublasDestroy(h));
                return 0;
            }
    for (const auto& s : kShapes) {
        // The session-21 shape, two blocks per SM, then A from shared memory (both operands
        // async: no register inputs, so DEFER keeps one stage of wgmma in flight).
        run<16, 32, 128>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 32, 3, 2>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 32, 3, 1, false, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 32, 4, 1, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 32, 4, 2, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 64, 4, 1, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 128, 64, 4, 2, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<8, 32, 128, 32, 4, 2, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<8, 32, 128, 64, 4, 1, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 128>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 128, 32, 4, 2, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 128, 64, 4, 1, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 64, 32, 4, 2, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<16, 32, 32, 32, 4, 2, true, true>(h, s[0], s[1], s[2], runs, rng);
        run<4, 32, 32, 32, 4, 2, true, true>(h, s[0], s[1], s[2], runs, rng);
    }
    CHECK_BLAS(cublasDestroy(h));
    return 0;
}
