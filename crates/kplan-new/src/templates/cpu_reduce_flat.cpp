void {{STEM}}_cpu(const {{STEM}}_storage_t* x, long long n, {{STEM}}_storage_t* out) {
    double v = {{CPU_IDENTITY}};
    bool nan = false;
    for (long long i = 0; i < n; ++i) {
        const double e = {{STEM}}_cpu_load(x[i]);
        nan = nan || std::isnan(e);
        v = {{CPU_COMBINE}};
    }
    out[0] = {{STEM}}_cpu_store(nan ? NAN : {{CPU_FINISH}});
}
