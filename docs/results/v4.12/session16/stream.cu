// stream.cu (session 16, issue 14): how fast can any kernel read S bytes of weight once, timed
// the way nmtune times decode problems (bursts of back-to-back launches over rotating copies,
// queued behind a spin kernel, time per launch)? Written for this measurement only; not part
// of the build. nvcc -O3 -arch=sm_90 stream.cu -lcublas -o stream
//
//   contig  grid-stride float4 reads, U loads in flight per thread, B blocks per SM
//   seg     decode's pattern: rows of ROW bytes, a block streams a SEG-byte column slice of
//           its share of the rows (split over gridDim.y), U row steps in flight per thread
//   bulk    cp.async.bulk (TMA, no tensor map) of CHUNK bytes into a STAGES-deep ring of
//           shared memory, mbarrier completion, one issuing thread, all threads sum
//   pdl     contig/seg launched with programmatic stream serialization: the first U loads
//           are issued before griddepcontrol.wait, so the next launch's first loads overlap
//           the previous launch's tail (as a chain of dependent layers would run)
// Also (issue 11): SM clock and power while cuBLAS SGEMM 4096^3 and a pure-FFMA kernel run.
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <vector>
#include <string>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__global__ void spin(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
}

__device__ __forceinline__ float hsum(float4 v) { return (v.x + v.y) + (v.z + v.w); }
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

template <int U>
__global__ void __launch_bounds__(256) contig(const float4* __restrict__ src, size_t n4, float* out) {
  pdl_trigger();
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float4 v[U];
#pragma unroll
  for (int j = 0; j < U; ++j) { size_t at = i + j * stride; v[j] = at < n4 ? __ldcs(src + at) : make_float4(0, 0, 0, 0); }
  pdl_wait();
  float s = 0.f;
  for (;;) {
#pragma unroll
    for (int j = 0; j < U; ++j) s += hsum(v[j]);
    i += U * stride;
    if (i >= n4) break;
#pragma unroll
    for (int j = 0; j < U; ++j) { size_t at = i + j * stride; v[j] = at < n4 ? __ldcs(src + at) : make_float4(0, 0, 0, 0); }
  }
  if (s == -1.2345f) out[0] = s;
}

// rows x row4 float4; block (x, y): slice x of seg4 float4, rows [y*per, (y+1)*per)
template <int U>
__global__ void __launch_bounds__(256) seg(const float4* __restrict__ src, int rows, int row4, int seg4, float* out) {
  pdl_trigger();
  const int lane = threadIdx.x % seg4, r0 = threadIdx.x / seg4, rstep = blockDim.x / seg4;
  const int per = (rows + gridDim.y - 1) / gridDim.y;
  const int begin = blockIdx.y * per, end = min(rows, begin + per);
  const size_t col = size_t(blockIdx.x) * seg4 + lane;
  int r = begin + r0;
  float4 v[U];
#pragma unroll
  for (int j = 0; j < U; ++j) { int rr = r + j * rstep; v[j] = rr < end ? __ldcs(src + size_t(rr) * row4 + col) : make_float4(0, 0, 0, 0); }
  pdl_wait();
  float s = 0.f;
  for (;;) {
#pragma unroll
    for (int j = 0; j < U; ++j) s += hsum(v[j]);
    r += U * rstep;
    if (r >= end) break;
#pragma unroll
    for (int j = 0; j < U; ++j) { int rr = r + j * rstep; v[j] = rr < end ? __ldcs(src + size_t(rr) * row4 + col) : make_float4(0, 0, 0, 0); }
  }
  if (s == -1.2345f) out[0] = s;
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return uint32_t(__cvta_generic_to_shared(p)); }

template <int STAGES, int CHUNK>
__global__ void __launch_bounds__(256) bulk(const char* __restrict__ src, size_t bytes, float* out) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) unsigned long long full[STAGES];
  const size_t per = (bytes / gridDim.x + CHUNK - 1) / CHUNK * CHUNK;
  const size_t begin = min(bytes, size_t(blockIdx.x) * per), end = min(bytes, begin + per);
  const int chunks = int((end - begin + CHUNK - 1) / CHUNK);
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&full[s])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  auto issue = [&](int c) {
    const int st = c % STAGES;
    const uint32_t size = uint32_t(min(size_t(CHUNK), end - begin - size_t(c) * CHUNK));
    const uint32_t bar = smem_addr(&full[st]);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(size) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem_addr(ring + st * CHUNK)), "l"(src + begin + size_t(c) * CHUNK), "r"(size), "r"(bar) : "memory");
  };
  if (threadIdx.x == 0)
    for (int c = 0; c < min(STAGES, chunks); ++c) issue(c);
  float s = 0.f;
  for (int c = 0; c < chunks; ++c) {
    const int st = c % STAGES;
    const uint32_t phase = (c / STAGES) & 1, bar = smem_addr(&full[st]);
    uint32_t done = 0;
    while (!done)
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(bar), "r"(phase) : "memory");
    const int len4 = int(min(size_t(CHUNK), end - begin - size_t(c) * CHUNK) / 16);
    const float4* p = reinterpret_cast<const float4*>(ring + st * CHUNK);
    for (int i = threadIdx.x; i < len4; i += blockDim.x) s += hsum(p[i]);
    __syncthreads();
    if (threadIdx.x == 0 && c + STAGES < chunks) issue(c + STAGES);
  }
  if (s == -1.2345f) out[0] = s;
}

__global__ void __launch_bounds__(256) ffma_peak(float* out, int iters, float a) {
  float x[16];
#pragma unroll
  for (int j = 0; j < 16; ++j) x[j] = threadIdx.x * 0.001f + j;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 16; ++j) x[j] = fmaf(x[j], a, 0.5f);
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 16; ++j) s += x[j];
  if (s == -1.2345f) out[0] = s;
}

static cudaStream_t stream;
static cudaEvent_t e0, e1;

template <class F>
static float burst_us(int launches, F launch) {
  std::vector<float> t;
  for (int w = 0; w < 2; ++w) launch(w);
  for (int run = 0; run < 10; ++run) {
    spin<<<1, 1, 0, stream>>>(2000000);
    CK(cudaEventRecord(e0, stream));
    for (int j = 0; j < launches; ++j) launch(run * launches + j);
    CK(cudaEventRecord(e1, stream));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms * 1000.f / launches);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return 0.5f * (t[4] + t[5]);
}

template <class K, class... Args>
static void launch_ex(bool pdl, K kernel, dim3 grid, dim3 block, size_t smem, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  CK(cudaLaunchKernelEx(&cfg, kernel, args...));
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  printf("# %s, %d SMs, L2 %d MB\n", prop.name, sms, prop.l2CacheSize >> 20);
  CK(cudaStreamCreate(&stream));
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  float* out;
  CK(cudaMalloc(&out, 64));

  // copy_gbps exactly as nmtune: 1 GiB D2D, read + write counted, median of 7 after one
  const size_t cb = size_t(1) << 30;
  char *cs, *cd;
  CK(cudaMalloc(&cs, cb));
  CK(cudaMalloc(&cd, cb));
  CK(cudaMemset(cs, 1, cb));
  std::vector<float> ct;
  CK(cudaMemcpyAsync(cd, cs, cb, cudaMemcpyDeviceToDevice, stream));
  for (int i = 0; i < 7; ++i) {
    CK(cudaEventRecord(e0, stream));
    CK(cudaMemcpyAsync(cd, cs, cb, cudaMemcpyDeviceToDevice, stream));
    CK(cudaEventRecord(e1, stream));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    ct.push_back(ms);
  }
  std::sort(ct.begin(), ct.end());
  const double copy_gbps = 2.0 * cb / (ct[3] * 1e-3) / 1e9;
  printf("copy_gbps %.0f\n", copy_gbps);
  CK(cudaFree(cd));
  char* dst;
  CK(cudaMalloc(&dst, size_t(256) << 20));

  CK(cudaFuncSetAttribute(bulk<4, 16384>, cudaFuncAttributeMaxDynamicSharedMemorySize, 4 * 16384));
  CK(cudaFuncSetAttribute(bulk<8, 8192>, cudaFuncAttributeMaxDynamicSharedMemorySize, 8 * 8192));
  CK(cudaFuncSetAttribute(bulk<6, 16384>, cudaFuncAttributeMaxDynamicSharedMemorySize, 6 * 16384));

  const size_t total = 200ull << 20;  // rotate over >= 200 MB: 4x the H100's L2, 3x the H200's
  printf("%-34s %7s %9s %8s %6s\n", "variant", "MB", "us", "GB/s", "share");
  const int mbs[] = {8, 16, 24, 32, 40, 48, 64, 96, 128, 256};
  for (int mb : mbs) {
    const size_t bytes = size_t(mb) << 20;
    const int copies = int(std::max<size_t>(2, (total + bytes - 1) / bytes));
    std::vector<char*> bufs(copies);
    for (auto& b : bufs) { b = cs; }
    // carve rotating copies out of the 1 GiB source (it holds >= 4 copies of 256 MB)
    for (int c = 0; c < copies; ++c) bufs[c] = cs + (size_t(c) * bytes) % (cb - bytes + 1);
    const int launches = std::max(20, copies);
    auto report = [&](const std::string& name, float us) {
      const double g = bytes / (us * 1e-6) / 1e9;
      printf("%-34s %7d %9.2f %8.0f %5.1f%%\n", name.c_str(), mb, us, g, 100.0 * g / copy_gbps);
    };
    report("null", burst_us(launches, [&](int i) { launch_ex(false, contig<1>, dim3(1), dim3(32), 0, (const float4*)bufs[i % copies], size_t(0), out); }));
    for (int bps : {1, 2, 4, 8}) {
      for (int pdl : {0, 1}) {
        char nm[64];
        snprintf(nm, sizeof nm, "contig U4 b%d%s", bps, pdl ? " pdl" : "");
        report(nm, burst_us(launches, [&](int i) { launch_ex(pdl, contig<4>, dim3(sms * bps), dim3(256), 0, (const float4*)bufs[i % copies], bytes / 16, out); }));
        snprintf(nm, sizeof nm, "contig U8 b%d%s", bps, pdl ? " pdl" : "");
        report(nm, burst_us(launches, [&](int i) { launch_ex(pdl, contig<8>, dim3(sms * bps), dim3(256), 0, (const float4*)bufs[i % copies], bytes / 16, out); }));
      }
    }
    // decode's pattern: rows of 32 KB (n = 8192 floats), column slices of 128 / 256 / 512 B
    const int row4 = 8192 / 4, rows = int(bytes / (row4 * 16));
    for (int segb : {128, 256, 512}) {
      const int seg4 = segb / 16, slices = row4 / seg4;
      for (int split : {1, 2, 4}) {
        for (int pdl : {0, 1}) {
          char nm[64];
          snprintf(nm, sizeof nm, "seg%d x%d U4%s", segb, split, pdl ? " pdl" : "");
          report(nm, burst_us(launches, [&](int i) { launch_ex(pdl, seg<4>, dim3(slices, split), dim3(256), 0, (const float4*)bufs[i % copies], rows, row4, seg4, out); }));
        }
      }
    }
    for (int bps : {1, 2, 3}) {
      char nm[64];
      snprintf(nm, sizeof nm, "bulk 4x16K b%d", bps);
      report(nm, burst_us(launches, [&](int i) { launch_ex(false, bulk<4, 16384>, dim3(sms * bps), dim3(256), 4 * 16384, (const char*)bufs[i % copies], bytes, out); }));
      snprintf(nm, sizeof nm, "bulk 8x8K b%d", bps);
      report(nm, burst_us(launches, [&](int i) { launch_ex(false, bulk<8, 8192>, dim3(sms * bps), dim3(256), 8 * 8192, (const char*)bufs[i % copies], bytes, out); }));
      if (bps < 3) {
        snprintf(nm, sizeof nm, "bulk 6x16K b%d", bps);
        report(nm, burst_us(launches, [&](int i) { launch_ex(false, bulk<6, 16384>, dim3(sms * bps), dim3(256), 6 * 16384, (const char*)bufs[i % copies], bytes, out); }));
      }
    }
    report("memcpy D2D, read+write / 2", 0.5f * burst_us(launches, [&](int i) { CK(cudaMemcpyAsync(dst, bufs[i % copies], bytes, cudaMemcpyDeviceToDevice, stream)); }));
    fflush(stdout);
  }

  // Issue 11: sustained cuBLAS SGEMM 4096^3 and a pure-FFMA kernel, for the clock sampler
  // running beside this program (marks on stderr with wall-clock times).
  const int n = 4096;
  float *A, *B, *C;
  CK(cudaMalloc(&A, size_t(n) * n * 4));
  CK(cudaMalloc(&B, size_t(n) * n * 4));
  CK(cudaMalloc(&C, size_t(n) * n * 4));
  CK(cudaMemset(A, 0, size_t(n) * n * 4));
  CK(cudaMemset(B, 0, size_t(n) * n * 4));
  cublasHandle_t h;
  cublasCreate(&h);
  cublasSetStream(h, stream);
  cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
  const float one = 1.f, zero = 0.f;
  auto sgemm = [&]() { cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, n, B, n, &zero, C, n); };
  for (int i = 0; i < 20; ++i) sgemm();
  CK(cudaStreamSynchronize(stream));
  system("date +'MARK sgemm-start %s.%N' >&2");
  CK(cudaEventRecord(e0, stream));
  const int reps = 1000;
  for (int i = 0; i < reps; ++i) sgemm();
  CK(cudaEventRecord(e1, stream));
  CK(cudaEventSynchronize(e1));
  system("date +'MARK sgemm-end %s.%N' >&2");
  float ms;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  const double sgemm_us = ms * 1000.0 / reps;
  printf("sgemm 4096^3 (zeros, mean of %d back to back): %.1f us, %.1f TFLOP/s\n", reps, sgemm_us, 2.0 * n * n * n / (sgemm_us * 1e-6) / 1e12);
  const int iters = 200000, blocks = sms * 8;
  ffma_peak<<<blocks, 256, 0, stream>>>(out, 1000, 0.999f);
  CK(cudaStreamSynchronize(stream));
  system("date +'MARK ffma-start %s.%N' >&2");
  CK(cudaEventRecord(e0, stream));
  for (int i = 0; i < 40; ++i) ffma_peak<<<blocks, 256, 0, stream>>>(out, iters, 0.999f);
  CK(cudaEventRecord(e1, stream));
  CK(cudaEventSynchronize(e1));
  system("date +'MARK ffma-end %s.%N' >&2");
  CK(cudaEventElapsedTime(&ms, e0, e1));
  const double fl = 40.0 * 2.0 * 16.0 * iters * double(blocks) * 256;
  printf("ffma_peak: %.1f ms, %.1f TFLOP/s\n", ms, fl / (ms * 1e-3) / 1e12);
  return 0;
}
