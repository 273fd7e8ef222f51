    for (int cols : {1, 7, 1000}) { /* an equal row: 1 / cols everywhere */
        auto x = filled(2LL * cols, 3.5), y = filled(2LL * cols, 0.0);
        {{STEM}}_cpu(x.data(), y.data(), 2, cols);
        for (int c = 0; c < 2 * cols; ++c) expect("softmax of an equal row", {{STEM}}_cpu_load(y[c]), 1.0 / cols, tol);
    }
    { /* [0, log 3]: 1/4, 3/4; a row of -inf: zeros */
        std::vector<{{STEM}}_storage_t> x = {{{STEM}}_cpu_store(0.0), {{STEM}}_cpu_store(std::log(3.0)), {{STEM}}_cpu_store(-INFINITY), {{STEM}}_cpu_store(-INFINITY)};
        auto y = filled(4, 0.0);
        {{STEM}}_cpu(x.data(), y.data(), 2, 2);
        expect("softmax [0, log 3] [0]", {{STEM}}_cpu_load(y[0]), 0.25, tol);
        expect("softmax [0, log 3] [1]", {{STEM}}_cpu_load(y[1]), 0.75, tol);
        expect("softmax of -inf", {{STEM}}_cpu_load(y[2]), 0.0, 0.0);
        expect("softmax of -inf", {{STEM}}_cpu_load(y[3]), 0.0, 0.0);
    }
