

# kplan: {{BUILD_DIRECTIVE}}
@triton.jit
def {{STEM}}_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols,
                    BLOCK_N: tl.constexpr = {{BLOCK_N}}):
    # int64 row offset: rows * stride can pass 2^31 elements
    row = tl.program_id(0).to(tl.int64)
    in_row = in_ptr + row * in_row_stride
    out_row = out_ptr + row * out_row_stride
    # online softmax: a running maximum and sum per lane, rescaled when the maximum grows
    m = tl.full([BLOCK_N], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        offs = start + tl.arange(0, BLOCK_N)
        x = tl.load(in_row + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        live = m_new != float("-inf")
        s = tl.where(live, s * tl.exp(m - m_new) + tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(tl.where(m != float("-inf"), s * tl.exp(m - row_max), 0.0), axis=0)
    inv = tl.where(row_max != float("-inf"), 1.0 / total, 0.0)  # a row of -inf gives zeros
    for start in range(0, n_cols, BLOCK_N):
        offs = start + tl.arange(0, BLOCK_N)
        mask = offs < n_cols
        x = tl.load(in_row + offs, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.where(row_max != float("-inf"), tl.exp(x - row_max) * inv, 0.0)
        tl.store(out_row + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


# kplan: op=softmax entry=softmax
def softmax(x, out=None):
    """Softmax over the rows of a 2-D tensor with unit column stride."""
{{WRAPPER_CHECKS}}
    block, opts = launch_options()
    block = min(block, triton.next_power_of_2(n_cols))
    {{STEM}}_kernel[(n_rows,)](out, x, x.stride(0), out.stride(0), n_cols, BLOCK_N=block, **opts)
    return out
