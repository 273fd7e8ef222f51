/* fp16 storage as raw 16-bit words (the harness passes fp16 buffers this way). */
#include <cmath>
typedef unsigned short {{STEM}}_storage_t;
inline double {{STEM}}_cpu_load({{STEM}}_storage_t h) {
    const int e = (h >> 10) & 0x1f;
    const int m = h & 0x3ff;
    const double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 0x1f) return m ? NAN : s * INFINITY;
    if (e == 0) return s * std::ldexp((double)m, -24);
    return s * std::ldexp((double)(m | 0x400), e - 25);
}
/* double -> fp16, rounding to nearest even (searching the encoding, independently of the
 * kernel's bit manipulation). */
inline {{STEM}}_storage_t {{STEM}}_cpu_store(double v) {
    const float f = (float)v; /* the kernel rounds from fp32: do the same first */
    const double a = std::fabs((double)f);
    const unsigned short sign = std::signbit(f) ? 0x8000 : 0;
    if (std::isnan(f)) return 0x7e00;
    if (a >= 65520.0) return sign | 0x7c00;
    unsigned short lo = 0, hi = 0x7c00; /* binary search: the largest code <= a */
    while (hi - lo > 1) {
        const unsigned short mid = (unsigned short)((lo + hi) / 2);
        if ({{STEM}}_cpu_load(mid) <= a) lo = mid; else hi = mid;
    }
    const double dl = a - {{STEM}}_cpu_load(lo), dh = {{STEM}}_cpu_load(hi) - a;
    const unsigned short q = (dl < dh || (dl == dh && (lo & 1) == 0)) ? lo : hi;
    return sign | q;
}
