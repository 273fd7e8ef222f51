    for (long long n : {1LL, 33LL, 100000LL}) { /* input i holds i + 1: every output is the sum */
{{TEST_ELEM_SETUP}}
        {{STEM}}_cpu({{TEST_ELEM_ARGS}}, n);
        for (long long i = 0; i < n; ++i) {
{{TEST_ELEM_CHECKS}}        }
    }
