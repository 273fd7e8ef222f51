/*
 * reduce_sum: full sum of n elements (fp32 or bf16 in), fp32 accumulation, two passes:
 *   kplan_reduce_sum_partial  grid-stride over the input, KPLAN_UNROLL vector loads in flight
 *                             per thread, one partial sum per block written to `partials`;
 *   kplan_reduce_sum_final    one block sums the partials (deterministic: no atomics).
 * The launcher sizes the grid from the multiprocessor count (a few blocks per SM), so the
 * partials array stays small. `x` must be aligned to KPLAN_VEC elements.
 */
#include "kplan_kernels.h"

extern "C" __global__ void kplan_reduce_sum_partial(const kplan_t* __restrict__ x, long long n,
                                                    float* __restrict__ partials) {
    __shared__ float scratch[KPLAN_WARPS];
    const long long nvec = n / KPLAN_VEC;
    const long long chunk = (long long)KPLAN_BLOCK * KPLAN_UNROLL;
    float acc[KPLAN_UNROLL];
#pragma unroll
    for (int u = 0; u < KPLAN_UNROLL; ++u) acc[u] = 0.0f;

    /* Full chunks: every load in bounds, KPLAN_UNROLL independent loads issued before use. */
    const long long full = nvec / chunk;
    for (long long c = blockIdx.x; c < full; c += gridDim.x) {
        float v[KPLAN_UNROLL][KPLAN_VEC];
#pragma unroll
        for (int u = 0; u < KPLAN_UNROLL; ++u)
            kplan_load(x + (c * chunk + (long long)u * KPLAN_BLOCK + threadIdx.x) * KPLAN_VEC, v[u]);
#pragma unroll
        for (int u = 0; u < KPLAN_UNROLL; ++u)
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) acc[u] += v[u][i];
    }
    /* Remaining whole vectors, then the last n % KPLAN_VEC elements. */
    for (long long i = full * chunk + (long long)blockIdx.x * KPLAN_BLOCK + threadIdx.x; i < nvec;
         i += (long long)gridDim.x * KPLAN_BLOCK) {
        float v[KPLAN_VEC];
        kplan_load(x + i * KPLAN_VEC, v);
#pragma unroll
        for (int k = 0; k < KPLAN_VEC; ++k) acc[0] += v[k];
    }
    if (blockIdx.x == gridDim.x - 1) {
        for (long long i = nvec * KPLAN_VEC + threadIdx.x; i < n; i += KPLAN_BLOCK) acc[0] += kplan_to_f32(x[i]);
    }
    float s = 0.0f;
#pragma unroll
    for (int u = 0; u < KPLAN_UNROLL; ++u) s += acc[u];

    const float b = kplan_block_sum(s, scratch);
    if (threadIdx.x == 0) partials[blockIdx.x] = b;
}

extern "C" __global__ void kplan_reduce_sum_final(const float* __restrict__ partials, int count,
                                                  float* __restrict__ out) {
    __shared__ float scratch[KPLAN_WARPS];
    float s = 0.0f;
    for (int i = threadIdx.x; i < count; i += KPLAN_BLOCK) s += partials[i];
    const float b = kplan_block_sum(s, scratch);
    if (threadIdx.x == 0) out[0] = b;
}
