KPLAN_HOST_DEVICE KPLAN_INLINE float {{STEM}}_load({{STEM}}_storage_t h) {
    const {{STEM}}_u32 sign = ({{STEM}}_u32)(h & 0x8000u) << 16;
    const {{STEM}}_u32 exp = (h >> 10) & 0x1fu;
    const {{STEM}}_u32 man = h & 0x3ffu;
    if (exp == 0x1fu) return {{STEM}}_bits_to_f32(sign | 0x7f800000u | (man << 13)); /* inf, NaN */
    if (exp != 0) return {{STEM}}_bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
    /* zero and subnormals: man x 2^-24, exact in fp32 */
    const float m = (float)man * 5.9604644775390625e-8f;
    return sign ? -m : m;
}
KPLAN_HOST_DEVICE KPLAN_INLINE {{STEM}}_storage_t {{STEM}}_store(float f) {
    const {{STEM}}_u32 b = {{STEM}}_f32_to_bits(f);
    const {{STEM}}_u32 sign = (b >> 16) & 0x8000u;
    const {{STEM}}_u32 a = b & 0x7fffffffu;
    if (a > 0x7f800000u) return ({{STEM}}_storage_t)(sign | 0x7e00u); /* NaN */
    if (a >= 0x477ff000u) return ({{STEM}}_storage_t)(sign | 0x7c00u); /* rounds to inf */
    if (a >= 0x38800000u) { /* normal half */
        const {{STEM}}_u32 r = a + 0xfffu + ((a >> 13) & 1u) - (112u << 23);
        return ({{STEM}}_storage_t)(sign | (r >> 13));
    }
    /* subnormal half or zero: round a x 2^24 to an integer, ties to even */
    const float x = {{STEM}}_bits_to_f32(a) * 16777216.0f;
    {{STEM}}_u32 q = ({{STEM}}_u32)x;
    const float rest = x - (float)q;
    if (rest > 0.5f || (rest == 0.5f && (q & 1u))) q += 1u;
    return ({{STEM}}_storage_t)(sign | q);
}
