/*
 * rmsnorm: y = x / sqrt(mean(x^2) + eps) * weight, row-wise over a rows x cols row-major matrix
 * (x, weight and y share the storage type, fp32 or bf16; fp32 math).
 *
 * Same tiling as softmax.cu: KPLAN_TPR threads per row, KPLAN_BLOCK / KPLAN_TPR rows per block;
 * KPLAN_ITEMS > 0 keeps the row in registers (cols <= KPLAN_ITEMS * KPLAN_TPR * KPLAN_VEC),
 * KPLAN_ITEMS == 0 streams rows of any length twice. cols must be a multiple of KPLAN_VEC.
 * The sum of squares is accumulated in fp32: rows whose squares overflow fp32 (|x| > ~1e19)
 * give zeros.
 */
#include "kplan_kernels.h"

extern "C" __global__ void kplan_rmsnorm(const kplan_t* __restrict__ x, const kplan_t* __restrict__ w,
                                         kplan_t* __restrict__ y, int rows, int cols, float eps) {
    __shared__ float scratch[KPLAN_ROWS_PER_BLOCK * KPLAN_WARPS_PER_ROW];
    const int t = threadIdx.x % KPLAN_TPR;
    const long long row = (long long)blockIdx.x * KPLAN_ROWS_PER_BLOCK + threadIdx.x / KPLAN_TPR;
    const bool live = row < rows;
    const long long base = (live ? row : 0) * (long long)cols;
    const int nvec = live ? cols / KPLAN_VEC : 0;
#if KPLAN_ITEMS > 0
    /* The row stays in registers in its storage type (half the registers for bf16). */
    kplan_vec raw[KPLAN_ITEMS];
#pragma unroll
    for (int k = 0; k < KPLAN_ITEMS; ++k) {
        const int j = t + k * KPLAN_TPR;
        if (j < nvec) kplan_load_raw(x + base + (long long)j * KPLAN_VEC, raw[k]);
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < KPLAN_ITEMS; ++k) {
        if (t + k * KPLAN_TPR < nvec) {
            float v[KPLAN_VEC];
            kplan_unpack(raw[k], v);
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) ss += v[i] * v[i];
        }
    }
    ss = kplan_group_reduce<KPLAN_OP_SUM>(ss, scratch);
    const float inv = kplan_rsqrt(ss / (float)cols + eps);
#pragma unroll
    for (int k = 0; k < KPLAN_ITEMS; ++k) {
        const int j = t + k * KPLAN_TPR;
        if (j < nvec) {
            float v[KPLAN_VEC], wv[KPLAN_VEC];
            kplan_unpack(raw[k], v);
            kplan_load(w + (long long)j * KPLAN_VEC, wv);
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) v[i] = v[i] * inv * wv[i];
            kplan_store(y + base + (long long)j * KPLAN_VEC, v);
        }
    }
#else
    /* Compensated (Kahan) sum of squares: long rows stay accurate whatever the threads per row. */
    float ss = 0.0f, comp = 0.0f;
    for (int j = t; j < nvec; j += KPLAN_TPR) {
        float v[KPLAN_VEC];
        kplan_load(x + base + (long long)j * KPLAN_VEC, v);
        float part = 0.0f;
#pragma unroll
        for (int i = 0; i < KPLAN_VEC; ++i) part += v[i] * v[i];
        const float yk = part - comp;
        const float tk = ss + yk;
        comp = (tk - ss) - yk;
        ss = tk;
    }
    ss = kplan_group_reduce<KPLAN_OP_SUM>(ss, scratch);
    const float inv = kplan_rsqrt(ss / (float)cols + eps);
    for (int j = t; j < nvec; j += KPLAN_TPR) {
        float v[KPLAN_VEC], wv[KPLAN_VEC];
        kplan_load(x + base + (long long)j * KPLAN_VEC, v);
        kplan_load(w + (long long)j * KPLAN_VEC, wv);
#pragma unroll
        for (int i = 0; i < KPLAN_VEC; ++i) v[i] = v[i] * inv * wv[i];
        kplan_store(y + base + (long long)j * KPLAN_VEC, v);
    }
#endif
}
