/*
 * softmax: row-wise softmax of a rows x cols row-major matrix (fp32 or bf16 storage, fp32 math).
 *
 * KPLAN_TPR threads own one row; a block holds KPLAN_BLOCK / KPLAN_TPR rows (a row group) and
 * loops over row groups (grid-stride), so the launcher may size the grid to the multiprocessor
 * count (persistent) or give every group its own block. With KPLAN_ITEMS > 0 the row stays in
 * registers (cols <= KPLAN_ITEMS * KPLAN_TPR * KPLAN_VEC): one read and one write of every
 * element, and with KPLAN_UNROLL > 1 the next row's 16-byte loads are in flight while the current
 * row is reduced and written. With KPLAN_ITEMS == 0 rows of any length stream twice: an online
 * max-and-sum pass, then the write. cols must be a multiple of KPLAN_VEC.
 *
 * Rows in registers compute exp(x - m) as exp2(x * log2(e) - m * log2(e)): one multiply-add and
 * one exp2 per element (rows whose maximum exceeds 2^24 / log2(e) subtract first), kept in fp32
 * registers for the write, or computed again for it when the thread holds more than
 * KPLAN_SOFTMAX_EXP_REGS values (the packed row then needs half the registers).
 * Max-subtracted. A row of all -inf gives zeros (no probability mass); NaN in a row gives a NaN
 * row, as the CPU reference defines.
 */
#include "kplan_kernels.h"

/* Rows in registers: exp(x - m) stays in fp32 registers between the sum and the write while the
 * thread's share of the row is at most KPLAN_SOFTMAX_EXP_REGS values; a larger share is kept
 * packed (half the registers for bf16) and exp2 is evaluated again for the write. */
#define KPLAN_SOFTMAX_EXP_REGS 32
#define KPLAN_SOFTMAX_KEEP_EXP (KPLAN_ITEMS * KPLAN_VEC <= KPLAN_SOFTMAX_EXP_REGS)

extern "C" __global__ void KPLAN_LAUNCH_BOUNDS(KPLAN_BLOCK)
    kplan_softmax(const kplan_t* __restrict__ x, kplan_t* __restrict__ y, int rows, int cols) {
    __shared__ float scratch[2][KPLAN_SCRATCH];
    kplan_rows r = kplan_rows_begin(rows, cols);
    const float neg_inf = KPLAN_NEG_INF;
#if KPLAN_ITEMS > 0 && KPLAN_SOFTMAX_KEEP_EXP
    /* raw: the packed 16-byte vectors of the row being loaded; v: the row in fp32 (x, then exp) */
    kplan_vec raw[KPLAN_ITEMS];
    long long g = blockIdx.x;
    kplan_rows_first(x, r, g, raw);
    for (; g < r.groups; g += gridDim.x) {
        kplan_rows_at(r, g);
        if (KPLAN_ROWS_IN_FLIGHT == 1) kplan_load_row(x, r.base, 1, r.t, r.lim, raw);
        float v[KPLAN_ITEMS][KPLAN_VEC];
#pragma unroll
        for (int k = 0; k < KPLAN_ITEMS; ++k) {
            if (r.t + k * KPLAN_TPR < r.lim) {
                kplan_unpack(raw[k], v[k]);
            } else {
#pragma unroll
                for (int i = 0; i < KPLAN_VEC; ++i) v[k][i] = neg_inf;
            }
        }
        /* the next group's row: its loads overlap this row's reductions and stores */
        if (KPLAN_ROWS_IN_FLIGHT > 1) kplan_prefetch_row(x, r, g + gridDim.x, raw);
        float m = neg_inf;
#pragma unroll
        for (int k = 0; k < KPLAN_ITEMS; ++k)
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) m = kplan_fmax(m, v[k][i]);
        m = kplan_group_reduce<KPLAN_OP_MAX>(m, scratch[0]);
        const float mz = m == neg_inf ? 0.0f : m;
        const float ms = mz * KPLAN_LOG2E;
        float s = 0.0f;
        if (ms < 16777216.0f && ms > -16777216.0f) {
            /* folded: exp2(x * log2e - m * log2e), one multiply-add. The rounding of m * log2e
             * is a common factor of the row (at most 2^0.5 below 2^24), cancelled by 1/sum. */
#pragma unroll
            for (int k = 0; k < KPLAN_ITEMS; ++k)
#pragma unroll
                for (int i = 0; i < KPLAN_VEC; ++i) {
                    v[k][i] = kplan_exp2(v[k][i] * KPLAN_LOG2E - ms);
                    s += v[k][i];
                }
        } else {
            /* huge magnitudes: subtract first so the row maximum gives exactly exp2(0) */
#pragma unroll
            for (int k = 0; k < KPLAN_ITEMS; ++k)
#pragma unroll
                for (int i = 0; i < KPLAN_VEC; ++i) {
                    v[k][i] = kplan_exp2((v[k][i] - mz) * KPLAN_LOG2E);
                    s += v[k][i];
                }
        }
        s = kplan_group_reduce<KPLAN_OP_SUM>(s, scratch[1]);
        const float inv = s == 0.0f ? 0.0f : 1.0f / s;
#pragma unroll
        for (int k = 0; k < KPLAN_ITEMS; ++k) {
            const int j = r.t + k * KPLAN_TPR;
            if (j < r.lim) {
#pragma unroll
                for (int i = 0; i < KPLAN_VEC; ++i) v[k][i] *= inv;
                kplan_store(y + r.base + (long long)j * KPLAN_VEC, v[k]);
            }
        }
    }
#elif KPLAN_ITEMS > 0
    /* raw: the packed 16-byte vectors of the row being loaded; cur: the row being reduced and
     * written, still packed. exp is computed twice (for the sum, then for the output) instead of
     * being kept in fp32 registers: half the registers, one more exp2 per element. */
    kplan_vec raw[KPLAN_ITEMS], cur[KPLAN_ITEMS];
    long long g = blockIdx.x;
    kplan_rows_first(x, r, g, raw);
    for (; g < r.groups; g += gridDim.x) {
        kplan_rows_at(r, g);
        kplan_rows_next(x, r, g, raw, cur);
        float m = neg_inf;
        kplan_row_each(r, cur, [&](int, int, const float (&v)[KPLAN_VEC]) {
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) m = kplan_fmax(m, v[i]);
        });
        m = kplan_group_reduce<KPLAN_OP_MAX>(m, scratch[0]);
        const float mz = m == neg_inf ? 0.0f : m;
        const float ms = mz * KPLAN_LOG2E;
        /* folded: exp2(x * log2e - m * log2e), one multiply-add; huge magnitudes subtract first */
        const bool folded = ms < 16777216.0f && ms > -16777216.0f;
        float s = 0.0f;
        kplan_row_each(r, cur, [&](int, int, const float (&v)[KPLAN_VEC]) {
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i)
                s += kplan_exp2(folded ? v[i] * KPLAN_LOG2E - ms : (v[i] - mz) * KPLAN_LOG2E);
        });
        s = kplan_group_reduce<KPLAN_OP_SUM>(s, scratch[1]);
        const float inv = s == 0.0f ? 0.0f : 1.0f / s;
        kplan_row_each(r, cur, [&](int, int j, const float (&xv)[KPLAN_VEC]) {
            float v[KPLAN_VEC];
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i)
                v[i] = kplan_exp2(folded ? xv[i] * KPLAN_LOG2E - ms : (xv[i] - mz) * KPLAN_LOG2E) * inv;
            kplan_store(y + r.base + (long long)j * KPLAN_VEC, v);
        });
    }
#else
    for (long long g = blockIdx.x; g < r.groups; g += gridDim.x) {
        kplan_rows_at(r, g);
        /* Pass 1: running max m and compensated (Kahan) sum s of exp(x - m) per thread, rescaled
         * when m grows; the compensation keeps long rows accurate whatever the threads per row. */
        float m = neg_inf, s = 0.0f, comp = 0.0f;
        kplan_row_stream(x, r, [&](int, const float (&v)[KPLAN_VEC]) {
            float cm = m;
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) cm = kplan_fmax(cm, v[i]);
            if (cm == neg_inf) return;
            if (cm != m) {
                const float q = m == neg_inf ? 0.0f : kplan_exp2((m - cm) * KPLAN_LOG2E);
                s *= q;
                comp *= q;
                m = cm;
            }
            float part = 0.0f;
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) part += kplan_exp2((v[i] - m) * KPLAN_LOG2E);
            const float yk = part - comp;
            const float tk = s + yk;
            comp = (tk - s) - yk;
            s = tk;
        });
        const float gm = kplan_group_reduce<KPLAN_OP_MAX>(m, scratch[0]);
        s = m == neg_inf ? 0.0f : s * kplan_exp2((m - gm) * KPLAN_LOG2E);
        s = kplan_group_reduce<KPLAN_OP_SUM>(s, scratch[1]);
        const float ms = gm == neg_inf ? 0.0f : gm;
        const float inv = s == 0.0f ? 0.0f : 1.0f / s;
        /* Pass 2: write; the row is re-read (from L2 for rows that fit). */
        kplan_row_stream(x, r, [&](int j, const float (&xv)[KPLAN_VEC]) {
            float v[KPLAN_VEC];
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) v[i] = kplan_exp2((xv[i] - ms) * KPLAN_LOG2E) * inv;
            kplan_store(y + r.base + (long long)j * KPLAN_VEC, v);
        });
    }
#endif
}
