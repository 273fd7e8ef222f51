import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def mm(a_ptr, M, K, BM: tl.constexpr, BK: tl.constexpr):
    desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])  # expect: triton-tensor-descriptor-amd
    a = desc.load([0, 0])


def host(a, BM, BK):
    return TensorDescriptor.from_tensor(a, [BM, BK])  # expect: triton-tensor-descriptor-amd
