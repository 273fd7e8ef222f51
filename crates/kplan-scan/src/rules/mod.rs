//! One file per rule. Each exposes `pub static META: RuleMeta` (its documentation, which
//! `kplan explain` and `docs/rules/` are generated from) and a `check` function over the file's
//! structure ([`crate::cuda::Cx`]).

use crate::cuda::Cx;
use crate::rule::RuleMeta;

pub mod consts;
pub mod launch;
pub mod target_cond;
pub mod wave_guard;

pub mod amd_builtin_unavailable;
pub mod amd_isa_generation;
pub mod amd_wave_width_64;
pub mod arch_list_partial_family;
pub mod arch_macro_misspelled;
pub mod arch_name_exact_match;
pub mod backend_tag_dispatch;
pub mod ballot_narrowing;
pub mod block_over_limit_wave64;
pub mod capability_order_on_amd;
pub mod cuda_api_missing_in_hip;
pub mod cuda_arch_gate_no_amd_path;
pub mod cuda_header_in_hip_build;
pub mod cuda_intrinsic_missing_in_hip;
pub mod device_qualifier_nvidia_only;
pub mod device_warp_size_in_host;
pub mod divergent_block_barrier;
pub mod fp8_fnuz_for_every_amd;
pub mod full_mask_literal;
pub mod grid_uncapped_64bit;
pub mod hardcoded_tile;
pub mod hip_api_removed;
pub mod hip_platform_macro_removed;
pub mod implicit_warp_sync;
pub mod inline_asm_unguarded;
pub mod inter_block_spin_wait;
pub mod lane_geometry_32;
pub mod lane_partials_size;
pub mod launch_bounds_warp;
pub mod mask_as_shuffle_value;
pub mod nvidia_only_feature;
pub mod platform_branch_api_mismatch;
pub mod platform_ifdef_in_kernel;
pub mod platform_macro_never_defined;
pub mod shared_memory_optin_on_amd;
pub mod shared_memory_over_limit;
pub mod shuffle_logical_warp_width;
pub mod shuffle_offset_literal;
pub mod static_device_symbol;
pub mod sync_mask_param_32;
pub mod unbalanced_conditional;
pub mod warp_algorithm_small_block;
pub mod warp_count_divisor;
pub mod warp_partials_read_by_lane;
pub mod warp_size_constant;
pub mod warp_size_constexpr;
pub mod warp_size_literal;
pub mod warp_width_constant_use;
pub mod wave64_lane_math;
pub mod wave_size_arch_list;
pub mod wavefront_size_macro;

/// CUDA/HIP rules, in registry order. Ids are never reused.
pub static RULES: &[&RuleMeta] = &[
    &warp_size_literal::META,
    &warp_size_constant::META,
    &shuffle_offset_literal::META,
    &full_mask_literal::META,
    &ballot_narrowing::META,
    &lane_partials_size::META,
    &inline_asm_unguarded::META,
    &inter_block_spin_wait::META,
    &platform_ifdef_in_kernel::META,
    &nvidia_only_feature::META,
    &shared_memory_over_limit::META,
    &hardcoded_tile::META,
    &launch_bounds_warp::META,
    &implicit_warp_sync::META,
    &warp_size_constexpr::META,
    &wavefront_size_macro::META,
    &device_warp_size_in_host::META,
    &divergent_block_barrier::META,
    &wave64_lane_math::META,
    &cuda_arch_gate_no_amd_path::META,
    &lane_geometry_32::META,
    &sync_mask_param_32::META,
    &mask_as_shuffle_value::META,
    &unbalanced_conditional::META,
    &wave_size_arch_list::META,
    &amd_isa_generation::META,
    &capability_order_on_amd::META,
    &warp_count_divisor::META,
    &shuffle_logical_warp_width::META,
    &grid_uncapped_64bit::META,
    &block_over_limit_wave64::META,
    &warp_partials_read_by_lane::META,
    &shared_memory_optin_on_amd::META,
    &arch_macro_misspelled::META,
    &arch_list_partial_family::META,
    &static_device_symbol::META,
    &warp_algorithm_small_block::META,
    &amd_wave_width_64::META,
    &warp_width_constant_use::META,
    &hip_api_removed::META,
    &hip_platform_macro_removed::META,
    &device_qualifier_nvidia_only::META,
    &fp8_fnuz_for_every_amd::META,
    &arch_name_exact_match::META,
    &backend_tag_dispatch::META,
    &cuda_header_in_hip_build::META,
    &cuda_intrinsic_missing_in_hip::META,
    &cuda_api_missing_in_hip::META,
    &amd_builtin_unavailable::META,
    &platform_macro_never_defined::META,
    &platform_branch_api_mismatch::META,
];

/// Runs every enabled rule over one file (or, for the inventory, only the feature pass).
pub fn run_all(cx: &mut Cx, inventory_only: bool) {
    nvidia_only_feature::check(cx, !inventory_only);
    if inventory_only {
        return;
    }
    macro_rules! run {
        ($($m:ident),*) => {$(
            if cx.enabled(&$m::META) {
                $m::check(cx);
            }
        )*};
    }
    run!(
        warp_size_literal,
        warp_size_constant,
        shuffle_offset_literal,
        full_mask_literal,
        ballot_narrowing,
        lane_partials_size,
        inline_asm_unguarded,
        inter_block_spin_wait,
        platform_ifdef_in_kernel,
        shared_memory_over_limit,
        hardcoded_tile,
        launch_bounds_warp,
        implicit_warp_sync,
        warp_size_constexpr,
        wavefront_size_macro,
        device_warp_size_in_host,
        divergent_block_barrier,
        wave64_lane_math,
        cuda_arch_gate_no_amd_path,
        lane_geometry_32,
        sync_mask_param_32,
        mask_as_shuffle_value,
        unbalanced_conditional,
        wave_size_arch_list,
        amd_isa_generation,
        capability_order_on_amd,
        warp_count_divisor,
        shuffle_logical_warp_width,
        grid_uncapped_64bit,
        block_over_limit_wave64,
        warp_partials_read_by_lane,
        shared_memory_optin_on_amd,
        arch_macro_misspelled,
        arch_list_partial_family,
        static_device_symbol,
        warp_algorithm_small_block,
        amd_wave_width_64,
        warp_width_constant_use,
        hip_api_removed,
        hip_platform_macro_removed,
        device_qualifier_nvidia_only,
        fp8_fnuz_for_every_amd,
        arch_name_exact_match,
        backend_tag_dispatch,
        cuda_header_in_hip_build,
        cuda_intrinsic_missing_in_hip,
        cuda_api_missing_in_hip,
        amd_builtin_unavailable,
        platform_macro_never_defined,
        platform_branch_api_mismatch
    );
}
