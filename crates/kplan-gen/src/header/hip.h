#if KPLAN_BACKEND_HIP
/* ---------------------------------------------------------------- HIP (AMD) backend */
#include <hip/hip_runtime.h>

@KPLAN_HIP_WAVE_SIZE@

/* kplan_lane_mask_t: one bit per lane, bit i = lane i. HIP: 64-bit unsigned long long on every
 * AMD target and in both passes (the type HIP's __ballot returns), so a wave64 ballot keeps all
 * 64 bits; on wave32 targets the upper 32 bits are zero. */
typedef unsigned long long kplan_lane_mask_t;
/* KPLAN_FULL_MASK: every lane of the wavefront. HIP: 0xffffffffffffffff on wave64,
 * 0x00000000ffffffff on wave32. */
#if KPLAN_WARP_SIZE == 64
#  define KPLAN_FULL_MASK (~(kplan_lane_mask_t)0)
#else
#  define KPLAN_FULL_MASK ((kplan_lane_mask_t)0xffffffffu)
#endif

/* KPLAN_DEVICE / KPLAN_HOST_DEVICE / KPLAN_GLOBAL: function qualifiers. HIP: __device__,
 * __host__ __device__, __global__. */
#define KPLAN_DEVICE __device__
#define KPLAN_HOST_DEVICE __host__ __device__
#define KPLAN_GLOBAL __global__
/* KPLAN_INLINE: force inlining of a device helper. HIP: inline __attribute__((always_inline)). */
#define KPLAN_INLINE inline __attribute__((always_inline))
/* KPLAN_NOINLINE: keep a function out of line. HIP: __attribute__((noinline)). */
#define KPLAN_NOINLINE __attribute__((noinline))
/* KPLAN_RESTRICT: the pointer is the only way its object is accessed. HIP: __restrict__. */
#define KPLAN_RESTRICT __restrict__
/* KPLAN_LAUNCH_BOUNDS(max_threads): the kernel is never launched with more than max_threads
 * threads per block. HIP: __launch_bounds__(max_threads) (amdgpu_flat_work_group_size(1, n)).
 * Only the one-argument form is portable: HIP's second argument is "min waves per EU", not
 * CUDA's "min blocks per SM". */
#define KPLAN_LAUNCH_BOUNDS(max_threads) __launch_bounds__(max_threads)
/* KPLAN_SHARED: block-shared storage class (LDS). HIP: __shared__. */
#define KPLAN_SHARED __shared__
/* KPLAN_ALIGN(n): align a variable or type to n bytes. HIP: __attribute__((aligned(n))). */
#define KPLAN_ALIGN(n) __attribute__((aligned(n)))
/* KPLAN_SHARED_ALIGN: alignment kplan uses for shared-memory buffers: 16 bytes, enough for
 * 128-bit LDS accesses (ds_read_b128) on every AMD target. */
#define KPLAN_SHARED_ALIGN 16
/* KPLAN_SHARED_ARRAY(type, name, count): a statically sized LDS array aligned to
 * KPLAN_SHARED_ALIGN. HIP: __shared__ __attribute__((aligned(16))) type name[count]. */
#define KPLAN_SHARED_ARRAY(type, name, count) __shared__ KPLAN_ALIGN(KPLAN_SHARED_ALIGN) type name[count]
/* KPLAN_DYNAMIC_SHARED(type, name): the block's dynamic LDS (size given at launch) as an array of
 * type. HIP: extern __shared__ __attribute__((aligned(16))) type name[]. */
#define KPLAN_DYNAMIC_SHARED(type, name) extern __shared__ KPLAN_ALIGN(KPLAN_SHARED_ALIGN) type name[]

/* KPLAN_LANE_ID(): this thread's lane within its wavefront, 0..KPLAN_WARP_SIZE-1. HIP: mbcnt over
 * an all-ones mask (v_mbcnt_lo/hi_u32_b32). */
#define KPLAN_LANE_ID() kplan_lane_id()
/* KPLAN_WARP_ID(): this thread's wavefront within its block, counted over the linearised thread
 * index (x fastest). HIP: linear thread index / KPLAN_WARP_SIZE. */
#define KPLAN_WARP_ID() ((int)(((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) / KPLAN_WARP_SIZE))
/* KPLAN_SYNCWARP(): lanes' memory writes before it are visible to the other lanes of the
 * wavefront after it. HIP: AMD wavefronts execute in lockstep (no independent thread scheduling),
 * so there is nothing to reconverge; this is a wavefront-scope release fence, a wave barrier
 * (stops the compiler moving memory operations across it) and a wavefront-scope acquire fence. */
#define KPLAN_SYNCWARP() kplan_syncwarp()
/* KPLAN_SYNC_BLOCK(): barrier for all threads of the block plus LDS visibility. HIP:
 * __syncthreads(). */
#define KPLAN_SYNC_BLOCK() __syncthreads()
/* KPLAN_BALLOT(pred): mask of the lanes whose pred is non-zero; all lanes of the wavefront must
 * execute it together (converged). HIP: __builtin_amdgcn_ballot_w64 on wave64 (all 64 bits),
 * __builtin_amdgcn_ballot_w32 zero-extended on wave32. */
#define KPLAN_BALLOT(pred) kplan_ballot((pred) != 0)
/* KPLAN_ACTIVEMASK(): mask of the lanes executing this statement (a snapshot, not a
 * synchronisation). HIP: the EXEC register (64 bits on wave64, EXEC_LO on wave32). */
#define KPLAN_ACTIVEMASK() kplan_activemask()
/* KPLAN_POPC_MASK(m): number of lanes set in m. HIP: __builtin_popcountll (s_bcnt1_i32_b64). */
#define KPLAN_POPC_MASK(m) __builtin_popcountll((kplan_lane_mask_t)(m))
/* KPLAN_FFS_MASK(m): 1-based index of the lowest lane set in m, 0 when m is empty. HIP:
 * __builtin_ffsll. */
#define KPLAN_FFS_MASK(m) __builtin_ffsll((long long)(m))

/* Memory fences. KPLAN_FENCE_BLOCK(): orders this thread's memory accesses as seen by its block;
 * KPLAN_FENCE_DEVICE(): as seen by the whole GPU; KPLAN_FENCE_SYSTEM(): as seen by the host and
 * peer devices too. HIP: __threadfence_block(), __threadfence(), __threadfence_system(). */
#define KPLAN_FENCE_BLOCK() __threadfence_block()
#define KPLAN_FENCE_DEVICE() __threadfence()
#define KPLAN_FENCE_SYSTEM() __threadfence_system()

/* Atomics, device scope, relaxed ordering, return the old value; same types as on CUDA. HIP:
 * atomicAdd, atomicMax, atomicMin, atomicExch, atomicCAS (float atomicAdd on global memory may
 * need -munsafe-fp-atomics to become a hardware atomic instead of a CAS loop). */
#define kplan_atomic_add(ptr, v) atomicAdd((ptr), (v))
#define kplan_atomic_max(ptr, v) atomicMax((ptr), (v))
#define kplan_atomic_min(ptr, v) atomicMin((ptr), (v))
#define kplan_atomic_exch(ptr, v) atomicExch((ptr), (v))
#define kplan_atomic_cas(ptr, expected, desired) atomicCAS((ptr), (expected), (desired))

/* kplan_lane_id(): function form of KPLAN_LANE_ID(). */
static __device__ inline __attribute__((always_inline)) int kplan_lane_id(void) {
#if KPLAN_DEVICE_PASS && KPLAN_WARP_SIZE == 64
    return (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
#elif KPLAN_DEVICE_PASS
    return (int)__builtin_amdgcn_mbcnt_lo(~0u, 0u);
#else
    return 0; /* host pass: never executed */
#endif
}
/* kplan_ballot(pred): function form of KPLAN_BALLOT(pred). */
static __device__ inline __attribute__((always_inline)) kplan_lane_mask_t kplan_ballot(bool pred) {
#if KPLAN_DEVICE_PASS && KPLAN_WARP_SIZE == 64
    return (kplan_lane_mask_t)__builtin_amdgcn_ballot_w64(pred);
#elif KPLAN_DEVICE_PASS
    return (kplan_lane_mask_t)__builtin_amdgcn_ballot_w32(pred);
#else
    return (kplan_lane_mask_t)pred;
#endif
}
/* kplan_activemask(): function form of KPLAN_ACTIVEMASK(). */
static __device__ inline __attribute__((always_inline)) kplan_lane_mask_t kplan_activemask(void) {
#if KPLAN_DEVICE_PASS && KPLAN_WARP_SIZE == 64
    return (kplan_lane_mask_t)__builtin_amdgcn_read_exec();
#elif KPLAN_DEVICE_PASS
    return (kplan_lane_mask_t)__builtin_amdgcn_read_exec_lo();
#else
    return 1;
#endif
}
/* kplan_syncwarp(): function form of KPLAN_SYNCWARP(). */
static __device__ inline __attribute__((always_inline)) void kplan_syncwarp(void) {
#if KPLAN_DEVICE_PASS
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#endif
}

#if KPLAN_DEVICE_PASS
static_assert(KPLAN_WARP_SIZE == 32 || KPLAN_WARP_SIZE == 64, "kplan: AMD wavefronts have 32 or 64 lanes");
static_assert(sizeof(kplan_lane_mask_t) * 8 >= KPLAN_WARP_SIZE, "kplan: the lane mask must hold one bit per lane");
#endif

/* kplan_detail::: implementation of the shuffles for any trivially copyable T: the source lane is
 * computed with CUDA's rules, then each 32-bit word moves with ds_bpermute (a cross-lane read
 * that needs no LDS allocation). Not part of the interface. */
namespace kplan_detail {
template <typename T>
struct words {
    static const int n = (int)((sizeof(T) + 3) / 4);
};
template <typename T>
__device__ inline __attribute__((always_inline)) T permute(T v, int src_lane) {
#if KPLAN_DEVICE_PASS
    int w[words<T>::n];
    for (int i = 0; i < words<T>::n; ++i) w[i] = 0;
    __builtin_memcpy(w, &v, sizeof(T));
    for (int i = 0; i < words<T>::n; ++i) w[i] = __builtin_amdgcn_ds_bpermute(src_lane << 2, w[i]);
    __builtin_memcpy(&v, w, sizeof(T));
#else
    (void)src_lane;
#endif
    return v;
}
} /* namespace kplan_detail */

/* kplan_shfl(v, src, width): value of v in lane src of this lane's width-wide segment (width a
 * power of two <= KPLAN_WARP_SIZE; src taken modulo width). HIP: ds_bpermute per 32-bit word. */
template <typename T>
__device__ inline __attribute__((always_inline)) T kplan_shfl(T v, int src, int width = KPLAN_WARP_SIZE) {
    const int lane = kplan_lane_id();
    return kplan_detail::permute(v, (src & (width - 1)) + (lane & ~(width - 1)));
}
/* kplan_shfl_down(v, off, width): v from lane (lane + off) of the segment; lanes whose source is
 * past the segment's end keep their own v. HIP: ds_bpermute per 32-bit word. */
template <typename T>
__device__ inline __attribute__((always_inline)) T kplan_shfl_down(T v, unsigned int off, int width = KPLAN_WARP_SIZE) {
    const int lane = kplan_lane_id();
    const int src = ((lane & (width - 1)) + (int)off >= width) ? lane : lane + (int)off;
    return kplan_detail::permute(v, src);
}
/* kplan_shfl_up(v, off, width): v from lane (lane - off) of the segment; lanes whose source is
 * before the segment's start keep their own v. HIP: ds_bpermute per 32-bit word. */
template <typename T>
__device__ inline __attribute__((always_inline)) T kplan_shfl_up(T v, unsigned int off, int width = KPLAN_WARP_SIZE) {
    const int lane = kplan_lane_id();
    const int src = ((lane & (width - 1)) < (int)off) ? lane : lane - (int)off;
    return kplan_detail::permute(v, src);
}
/* kplan_shfl_xor(v, mask, width): v from lane (lane ^ mask) (butterfly); a source in a later
 * segment yields the lane's own v. HIP: ds_bpermute per 32-bit word. */
template <typename T>
__device__ inline __attribute__((always_inline)) T kplan_shfl_xor(T v, int mask, int width = KPLAN_WARP_SIZE) {
    const int lane = kplan_lane_id();
    int src = lane ^ mask;
    if (src >= ((lane + width) & ~(width - 1))) src = lane;
    return kplan_detail::permute(v, src);
}

/* kplan_warp_size(device): host-side run-time query of a device's wavefront size (what launch
 * arithmetic on the host must use: 64 on CDNA, 32 on RDNA). HIP:
 * hipDeviceGetAttribute(hipDeviceAttributeWarpSize); returns 0 when the query fails. */
static inline __host__ int kplan_warp_size(int device) {
    int v = 0;
    if (hipDeviceGetAttribute(&v, hipDeviceAttributeWarpSize, device) != hipSuccess) return 0;
    return v;
}
#endif /* KPLAN_BACKEND_HIP */
