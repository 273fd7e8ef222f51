# A softmax that skips the max subtraction: fine on small inputs, inf/NaN on large ones.
# kplan: op=softmax entry=naive
import triton
import triton.language as tl


@triton.jit
def naive_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + offs, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)


def naive(x, out):
    rows, cols = x.shape
    naive_kernel[(rows,)](out, x, x.stride(0), cols, BLOCK=triton.next_power_of_2(cols))
    return out
