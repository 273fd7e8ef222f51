import triton
import triton.language as tl


@triton.jit
def pack(a, b):
    return tl.inline_asm_elementwise("cvt.rn.f16x2.f32 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.float16, is_pure=True, pack=1)  # expect: triton-inline-asm
