//! One file per rule. Each exposes `pub static META: RuleMeta` and a check function.

use crate::rule::RuleMeta;

/// CUDA/HIP rules, in registry order.
pub static RULES: &[&RuleMeta] = &[];
