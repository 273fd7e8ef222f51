/*
 * add: out = a + b element-wise (fp32 or bf16 storage, fp32 arithmetic, one rounding).
 * Grid-stride over vectors with KPLAN_UNROLL independent 16-byte loads per operand in flight;
 * the last n % KPLAN_VEC elements are handled by scalar accesses. Pointers aligned to KPLAN_VEC
 * elements.
 */
#include "kplan_kernels.h"

extern "C" __global__ void kplan_add(const kplan_t* __restrict__ a, const kplan_t* __restrict__ b,
                                     kplan_t* __restrict__ out, long long n) {
    const long long nvec = n / KPLAN_VEC;
    const long long chunk = (long long)KPLAN_BLOCK * KPLAN_UNROLL;
    const long long full = nvec / chunk;
    for (long long c = blockIdx.x; c < full; c += gridDim.x) {
        float va[KPLAN_UNROLL][KPLAN_VEC], vb[KPLAN_UNROLL][KPLAN_VEC];
#pragma unroll
        for (int u = 0; u < KPLAN_UNROLL; ++u) {
            const long long i = (c * chunk + (long long)u * KPLAN_BLOCK + threadIdx.x) * KPLAN_VEC;
            kplan_load(a + i, va[u]);
            kplan_load(b + i, vb[u]);
        }
#pragma unroll
        for (int u = 0; u < KPLAN_UNROLL; ++u) {
            const long long i = (c * chunk + (long long)u * KPLAN_BLOCK + threadIdx.x) * KPLAN_VEC;
#pragma unroll
            for (int k = 0; k < KPLAN_VEC; ++k) va[u][k] += vb[u][k];
            kplan_store(out + i, va[u]);
        }
    }
    for (long long v = full * chunk + (long long)blockIdx.x * KPLAN_BLOCK + threadIdx.x; v < nvec;
         v += (long long)gridDim.x * KPLAN_BLOCK) {
        float va[KPLAN_VEC], vb[KPLAN_VEC];
        kplan_load(a + v * KPLAN_VEC, va);
        kplan_load(b + v * KPLAN_VEC, vb);
#pragma unroll
        for (int k = 0; k < KPLAN_VEC; ++k) va[k] += vb[k];
        kplan_store(out + v * KPLAN_VEC, va);
    }
    if (blockIdx.x == gridDim.x - 1) {
        for (long long i = nvec * KPLAN_VEC + threadIdx.x; i < n; i += KPLAN_BLOCK)
            kplan_from_f32(kplan_to_f32(a[i]) + kplan_to_f32(b[i]), &out[i]);
    }
}
