void {{STEM}}_cpu(const {{STEM}}_storage_t* x, {{STEM}}_storage_t* y, int rows, int cols) {
    for (long long r = 0; r < rows; ++r) {
        double v = {{CPU_IDENTITY}};
        bool nan = false;
        const long long n = cols;
        for (int c = 0; c < cols; ++c) {
            const double e = {{STEM}}_cpu_load(x[r * cols + c]);
            nan = nan || std::isnan(e);
            v = {{CPU_COMBINE}};
        }
        y[r] = {{STEM}}_cpu_store(nan ? NAN : {{CPU_FINISH}});
    }
}
