    for (int cols : {1, 7, 1000}) { /* x = 2, w = 3: 2 / sqrt(4 + eps) * 3 */
        auto x = filled(2LL * cols, 2.0), w = filled(cols, 3.0), y = filled(2LL * cols, 0.0);
        {{STEM}}_cpu(x.data(), w.data(), y.data(), 2, cols, 1e-6f);
        for (int c = 0; c < 2 * cols; ++c) expect("rmsnorm of an equal row", {{STEM}}_cpu_load(y[c]), 6.0 / std::sqrt(4.0 + 1e-6), tol);
    }
    { /* a zero row gives zeros */
        auto x = filled(5, 0.0), w = filled(5, 1.0), y = filled(5, 1.0);
        {{STEM}}_cpu(x.data(), w.data(), y.data(), 1, 5, 1e-6f);
        for (int c = 0; c < 5; ++c) expect("rmsnorm of zeros", {{STEM}}_cpu_load(y[c]), 0.0, 0.0);
    }
