

# kplan: {{BUILD_DIRECTIVE}}
@triton.jit
def {{STEM}}_kernel(out_ptr, in_ptr, w_ptr, in_row_stride, out_row_stride, n_cols, eps,
                    BLOCK_N: tl.constexpr = {{BLOCK_N}}):
    # int64 row offset: rows * stride can pass 2^31 elements
    row = tl.program_id(0).to(tl.int64)
    in_row = in_ptr + row * in_row_stride
    out_row = out_ptr + row * out_row_stride
    acc = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        offs = start + tl.arange(0, BLOCK_N)
        x = tl.load(in_row + offs, mask=offs < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_N):
        offs = start + tl.arange(0, BLOCK_N)
        mask = offs < n_cols
        x = tl.load(in_row + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + offs, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


# kplan: op=rmsnorm entry=rmsnorm
def rmsnorm(x, w, eps=1e-6, out=None):
    """RMSNorm over the rows of a 2-D tensor with unit column stride; `w` has one entry per column."""
    if len(x.shape) != 2:
        raise ValueError(f"rmsnorm expects a 2-D tensor, got shape {tuple(x.shape)}")
    n_rows, n_cols = x.shape
    if tuple(w.shape) != (n_cols,):
        raise ValueError(f"weight shape {tuple(w.shape)} does not match row length {n_cols}")
    if out is None:
        out = x.new_empty(x.shape)
    if x.stride(1) != 1 or out.stride(1) != 1:
        raise ValueError("rmsnorm needs unit stride along the row")
    block, opts = launch_options()
    block = min(block, triton.next_power_of_2(n_cols))
    {{STEM}}_kernel[(n_rows,)](out, x, w, x.stride(0), out.stride(0), n_cols, eps, BLOCK_N=block, **opts)
    return out
