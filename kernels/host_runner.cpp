/*
 * CPU backend of `kplan verify`, launch side: the CUDA launch model on std::thread. Compiled
 * once; each kernel configuration is a separate translation unit (kernels/host_kernel.cpp)
 * linked with it.
 *
 *   one std::thread per thread of a block (threadIdx), the blocks of the grid one after another
 *   (blockIdx), __syncthreads a std::barrier over the block's threads, __shared__ variables
 *   (function statics) shared by the block's threads, one lane per warp (the header's host path).
 */
#include <barrier>
#include <cstddef>
#include <thread>
#include <vector>

struct kplan_dim3 {
    unsigned int x, y, z;
};
thread_local kplan_dim3 threadIdx;
thread_local kplan_dim3 blockIdx;
kplan_dim3 blockDim;
kplan_dim3 gridDim;

static std::barrier<>* kplan_bar = nullptr;
void kplan_host_syncthreads() { kplan_bar->arrive_and_wait(); }

/* Runs fn(ctx) as a grid of `grid` blocks of `block` threads. */
void kplan_host_launch(unsigned grid, unsigned block, void (*fn)(void*), void* ctx) {
    blockDim = {block, 1, 1};
    gridDim = {grid, 1, 1};
    std::barrier<> bar((std::ptrdiff_t)block);
    kplan_bar = &bar;
    std::vector<std::thread> threads;
    threads.reserve(block);
    for (unsigned t = 0; t < block; ++t) {
        threads.emplace_back([&, t] {
            threadIdx = {t, 0, 0};
            for (unsigned b = 0; b < grid; ++b) {
                blockIdx = {b, 0, 0};
                fn(ctx);
                bar.arrive_and_wait(); /* the block's shared memory is reused by the next block */
            }
        });
    }
    for (auto& th : threads) th.join();
}

int kplan_host_main(int argc, char** argv);

int main(int argc, char** argv) { return kplan_host_main(argc, argv); }
