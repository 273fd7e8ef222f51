
/* Storage and compute types: {{STORAGE}} storage (raw 16-bit words), fp32 arithmetic. The
 * conversions are integer and float arithmetic, the same on every backend; float to {{STORAGE}}
 * rounds to nearest, ties to even. */
typedef unsigned short {{STEM}}_storage_t;
typedef float {{STEM}}_compute_t;
typedef unsigned int {{STEM}}_u32;
KPLAN_HOST_DEVICE KPLAN_INLINE float {{STEM}}_bits_to_f32({{STEM}}_u32 b) {
    union { {{STEM}}_u32 u; float f; } c;
    c.u = b;
    return c.f;
}
KPLAN_HOST_DEVICE KPLAN_INLINE {{STEM}}_u32 {{STEM}}_f32_to_bits(float f) {
    union { {{STEM}}_u32 u; float f; } c;
    c.f = f;
    return c.u;
}
