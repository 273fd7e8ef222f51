
/* Arithmetic in {{STEM}}_compute_t. The max and min propagate NaN (fmax would drop it). */
KPLAN_HOST_DEVICE KPLAN_INLINE {{STEM}}_compute_t {{STEM}}_exp({{STEM}}_compute_t x) { return {{EXP}}(x); }
KPLAN_HOST_DEVICE KPLAN_INLINE {{STEM}}_compute_t {{STEM}}_sqrt({{STEM}}_compute_t x) { return {{SQRT}}(x); }
KPLAN_HOST_DEVICE KPLAN_INLINE {{STEM}}_compute_t {{STEM}}_max({{STEM}}_compute_t a, {{STEM}}_compute_t b) {
    return (a > b || a != a) ? a : b;
}
KPLAN_HOST_DEVICE KPLAN_INLINE {{STEM}}_compute_t {{STEM}}_min({{STEM}}_compute_t a, {{STEM}}_compute_t b) {
    return (a < b || a != a) ? a : b;
}
