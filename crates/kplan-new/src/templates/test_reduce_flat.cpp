    for (long long n : {1LL, 33LL, 1000LL}) { /* 1, 2, ..., n */
        std::vector<{{STEM}}_storage_t> x((size_t)n);
        for (long long i = 0; i < n; ++i) x[i] = {{STEM}}_cpu_store((double)(i + 1));
        auto out = filled(1, 0.0);
        {{STEM}}_cpu(x.data(), n, out.data());
        expect("{{KIND}} of 1..n", {{STEM}}_cpu_load(out[0]), {{TEST_WANT}}, tol);
    }
