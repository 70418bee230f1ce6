// What split-K's sums cost on their own, without a main loop (issue 11, session 40).
// Today: every split stores its tile of sums into a workspace, then a second kernel adds the
// splits and writes C. Alternative: C cleared first, every split adds its tile into C with
// red.global.add.v4.f32 (sm_90), no second kernel. Both sides are timed as streams of
// launches between events, medians of 21 repetitions of 20 back-to-back launches.
//   nvcc -O3 -arch=sm_90 -o red red.cu && ./red
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>
#include <algorithm>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)

// One float4 of sums per thread and split: the value a split's tile would hold.
__device__ float4 sums(int split, int i) {
  float v = 1.0f + 0.001f * (split * 7 + (i & 255));
  return make_float4(v, v + 1, v + 2, v + 3);
}

__global__ void store_splits(float4* work, int quads, int splits) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int s = blockIdx.y;
  if (i < quads && s < splits) work[(size_t)s * quads + i] = sums(s, i);
}

__global__ void add_splits(const float4* __restrict__ work, float4* c, int quads, int splits) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= quads) return;
  float4 acc = work[i];
  for (int s = 1; s < splits; ++s) {
    float4 v = work[(size_t)s * quads + i];
    acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
  }
  c[i] = acc;
}

__global__ void red_splits(float4* c, int quads, int splits) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int s = blockIdx.y;
  if (i >= quads || s >= splits) return;
  float4 v = sums(s, i);
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(c + i), "f"(v.x), "f"(v.y),
               "f"(v.z), "f"(v.w) : "memory");
}

int main() {
  const int m = 256, ns[] = {2048, 4096, 6656, 11008, 22016}, sks[] = {2, 3, 4, 6, 8};
  const int reps = 21, burst = 20, threads = 256;
  float4 *work, *c;
  CHECK(cudaMalloc(&work, (size_t)8 * m * 22016 * sizeof(float)));
  CHECK(cudaMalloc(&c, (size_t)m * 22016 * sizeof(float)));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  printf("%6s %6s %3s %14s %14s %14s %14s %8s\n", "m", "n", "sk", "store_us", "add_us",
         "clear_us", "red_us", "check");
  for (int n : ns) {
    int quads = m * n / 4;
    dim3 grid1((quads + threads - 1) / threads);
    for (int sk : sks) {
      dim3 grid2(grid1.x, sk);
      auto time = [&](auto launch) {
        std::vector<float> t;
        for (int r = 0; r < reps; ++r) {
          cudaEventRecord(a);
          for (int j = 0; j < burst; ++j) launch();
          cudaEventRecord(b);
          cudaEventSynchronize(b);
          float ms;
          cudaEventElapsedTime(&ms, a, b);
          t.push_back(ms * 1000.0f / burst);
        }
        std::sort(t.begin(), t.end());
        return t[reps / 2];
      };
      float store = time([&] { store_splits<<<grid2, threads>>>(work, quads, sk); });
      float add = time([&] { add_splits<<<grid1, threads>>>(work, c, quads, sk); });
      float clear = time([&] { cudaMemsetAsync(c, 0, (size_t)quads * 16); });
      float red = time([&] { red_splits<<<grid2, threads>>>(c, quads, sk); });
      // Both ways give the same C, to rounding (the order of the additions differs).
      std::vector<float> want(4), got(4);
      add_splits<<<grid1, threads>>>(work, c, quads, sk);
      CHECK(cudaMemcpy(want.data(), c, 16, cudaMemcpyDeviceToHost));
      cudaMemsetAsync(c, 0, (size_t)quads * 16);
      red_splits<<<grid2, threads>>>(c, quads, sk);
      CHECK(cudaMemcpy(got.data(), c, 16, cudaMemcpyDeviceToHost));
      CHECK(cudaGetLastError());
      bool same = true;
      for (int q = 0; q < 4; ++q) same &= fabsf(want[q] - got[q]) <= 1e-5f * fabsf(want[q]);
      printf("%6d %6d %3d %14.2f %14.2f %14.2f %14.2f %8s\n", m, n, sk, store, add, clear, red,
             same ? "same" : "DIFFER");
    }
  }
  return 0;
}
