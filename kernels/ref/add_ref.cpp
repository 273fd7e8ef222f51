// Reference of kernels/add.toml: out = a + b, one rounding.
void add_ref(const float* a, const float* b, float* out, long long n) {
    for (long long i = 0; i < n; ++i) out[i] = (float)((double)a[i] + (double)b[i]);
}
