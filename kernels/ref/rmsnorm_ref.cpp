// Reference of kernels/rmsnorm.toml: y = x / sqrt(mean(x^2) + eps) * w per row, in double.
#include <cmath>
void rmsnorm_ref(const float* x, const float* w, float* y, int rows, int cols, float eps) {
    for (long long r = 0; r < rows; ++r) {
        double ss = 0.0;
        for (int c = 0; c < cols; ++c) ss += (double)x[r * cols + c] * x[r * cols + c];
        const double inv = 1.0 / std::sqrt(ss / cols + (double)eps);
        for (int c = 0; c < cols; ++c) y[r * cols + c] = (float)((double)x[r * cols + c] * inv * w[c]);
    }
}
