/* KPLAN_WARP_SIZE: lanes per wavefront as a compile-time constant. HIP: the target's wave size,
 * not `warpSize` (not constexpr since ROCm 7). Device pass: from the compiler's
 * __AMDGCN_WAVEFRONT_SIZE__ (clang >= 19), else __AMDGCN_WAVEFRONT_SIZE (deprecated in ROCm 7),
 * else the gfx family's default (gfx9 and older: 64; gfx10/11/12: 32); the family is then used as
 * a cross-check, since gfx9 can only run wave64. Host pass (no device target is known; clang
 * even defines __AMDGCN_WAVEFRONT_SIZE as 64 there for every target): KPLAN_MAX_WARP_SIZE, and
 * KPLAN_WARP_SIZE_EXACT tells whether that is exact; host code must size launches with
 * kplan_warp_size(device). */
#if KPLAN_DEVICE_PASS
#  if defined(__AMDGCN_WAVEFRONT_SIZE__)
#    define KPLAN_DETAIL_WAVE_COMPILER __AMDGCN_WAVEFRONT_SIZE__
#  elif defined(__AMDGCN_WAVEFRONT_SIZE)
#    define KPLAN_DETAIL_WAVE_COMPILER __AMDGCN_WAVEFRONT_SIZE
#  endif
#  if defined(__GFX9__) || defined(__GFX8__) || defined(__GFX7__) || defined(__GFX6__)
#    define KPLAN_DETAIL_WAVE_FAMILY 64
#    define KPLAN_DETAIL_WAVE64_ONLY 1
#  elif defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__)
#    define KPLAN_DETAIL_WAVE_FAMILY 32
#    define KPLAN_DETAIL_WAVE64_ONLY 0
#  endif
#  if defined(KPLAN_DETAIL_WAVE_COMPILER)
#    define KPLAN_WARP_SIZE KPLAN_DETAIL_WAVE_COMPILER
#  elif defined(KPLAN_DETAIL_WAVE_FAMILY)
#    define KPLAN_WARP_SIZE KPLAN_DETAIL_WAVE_FAMILY
#  else
#    error "kplan: cannot tell this AMD target's wavefront size (no __AMDGCN_WAVEFRONT_SIZE__ and no known __GFXn__ family macro)"
#  endif
#  if defined(KPLAN_DETAIL_WAVE64_ONLY) && KPLAN_DETAIL_WAVE64_ONLY && KPLAN_WARP_SIZE != 64
#    error "kplan: the compiler reports a wavefront size other than 64 for a gfx9-or-older target, which only runs wave64"
#  endif
#  if KPLAN_WARP_SIZE == 64 && !KPLAN_DETAIL_SCOPE_WAVE64
#    error "kplan: this header was generated without a wave64 AMD target (gfx9: gfx90a, gfx942, gfx950); regenerate it with `kplan header --targets ...` including this target"
#  endif
#  if KPLAN_WARP_SIZE == 32 && !KPLAN_DETAIL_SCOPE_WAVE32
#    error "kplan: this header was generated without a wave32 AMD target (gfx11, gfx12); regenerate it with `kplan header --targets ...` including this target"
#  endif
#  define KPLAN_WARP_SIZE_EXACT 1
#else
#  define KPLAN_WARP_SIZE KPLAN_MAX_WARP_SIZE
#  define KPLAN_WARP_SIZE_EXACT (!(KPLAN_DETAIL_SCOPE_WAVE64 && KPLAN_DETAIL_SCOPE_WAVE32))
#endif
/* KPLAN_MAX_WARP_SIZE: the largest wave size of the AMD targets in scope (64 when a wave64 target
 * is in scope, else 32); size per-warp arrays with it when one source must serve every target. */
#if KPLAN_DETAIL_SCOPE_WAVE64
#  define KPLAN_MAX_WARP_SIZE 64
#else
#  define KPLAN_MAX_WARP_SIZE 32
#endif
