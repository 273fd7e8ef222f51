    for (int cols : {1, 33, 1000}) { /* every row is 1, 2, ..., cols */
        const long long n = cols;
        std::vector<{{STEM}}_storage_t> x(3 * (size_t)cols);
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < cols; ++c) x[(size_t)r * cols + c] = {{STEM}}_cpu_store((double)(c + 1));
        auto y = filled(3, 0.0);
        {{STEM}}_cpu(x.data(), y.data(), 3, cols);
        for (int r = 0; r < 3; ++r) expect("{{KIND}} of 1..cols", {{STEM}}_cpu_load(y[r]), {{TEST_WANT}}, tol);
    }
