    for (int s : {1, 5, 64}) { /* A = 2 I (s x s), B = all ones times j: C = 2 B */
        std::vector<{{STEM}}_storage_t> a((size_t)s * s, {{STEM}}_cpu_store(0.0)), b((size_t)s * 3), c((size_t)s * 3);
        for (int i = 0; i < s; ++i) a[(size_t)i * s + i] = {{STEM}}_cpu_store(2.0);
        for (int i = 0; i < s; ++i)
            for (int j = 0; j < 3; ++j) b[(size_t)i * 3 + j] = {{STEM}}_cpu_store((double)(j + 1));
        {{STEM}}_cpu(a.data(), b.data(), c.data(), s, 3, s);
        for (int i = 0; i < s; ++i)
            for (int j = 0; j < 3; ++j) expect("2 I x B", {{STEM}}_cpu_load(c[(size_t)i * 3 + j]), 2.0 * (j + 1), tol);
    }
    { /* [1 2; 3 4] x [5 6; 7 8] = [19 22; 43 50] */
        std::vector<{{STEM}}_storage_t> a = {{{STEM}}_cpu_store(1), {{STEM}}_cpu_store(2), {{STEM}}_cpu_store(3), {{STEM}}_cpu_store(4)};
        std::vector<{{STEM}}_storage_t> b = {{{STEM}}_cpu_store(5), {{STEM}}_cpu_store(6), {{STEM}}_cpu_store(7), {{STEM}}_cpu_store(8)};
        auto c = filled(4, 0.0);
        {{STEM}}_cpu(a.data(), b.data(), c.data(), 2, 2, 2);
        const double want[4] = {19, 22, 43, 50};
        for (int i = 0; i < 4; ++i) expect("2x2 product", {{STEM}}_cpu_load(c[i]), want[i], tol);
    }
