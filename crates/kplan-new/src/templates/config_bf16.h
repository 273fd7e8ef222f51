KPLAN_HOST_DEVICE KPLAN_INLINE float {{STEM}}_load({{STEM}}_storage_t v) {
    return {{STEM}}_bits_to_f32(({{STEM}}_u32)v << 16);
}
KPLAN_HOST_DEVICE KPLAN_INLINE {{STEM}}_storage_t {{STEM}}_store(float f) {
    const {{STEM}}_u32 b = {{STEM}}_f32_to_bits(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) return ({{STEM}}_storage_t)((b >> 16) | 0x40u); /* quiet NaN */
    return ({{STEM}}_storage_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
