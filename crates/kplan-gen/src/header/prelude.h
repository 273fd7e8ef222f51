/*
 * Scope guard and backend selection. After this block exactly one of KPLAN_BACKEND_CUDA,
 * KPLAN_BACKEND_HIP and KPLAN_BACKEND_HOST is 1 and the others are 0, and KPLAN_DEVICE_PASS is
 * 1 while a device compiler generates GPU code (0 in host passes and in plain C/C++).
 *   CUDA: nvcc or clang CUDA (__CUDACC__); device pass when __CUDA_ARCH__ is defined.
 *   HIP:  clang HIP / hipcc on AMD (__HIP__); device pass when __HIP_DEVICE_COMPILE__ is defined.
 *   host: any other C or C++ compiler (the CPU fallback, one lane per warp).
 * Code that includes this header needs no platform detection of its own: test these macros.
 */
#if defined(__HIP__) && !defined(__CUDACC__)
#  define KPLAN_BACKEND_CUDA 0
#  define KPLAN_BACKEND_HIP 1
#  define KPLAN_BACKEND_HOST 0
#  if defined(__HIP_DEVICE_COMPILE__)
#    define KPLAN_DEVICE_PASS 1
#  else
#    define KPLAN_DEVICE_PASS 0
#  endif
#elif defined(__CUDACC__)
#  define KPLAN_BACKEND_CUDA 1
#  define KPLAN_BACKEND_HIP 0
#  define KPLAN_BACKEND_HOST 0
#  if defined(__CUDA_ARCH__)
#    define KPLAN_DEVICE_PASS 1
#  else
#    define KPLAN_DEVICE_PASS 0
#  endif
#else
#  define KPLAN_BACKEND_CUDA 0
#  define KPLAN_BACKEND_HIP 0
#  define KPLAN_BACKEND_HOST 1
#  define KPLAN_DEVICE_PASS 0
#endif
