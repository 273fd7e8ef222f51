void {{STEM}}_cpu(const {{STEM}}_storage_t* x, const {{STEM}}_storage_t* w, const {{STEM}}_storage_t* b, {{STEM}}_storage_t* y,
                  int rows, int cols, float eps) {
    for (long long r = 0; r < rows; ++r) {
        const {{STEM}}_storage_t* xr = x + r * cols;
        double s = 0.0;
        for (int c = 0; c < cols; ++c) s += {{STEM}}_cpu_load(xr[c]);
        const double mean = s / cols;
        double ss = 0.0;
        for (int c = 0; c < cols; ++c) ss += ({{STEM}}_cpu_load(xr[c]) - mean) * ({{STEM}}_cpu_load(xr[c]) - mean);
        const double inv = 1.0 / std::sqrt(ss / cols + (double)eps);
        for (int c = 0; c < cols; ++c)
            y[r * cols + c] = {{STEM}}_cpu_store(({{STEM}}_cpu_load(xr[c]) - mean) * inv * {{STEM}}_cpu_load(w[c]) + {{STEM}}_cpu_load(b[c]));
    }
}
