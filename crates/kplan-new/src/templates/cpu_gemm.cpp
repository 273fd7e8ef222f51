void {{STEM}}_cpu(const {{STEM}}_storage_t* a, const {{STEM}}_storage_t* b, {{STEM}}_storage_t* c, int m, int n, int k) {
    for (long long i = 0; i < m; ++i)
        for (long long j = 0; j < n; ++j) {
            double acc = 0.0;
            for (long long p = 0; p < k; ++p) acc += {{STEM}}_cpu_load(a[i * k + p]) * {{STEM}}_cpu_load(b[p * n + j]);
            c[i * n + j] = {{STEM}}_cpu_store(acc);
        }
}
