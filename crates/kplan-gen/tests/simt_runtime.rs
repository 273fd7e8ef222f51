//! The cpu-simt runtime text: deterministic, carries the portability header's names, and stands
//! in for the header (its include guard is defined).

#[test]
fn simt_runtime_is_complete_and_deterministic() {
    let a = kplan_gen::render_simt_runtime();
    assert_eq!(a, kplan_gen::render_simt_runtime());
    assert!(!a.contains("@KPLAN_"), "unreplaced placeholder");
    assert!(a.contains("#define KPLAN_PORTABILITY_H 1"));
    for name in [
        "kplan_warp_reduce_sum",
        "KPLAN_SHFL_XOR(v, mask)",
        "#define KPLAN_WARP_SIZE KPLAN_SIMT_WARP",
        "__shfl_down_sync",
        "__ballot_sync",
        "__activemask",
        "__match_any_sync",
        "__reduce_add_sync",
        "__syncwarp",
        "__syncthreads_count",
        "atomicAdd",
        "__ldg",
        "__nv_bfloat16",
        "__half",
        "this_thread_block",
        "tiled_partition",
        "__lanemask_lt",
        "__popcll",
        "__clz",
    ] {
        assert!(a.contains(name), "{name} missing from the runtime");
    }
}
