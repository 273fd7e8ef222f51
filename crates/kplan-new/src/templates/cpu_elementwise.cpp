/* The element function: the sum of the inputs (see kernels/{{FILE}}.cu). */
static double {{STEM}}_cpu_op({{CPU_OP_PARAMS}}) { return {{CPU_OP_BODY}}; }

void {{STEM}}_cpu({{CPU_PARAMS}}, long long n) {
    for (long long i = 0; i < n; ++i) {
        const double v = {{STEM}}_cpu_op({{CPU_OP_ARGS}});
{{CPU_STORES}}    }
}
