/* The block-wide reduction (sum, max or min): a butterfly over each warp (width: the warp, or
 * the whole block when it is smaller, so a 32-thread block on a 64-lane wavefront reduces only
 * the lanes that exist), then every thread combines the per-warp partials from shared memory in
 * the same order, so every thread gets the same, deterministic result. The block size must be a
 * power of two and at most {{P}}_BLOCK; `partial` holds {{P}}_BLOCK / KPLAN_WARP_SIZE + 1
 * values. No literal warp size: KPLAN_WARP_SIZE is 32 on NVIDIA and RDNA, 64 on CDNA. */
enum {{STEM}}_reduce_op { {{P}}_SUM, {{P}}_MAX, {{P}}_MIN };

__device__ KPLAN_INLINE {{STEM}}_compute_t {{STEM}}_combine(int op, {{STEM}}_compute_t a, {{STEM}}_compute_t b) {
    return op == {{P}}_SUM ? a + b : op == {{P}}_MAX ? {{STEM}}_max(a, b) : {{STEM}}_min(a, b);
}

__device__ KPLAN_INLINE {{STEM}}_compute_t {{STEM}}_block_reduce({{STEM}}_compute_t v, int op,
                                                                    {{STEM}}_compute_t* partial) {
    const int width = (int)blockDim.x < KPLAN_WARP_SIZE ? (int)blockDim.x : KPLAN_WARP_SIZE;
    for (int off = width / 2; off > 0; off /= 2) v = {{STEM}}_combine(op, v, kplan_shfl_xor(v, off, width));
    const int nwarps = ((int)blockDim.x + width - 1) / width;
    if (nwarps == 1) return v;
    if ((int)threadIdx.x % width == 0) partial[threadIdx.x / width] = v;
    KPLAN_SYNC_BLOCK();
    v = partial[0];
    for (int w = 1; w < nwarps; ++w) v = {{STEM}}_combine(op, v, partial[w]);
    KPLAN_SYNC_BLOCK(); /* `partial` is reused by the next reduction */
    return v;
}
