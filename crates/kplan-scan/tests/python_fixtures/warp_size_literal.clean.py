import triton


def launch(x, BLOCK_SIZE):
    warp = triton.runtime.driver.active.get_current_target().warp_size
    num_warps = max(1, BLOCK_SIZE // warp)
    rows_per_block = 32  # not a warp width
    chunks = x.numel() // 32
    return num_warps * warp, rows_per_block, chunks
