/*
 * rmsnorm: y = x / sqrt(mean(x^2) + eps) * weight, row-wise over a rows x cols row-major matrix
 * (x, weight and y share the storage type, fp32 or bf16; fp32 math).
 *
 * Same tiling as softmax.cu: KPLAN_TPR threads per row, KPLAN_BLOCK / KPLAN_TPR rows per block,
 * a grid-stride loop over row groups (persistent grid or one block per group). KPLAN_ITEMS > 0
 * keeps the row in registers in its storage type (cols <= KPLAN_ITEMS * KPLAN_TPR * KPLAN_VEC),
 * and, when it is small (KPLAN_RMS_W_REGS), the thread's share of the weight too, loaded once
 * per block; KPLAN_UNROLL > 1
 * issues the next row's loads before the current row is reduced and written. KPLAN_ITEMS == 0
 * streams rows of any length twice. cols must be a multiple of KPLAN_VEC.
 * The sum of squares is accumulated in fp32: rows whose squares overflow fp32 (|x| > ~1e19)
 * give zeros.
 */
#include "kplan_kernels.h"

/* Weights per thread kept in registers across rows (rows in registers only): at most this many. */
#define KPLAN_RMS_W_REGS 32
#define KPLAN_RMS_W_IN_REGS (KPLAN_ITEMS * KPLAN_VEC <= KPLAN_RMS_W_REGS)

extern "C" __global__ void KPLAN_LAUNCH_BOUNDS(KPLAN_BLOCK)
    kplan_rmsnorm(const kplan_t* __restrict__ x, const kplan_t* __restrict__ w, kplan_t* __restrict__ y,
                  int rows, int cols, float eps) {
    __shared__ float scratch[2][KPLAN_SCRATCH];
    const int t = threadIdx.x % KPLAN_TPR;
    const int sub = threadIdx.x / KPLAN_TPR;
    const int nvec = cols / KPLAN_VEC;
    const long long groups = ((long long)rows + KPLAN_ROWS_PER_BLOCK - 1) / KPLAN_ROWS_PER_BLOCK;
#if KPLAN_ITEMS > 0
    /* The thread's columns are the same in every row: with at most KPLAN_RMS_W_REGS weights
     * per thread they are loaded once, beside the first row's loads, and stay in registers for
     * every row group the thread handles (no dependent load after the reduction). More weights
     * than that would cost more registers than the latency they hide (the compiler keeps them
     * unpacked, as fp32): they are read per row from L1 instead. */
    kplan_vec raw[KPLAN_ITEMS], cur[KPLAN_ITEMS], wr[KPLAN_ITEMS];
    if (KPLAN_RMS_W_IN_REGS) kplan_load_row(w, 0, 0, t, nvec, wr);
    long long g = blockIdx.x;
    if (KPLAN_ROWS_IN_FLIGHT > 1 && g < groups) kplan_prefetch_row(x, g, groups, sub, t, rows, cols, nvec, raw);
    for (int it = 0; g < groups; g += gridDim.x, ++it) {
        const long long row = g * KPLAN_ROWS_PER_BLOCK + sub;
        const int lim = row < rows ? nvec : 0;
        const long long base = (row < rows ? row : 0) * (long long)cols;
        if (KPLAN_ROWS_IN_FLIGHT == 1) kplan_load_row(x, base, 1, t, lim, raw);
#pragma unroll
        for (int k = 0; k < KPLAN_ITEMS; ++k) cur[k] = raw[k];
        if (KPLAN_ROWS_IN_FLIGHT > 1) kplan_prefetch_row(x, g + gridDim.x, groups, sub, t, rows, cols, nvec, raw);
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < KPLAN_ITEMS; ++k) {
            if (t + k * KPLAN_TPR < lim) {
                float v[KPLAN_VEC];
                kplan_unpack(cur[k], v);
#pragma unroll
                for (int i = 0; i < KPLAN_VEC; ++i) ss += v[i] * v[i];
            }
        }
        ss = kplan_group_reduce<KPLAN_OP_SUM>(ss, scratch[it & 1]);
        const float inv = kplan_rsqrt(ss / (float)cols + eps);
#pragma unroll
        for (int k = 0; k < KPLAN_ITEMS; ++k) {
            const int j = t + k * KPLAN_TPR;
            if (j < lim) {
                float v[KPLAN_VEC], wv[KPLAN_VEC];
                kplan_unpack(cur[k], v);
                if (KPLAN_RMS_W_IN_REGS)
                    kplan_unpack(wr[k], wv);
                else
                    kplan_load(w + (long long)j * KPLAN_VEC, wv); /* small, stays in L1/L2 */
#pragma unroll
                for (int i = 0; i < KPLAN_VEC; ++i) v[i] = v[i] * inv * wv[i];
                kplan_store(y + base + (long long)j * KPLAN_VEC, v);
            }
        }
    }
#else
    int it = 0;
    for (long long g = blockIdx.x; g < groups; g += gridDim.x, ++it) {
        const long long row = g * KPLAN_ROWS_PER_BLOCK + sub;
        const int lim = row < rows ? nvec : 0;
        const long long base = (row < rows ? row : 0) * (long long)cols;
        /* Compensated (Kahan) sum of squares: long rows stay accurate whatever the threads per row. */
        float ss = 0.0f, comp = 0.0f;
        for (int j = t; j < lim; j += KPLAN_TPR) {
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
        ss = kplan_group_reduce<KPLAN_OP_SUM>(ss, scratch[it & 1]);
        const float inv = kplan_rsqrt(ss / (float)cols + eps);
        for (int j = t; j < lim; j += KPLAN_TPR) {
            float v[KPLAN_VEC], wv[KPLAN_VEC];
            kplan_load(x + base + (long long)j * KPLAN_VEC, v);
            kplan_load(w + (long long)j * KPLAN_VEC, wv);
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) v[i] = v[i] * inv * wv[i];
            kplan_store(y + base + (long long)j * KPLAN_VEC, v);
        }
    }
#endif
}
