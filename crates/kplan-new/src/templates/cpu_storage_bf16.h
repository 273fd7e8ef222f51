/* bf16 storage as raw 16-bit words (the harness passes bf16 buffers this way). */
typedef unsigned short {{STEM}}_storage_t;
inline double {{STEM}}_cpu_load({{STEM}}_storage_t v) {
    const unsigned int b = (unsigned int)v << 16;
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
/* double -> float -> bf16, each rounding to nearest even. */
inline {{STEM}}_storage_t {{STEM}}_cpu_store(double v) {
    const float f = (float)v;
    unsigned int b;
    std::memcpy(&b, &f, 4);
    if ((b & 0x7fffffffu) > 0x7f800000u) return ({{STEM}}_storage_t)((b >> 16) | 0x40u);
    return ({{STEM}}_storage_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
