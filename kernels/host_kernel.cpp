/*
 * CPU backend of `kplan verify`, kernel side: one reference kernel compiled by the host C++
 * compiler from the same source as the GPU build, linked with kernels/host_runner.cpp.
 *
 *   c++ -std=c++20 -O1 -I<dir with kplan_portability.h> -DKPLAN_KERNEL=<k> [config -D...] \
 *       -c host_kernel.cpp
 *   runner <in-file> <out-file> <grid> <args...>
 *
 * <in-file> holds the raw input arrays back to back; <out-file> receives the raw output.
 * KPLAN_KERNEL: 1 reduce_sum (args: n; out: one fp32), 2 softmax (rows cols), 3 rmsnorm
 * (rows cols eps; weight follows x in the input), 4 add (n; b follows a), 5 quantize_fp8 (rows
 * cols; out: one byte per element, then one fp32 scale per row).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if KPLAN_KERNEL == 1
#include "reduce_sum.cu"
#elif KPLAN_KERNEL == 2
#include "softmax.cu"
#elif KPLAN_KERNEL == 3
#include "rmsnorm.cu"
#elif KPLAN_KERNEL == 4
#include "add.cu"
#elif KPLAN_KERNEL == 5
#include "quantize_fp8.cu"
#else
#error "KPLAN_KERNEL must be 1 (reduce_sum), 2 (softmax), 3 (rmsnorm), 4 (add) or 5 (quantize_fp8)"
#endif

void kplan_host_launch(unsigned grid, unsigned block, void (*fn)(void*), void* ctx);

static char* read_all(const char* path, size_t* size) {
    FILE* f = std::fopen(path, "rb");
    if (!f) { std::perror(path); std::exit(2); }
    std::fseek(f, 0, SEEK_END);
    long len = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    /* 16-byte aligned, as cudaMalloc gives, with room for every array's alignment padding. */
    char* buf = (char*)std::aligned_alloc(16, ((size_t)len + 64) / 16 * 16 + 16);
    if (!buf || std::fread(buf, 1, (size_t)len, f) != (size_t)len) { std::perror(path); std::exit(2); }
    std::fclose(f);
    *size = (size_t)len;
    return buf;
}

static void* aligned_copy(const char* src, size_t bytes) {
    void* p = std::aligned_alloc(16, (bytes + 16) / 16 * 16);
    if (!p) { std::perror("aligned_alloc"); std::exit(2); }
    std::memcpy(p, src, bytes);
    return p;
}

static void* poisoned(size_t bytes) {
    void* p = std::aligned_alloc(16, (bytes + 16) / 16 * 16);
    if (!p) { std::perror("aligned_alloc"); std::exit(2); }
    std::memset(p, 0xff, bytes); /* NaN in fp32 and bf16: unwritten outputs show up */
    return p;
}

static void write_all(const char* path, const void* p, size_t bytes) {
    FILE* f = std::fopen(path, "wb");
    if (!f || std::fwrite(p, 1, bytes, f) != bytes || std::fclose(f) != 0) { std::perror(path); std::exit(2); }
}

struct kplan_args {
    const void* a;
    const void* b;
    void* out;
    void* partials;
    long long n;
    int rows, cols, count;
    float eps;
};

#if KPLAN_KERNEL == 1
static void k_partial(void* p) {
    kplan_args* a = (kplan_args*)p;
    kplan_reduce_sum_partial((const kplan_t*)a->a, a->n, (float*)a->partials);
}
static void k_final(void* p) {
    kplan_args* a = (kplan_args*)p;
    kplan_reduce_sum_final((const float*)a->partials, a->count, (float*)a->out);
}
#elif KPLAN_KERNEL == 2
static void k_main(void* p) {
    kplan_args* a = (kplan_args*)p;
    kplan_softmax((const kplan_t*)a->a, (kplan_t*)a->out, a->rows, a->cols);
}
#elif KPLAN_KERNEL == 3
static void k_main(void* p) {
    kplan_args* a = (kplan_args*)p;
    kplan_rmsnorm((const kplan_t*)a->a, (const kplan_t*)a->b, (kplan_t*)a->out, a->rows, a->cols, a->eps);
}
#elif KPLAN_KERNEL == 5
static void k_main(void* p) {
    kplan_args* a = (kplan_args*)p;
    kplan_quantize_fp8((const kplan_t*)a->a, (kplan_u8*)a->out, (float*)a->partials, a->rows, a->cols);
}
#else
static void k_main(void* p) {
    kplan_args* a = (kplan_args*)p;
    kplan_add((const kplan_t*)a->a, (const kplan_t*)a->b, (kplan_t*)a->out, a->n);
}
#endif

int kplan_host_main(int argc, char** argv) {
    if (argc < 5) { std::fprintf(stderr, "usage: %s IN OUT GRID ARGS...\n", argv[0]); return 2; }
    size_t in_size = 0;
    char* in = read_all(argv[1], &in_size);
    const unsigned grid = (unsigned)std::strtoul(argv[3], nullptr, 10);
    kplan_args a;
    std::memset(&a, 0, sizeof a);
#if KPLAN_KERNEL == 1 || KPLAN_KERNEL == 4
    a.n = std::atoll(argv[4]);
    const size_t bytes = (size_t)a.n * sizeof(kplan_t);
#else
    a.rows = std::atoi(argv[4]);
    a.cols = argc > 5 ? std::atoi(argv[5]) : 0;
    a.eps = argc > 6 ? (float)std::atof(argv[6]) : 1e-6f;
    const size_t bytes = (size_t)a.rows * a.cols * sizeof(kplan_t);
#endif
    a.a = aligned_copy(in, bytes);
#if KPLAN_KERNEL == 1
    if (in_size < bytes) { std::fprintf(stderr, "input too short\n"); return 2; }
    a.partials = poisoned((size_t)grid * sizeof(float));
    a.out = poisoned(sizeof(float));
    a.count = (int)grid;
    kplan_host_launch(grid, KPLAN_BLOCK, k_partial, &a);
    kplan_host_launch(1, KPLAN_BLOCK, k_final, &a);
    write_all(argv[2], a.out, sizeof(float));
#else
#if KPLAN_KERNEL == 3
    const size_t second = (size_t)a.cols * sizeof(kplan_t);
#elif KPLAN_KERNEL == 4
    const size_t second = bytes;
#else
    const size_t second = 0;
#endif
    if (in_size < bytes + second) { std::fprintf(stderr, "input too short\n"); return 2; }
    a.b = aligned_copy(in + bytes, second);
#if KPLAN_KERNEL == 5
    const size_t qbytes = (size_t)a.rows * a.cols;
    const size_t sbytes = (size_t)a.rows * sizeof(float);
    char* res = (char*)poisoned(qbytes + sbytes);
    a.out = res;
    a.partials = poisoned(sbytes);
    kplan_host_launch(grid, KPLAN_BLOCK, k_main, &a);
    std::memcpy(res + qbytes, a.partials, sbytes);
    write_all(argv[2], res, qbytes + sbytes);
#else
    a.out = poisoned(bytes);
    kplan_host_launch(grid, KPLAN_BLOCK, k_main, &a);
    write_all(argv[2], a.out, bytes);
#endif
#endif
    return 0;
}
