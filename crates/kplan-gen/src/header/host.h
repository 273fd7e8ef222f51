#if KPLAN_BACKEND_HOST
/* ---------------------------------------------------------------- host C/C++ backend (CPU) */
/* The CPU fallback compiles the same kernel code with one-lane semantics: a warp is one lane, so
 * every cross-lane operation returns the lane's own value and every mask has one bit. */

/* KPLAN_WARP_SIZE: lanes per warp. Host: 1. */
#define KPLAN_WARP_SIZE 1
/* KPLAN_MAX_WARP_SIZE: the largest warp size in this compile. Host: 1. */
#define KPLAN_MAX_WARP_SIZE 1
/* KPLAN_WARP_SIZE_EXACT: KPLAN_WARP_SIZE is exact. Host: 1. */
#define KPLAN_WARP_SIZE_EXACT 1

/* kplan_lane_mask_t: one bit per lane. Host: 32-bit unsigned int (only bit 0 is ever set). */
typedef unsigned int kplan_lane_mask_t;
/* KPLAN_FULL_MASK: every lane of the warp. Host: 1. */
#define KPLAN_FULL_MASK ((kplan_lane_mask_t)1u)

/* KPLAN_DEVICE / KPLAN_HOST_DEVICE / KPLAN_GLOBAL: function qualifiers. Host: empty. */
#define KPLAN_DEVICE
#define KPLAN_HOST_DEVICE
#define KPLAN_GLOBAL
/* KPLAN_INLINE: force inlining. Host: inline + always_inline (GCC/Clang), __forceinline (MSVC);
 * static inline in C. */
#if defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
#  define KPLAN_INLINE inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#  define KPLAN_INLINE __forceinline
#elif defined(__cplusplus)
#  define KPLAN_INLINE inline
#else
#  define KPLAN_INLINE static inline
#endif
/* KPLAN_NOINLINE: keep a function out of line. Host: noinline attribute / __declspec(noinline). */
#if defined(_MSC_VER)
#  define KPLAN_NOINLINE __declspec(noinline)
#else
#  define KPLAN_NOINLINE __attribute__((noinline))
#endif
/* KPLAN_RESTRICT: the pointer is the only way its object is accessed. Host: __restrict__
 * (GCC/Clang), __restrict (MSVC), restrict (C99). */
#if defined(__GNUC__) || defined(__clang__)
#  define KPLAN_RESTRICT __restrict__
#elif defined(_MSC_VER)
#  define KPLAN_RESTRICT __restrict
#elif defined(__cplusplus)
#  define KPLAN_RESTRICT
#else
#  define KPLAN_RESTRICT restrict
#endif
/* KPLAN_LAUNCH_BOUNDS(max_threads): a GPU register-allocation hint. Host: empty. */
#define KPLAN_LAUNCH_BOUNDS(max_threads)
/* KPLAN_SHARED: block-shared storage class. Host: empty (a block is one thread, so shared data is
 * an ordinary variable of the running "block"). */
#define KPLAN_SHARED
/* KPLAN_ALIGN(n): align a variable or type to n bytes. Host: __declspec(align(n)) (MSVC),
 * __attribute__((aligned(n))) elsewhere. */
#if defined(_MSC_VER)
#  define KPLAN_ALIGN(n) __declspec(align(n))
#else
#  define KPLAN_ALIGN(n) __attribute__((aligned(n)))
#endif
/* KPLAN_SHARED_ALIGN: alignment kplan uses for shared-memory buffers: 16 bytes (SIMD loads). */
#define KPLAN_SHARED_ALIGN 16
/* KPLAN_SHARED_ARRAY(type, name, count): an array aligned to KPLAN_SHARED_ALIGN. Host: an ordinary
 * aligned array. */
#define KPLAN_SHARED_ARRAY(type, name, count) KPLAN_ALIGN(KPLAN_SHARED_ALIGN) type name[count]
/* KPLAN_DYNAMIC_SHARED(type, name): launch-sized shared memory. Host: not available (the CPU
 * fallback passes its scratch buffer as an argument); using it is a compile error that names the
 * problem. */
#define KPLAN_DYNAMIC_SHARED(type, name) typedef char kplan_dynamic_shared_is_not_available_on_the_host_##name[-1]

/* KPLAN_LANE_ID(): lane within the warp. Host: 0. */
#define KPLAN_LANE_ID() 0
/* KPLAN_WARP_ID(): warp within the block. Host: 0 (a block is one lane). */
#define KPLAN_WARP_ID() 0
/* KPLAN_SYNCWARP(): warp-level sync. Host: no-op (one lane). */
#define KPLAN_SYNCWARP() ((void)0)
/* KPLAN_SYNC_BLOCK(): block barrier. Host: no-op (one thread per block). */
#define KPLAN_SYNC_BLOCK() ((void)0)
/* KPLAN_BALLOT(pred): mask of lanes with pred non-zero. Host: 1 if pred else 0. */
#define KPLAN_BALLOT(pred) ((kplan_lane_mask_t)((pred) ? 1u : 0u))
/* KPLAN_ACTIVEMASK(): lanes executing this statement. Host: 1. */
#define KPLAN_ACTIVEMASK() ((kplan_lane_mask_t)1u)
/* KPLAN_POPC_MASK(m): number of lanes set in m. Host: a portable bit count. */
#define KPLAN_POPC_MASK(m) kplan_host_popc((unsigned long long)(m))
/* KPLAN_FFS_MASK(m): 1-based index of the lowest lane set in m, 0 when m is empty. Host: a
 * portable scan. */
#define KPLAN_FFS_MASK(m) kplan_host_ffs((unsigned long long)(m))
static inline int kplan_host_popc(unsigned long long m) {
    int n = 0;
    for (; m; m &= m - 1) ++n;
    return n;
}
static inline int kplan_host_ffs(unsigned long long m) {
    int i = 1;
    if (!m) return 0;
    for (; !(m & 1ull); m >>= 1) ++i;
    return i;
}

/* Memory fences. Host: all three are a sequentially consistent thread fence
 * (__atomic_thread_fence with GCC/Clang, std::atomic_thread_fence otherwise). */
#if defined(__GNUC__) || defined(__clang__)
#  define KPLAN_FENCE_BLOCK() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#elif defined(__cplusplus)
#  include <atomic>
#  define KPLAN_FENCE_BLOCK() std::atomic_thread_fence(std::memory_order_seq_cst)
#else
#  error "kplan: host fences need GCC/Clang builtins or C++ <atomic>"
#endif
#define KPLAN_FENCE_DEVICE() KPLAN_FENCE_BLOCK()
#define KPLAN_FENCE_SYSTEM() KPLAN_FENCE_BLOCK()

/* kplan_warp_size(device): host-side warp size query. Host: 1 for any device number. */
static inline int kplan_warp_size(int device) {
    (void)device;
    return 1;
}

#ifdef __cplusplus
/* Atomics, relaxed ordering, return the old value. Host (C++, GCC/Clang): __atomic builtins; add,
 * max and min are compare-and-swap loops so that float and double work too. */
template <typename T>
inline T kplan_atomic_cas(T* ptr, T expected, T desired) {
    __atomic_compare_exchange(ptr, &expected, &desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return expected;
}
template <typename T>
inline T kplan_atomic_exch(T* ptr, T v) {
    T old;
    __atomic_exchange(ptr, &v, &old, __ATOMIC_RELAXED);
    return old;
}
template <typename T>
inline T kplan_atomic_add(T* ptr, T v) {
    T old;
    __atomic_load(ptr, &old, __ATOMIC_RELAXED);
    T want = old + v;
    while (!__atomic_compare_exchange(ptr, &old, &want, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) want = old + v;
    return old;
}
template <typename T>
inline T kplan_atomic_max(T* ptr, T v) {
    T old;
    __atomic_load(ptr, &old, __ATOMIC_RELAXED);
    while (old < v && !__atomic_compare_exchange(ptr, &old, &v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
template <typename T>
inline T kplan_atomic_min(T* ptr, T v) {
    T old;
    __atomic_load(ptr, &old, __ATOMIC_RELAXED);
    while (v < old && !__atomic_compare_exchange(ptr, &old, &v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}

/* kplan_lane_id(): function form of KPLAN_LANE_ID(). Host: 0. */
inline int kplan_lane_id() { return 0; }
/* Shuffles (idx, down, up, xor). Host: one lane, so every shuffle returns v. */
template <typename T>
inline T kplan_shfl(T v, int src, int width = KPLAN_WARP_SIZE) { (void)src; (void)width; return v; }
template <typename T>
inline T kplan_shfl_down(T v, unsigned int off, int width = KPLAN_WARP_SIZE) { (void)off; (void)width; return v; }
template <typename T>
inline T kplan_shfl_up(T v, unsigned int off, int width = KPLAN_WARP_SIZE) { (void)off; (void)width; return v; }
template <typename T>
inline T kplan_shfl_xor(T v, int mask, int width = KPLAN_WARP_SIZE) { (void)mask; (void)width; return v; }
#else
/* Atomics in C (GCC/Clang, integer types only): __atomic builtins, relaxed, return the old
 * value; kplan_atomic_max/min need C++. */
#  define kplan_atomic_add(ptr, v) __atomic_fetch_add((ptr), (v), __ATOMIC_RELAXED)
#  define kplan_atomic_exch(ptr, v) __atomic_exchange_n((ptr), (v), __ATOMIC_RELAXED)
#  define kplan_atomic_cas(ptr, expected, desired) \
      __extension__({ __typeof__(*(ptr)) kplan_e_ = (expected); \
          __atomic_compare_exchange_n((ptr), &kplan_e_, (desired), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED); kplan_e_; })
#endif /* __cplusplus */
#endif /* KPLAN_BACKEND_HOST */
