/*
 * softmax: row-wise softmax of a rows x cols row-major matrix (fp32 or bf16 storage, fp32 math).
 *
 * KPLAN_TPR threads own one row; a block holds KPLAN_BLOCK / KPLAN_TPR rows (several short rows
 * per block, one long row per block). With KPLAN_ITEMS > 0 the row stays in registers
 * (cols <= KPLAN_ITEMS * KPLAN_TPR * KPLAN_VEC): one read and one write of every element. With
 * KPLAN_ITEMS == 0 rows of any length stream twice: an online max-and-sum pass, then the write.
 * cols must be a multiple of KPLAN_VEC (the launcher picks a vector width that divides it).
 *
 * Max-subtracted. A row of all -inf gives zeros (no probability mass); NaN in a row gives a NaN
 * row, as the CPU reference defines.
 */
#include "kplan_kernels.h"

extern "C" __global__ void kplan_softmax(const kplan_t* __restrict__ x, kplan_t* __restrict__ y,
                                         int rows, int cols) {
    __shared__ float scratch[KPLAN_ROWS_PER_BLOCK * KPLAN_WARPS_PER_ROW];
    const int t = threadIdx.x % KPLAN_TPR;
    const long long row = (long long)blockIdx.x * KPLAN_ROWS_PER_BLOCK + threadIdx.x / KPLAN_TPR;
    const bool live = row < rows;
    const long long base = (live ? row : 0) * (long long)cols;
    const int nvec = live ? cols / KPLAN_VEC : 0;
    const float neg_inf = KPLAN_NEG_INF;
#if KPLAN_ITEMS > 0
    /* The row in fp32 registers; exp computed once and kept (measured faster on an H200 than
     * keeping the packed input and recomputing exp: bench/results/). */
    float v[KPLAN_ITEMS][KPLAN_VEC];
#pragma unroll
    for (int k = 0; k < KPLAN_ITEMS; ++k) {
        const int j = t + k * KPLAN_TPR;
        if (j < nvec) {
            kplan_load(x + base + (long long)j * KPLAN_VEC, v[k]);
        } else {
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) v[k][i] = neg_inf;
        }
    }
    float m = neg_inf;
#pragma unroll
    for (int k = 0; k < KPLAN_ITEMS; ++k)
#pragma unroll
        for (int i = 0; i < KPLAN_VEC; ++i) m = kplan_fmax(m, v[k][i]);
    m = kplan_group_reduce<KPLAN_OP_MAX>(m, scratch);
    const float ms = m == neg_inf ? 0.0f : m;
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < KPLAN_ITEMS; ++k)
#pragma unroll
        for (int i = 0; i < KPLAN_VEC; ++i) {
            v[k][i] = kplan_exp2((v[k][i] - ms) * KPLAN_LOG2E);
            s += v[k][i];
        }
    s = kplan_group_reduce<KPLAN_OP_SUM>(s, scratch);
    const float inv = s == 0.0f ? 0.0f : 1.0f / s;
#pragma unroll
    for (int k = 0; k < KPLAN_ITEMS; ++k) {
        const int j = t + k * KPLAN_TPR;
        if (j < nvec) {
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) v[k][i] *= inv;
            kplan_store(y + base + (long long)j * KPLAN_VEC, v[k]);
        }
    }
#else
    /* Pass 1: running max m and compensated (Kahan) sum s of exp(x - m) per thread, rescaled
     * when m grows; the compensation keeps long rows accurate whatever the threads per row. */
    float m = neg_inf, s = 0.0f, comp = 0.0f;
    for (int j = t; j < nvec; j += KPLAN_TPR) {
        float v[KPLAN_VEC];
        kplan_load(x + base + (long long)j * KPLAN_VEC, v);
        float cm = m;
#pragma unroll
        for (int i = 0; i < KPLAN_VEC; ++i) cm = kplan_fmax(cm, v[i]);
        if (cm == neg_inf) continue;
        if (cm != m) {
            const float r = m == neg_inf ? 0.0f : kplan_exp2((m - cm) * KPLAN_LOG2E);
            s *= r;
            comp *= r;
            m = cm;
        }
        float part = 0.0f;
#pragma unroll
        for (int i = 0; i < KPLAN_VEC; ++i) part += kplan_exp2((v[i] - m) * KPLAN_LOG2E);
        const float yk = part - comp;
        const float tk = s + yk;
        comp = (tk - s) - yk;
        s = tk;
    }
    const float gm = kplan_group_reduce<KPLAN_OP_MAX>(m, scratch);
    s = m == neg_inf ? 0.0f : s * kplan_exp2((m - gm) * KPLAN_LOG2E);
    s = kplan_group_reduce<KPLAN_OP_SUM>(s, scratch);
    const float ms = gm == neg_inf ? 0.0f : gm;
    const float inv = s == 0.0f ? 0.0f : 1.0f / s;
    /* Pass 2: write; the row is re-read (from L2 for rows that fit). */
    for (int j = t; j < nvec; j += KPLAN_TPR) {
        float v[KPLAN_VEC];
        kplan_load(x + base + (long long)j * KPLAN_VEC, v);
#pragma unroll
        for (int i = 0; i < KPLAN_VEC; ++i) v[i] = kplan_exp2((v[i] - ms) * KPLAN_LOG2E) * inv;
        kplan_store(y + base + (long long)j * KPLAN_VEC, v);
    }
#endif
}
