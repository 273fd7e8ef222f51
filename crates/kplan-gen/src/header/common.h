/* ---------------------------------------------------------------- every backend */
/* Shuffles as macros over the function forms above; width variants take a power-of-two segment
 * width <= KPLAN_WARP_SIZE. All lanes of the warp must execute a shuffle together (converged).
 *   KPLAN_SHFL(v, src)      value of v in lane src            (CUDA __shfl_sync, AMD ds_bpermute)
 *   KPLAN_SHFL_DOWN(v, off) value of v in lane + off, else own (CUDA __shfl_down_sync)
 *   KPLAN_SHFL_UP(v, off)   value of v in lane - off, else own (CUDA __shfl_up_sync)
 *   KPLAN_SHFL_XOR(v, mask) value of v in lane ^ mask          (CUDA __shfl_xor_sync)
 * Host: every shuffle returns v (one lane). In C (host only) they are plain macros. */
#ifdef __cplusplus
#  define KPLAN_SHFL(v, src) kplan_shfl((v), (src))
#  define KPLAN_SHFL_DOWN(v, off) kplan_shfl_down((v), (off))
#  define KPLAN_SHFL_UP(v, off) kplan_shfl_up((v), (off))
#  define KPLAN_SHFL_XOR(v, mask) kplan_shfl_xor((v), (mask))
#  define KPLAN_SHFL_WIDTH(v, src, width) kplan_shfl((v), (src), (width))
#  define KPLAN_SHFL_DOWN_WIDTH(v, off, width) kplan_shfl_down((v), (off), (width))
#  define KPLAN_SHFL_UP_WIDTH(v, off, width) kplan_shfl_up((v), (off), (width))
#  define KPLAN_SHFL_XOR_WIDTH(v, mask, width) kplan_shfl_xor((v), (mask), (width))
#else
#  define KPLAN_SHFL(v, src) (v)
#  define KPLAN_SHFL_DOWN(v, off) (v)
#  define KPLAN_SHFL_UP(v, off) (v)
#  define KPLAN_SHFL_XOR(v, mask) (v)
#  define KPLAN_SHFL_WIDTH(v, src, width) (v)
#  define KPLAN_SHFL_DOWN_WIDTH(v, off, width) (v)
#  define KPLAN_SHFL_UP_WIDTH(v, off, width) (v)
#  define KPLAN_SHFL_XOR_WIDTH(v, mask, width) (v)
#endif

#ifdef __cplusplus
/* kplan_warp_reduce_sum(v[, width]) / kplan_warp_reduce_max / kplan_warp_reduce_min: reduce v
 * over each width-wide segment of the warp (default: the whole warp); every lane gets the result.
 * Written once on KPLAN_SHFL_XOR for every backend: log2(width) butterfly steps (5 on CUDA and
 * AMD wave32, 6 on AMD wave64, 0 on the host). All lanes must be converged. */
template <typename T>
KPLAN_DEVICE KPLAN_INLINE T kplan_warp_reduce_sum(T v, int width = KPLAN_WARP_SIZE) {
    for (int off = width / 2; off > 0; off /= 2) v += kplan_shfl_xor(v, off, width);
    return v;
}
template <typename T>
KPLAN_DEVICE KPLAN_INLINE T kplan_warp_reduce_max(T v, int width = KPLAN_WARP_SIZE) {
    for (int off = width / 2; off > 0; off /= 2) {
        T o = kplan_shfl_xor(v, off, width);
        v = (o > v) ? o : v;
    }
    return v;
}
template <typename T>
KPLAN_DEVICE KPLAN_INLINE T kplan_warp_reduce_min(T v, int width = KPLAN_WARP_SIZE) {
    for (int off = width / 2; off > 0; off /= 2) {
        T o = kplan_shfl_xor(v, off, width);
        v = (o < v) ? o : v;
    }
    return v;
}
#else
#  define kplan_warp_reduce_sum(v) (v)
#  define kplan_warp_reduce_max(v) (v)
#  define kplan_warp_reduce_min(v) (v)
#endif

#if defined(__cplusplus) && __cplusplus >= 201103L
static_assert(sizeof(kplan_lane_mask_t) * 8 >= KPLAN_MAX_WARP_SIZE, "kplan: the lane mask must hold one bit per lane");
#endif
