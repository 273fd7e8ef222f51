

# kplan: {{BUILD_DIRECTIVE}}
@triton.jit
def {{STEM}}_kernel(out_ptr, in_ptr, w_ptr, in_row_stride, out_row_stride, n_cols, eps,
                    BLOCK_N: tl.constexpr = {{BLOCK_N}}):
    # int64 row offset: rows * stride can pass 2^31 elements
{{KERNEL_BODY}}


# kplan: op=rmsnorm entry=rmsnorm
def rmsnorm(x, w, eps=1e-6, out=None):
    """RMSNorm over the rows of a 2-D tensor with unit column stride; `w` has one entry per column."""
{{WRAPPER_CHECKS}}
    block, opts = launch_options()
    block = min(block, triton.next_power_of_2(n_cols))
    {{STEM}}_kernel[(n_rows,)](out, x, w, x.stride(0), out.stride(0), n_cols, eps, BLOCK_N=block, **opts)
    return out
