#if KPLAN_BACKEND_CUDA
/* ---------------------------------------------------------------- CUDA (NVIDIA) backend */
/* NVRTC compiles device code only and ships no runtime header: the host parts are left out there. */
#if !defined(__CUDACC_RTC__)
#include <cuda_runtime.h>
#endif
/* Byte copy for the shuffle helpers of wide types: nvcc has __builtin_memcpy, NVRTC only the
 * device memcpy it declares itself. */
#if defined(__CUDACC_RTC__)
#  define KPLAN_DETAIL_MEMCPY memcpy
#else
#  define KPLAN_DETAIL_MEMCPY __builtin_memcpy
#endif

/* KPLAN_WARP_SIZE: lanes per warp as a compile-time constant. CUDA: 32 on every NVIDIA
 * architecture (CUDA's `warpSize` is a run-time variable, so it is not used). */
#define KPLAN_WARP_SIZE 32
/* KPLAN_MAX_WARP_SIZE: the largest warp size any target in scope can have; size per-warp arrays
 * with it when one source must serve every target. CUDA: 32. */
#define KPLAN_MAX_WARP_SIZE 32
/* KPLAN_WARP_SIZE_EXACT: 1 when KPLAN_WARP_SIZE is the real warp size of the code being
 * compiled in this pass. CUDA: always 1. */
#define KPLAN_WARP_SIZE_EXACT 1

/* kplan_lane_mask_t: one bit per lane, bit i = lane i. CUDA: 32-bit unsigned int (the type
 * __ballot_sync returns). */
typedef unsigned int kplan_lane_mask_t;
/* KPLAN_FULL_MASK: every lane of the warp. CUDA: 0xffffffff. */
#define KPLAN_FULL_MASK ((kplan_lane_mask_t)0xffffffffu)

/* KPLAN_DEVICE / KPLAN_HOST_DEVICE / KPLAN_GLOBAL: function qualifiers. CUDA: __device__,
 * __host__ __device__, __global__. */
#define KPLAN_DEVICE __device__
#define KPLAN_HOST_DEVICE __host__ __device__
#define KPLAN_GLOBAL __global__
/* KPLAN_INLINE: force inlining of a device helper. CUDA: __forceinline__. */
#define KPLAN_INLINE __forceinline__
/* KPLAN_NOINLINE: keep a function out of line. CUDA: __noinline__. */
#define KPLAN_NOINLINE __noinline__
/* KPLAN_RESTRICT: the pointer is the only way its object is accessed (enables read-only cache
 * loads and reordering). CUDA: __restrict__. */
#define KPLAN_RESTRICT __restrict__
/* KPLAN_LAUNCH_BOUNDS(max_threads): the kernel is never launched with more than max_threads
 * threads per block, so the compiler may use more registers per thread. CUDA:
 * __launch_bounds__(max_threads). Only the one-argument form is portable: the second argument
 * means "min blocks per SM" in CUDA but "min waves per EU" in HIP. */
#define KPLAN_LAUNCH_BOUNDS(max_threads) __launch_bounds__(max_threads)
/* KPLAN_SHARED: block-shared storage class. CUDA: __shared__. */
#define KPLAN_SHARED __shared__
/* KPLAN_ALIGN(n): align a variable or type to n bytes. CUDA: __align__(n). */
#define KPLAN_ALIGN(n) __align__(n)
/* KPLAN_SHARED_ALIGN: alignment kplan uses for shared-memory buffers: 16 bytes, enough for
 * 128-bit vector loads/stores (float4, int4) on every backend. */
#define KPLAN_SHARED_ALIGN 16
/* KPLAN_SHARED_ARRAY(type, name, count): a statically sized block-shared array aligned to
 * KPLAN_SHARED_ALIGN. CUDA: __shared__ __align__(16) type name[count]. */
#define KPLAN_SHARED_ARRAY(type, name, count) __shared__ __align__(KPLAN_SHARED_ALIGN) type name[count]
/* KPLAN_DYNAMIC_SHARED(type, name): the block's dynamic shared memory (size given at launch) as
 * an array of type. CUDA: extern __shared__ __align__(16) type name[]. */
#define KPLAN_DYNAMIC_SHARED(type, name) extern __shared__ __align__(KPLAN_SHARED_ALIGN) type name[]

/* KPLAN_LANE_ID(): this thread's lane within its warp, 0..KPLAN_WARP_SIZE-1. CUDA: the %laneid
 * special register. */
#define KPLAN_LANE_ID() kplan_lane_id()
/* KPLAN_WARP_ID(): this thread's warp within its block, counted over the linearised thread
 * index (x fastest). CUDA: linear thread index / 32. (Not %warpid, which is a hardware slot.) */
#define KPLAN_WARP_ID() ((int)(((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) / KPLAN_WARP_SIZE))
/* KPLAN_SYNCWARP(): the lanes of the warp reconverge and memory they wrote (shared or global) is
 * visible to the other lanes of the warp afterwards. CUDA: __syncwarp(0xffffffff) (independent
 * thread scheduling since Volta makes this necessary). */
#define KPLAN_SYNCWARP() __syncwarp(KPLAN_FULL_MASK)
/* KPLAN_SYNC_BLOCK(): barrier for all threads of the block plus shared-memory visibility. CUDA:
 * __syncthreads(). */
#define KPLAN_SYNC_BLOCK() __syncthreads()
/* KPLAN_BALLOT(pred): mask of the lanes whose pred is non-zero. All lanes of the warp must
 * execute it together (converged). CUDA: __ballot_sync(0xffffffff, pred). */
#define KPLAN_BALLOT(pred) __ballot_sync(KPLAN_FULL_MASK, (pred))
/* KPLAN_ACTIVEMASK(): mask of the lanes executing this statement. It is a snapshot, not a
 * synchronisation: do not pass it to a shuffle to make divergent code safe. CUDA: __activemask(). */
#define KPLAN_ACTIVEMASK() ((kplan_lane_mask_t)__activemask())
/* KPLAN_POPC_MASK(m): number of lanes set in m. CUDA: __popc. */
#define KPLAN_POPC_MASK(m) __popc((unsigned int)(m))
/* KPLAN_FFS_MASK(m): 1-based index of the lowest lane set in m, 0 when m is empty. CUDA: __ffs. */
#define KPLAN_FFS_MASK(m) __ffs((int)(m))

/* Memory fences. KPLAN_FENCE_BLOCK(): orders this thread's memory accesses as seen by its block;
 * KPLAN_FENCE_DEVICE(): as seen by the whole GPU; KPLAN_FENCE_SYSTEM(): as seen by the host and
 * peer devices too. CUDA: __threadfence_block(), __threadfence(), __threadfence_system(). */
#define KPLAN_FENCE_BLOCK() __threadfence_block()
#define KPLAN_FENCE_DEVICE() __threadfence()
#define KPLAN_FENCE_SYSTEM() __threadfence_system()

/* Atomics, device scope, relaxed ordering, return the old value. kplan_atomic_add: int,
 * unsigned, unsigned long long, float, double; kplan_atomic_max/min: int, unsigned,
 * unsigned long long; kplan_atomic_exch and kplan_atomic_cas: int, unsigned,
 * unsigned long long. CUDA: atomicAdd, atomicMax, atomicMin, atomicExch, atomicCAS. */
#define kplan_atomic_add(ptr, v) atomicAdd((ptr), (v))
#define kplan_atomic_max(ptr, v) atomicMax((ptr), (v))
#define kplan_atomic_min(ptr, v) atomicMin((ptr), (v))
#define kplan_atomic_exch(ptr, v) atomicExch((ptr), (v))
#define kplan_atomic_cas(ptr, expected, desired) atomicCAS((ptr), (expected), (desired))

#ifdef __cplusplus
/* kplan_lane_id(): function form of KPLAN_LANE_ID(). CUDA: reads %laneid. */
static __device__ __forceinline__ int kplan_lane_id(void) {
#if defined(__CUDA_ARCH__)
    unsigned int lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return (int)lane;
#else
    return 0; /* host pass: never executed */
#endif
}

/* kplan_detail::: implementation of the shuffles for any trivially copyable T: the value is moved
 * as 32-bit words, each with the native shuffle. Not part of the interface. */
namespace kplan_detail {
template <typename T>
struct words {
    static const int n = (int)((sizeof(T) + 3) / 4);
};
template <typename T>
__device__ __forceinline__ void to_words(const T& v, int* w) {
    for (int i = 0; i < words<T>::n; ++i) w[i] = 0;
    KPLAN_DETAIL_MEMCPY(w, &v, sizeof(T));
}
template <typename T>
__device__ __forceinline__ T from_words(const int* w) {
    T v;
    KPLAN_DETAIL_MEMCPY(&v, w, sizeof(T));
    return v;
}
} /* namespace kplan_detail */

/* kplan_shfl(v, src, width): value of v in lane src of this lane's width-wide segment (width a
 * power of two <= KPLAN_WARP_SIZE; src taken modulo width). CUDA: __shfl_sync per 32-bit word. */
template <typename T>
__device__ __forceinline__ T kplan_shfl(T v, int src, int width = KPLAN_WARP_SIZE) {
    int w[kplan_detail::words<T>::n];
    kplan_detail::to_words(v, w);
    for (int i = 0; i < kplan_detail::words<T>::n; ++i) w[i] = __shfl_sync(KPLAN_FULL_MASK, w[i], src, width);
    return kplan_detail::from_words<T>(w);
}
/* kplan_shfl_down(v, off, width): v from lane (lane + off) of the segment; lanes whose source is
 * past the segment's end keep their own v. CUDA: __shfl_down_sync per 32-bit word. */
template <typename T>
__device__ __forceinline__ T kplan_shfl_down(T v, unsigned int off, int width = KPLAN_WARP_SIZE) {
    int w[kplan_detail::words<T>::n];
    kplan_detail::to_words(v, w);
    for (int i = 0; i < kplan_detail::words<T>::n; ++i) w[i] = __shfl_down_sync(KPLAN_FULL_MASK, w[i], off, width);
    return kplan_detail::from_words<T>(w);
}
/* kplan_shfl_up(v, off, width): v from lane (lane - off) of the segment; lanes whose source is
 * before the segment's start keep their own v. CUDA: __shfl_up_sync per 32-bit word. */
template <typename T>
__device__ __forceinline__ T kplan_shfl_up(T v, unsigned int off, int width = KPLAN_WARP_SIZE) {
    int w[kplan_detail::words<T>::n];
    kplan_detail::to_words(v, w);
    for (int i = 0; i < kplan_detail::words<T>::n; ++i) w[i] = __shfl_up_sync(KPLAN_FULL_MASK, w[i], off, width);
    return kplan_detail::from_words<T>(w);
}
/* kplan_shfl_xor(v, mask, width): v from lane (lane ^ mask) (butterfly); a source in a later
 * segment yields the lane's own v. CUDA: __shfl_xor_sync per 32-bit word. */
template <typename T>
__device__ __forceinline__ T kplan_shfl_xor(T v, int mask, int width = KPLAN_WARP_SIZE) {
    int w[kplan_detail::words<T>::n];
    kplan_detail::to_words(v, w);
    for (int i = 0; i < kplan_detail::words<T>::n; ++i) w[i] = __shfl_xor_sync(KPLAN_FULL_MASK, w[i], mask, width);
    return kplan_detail::from_words<T>(w);
}
#endif /* __cplusplus */

/* kplan_warp_size(device): host-side run-time query of a device's warp size (what launch-size
 * arithmetic on the host must use). CUDA: cudaDeviceGetAttribute(cudaDevAttrWarpSize); returns 0
 * when the query fails. */
#if !defined(__CUDACC_RTC__)
static inline __host__ int kplan_warp_size(int device) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, device) != cudaSuccess) return 0;
    return v;
}
#endif
#endif /* KPLAN_BACKEND_CUDA */
