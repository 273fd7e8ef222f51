//! One file per Triton rule. Each exposes `pub const META: RuleMeta` and `pub fn check(cx)`.

pub mod arch_list_partial_family;
pub mod arch_literal_always_true;
pub mod arch_name_exact_match;
pub mod capability_check;
pub mod cuda_libdevice;
pub mod dot_tf32;
pub mod fixed_block_size;
pub mod fp8_encoding;
pub mod fp8_max_constant;
pub mod hip_implies_fnuz;
pub mod inline_asm;
pub mod lds_limit;
pub mod low_precision_for_other_amd;
pub mod num_warps_wave64;
pub mod predicate_not_called;
pub mod tensor_descriptor_amd;
pub mod torch_version_cuda;
pub mod warp_size_literal;
pub mod wave64_for_every_amd;
