void {{STEM}}_cpu(const {{STEM}}_storage_t* x, {{STEM}}_storage_t* y, int rows, int cols) {
    for (long long r = 0; r < rows; ++r) {
        const {{STEM}}_storage_t* xr = x + r * cols;
        {{STEM}}_storage_t* yr = y + r * cols;
        double m = -INFINITY;
        bool nan = false;
        for (int c = 0; c < cols; ++c) {
            const double v = {{STEM}}_cpu_load(xr[c]);
            nan = nan || std::isnan(v);
            m = v > m ? v : m;
        }
        if (nan || m == INFINITY) { /* NaN, or +inf - +inf: a NaN row */
            for (int c = 0; c < cols; ++c) yr[c] = {{STEM}}_cpu_store(NAN);
            continue;
        }
        if (m == -INFINITY) { /* every entry is -inf */
            for (int c = 0; c < cols; ++c) yr[c] = {{STEM}}_cpu_store(0.0);
            continue;
        }
        double s = 0.0;
        for (int c = 0; c < cols; ++c) s += std::exp({{STEM}}_cpu_load(xr[c]) - m);
        for (int c = 0; c < cols; ++c) yr[c] = {{STEM}}_cpu_store(std::exp({{STEM}}_cpu_load(xr[c]) - m) / s);
    }
}
