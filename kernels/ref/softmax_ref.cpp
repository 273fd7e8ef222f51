// Reference of kernels/softmax.toml: row-wise softmax, max-subtracted, in double. A row of all
// -inf gives zeros; a row holding NaN or +inf gives NaN.
#include <cmath>
void softmax_ref(const float* x, float* y, int rows, int cols) {
    for (long long r = 0; r < rows; ++r) {
        const float* xr = x + r * cols;
        float* yr = y + r * cols;
        double m = -INFINITY;
        bool nan = false;
        for (int c = 0; c < cols; ++c) {
            nan |= std::isnan(xr[c]);
            if (xr[c] > m) m = xr[c];
        }
        if (nan || m == INFINITY) {
            for (int c = 0; c < cols; ++c) yr[c] = NAN;
            continue;
        }
        if (m == -INFINITY) {
            for (int c = 0; c < cols; ++c) yr[c] = 0.0f;
            continue;
        }
        double s = 0.0;
        for (int c = 0; c < cols; ++c) s += std::exp((double)xr[c] - m);
        for (int c = 0; c < cols; ++c) yr[c] = (float)(std::exp((double)xr[c] - m) / s);
    }
}
