import triton


def broken(:
    pass
