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
    kplan_rows r = kplan_rows_begin(rows, cols);
#if KPLAN_ITEMS > 0
    /* The thread's columns are the same in every row: with at most KPLAN_RMS_W_REGS weights
     * per thread they are loaded once, beside the first row's loads, and stay in registers for
     * every row group the thread handles (no dependent load after the reduction). More weights
     * than that would cost more registers than the latency they hide (the compiler keeps them
     * unpacked, as fp32): they are read per row from L1 instead. */
    kplan_vec raw[KPLAN_ITEMS], cur[KPLAN_ITEMS], wr[KPLAN_ITEMS];
    if (KPLAN_RMS_W_IN_REGS) kplan_load_row(w, 0, 0, r.t, r.nvec, wr);
    long long g = blockIdx.x;
    kplan_rows_first(x, r, g, raw);
    for (int it = 0; g < r.groups; g += gridDim.x, ++it) {
        kplan_rows_at(r, g);
        kplan_rows_next(x, r, g, raw, cur);
        float ss = 0.0f;
        kplan_row_each(r, cur, [&](int, int, const float (&v)[KPLAN_VEC]) {
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) ss += v[i] * v[i];
        });
        ss = kplan_group_reduce<KPLAN_OP_SUM>(ss, scratch[it & 1]);
        const float inv = kplan_rsqrt(ss / (float)cols + eps);
        kplan_row_each(r, cur, [&](int k, int j, const float (&xv)[KPLAN_VEC]) {
            float v[KPLAN_VEC], wv[KPLAN_VEC];
            if (KPLAN_RMS_W_IN_REGS)
                kplan_unpack(wr[k], wv);
            else
                kplan_load(w + (long long)j * KPLAN_VEC, wv); /* small, stays in L1/L2 */
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) v[i] = xv[i] * inv * wv[i];
            kplan_store(y + r.base + (long long)j * KPLAN_VEC, v);
        });
    }
#else
    int it = 0;
    for (long long g = blockIdx.x; g < r.groups; g += gridDim.x, ++it) {
        kplan_rows_at(r, g);
        /* Compensated (Kahan) sum of squares: long rows stay accurate whatever the threads per row. */
        float ss = 0.0f, comp = 0.0f;
        kplan_row_stream(x, r, [&](int, const float (&v)[KPLAN_VEC]) {
            float part = 0.0f;
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) part += v[i] * v[i];
            const float yk = part - comp;
            const float tk = ss + yk;
            comp = (tk - ss) - yk;
            ss = tk;
        });
        ss = kplan_group_reduce<KPLAN_OP_SUM>(ss, scratch[it & 1]);
        const float inv = kplan_rsqrt(ss / (float)cols + eps);
        kplan_row_stream(x, r, [&](int j, const float (&xv)[KPLAN_VEC]) {
            float v[KPLAN_VEC], wv[KPLAN_VEC];
            kplan_load(w + (long long)j * KPLAN_VEC, wv);
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) v[i] = xv[i] * inv * wv[i];
            kplan_store(y + r.base + (long long)j * KPLAN_VEC, v);
        });
    }
#endif
}
