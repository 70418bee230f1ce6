// Support kernels for tuning and verification: random inputs generated on the device (so that
// large problems never cross PCIe), N:M decompression for the cuBLAS baseline, and the
// relative-error reduction used to verify every candidate.

__device__ __forceinline__ unsigned int mix32(unsigned int x) {
    // A 32-bit integer hash (xorshift-multiply); good enough for test data, never zeros.
    x ^= x >> 16; x *= 0x7feb352dU;
    x ^= x >> 15; x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

// Uniform values in [-1, 1), a function of (seed, index) only.
extern "C" __global__ void nmtune_fill_uniform(float* out, unsigned long long count, unsigned int seed) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count; i += stride) {
        unsigned int h = mix32((unsigned int)i ^ mix32(seed + (unsigned int)(i >> 32) * 0x9e3779b9U));
        out[i] = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

// dense[k][n] from B'[w][n] and D[w][q] (raw window positions); dense must be zeroed first.
extern "C" __global__ void nmtune_decompress(const float* bp, const int* d, float* dense,
                                             int w, int n, int q, int nn, int mm, int l) {
    unsigned long long total = (unsigned long long)w * n;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < total; i += stride) {
        int u = (int)(i / n), col = (int)(i % n);
        int row = (u / nn) * mm + d[(unsigned long long)u * q + col / l];
        dense[(unsigned long long)row * n + col] = bp[i];
    }
}

// sums[0] += Σ (got - want)², sums[1] += Σ want², sums[2] += count of non-finite values in got.
extern "C" __global__ void nmtune_error_sums(const float* got, const float* want, unsigned long long count, double* sums) {
    double diff2 = 0.0, ref2 = 0.0, bad = 0.0;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count; i += stride) {
        float g = got[i], r = want[i];
        if (!isfinite(g)) { bad += 1.0; continue; }
        double e = (double)g - (double)r;
        diff2 += e * e;
        ref2 += (double)r * (double)r;
    }
    for (int off = 16; off > 0; off >>= 1) {
        diff2 += __shfl_down_sync(0xffffffffU, diff2, off);
        ref2 += __shfl_down_sync(0xffffffffU, ref2, off);
        bad += __shfl_down_sync(0xffffffffU, bad, off);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(&sums[0], diff2);
        atomicAdd(&sums[1], ref2);
        atomicAdd(&sums[2], bad);
    }
}

// Fill with NaN so that an element a kernel forgets to write fails verification.
extern "C" __global__ void nmtune_poison(float* out, unsigned long long count) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count; i += stride) {
        out[i] = __int_as_float(0x7fc00000);
    }
}

// Hold the stream for `cycles` SM clock cycles: the host queues a whole burst of launches
// behind it, so that the burst then runs back to back at the GPU's pace, not the host's.
extern "C" __global__ void nmtune_spin(long long cycles) {
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}
