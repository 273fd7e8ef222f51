//! Triton/Python scanning: the `.py` side of `kplan scan`.
