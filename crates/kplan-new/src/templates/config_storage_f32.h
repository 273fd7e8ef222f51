
/* Storage and compute types: {{STORAGE}} storage, {{COMPUTE}} arithmetic. */
typedef {{STORAGE_T}} {{STEM}}_storage_t;
typedef {{COMPUTE_T}} {{STEM}}_compute_t;
KPLAN_HOST_DEVICE KPLAN_INLINE {{STEM}}_compute_t {{STEM}}_load({{STEM}}_storage_t v) { return ({{STEM}}_compute_t)v; }
KPLAN_HOST_DEVICE KPLAN_INLINE {{STEM}}_storage_t {{STEM}}_store({{STEM}}_compute_t v) { return ({{STEM}}_storage_t)v; }
