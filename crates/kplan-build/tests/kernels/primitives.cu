// Uses every primitive of kplan_portability.h once; `kplan build` compiles it for every target.
// KPLAN_TEST_BALLOT_WIDTH, when defined, is the lane-mask width in bits this target must have.
#include "kplan_portability.h"

struct Pair {
    float a;
    double b;
};

#if KPLAN_DEVICE_PASS
static_assert(sizeof(kplan_lane_mask_t) * 8 >= KPLAN_WARP_SIZE, "lane mask narrower than the warp");
#if defined(KPLAN_TEST_WAVE_SIZE)
static_assert(KPLAN_WARP_SIZE == KPLAN_TEST_WAVE_SIZE, "unexpected warp size for this target");
#endif
#if defined(KPLAN_TEST_MASK_BITS)
static_assert(sizeof(kplan_lane_mask_t) * 8 == KPLAN_TEST_MASK_BITS, "unexpected lane-mask width");
#endif
#endif

// A ballot kept in the header's mask type and stored whole: on wave64 all 64 bits must survive.
KPLAN_GLOBAL void KPLAN_LAUNCH_BOUNDS(256)
kplan_test_ballot(const float* KPLAN_RESTRICT x, kplan_lane_mask_t* KPLAN_RESTRICT out) {
    kplan_lane_mask_t m = KPLAN_BALLOT(x[KPLAN_LANE_ID()] > 0.0f);
    if (KPLAN_LANE_ID() == 0) out[KPLAN_WARP_ID()] = m;
}

KPLAN_DEVICE KPLAN_INLINE float kplan_test_helper(float v) { return v * 2.0f + 1.0f; }
KPLAN_DEVICE KPLAN_NOINLINE float kplan_test_outlined(float v) { return v - 1.0f; }

KPLAN_GLOBAL void KPLAN_LAUNCH_BOUNDS(256)
kplan_test_all(const float* KPLAN_RESTRICT x, float* KPLAN_RESTRICT y, int* KPLAN_RESTRICT counters,
               unsigned long long* KPLAN_RESTRICT masks, float* KPLAN_RESTRICT fsum, Pair* KPLAN_RESTRICT pairs, int n) {
    KPLAN_SHARED_ARRAY(float, tile, 256);
    const int lane = KPLAN_LANE_ID();
    const int warp = KPLAN_WARP_ID();
    float v = x[(warp * KPLAN_WARP_SIZE + lane) % n];
    tile[(warp * KPLAN_WARP_SIZE + lane) % 256] = kplan_test_helper(v);
    KPLAN_SYNC_BLOCK();
    v += tile[(warp * KPLAN_WARP_SIZE + ((lane ^ 1) & (KPLAN_WARP_SIZE - 1))) % 256];
    KPLAN_SYNCWARP();

    kplan_lane_mask_t ballot = KPLAN_BALLOT(v > 0.5f);
    kplan_lane_mask_t active = KPLAN_ACTIVEMASK();
    int votes = KPLAN_POPC_MASK(ballot);
    int first = KPLAN_FFS_MASK(ballot & active);
    bool all = (active & KPLAN_FULL_MASK) == KPLAN_FULL_MASK;

    float a = KPLAN_SHFL(v, 0);
    float b = KPLAN_SHFL_DOWN(v, 1);
    float c = KPLAN_SHFL_UP(v, 1);
    float d = KPLAN_SHFL_XOR(v, 1);
    float e = KPLAN_SHFL_WIDTH(v, 3, 8) + KPLAN_SHFL_DOWN_WIDTH(v, 2, 16) + KPLAN_SHFL_UP_WIDTH(v, 2, 16) +
              KPLAN_SHFL_XOR_WIDTH(v, 2, 4);
    double dd = KPLAN_SHFL_XOR((double)v, 2);
    long long ll = KPLAN_SHFL_DOWN((long long)votes, 3);
    Pair p = {v, dd};
    p = KPLAN_SHFL(p, lane + 1);

    float s = kplan_warp_reduce_sum(v);
    float mx = kplan_warp_reduce_max(v);
    int mn = kplan_warp_reduce_min(first);
    float s8 = kplan_warp_reduce_sum(v, 8);

    float out = kplan_test_outlined(a + b + c + d + e + (float)dd + (float)ll + s + mx + (float)mn + s8 + p.a + (float)p.b);
    y[(warp * KPLAN_WARP_SIZE + lane) % n] = all ? out : -out;

    kplan_atomic_add(&counters[0], votes);
    kplan_atomic_max(&counters[1], first);
    kplan_atomic_min(&counters[2], first);
    kplan_atomic_exch(&counters[3], lane);
    kplan_atomic_cas(&counters[4], 0, 1);
    kplan_atomic_add(fsum, s);
    if (lane == 0) {
        KPLAN_FENCE_BLOCK();
        masks[warp] = (unsigned long long)ballot;
        KPLAN_FENCE_DEVICE();
        pairs[warp] = p;
        KPLAN_FENCE_SYSTEM();
    }
}

KPLAN_GLOBAL void kplan_test_dynamic_shared(float* y) {
#if !KPLAN_BACKEND_HOST
    KPLAN_DYNAMIC_SHARED(float, dyn);
    dyn[KPLAN_LANE_ID()] = y[KPLAN_LANE_ID()];
    KPLAN_SYNC_BLOCK();
    y[KPLAN_LANE_ID()] = dyn[(KPLAN_LANE_ID() + 1) % KPLAN_WARP_SIZE];
#else
    y[0] = y[0];
#endif
}

int kplan_test_host_query(int device) { return kplan_warp_size(device); }
