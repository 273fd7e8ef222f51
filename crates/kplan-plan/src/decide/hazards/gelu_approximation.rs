//! `gelu-approximation`: the kernel computes a GELU (an `epilogue` or `kind` naming `gelu`, or
//! a description that does). GELU has two forms in use, the exact erf form (PyTorch's
//! default, `approximate='none'`) and the tanh approximation (`approximate='tanh'`)
//! [PyTorch-GELU]; the cuBLASLt GELU epilogue is the tanh form [TRTLLM-GELU-EPILOGUE]. The two
//! differ by at most 4.7e-4 absolute (at x = -2.7) and 0.22% relative where |y| > 0.1: below
//! bf16's half-ulp (0.39%) but above fp16's (0.049%) and far above fp32's, and by up to 10%
//! relative in the small negative tail (x = -3). Where the spec names the form (`gelu-tanh`,
//! `bias-gelu-erf`, "tanh-GELU" in the description) the risk is that one backend implements
//! the other form (low); where it does not, which form the model uses is open: medium for an
//! output dtype that resolves the gap (fp16, fp32, fp64), low for bf16 and narrower.

use super::test_support::{Fx, ELEMENTWISE, GEMM};
use super::Cx;
use crate::model::Risk;
use kplan_kb::{Dtype, Vendor};

/// The GELU form a text names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Form {
    Tanh,
    Erf,
}

impl Form {
    fn as_str(self) -> &'static str {
        match self {
            Form::Tanh => "tanh approximation",
            Form::Erf => "exact erf form",
        }
    }
}

/// Whether `text` mentions GELU, and the form it names (`None`: GELU without a form).
fn gelu_in(text: &str) -> Option<Option<Form>> {
    let t = text.to_ascii_lowercase();
    if !t.contains("gelu") {
        return None;
    }
    let word = |w: &str| {
        t.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|x| x == w)
    };
    Some(
        if word("tanh")
            || t.contains("gelu_new")
            || t.contains("approximate='tanh'")
            || t.contains("approximate=\"tanh\"")
        {
            Some(Form::Tanh)
        } else if word("erf") || word("exact") {
            Some(Form::Erf)
        } else {
            None
        },
    )
}

pub fn check(cx: &Cx) -> Vec<Risk> {
    risk(cx).into_iter().collect()
}

fn risk(cx: &Cx) -> Option<Risk> {
    let texts: Vec<&str> = [
        cx.spec.modifiers.epilogue.as_deref(),
        cx.spec.kind(),
        cx.spec.description.as_deref(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let found: Vec<(&str, Option<Form>)> = texts
        .iter()
        .filter_map(|t| gelu_in(t).map(|f| (*t, f)))
        .collect();
    let (named_in, _) = *found.first()?;
    let form = found.iter().find_map(|(_, f)| *f);
    let gpu: Vec<_> = cx.targets.iter().filter(|t| t.is_gpu()).collect();
    let mut libs = Vec::new();
    if cx.spec.op.uses_matrix_units() {
        if gpu.iter().any(|t| t.vendor() == Vendor::Nvidia) {
            libs.push("cuBLASLt `CUBLASLT_EPILOGUE_GELU`/`_GELU_BIAS` (the tanh form)");
        }
        if gpu.iter().any(|t| t.vendor() == Vendor::Amd) {
            libs.push("hipBLASLt `HIPBLASLT_EPILOGUE_GELU`/`_GELU_BIAS` (check its form)");
        }
    }
    // Output dtypes whose half-ulp is below the forms' 0.22% relative gap.
    let fine_out = matches!(cx.spec.output, Dtype::Fp16 | Dtype::Fp32 | Dtype::Fp64);
    let severity = match form {
        Some(_) => "low",
        None if fine_out => "medium",
        None => "low",
    };
    let lib_clause = |f: Option<Form>| -> String {
        if libs.is_empty() {
            return String::new();
        }
        match f {
            Some(Form::Tanh) => format!(
                "; a library epilogue ({}) fits the tanh form: check it against a tanh reference before relying on it",
                libs.join(", ")
            ),
            Some(Form::Erf) => format!(
                "; a library GELU epilogue ({}) computes the tanh approximation, not erf: keep the erf GELU in the kernel's own epilogue or a separate elementwise pass",
                libs.join(", ")
            ),
            None => format!(
                "; a library epilogue ({}) computes one fixed formula: check it against both forms before relying on it, and keep a separate elementwise GELU of the right form as the fallback",
                libs.join(", ")
            ),
        }
    };
    let (title, mitigation) = match form {
        Some(f) => (
            format!("the spec names the GELU {}: every backend must implement that form, not the other", f.as_str()),
            format!(
                "implement the {} on every backend{}; compare against a CPU reference of the same form with a tolerance from the output dtype ({}), and run one test against the other form to show the test can tell them apart (the forms differ most in the negative tail, up to 10% relative near x = -3)",
                f.as_str(),
                lib_clause(Some(f)),
                cx.spec.output.as_str()
            ),
        ),
        None => (
            "GELU has an exact (erf) and an approximate (tanh) form: the fused one must match the model's".to_string(),
            format!(
                "state which form the model uses (PyTorch `gelu` defaults to erf, `approximate='tanh'` is the tanh form) and implement that one on every backend{}; compare against a CPU reference of the same form with a tolerance set from the output dtype ({}: {}), and run one test against the other form to show the test can tell them apart",
                lib_clause(None),
                cx.spec.output.as_str(),
                if fine_out {
                    "the forms differ by up to 0.22% where |y| > 0.1, above this dtype's round-off"
                } else {
                    "the forms differ by up to 0.22% where |y| > 0.1, within bf16 round-off except in the negative tail"
                }
            ),
        ),
    };
    let mut sources = vec!["PyTorch-GELU".to_string()];
    if !libs.is_empty() {
        sources.push("TRTLLM-GELU-EPILOGUE".into());
    }
    Some(Risk {
        id: "gelu-approximation".into(),
        title,
        kind: "op".into(),
        targets: cx.targets.iter().map(|t| t.name.clone()).collect(),
        severity: severity.into(),
        mitigation,
        fallback: Some("apply GELU in a separate elementwise kernel of the model's form: one more read and write of the output".into()),
        evidence: vec![format!(
            "the spec computes GELU (`{named_in}`){}",
            match form {
                Some(f) => format!(", the {}", f.as_str()),
                None => ", form not named".into(),
            }
        )],
        sources,
    })
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
    fires: &[
        SPEC,
        ELEMENTWISE
            .name("g")
            .dtypes(&["fp16", "fp32"])
            .kernel(&["description = \"bias add and tanh-GELU\""])
            .targets(&["sm_90", "gfx942"])
            .allowed(&[]),
    ],
    silent: &[SPEC.kernel(&["epilogue = \"bias-relu\""]), SPEC.kernel(&[])],
};

#[cfg(test)]
mod tests {
    const SPEC: &str = "[kernel]\nname = \"g\"\nop = \"gemm\"\ndtypes = [\"bf16\", \"fp32\"]\nEPI\nproblem = { m = 4096, n = 4096, k = 4096 }\n[backends]\ntargets = [\"sm_90\", \"gfx942\"]\n";

    fn gelu(spec: &str) -> crate::model::Risk {
        crate::decide::hazards::test_support::plan(spec)
            .risks
            .into_iter()
            .find(|r| r.id == "gelu-approximation")
            .expect("raised")
    }

    /// A named form is low and names it; the erf form says the library epilogue is tanh.
    #[test]
    fn a_named_form_is_implemented_not_asked_for() {
        let r = gelu(&SPEC.replace("EPI", "epilogue = \"bias-gelu-tanh\""));
        assert_eq!(r.severity, "low");
        assert!(r.title.contains("tanh approximation"), "{}", r.title);
        assert!(
            !r.mitigation.contains("state which form"),
            "{}",
            r.mitigation
        );
        let r = gelu(&SPEC.replace("EPI", "epilogue = \"gelu-erf\""));
        assert_eq!(r.severity, "low");
        assert!(r.mitigation.contains("not erf"), "{}", r.mitigation);
    }

    /// An unnamed form: medium for an fp32 output, low for a bf16 one.
    #[test]
    fn severity_follows_the_output_dtype() {
        let r = gelu(&SPEC.replace("EPI", "epilogue = \"bias-gelu\""));
        assert_eq!(r.severity, "low", "bf16 output");
        let fp32 = SPEC
            .replace("[\"bf16\", \"fp32\"]", "[\"bf16\", \"fp32\", \"fp32\"]")
            .replace("EPI", "epilogue = \"bias-gelu\"");
        assert_eq!(gelu(&fp32).severity, "medium");
    }

    /// GELU named only in the description of an elementwise op.
    #[test]
    fn a_description_naming_gelu_raises_it() {
        let spec = "[kernel]\nname = \"g\"\nop = \"elementwise\"\ndescription = \"Fused bias add + tanh-GELU epilogue\"\ndtypes = [\"fp16\", \"fp32\"]\nproblem = { n = 1048576 }\n[backends]\ntargets = [\"sm_90\", \"gfx942\"]\n";
        let r = gelu(spec);
        assert!(r.title.contains("tanh"), "{}", r.title);
    }
}
