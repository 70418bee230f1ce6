// Support kernels for tuning and verification: random inputs generated on the device (so that
// large problems never cross PCIe), N:M decompression for the cuBLAS baseline, and the
// relative-error reduction used to verify every candidate; FP32 and the tensor-core family's
// 16-bit types.

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

// One thread's part of the error sums: (Σ (got - want)², Σ want², non-finite values in got).
struct ErrorSums {
    double diff2 = 0.0, ref2 = 0.0, bad = 0.0;

    __device__ void add(float g, float r) {
        if (!isfinite(g)) { bad += 1.0; return; }
        double e = (double)g - (double)r;
        diff2 += e * e;
        ref2 += (double)r * (double)r;
    }

    // Reduce over the warp; its first lane adds the warp's sums to sums[0..3].
    __device__ void flush(double* sums) {
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
};

// sums[0] += Σ (got - want)², sums[1] += Σ want², sums[2] += count of non-finite values in got.
extern "C" __global__ void nmtune_error_sums(const float* got, const float* want, unsigned long long count, double* sums) {
    ErrorSums acc;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count; i += stride) {
        acc.add(got[i], want[i]);
    }
    acc.flush(sums);
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

// 16-bit elements (the tensor-core family's BF16 and FP16), `kind` 0 for BF16 and 1 for FP16.
__device__ __forceinline__ float from_16bit(unsigned short bits, int kind) {
    if (kind == 0) return __uint_as_float((unsigned int)bits << 16);
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
}

// Round to nearest, ties to even.
__device__ __forceinline__ unsigned short to_16bit(float x, int kind) {
    unsigned short bits;
    if (kind == 0) asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(x));
    else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(x));
    return bits;
}

// nmtune_fill_uniform's values rounded to the 16-bit type.
extern "C" __global__ void nmtune_fill_uniform_16(unsigned short* out, unsigned long long count, unsigned int seed, int kind) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count; i += stride) {
        unsigned int h = mix32((unsigned int)i ^ mix32(seed + (unsigned int)(i >> 32) * 0x9e3779b9U));
        out[i] = to_16bit((float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f, kind);
    }
}

// out[i] = in[i] rounded to the 16-bit type (exact for values that are already of it).
extern "C" __global__ void nmtune_to_16bit(const float* in, unsigned short* out, unsigned long long count, int kind) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count; i += stride) {
        out[i] = to_16bit(in[i], kind);
    }
}

// nmtune_error_sums over 16-bit elements.
extern "C" __global__ void nmtune_error_sums_16(const unsigned short* got, const unsigned short* want, unsigned long long count, int kind, double* sums) {
    ErrorSums acc;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count; i += stride) {
        acc.add(from_16bit(got[i], kind), from_16bit(want[i], kind));
    }
    acc.flush(sums);
}

// 0xFFFF is a NaN in BF16 and in FP16 alike.
extern "C" __global__ void nmtune_poison_16(unsigned short* out, unsigned long long count) {
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count; i += stride) {
        out[i] = 0xFFFFU;
    }
}
