/*
 * Shared helpers of kplan's reference kernels (reduce_sum, add, softmax, rmsnorm, quantize_fp8):
 * storage conversions and vector accesses, the row kernels' tiling (kplan_rows: a thread's row
 * group and row, the loads of a row held in registers with the next row in flight, the loops
 * over a thread's vectors of a row), the row-group and block reductions, and fp8 encoding.
 *
 * Built on the portability header: kernels include this file only, and never test a platform
 * macro themselves. Everything here is the same on CUDA (nvcc, NVRTC), HIP and the host C++
 * compiler (the CPU backend; one lane per warp, see kernels/host_runner.cpp).
 *
 * Configuration, set per launch with -D (defaults below; per-target values in kernels/tiles.toml):
 *   KPLAN_DTYPE_BF16  1: inputs/outputs are bf16 stored as raw 16-bit words; 0: fp32.
 *   KPLAN_BLOCK       threads per block.
 *   KPLAN_VEC         elements per vector access (VEC * sizeof(T) <= 16 bytes).
 *   KPLAN_UNROLL      independent vector loads in flight per thread (flat kernels); row
 *                     kernels: rows in flight per row group (2 = the next row's loads are issued
 *                     before the current row is reduced and written).
 *   KPLAN_TPR         threads per row (row kernels), a power of two dividing KPLAN_BLOCK.
 *   KPLAN_ITEMS       vectors per thread kept in registers (row kernels); 0 = streaming rows of
 *                     any length (two passes over the row).
 *   KPLAN_FP8_FNUZ    quantize_fp8's encoding: 0 e4m3fn (OCP, max 448: NVIDIA, gfx950, gfx12),
 *                     1 e4m3fnuz (max 240: gfx940/941/942). Default: the compile target's own
 *                     encoding (below); the CPU backend sets it to emulate either.
 *
 * Row kernels loop over row groups with a grid-stride loop, so a launch may use fewer blocks than
 * row groups (a persistent grid sized to the multiprocessor count) or one block per group.
 */
#ifndef KPLAN_KERNELS_H
#define KPLAN_KERNELS_H

#include "kplan_portability.h"

#ifndef KPLAN_DTYPE_BF16
#define KPLAN_DTYPE_BF16 0
#endif
#ifndef KPLAN_BLOCK
#define KPLAN_BLOCK 256
#endif
#ifndef KPLAN_VEC
#define KPLAN_VEC 4
#endif
#ifndef KPLAN_UNROLL
#define KPLAN_UNROLL 4
#endif
#ifndef KPLAN_TPR
#define KPLAN_TPR KPLAN_BLOCK
#endif
#ifndef KPLAN_ITEMS
#define KPLAN_ITEMS 0
#endif
#ifndef KPLAN_FP8_FNUZ
/* The fp8 encoding of the compile target: the FNUZ variant on gfx940/941/942 (MI300), OCP
 * e4m3fn everywhere else (NVIDIA sm_89+, gfx950, gfx12, the host). */
#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
#define KPLAN_FP8_FNUZ 1
#else
#define KPLAN_FP8_FNUZ 0
#endif
#endif

#if KPLAN_BACKEND_HOST
/* Host (CPU backend): the launch model that kernels/host_runner.cpp provides. One std::thread
 * per CUDA thread of a block, one lane per warp, __syncthreads a real barrier. */
#include <cmath>
#include <cstring>
#include <cstdint>
struct kplan_dim3 {
    unsigned int x, y, z;
};
extern thread_local kplan_dim3 threadIdx;
extern thread_local kplan_dim3 blockIdx;
extern kplan_dim3 blockDim;
extern kplan_dim3 gridDim;
void kplan_host_syncthreads();
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __syncthreads() kplan_host_syncthreads()
typedef uint16_t kplan_u16;
typedef uint32_t kplan_u32;
static inline float kplan_bits_to_f32(kplan_u32 b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
static inline kplan_u32 kplan_f32_to_bits(float f) {
    kplan_u32 b;
    std::memcpy(&b, &f, 4);
    return b;
}
static inline float kplan_exp2(float x) { return std::exp2(x); }
static inline float kplan_rsqrt(float x) { return 1.0f / std::sqrt(x); }
static inline float kplan_fmax(float a, float b) { return std::fmax(a, b); }
static inline float kplan_rint(float x) { return std::nearbyint(x); }
static inline float kplan_fmin(float a, float b) { return std::fmin(a, b); }
static inline float kplan_fabs(float x) { return std::fabs(x); }
#else
typedef unsigned short kplan_u16;
typedef unsigned int kplan_u32;
__device__ __forceinline__ float kplan_bits_to_f32(kplan_u32 b) { return __uint_as_float(b); }
__device__ __forceinline__ kplan_u32 kplan_f32_to_bits(float f) { return __float_as_uint(f); }
__device__ __forceinline__ float kplan_rsqrt(float x) { return rsqrtf(x); }
__device__ __forceinline__ float kplan_fmax(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ float kplan_rint(float x) { return rintf(x); }
__device__ __forceinline__ float kplan_fmin(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ float kplan_fabs(float x) { return fabsf(x); }
#endif

/* kplan_exp2(x) = 2^x. One definition per platform, chosen here: NVIDIA uses the hardware
 * approximation directly (ex2.approx.ftz: one MUFU instruction, relative error below 2^-22,
 * results below 2^-126 flushed to zero); AMD and the host use exp2f / std::exp2. */
#if KPLAN_BACKEND_CUDA && defined(__CUDA_ARCH__)
__device__ __forceinline__ float kplan_exp2(float x) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
#elif !KPLAN_BACKEND_HOST
__device__ __forceinline__ float kplan_exp2(float x) { return exp2f(x); }
#endif

#define KPLAN_NEG_INF kplan_bits_to_f32(0xff800000u)
#define KPLAN_LOG2E 1.4426950408889634f

/* Storage type. bf16 is raw 16-bit storage with explicit conversions (round to nearest even),
 * identical on every backend; no vendor bf16 header is needed. */
#if KPLAN_DTYPE_BF16
typedef kplan_u16 kplan_t;
#else
typedef float kplan_t;
#endif

__device__ __forceinline__ float kplan_to_f32(float v) { return v; }
__device__ __forceinline__ float kplan_to_f32(kplan_u16 v) { return kplan_bits_to_f32(((kplan_u32)v) << 16); }
__device__ __forceinline__ void kplan_from_f32(float f, float* out) { *out = f; }
__device__ __forceinline__ void kplan_from_f32(float f, kplan_u16* out) {
    kplan_u32 b = kplan_f32_to_bits(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        *out = (kplan_u16)((b >> 16) | 0x0040u); /* NaN stays a quiet NaN */
        return;
    }
    *out = (kplan_u16)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

/* Raw words of one vector access: 16, 8, 4 or 2 bytes, loaded and stored as one access. */
struct __attribute__((aligned(16))) kplan_w16 { kplan_u32 a, b, c, d; };
struct __attribute__((aligned(8))) kplan_w8 { kplan_u32 a, b; };
template <int BYTES> struct kplan_words;
template <> struct kplan_words<16> { typedef kplan_w16 type; };
template <> struct kplan_words<8> { typedef kplan_w8 type; };
template <> struct kplan_words<4> { typedef kplan_u32 type; };
template <> struct kplan_words<2> { typedef kplan_u16 type; };

/* Two fp32 values to two bf16 (round to nearest even) in one 32-bit word, low half `lo`. One
 * definition per platform, chosen here: NVIDIA sm_80+ converts the pair in one instruction
 * (cvt.rn.bf16x2.f32; NaN becomes the canonical quiet NaN 0x7fff), elsewhere kplan_from_f32 twice.
 * Both give the same bits for every non-NaN input. */
#if KPLAN_BACKEND_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ __forceinline__ kplan_u32 kplan_pack_bf16x2(float lo, float hi) {
    kplan_u32 r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
#else
__device__ __forceinline__ kplan_u32 kplan_pack_bf16x2(float lo, float hi) {
    kplan_u16 a, b;
    kplan_from_f32(lo, &a);
    kplan_from_f32(hi, &b);
    return (kplan_u32)a | ((kplan_u32)b << 16);
}
#endif

/* KPLAN_VEC elements of kplan_t, accessed as one load/store of VEC * sizeof(T) bytes; `u` views
 * the same bytes as 32-bit words (two bf16 per word). */
#define KPLAN_VEC_WORDS ((KPLAN_VEC * (int)sizeof(kplan_t) + 3) / 4)
struct kplan_vec {
    typedef typename kplan_words<KPLAN_VEC * sizeof(kplan_t)>::type words_t;
    union {
        words_t w;
        kplan_t e[KPLAN_VEC];
        kplan_u32 u[KPLAN_VEC_WORDS];
    };
};

/* Raw (still packed) vector: rows held in registers stay in their storage type, which halves
 * the registers a bf16 row needs; kplan_unpack converts when the values are used. */
__device__ __forceinline__ void kplan_load_raw(const kplan_t* __restrict__ p, kplan_vec& v) {
    v.w = *reinterpret_cast<const typename kplan_vec::words_t*>(p);
}

__device__ __forceinline__ void kplan_unpack(const kplan_vec& v, float (&out)[KPLAN_VEC]) {
#if KPLAN_DTYPE_BF16
    if (KPLAN_VEC >= 2) {
        /* a bf16 is the high half of an fp32: one shift or mask per element */
#pragma unroll
        for (int i = 0; i + 1 < KPLAN_VEC; i += 2) {
            out[i] = kplan_bits_to_f32(v.u[i / 2] << 16);
            out[i + 1] = kplan_bits_to_f32(v.u[i / 2] & 0xffff0000u);
        }
    } else {
        out[0] = kplan_to_f32(v.e[0]);
    }
#else
#pragma unroll
    for (int i = 0; i < KPLAN_VEC; ++i) out[i] = v.e[i];
#endif
}

__device__ __forceinline__ void kplan_load(const kplan_t* __restrict__ p, float (&out)[KPLAN_VEC]) {
    kplan_vec v;
    kplan_load_raw(p, v);
    kplan_unpack(v, out);
}

/* KPLAN_VEC fp32 values rounded to the storage type and stored as one access. */
__device__ __forceinline__ void kplan_store(kplan_t* __restrict__ p, const float (&in)[KPLAN_VEC]) {
    kplan_vec v;
#if KPLAN_DTYPE_BF16
    if (KPLAN_VEC >= 2) {
#pragma unroll
        for (int i = 0; i + 1 < KPLAN_VEC; i += 2) v.u[i / 2] = kplan_pack_bf16x2(in[i], in[i + 1]);
    } else {
        kplan_from_f32(in[0], &v.e[0]);
    }
#else
#pragma unroll
    for (int i = 0; i < KPLAN_VEC; ++i) v.e[i] = in[i];
#endif
    *reinterpret_cast<typename kplan_vec::words_t*>(p) = v.w;
}

/* Row kernels: rows in flight per row group (1 or 2). */
#define KPLAN_ROWS_IN_FLIGHT (KPLAN_UNROLL > 1 ? 2 : 1)

/* Warps of a block and of a row group. */
#define KPLAN_WARPS (KPLAN_BLOCK / KPLAN_WARP_SIZE > 0 ? KPLAN_BLOCK / KPLAN_WARP_SIZE : 1)
#define KPLAN_ROWS_PER_BLOCK (KPLAN_BLOCK / KPLAN_TPR)
#define KPLAN_WARPS_PER_ROW (KPLAN_TPR / KPLAN_WARP_SIZE > 0 ? KPLAN_TPR / KPLAN_WARP_SIZE : 1)

/* Row kernels: a thread's place in the tiling. t: its index in its row group's KPLAN_TPR threads;
 * sub: its row in the block's group of KPLAN_ROWS_PER_BLOCK rows; nvec: vectors per row; groups:
 * row groups of the matrix. kplan_rows_at(r, g) sets, for row group g, the thread's row, lim
 * (the row's vector count, 0 for a row past the end) and base (the row's first element; row 0
 * for a row past the end, so that addresses stay in bounds). */
struct kplan_rows {
    int t, sub, nvec, rows, cols;
    long long groups, row, base;
    int lim;
};

__device__ __forceinline__ kplan_rows kplan_rows_begin(int rows, int cols) {
    kplan_rows r;
    r.t = threadIdx.x % KPLAN_TPR;
    r.sub = threadIdx.x / KPLAN_TPR;
    r.nvec = cols / KPLAN_VEC;
    r.rows = rows;
    r.cols = cols;
    r.groups = ((long long)rows + KPLAN_ROWS_PER_BLOCK - 1) / KPLAN_ROWS_PER_BLOCK;
    r.row = 0;
    r.base = 0;
    r.lim = 0;
    return r;
}

__device__ __forceinline__ void kplan_rows_at(kplan_rows& r, long long g) {
    r.row = g * KPLAN_ROWS_PER_BLOCK + r.sub;
    r.lim = r.row < r.rows ? r.nvec : 0;
    r.base = (r.row < r.rows ? r.row : 0) * (long long)r.cols;
}

/* Streaming rows (any length): f(j, v) for each of the thread's vectors j of the current row,
 * loaded and converted to fp32 (`return` in f skips to the next vector). */
template <class F>
__device__ __forceinline__ void kplan_row_stream(const kplan_t* __restrict__ x, const kplan_rows& r, F f) {
    for (int j = r.t; j < r.lim; j += KPLAN_TPR) {
        float v[KPLAN_VEC];
        kplan_load(x + r.base + (long long)j * KPLAN_VEC, v);
        f(j, v);
    }
}

/* Row kernels with the row in registers (KPLAN_ITEMS > 0): the loads of one row's vectors. Thread
 * `t` of the row group loads vectors t, t + KPLAN_TPR, ... of the row at x + row * stride into
 * `raw`, those below `lim` (the row's vector count, 0 for a row past the end). The address is
 * formed inside the bounds test, as in a loop written out in the kernel, so the generated code
 * is the same as that loop's. */
#if KPLAN_ITEMS > 0
__device__ __forceinline__ void kplan_load_row(const kplan_t* __restrict__ x, long long row, int stride, int t,
                                               int lim, kplan_vec (&raw)[KPLAN_ITEMS]) {
#pragma unroll
    for (int k = 0; k < KPLAN_ITEMS; ++k)
        if (t + k * KPLAN_TPR < lim) kplan_load_raw(x + row * stride + (long long)(t + k * KPLAN_TPR) * KPLAN_VEC, raw[k]);
}

/* With two rows in flight: the loads of row group `g`'s row for the thread, issued before the
 * loop reaches it (the first group before the loop, the next group while the current one is
 * reduced and written); nothing for a group or row past the end. */
__device__ __forceinline__ void kplan_prefetch_row(const kplan_t* __restrict__ x, const kplan_rows& r, long long g,
                                                   kplan_vec (&raw)[KPLAN_ITEMS]) {
    const long long row = g * KPLAN_ROWS_PER_BLOCK + r.sub;
    const int lim = (g < r.groups && row < r.rows) ? r.nvec : 0;
    kplan_load_row(x, row, r.cols, r.t, lim, raw);
}

/* Before the loop over row groups (first group g): with two rows in flight, its loads. */
__device__ __forceinline__ void kplan_rows_first(const kplan_t* __restrict__ x, const kplan_rows& r, long long g,
                                                 kplan_vec (&raw)[KPLAN_ITEMS]) {
    if (KPLAN_ROWS_IN_FLIGHT > 1 && g < r.groups) kplan_prefetch_row(x, r, g, raw);
}

/* In the loop, after kplan_rows_at(r, g): the current row's vectors in `cur` (loaded now, or
 * taken from the loads in flight), and with two rows in flight the next group's loads issued
 * into `raw`. */
__device__ __forceinline__ void kplan_rows_next(const kplan_t* __restrict__ x, const kplan_rows& r, long long g,
                                                kplan_vec (&raw)[KPLAN_ITEMS], kplan_vec (&cur)[KPLAN_ITEMS]) {
    if (KPLAN_ROWS_IN_FLIGHT == 1) kplan_load_row(x, r.base, 1, r.t, r.lim, raw);
#pragma unroll
    for (int k = 0; k < KPLAN_ITEMS; ++k) cur[k] = raw[k];
    if (KPLAN_ROWS_IN_FLIGHT > 1) kplan_prefetch_row(x, r, g + gridDim.x, raw);
}

/* f(k, j, v) for each of the thread's vectors k of the current row held in `cur` (j: its vector
 * index in the row; v: its values in fp32). */
template <class F>
__device__ __forceinline__ void kplan_row_each(const kplan_rows& r, const kplan_vec (&cur)[KPLAN_ITEMS], F f) {
#pragma unroll
    for (int k = 0; k < KPLAN_ITEMS; ++k) {
        const int j = r.t + k * KPLAN_TPR;
        if (j < r.lim) {
            float v[KPLAN_VEC];
            kplan_unpack(cur[k], v);
            f(k, j, v);
        }
    }
}
#endif

/* Reduction over the KPLAN_TPR threads of one row group. A group no wider than a warp reduces
 * with shuffles over its lanes (no shared memory, no barrier); a wider group reduces each warp,
 * then the warps' results through shared memory, with one barrier. Every thread of the group
 * gets the result. `scratch` holds KPLAN_SCRATCH floats; all threads of the block must call.
 * Two consecutive reductions must use different scratch buffers (a kernel keeps two and
 * alternates): the barrier of the reduction in between is what keeps a fast warp from
 * overwriting a buffer that a slow warp is still reading. */
#define KPLAN_SCRATCH (KPLAN_ROWS_PER_BLOCK * KPLAN_WARPS_PER_ROW)
#define KPLAN_OP_SUM 0
#define KPLAN_OP_MAX 1
template <int OP> __device__ __forceinline__ float kplan_combine(float a, float b) {
    return OP == KPLAN_OP_SUM ? a + b : kplan_fmax(a, b);
}

template <int OP> __device__ __forceinline__ float kplan_group_reduce(float v, float* scratch) {
    if (KPLAN_TPR <= KPLAN_WARP_SIZE) {
#pragma unroll
        for (int o = KPLAN_TPR / 2; o > 0; o >>= 1) v = kplan_combine<OP>(v, KPLAN_SHFL_XOR(v, o));
        return v;
    }
    v = OP == KPLAN_OP_SUM ? kplan_warp_reduce_sum(v) : kplan_warp_reduce_max(v);
    const int t = threadIdx.x % KPLAN_TPR;
    const int row = threadIdx.x / KPLAN_TPR;
    const int lane = t % KPLAN_WARP_SIZE;
    const int warp = t / KPLAN_WARP_SIZE;
    if (lane == 0) scratch[row * KPLAN_WARPS_PER_ROW + warp] = v;
    __syncthreads();
    float r = scratch[row * KPLAN_WARPS_PER_ROW];
    for (int w = 1; w < KPLAN_WARPS_PER_ROW; ++w) r = kplan_combine<OP>(r, scratch[row * KPLAN_WARPS_PER_ROW + w]);
    return r;
}

/* Sum over the whole block (flat kernels): each warp reduces with shuffles, then thread 0 adds
 * the warps' results from `scratch` (KPLAN_WARPS floats). The result is thread 0's; all threads
 * of the block must call. */
__device__ __forceinline__ float kplan_block_sum(float s, float* scratch) {
    s = kplan_warp_reduce_sum(s);
    const int lane = threadIdx.x % KPLAN_WARP_SIZE;
    const int warp = threadIdx.x / KPLAN_WARP_SIZE;
    if (lane == 0) scratch[warp] = s;
    __syncthreads();
    float b = 0.0f;
    if (threadIdx.x == 0)
        for (int w = 0; w < KPLAN_WARPS; ++w) b += scratch[w];
    return b;
}

/* fp8 e4m3 (quantize_fp8). KPLAN_FP8_MAX is the largest finite value of the selected encoding.
 * kplan_fp8_encode(v) rounds v, already clamped to [-KPLAN_FP8_MAX, KPLAN_FP8_MAX] (or NaN), to
 * the nearest code, ties to even: e4m3fn has bias 7, NaN 0x7f/0xff, negative zero 0x80;
 * e4m3fnuz has bias 8, NaN 0x80 and no negative zero. Plain integer and float arithmetic, the same
 * on every backend; NVIDIA sm_89+ uses the hardware conversion instead (kplan_fp8_encode2),
 * which gives the same codes for clamped inputs. */
#if KPLAN_FP8_FNUZ
#define KPLAN_FP8_MAX 240.0f
#define KPLAN_FP8_BIAS 8
#define KPLAN_FP8_NAN 0x80u
#else
#define KPLAN_FP8_MAX 448.0f
#define KPLAN_FP8_BIAS 7
#define KPLAN_FP8_NAN 0x7fu
#endif
typedef unsigned char kplan_u8;

__device__ __forceinline__ kplan_u32 kplan_fp8_encode(float v) {
    const kplan_u32 b = kplan_f32_to_bits(v);
    const kplan_u32 sign = (b >> 24) & 0x80u;
    const kplan_u32 mag = b & 0x7fffffffu;
    if (mag > 0x7f800000u) return KPLAN_FP8_NAN;
    /* smallest normal of the encoding: 2^(1 - bias) */
    const kplan_u32 min_normal = (kplan_u32)(127 + 1 - KPLAN_FP8_BIAS) << 23;
    kplan_u32 code;
    if (mag < min_normal) {
        /* subnormal: multiples of 2^(1 - bias - 3); exact scaling, then round half to even */
        const float a = kplan_bits_to_f32(mag) * kplan_bits_to_f32((kplan_u32)(127 + KPLAN_FP8_BIAS + 2) << 23);
        code = (kplan_u32)kplan_rint(a);
    } else {
        /* normal: round the 23-bit mantissa to 3 bits, half to even (a carry bumps the exponent) */
        const kplan_u32 r = mag + 0x7ffffu + ((mag >> 20) & 1u);
        code = ((r >> 20) - ((kplan_u32)(127 - KPLAN_FP8_BIAS) << 3)) & 0x7fu;
    }
    if (KPLAN_FP8_FNUZ && code == 0) return 0; /* no negative zero */
    return sign | code;
}

/* Two values to two codes (low byte: a). One definition per platform, chosen here. */
#if KPLAN_BACKEND_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890 && !KPLAN_FP8_FNUZ
__device__ __forceinline__ kplan_u32 kplan_fp8_encode2(float a, float b) {
    unsigned short r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(b), "f"(a));
    return r;
}
#else
__device__ __forceinline__ kplan_u32 kplan_fp8_encode2(float a, float b) {
    return kplan_fp8_encode(a) | (kplan_fp8_encode(b) << 8);
}
#endif

#endif /* KPLAN_KERNELS_H */
