    for (int cols : {1, 7, 1000}) { /* an equal row has no variance: y = b */
        auto x = filled(2LL * cols, 2.5), w = filled(cols, 3.0), b = filled(cols, -1.0), y = filled(2LL * cols, 0.0);
        {{STEM}}_cpu(x.data(), w.data(), b.data(), y.data(), 2, cols, 1e-5f);
        for (int c = 0; c < 2 * cols; ++c) expect("layernorm of an equal row", {{STEM}}_cpu_load(y[c]), -1.0, tol);
    }
    { /* [-1, 1]: mean 0, var 1: y = x / sqrt(1 + eps) */
        std::vector<{{STEM}}_storage_t> x = {{{STEM}}_cpu_store(-1.0), {{STEM}}_cpu_store(1.0)};
        auto w = filled(2, 1.0), b = filled(2, 0.0), y = filled(2, 0.0);
        {{STEM}}_cpu(x.data(), w.data(), b.data(), y.data(), 1, 2, 1e-5f);
        expect("layernorm [-1, 1] [0]", {{STEM}}_cpu_load(y[0]), -1.0 / std::sqrt(1.0 + 1e-5), tol);
        expect("layernorm [-1, 1] [1]", {{STEM}}_cpu_load(y[1]), 1.0 / std::sqrt(1.0 + 1e-5), tol);
    }
