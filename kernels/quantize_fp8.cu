/*
 * quantize_fp8: per-token (per-row) fp8 e4m3 quantization of a rows x cols row-major matrix
 * (bf16 or fp32 in). For each row: amax = max |x| (NaN entries ignored), scale = amax / FP8_MAX
 * (1 for a row of zeros), q = fp8(clamp(x * (FP8_MAX / amax), -FP8_MAX, FP8_MAX)) rounded to
 * nearest even; writes q (one byte per element) and scale (one fp32 per row), so x ~= q * scale.
 * The encoding is the compile target's (KPLAN_FP8_FNUZ in kplan_kernels.h): e4m3fn, max 448, on
 * NVIDIA, gfx950 and gfx12; e4m3fnuz, max 240, on gfx942. A NaN element gives the NaN code.
 *
 * Tiling as softmax.cu: KPLAN_TPR threads per row, the row held in registers (KPLAN_ITEMS > 0,
 * cols <= KPLAN_ITEMS * KPLAN_TPR * KPLAN_VEC) or streamed twice (KPLAN_ITEMS == 0), a
 * grid-stride loop over row groups, KPLAN_UNROLL > 1 for the next row's loads in flight.
 * cols must be a multiple of KPLAN_VEC (wider vectors convert two values at a time).
 */
#include "kplan_kernels.h"

/* The row's scale and the multiplier that maps it onto the fp8 range. */
__device__ __forceinline__ void kplan_fp8_scale(float amax, float* scale, float* mul) {
    if (amax > 0.0f) {
        *scale = amax / KPLAN_FP8_MAX;
        *mul = KPLAN_FP8_MAX / amax;
    } else {
        *scale = 1.0f;
        *mul = 1.0f;
    }
}

/* One value onto the fp8 range: x * mul clamped to +-FP8_MAX; NaN stays NaN (fmin/fmax drop it). */
__device__ __forceinline__ float kplan_fp8_clamp(float x, float mul) {
    const float c = kplan_fmax(kplan_fmin(x * mul, KPLAN_FP8_MAX), -KPLAN_FP8_MAX);
    return x != x ? x : c;
}

/* KPLAN_VEC values to KPLAN_VEC codes, stored as one access of KPLAN_VEC bytes. */
__device__ __forceinline__ void kplan_fp8_store(kplan_u8* __restrict__ q, const float (&v)[KPLAN_VEC], float mul) {
    if (KPLAN_VEC == 1) {
        q[0] = (kplan_u8)kplan_fp8_encode(kplan_fp8_clamp(v[0], mul));
        return;
    }
    kplan_u32 codes[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i + 1 < KPLAN_VEC; i += 2) {
        const kplan_u32 pair = kplan_fp8_encode2(kplan_fp8_clamp(v[i], mul), kplan_fp8_clamp(v[i + 1], mul));
        codes[i / 4] |= pair << (8 * (i % 4));
    }
    if (KPLAN_VEC >= 16) {
        kplan_w16 o;
        o.a = codes[0];
        o.b = codes[1];
        o.c = codes[2];
        o.d = codes[3];
        *reinterpret_cast<kplan_w16*>(q) = o;
    } else if (KPLAN_VEC == 8) {
        kplan_w8 o;
        o.a = codes[0];
        o.b = codes[1];
        *reinterpret_cast<kplan_w8*>(q) = o;
    } else if (KPLAN_VEC == 4) {
        *reinterpret_cast<kplan_u32*>(q) = codes[0];
    } else {
        *reinterpret_cast<kplan_u16*>(q) = (kplan_u16)codes[0];
    }
}

extern "C" __global__ void KPLAN_LAUNCH_BOUNDS(KPLAN_BLOCK)
    kplan_quantize_fp8(const kplan_t* __restrict__ x, kplan_u8* __restrict__ q, float* __restrict__ scale,
                       int rows, int cols) {
    __shared__ float scratch[2][KPLAN_SCRATCH];
    kplan_rows r = kplan_rows_begin(rows, cols);
#if KPLAN_ITEMS > 0
    kplan_vec raw[KPLAN_ITEMS], cur[KPLAN_ITEMS];
    long long g = blockIdx.x;
    kplan_rows_first(x, r, g, raw);
    for (int it = 0; g < r.groups; g += gridDim.x, ++it) {
        kplan_rows_at(r, g);
        kplan_rows_next(x, r, g, raw, cur);
        float amax = 0.0f;
        kplan_row_each(r, cur, [&](int, int, const float (&v)[KPLAN_VEC]) {
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) amax = kplan_fmax(amax, kplan_fabs(v[i]));
        });
        amax = kplan_group_reduce<KPLAN_OP_MAX>(amax, scratch[it & 1]);
        float sc, mul;
        kplan_fp8_scale(amax, &sc, &mul);
        kplan_row_each(r, cur, [&](int, int j, const float (&v)[KPLAN_VEC]) {
            kplan_fp8_store(q + r.base + (long long)j * KPLAN_VEC, v, mul);
        });
        if (r.t == 0 && r.row < rows) scale[r.row] = sc;
    }
#else
    int it = 0;
    for (long long g = blockIdx.x; g < r.groups; g += gridDim.x, ++it) {
        kplan_rows_at(r, g);
        float amax = 0.0f;
        kplan_row_stream(x, r, [&](int, const float (&v)[KPLAN_VEC]) {
#pragma unroll
            for (int i = 0; i < KPLAN_VEC; ++i) amax = kplan_fmax(amax, kplan_fabs(v[i]));
        });
        amax = kplan_group_reduce<KPLAN_OP_MAX>(amax, scratch[it & 1]);
        float sc, mul;
        kplan_fp8_scale(amax, &sc, &mul);
        kplan_row_stream(x, r, [&](int j, const float (&v)[KPLAN_VEC]) {
            kplan_fp8_store(q + r.base + (long long)j * KPLAN_VEC, v, mul);
        });
        if (r.t == 0 && r.row < rows) scale[r.row] = sc;
    }
#endif
}
