/* {{STORAGE}} storage. */
typedef {{STORAGE_T}} {{STEM}}_storage_t;
inline double {{STEM}}_cpu_load({{STEM}}_storage_t v) { return (double)v; }
inline {{STEM}}_storage_t {{STEM}}_cpu_store(double v) { return ({{STEM}}_storage_t)v; }
