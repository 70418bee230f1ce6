// The decode kernel of the second and third prototypes (decode2.cu, decode3.cu), shared by
// both: see decode2.cu for what it does.
#pragma once
#include <cuda_runtime.h>

constexpr int MM = 32, L = 32;

template <int MS, int NB, int U, int VEC, int NN>
__global__ void decode2(const float* __restrict__ A, const float* __restrict__ B,
    const unsigned char* __restrict__ D, float* __restrict__ out, int m, int n, int k,
    int rows_per_split) {
  constexpr int LR = NB / (4 * VEC);  // lanes per B' row segment
  constexpr int RW = 32 / LR;         // rows per warp step
  static_assert(LR >= 1 && LR <= 32 && 32 % LR == 0, "NB / (4 VEC) must divide 32");
  extern __shared__ float red[];      // [warps][MS][NB]
  const int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int q = n / L, w = k / MM * NN;
  const int cl = (lane % LR) * 4 * VEC;  // column of the lane inside the block
  const int col = blockIdx.x * NB + cl;
  const int r = lane / LR;
  const int g = col / L;
  const int start = blockIdx.y * rows_per_split;
  const int end = min(w, start + rows_per_split);
  float acc[MS][4 * VEC];
#pragma unroll
  for (int i = 0; i < MS; ++i)
#pragma unroll
    for (int c = 0; c < 4 * VEC; ++c) acc[i][c] = 0.f;
  for (int base = start + warp * U * RW; base < end; base += warps * U * RW) {
    float4 b[U][VEC];
    int d[U];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const int u = base + j * RW + r;
      const bool ok = u < end;
      d[j] = ok ? __ldg(D + (size_t)u * q + g) : 0;
#pragma unroll
      for (int v = 0; v < VEC; ++v)
        b[j][v] = ok ? __ldcs(reinterpret_cast<const float4*>(B + (size_t)u * n + col + 4 * v))
                     : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const int u = min(base + j * RW + r, w - 1);
      const int kk = (u / NN) * MM + d[j];
#pragma unroll
      for (int i = 0; i < MS; ++i) {
        if (i < m) {
          const float a = __ldg(A + (size_t)i * k + kk);
#pragma unroll
          for (int v = 0; v < VEC; ++v) {
            acc[i][4 * v + 0] = fmaf(a, b[j][v].x, acc[i][4 * v + 0]);
            acc[i][4 * v + 1] = fmaf(a, b[j][v].y, acc[i][4 * v + 1]);
            acc[i][4 * v + 2] = fmaf(a, b[j][v].z, acc[i][4 * v + 2]);
            acc[i][4 * v + 3] = fmaf(a, b[j][v].w, acc[i][4 * v + 3]);
          }
        }
      }
    }
  }
  // Lanes with the same columns (same lane % LR) add up, then warps in order.
#pragma unroll
  for (int off = LR; off < 32; off *= 2)
#pragma unroll
    for (int i = 0; i < MS; ++i)
#pragma unroll
      for (int c = 0; c < 4 * VEC; ++c) acc[i][c] += __shfl_xor_sync(0xffffffffu, acc[i][c], off);
  if (r == 0)
#pragma unroll
    for (int i = 0; i < MS; ++i)
#pragma unroll
      for (int c = 0; c < 4 * VEC; ++c) red[(warp * MS + i) * NB + cl + c] = acc[i][c];
  __syncthreads();
  float* o = out + (size_t)blockIdx.y * m * n;
  for (int t = threadIdx.x; t < m * NB; t += blockDim.x) {
    const int i = t / NB, c = t % NB;
    float s = 0.f;
    for (int z = 0; z < warps; ++z) s += red[(z * MS + i) * NB + c];
    o[(size_t)i * n + blockIdx.x * NB + c] = s;
  }
}

__global__ void reduce(const float* ws, float* C, int len4, int splits) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= len4) return;
  const float4* w = reinterpret_cast<const float4*>(ws);
  float4 s = w[i];
  for (int z = 1; z < splits; ++z) { float4 v = w[(size_t)z * len4 + i]; s.x += v.x; s.y += v.y; s.z += v.z; s.w += v.w; }
  reinterpret_cast<float4*>(C)[i] = s;
}

