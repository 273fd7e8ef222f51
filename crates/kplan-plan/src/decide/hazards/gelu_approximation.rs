//! `gelu-approximation`: the spec fuses a GELU (an `epilogue` or `kind` naming `gelu`). GELU
//! has two forms in use, the exact erf form (PyTorch's default, `approximate='none'`) and the
//! tanh approximation (`approximate='tanh'`) [PyTorch-GELU]; a library epilogue or a kernel
//! implements one of them, and one that differs from the model's form shifts every activation
//! by up to about 1e-3 relative, beyond bf16 round-off on large outputs.

use super::test_support::{Fx, GEMM};
use super::Cx;
use crate::model::Risk;
use kplan_kb::Vendor;

pub fn check(cx: &Cx) -> Vec<Risk> {
    risk(cx).into_iter().collect()
}

fn risk(cx: &Cx) -> Option<Risk> {
    let gelu = |s: Option<&str>| s.is_some_and(|e| e.to_ascii_lowercase().contains("gelu"));
    if !gelu(cx.spec.modifiers.epilogue.as_deref()) && !gelu(cx.spec.kind()) {
        return None;
    }
    let gpu: Vec<_> = cx.targets.iter().filter(|t| t.is_gpu()).collect();
    let mut libs = Vec::new();
    if cx.spec.op.uses_matrix_units() {
        if gpu.iter().any(|t| t.vendor() == Vendor::Nvidia) {
            libs.push("cuBLASLt `CUBLASLT_EPILOGUE_GELU`/`_GELU_BIAS`");
        }
        if gpu.iter().any(|t| t.vendor() == Vendor::Amd) {
            libs.push("hipBLASLt `HIPBLASLT_EPILOGUE_GELU`/`_GELU_BIAS`");
        }
    }
    Some(
        Risk::builder("gelu-approximation", "op", "medium")
            .title("GELU has an exact (erf) and an approximate (tanh) form: the fused one must match the model's")
            .targets(cx.targets.iter().map(|t| t.name.clone()).collect())
            .mitigation(format!(
                "state which form the model uses (PyTorch `gelu` defaults to erf, `approximate='tanh'` is the tanh form) and implement that one on every backend{}; compare against a CPU reference of the same form with a tolerance set from the output dtype, and run one test against the other form to show the test can tell them apart",
                if libs.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; a library epilogue ({}) computes one fixed formula: check it against both forms before relying on it, and keep a separate elementwise GELU of the right form as the fallback",
                        libs.join(", ")
                    )
                }
            ))
            .fallback("apply GELU in a separate elementwise kernel of the model's form: one more read and write of the output")
            .evidence([format!(
                "the spec fuses `{}`",
                cx.spec
                    .modifiers
                    .epilogue
                    .as_deref()
                    .or(cx.spec.kind())
                    .unwrap_or("gelu")
            )])
            .sources(["PyTorch-GELU"])
            .build(),
    )
}

/// The spec this rule's fixtures vary.
const SPEC: Fx = GEMM
    .name("g")
    .dtypes(&["bf16", "fp32"])
    .kernel(&["epilogue = \"bias-gelu\""])
    .targets(&["sm_90", "gfx942"])
    .allowed(&[]);

pub(super) const FIXTURES: super::Fixtures = super::Fixtures {
    probe: "gelu-approximation",
    fires: &[SPEC],
    silent: &[SPEC.kernel(&["epilogue = \"bias-relu\""]), SPEC.kernel(&[])],
};
