//! How specs written by other teams are read: stretch targets, `gpus`, a values dtype, the
//! direction in the op name, the other op words of a fused name, knowledge entries that keep an
//! op class's work model, and the library CI legs' versions.

use kplan_kb::Kb;
use kplan_plan::render::markdown;
use kplan_plan::spec::{Direction, Op};
use kplan_plan::{build_plan, parse_spec, PlanInputs, Spec};

fn parse(text: &str) -> Spec {
    parse_spec(text, Kb::builtin()).unwrap_or_else(|e| panic!("{}: {text}", e.message))
}

fn noted(s: &Spec, what: &str) -> bool {
    s.notes.iter().any(|n| n.message.contains(what))
}

const GEMM: &str = "[kernel]\nname = 'k'\nop = 'gemm'\ndtypes = ['bf16', 'fp32']\nproblem = { m = 1024, n = 1024, k = 1024 }\n";

#[test]
fn stretch_targets_are_planned_where_known_and_noted_where_not() {
    let s = parse(&format!(
        "{GEMM}[backends]\ntargets = ['h100', 'mi300x']\nstretch = ['gfx1100', 'some-future-gpu']\n"
    ));
    assert_eq!(s.targets, ["h100", "mi300x", "gfx1100"]);
    assert_eq!(s.stretch, ["gfx1100"]);
    assert!(
        noted(&s, "stretch target `some-future-gpu` not planned"),
        "{:?}",
        s.notes
    );
    // Stretch targets alone: the ones the KB knows are planned, with a note; none known is an
    // error.
    let s = parse(&format!("{GEMM}[backends]\nstretch = ['h100']\n"));
    assert_eq!(s.targets, ["h100"]);
    assert!(
        noted(&s, "stretch targets the knowledge base knows are planned"),
        "{:?}",
        s.notes
    );
    assert!(parse_spec(
        &format!("{GEMM}[backends]\nstretch = ['some-future-gpu']\n"),
        Kb::builtin()
    )
    .is_err());
}

#[test]
fn a_stretch_target_does_not_veto_a_library_that_covers_the_required_ones() {
    let text = format!(
        "{GEMM}[backends]\ntargets = ['h100', 'mi300x']\nstretch = ['max1550']\n[abstraction]\nallowed = ['vendor-library', 'per-backend']\n"
    );
    let p = build_plan(&parse(&text), Kb::builtin(), &PlanInputs::default());
    assert_eq!(
        p.verdict.decision.as_str(),
        "use-vendor-library",
        "{}",
        p.verdict.reason
    );
    // Required, the same target has no library and the verdict is a kernel.
    let text = text.replace("stretch = ['max1550']", "devices = ['max1550']");
    let p = build_plan(&parse(&text), Kb::builtin(), &PlanInputs::default());
    assert_ne!(
        p.verdict.decision.as_str(),
        "use-vendor-library",
        "{}",
        p.verdict.reason
    );
}

#[test]
fn gpus_is_a_target_list() {
    let s = parse(&format!("{GEMM}[backends]\ngpus = ['a100', 'h100']\n"));
    assert_eq!(s.targets, ["a100", "h100"]);
}

#[test]
fn values_named_by_dtype_is_a_key_value_sort() {
    let s = parse("[kernel]\nname = 'k'\nop = 'segmented-sort'\ndtypes = ['int32', 'fp64']\nproblem = { n = 4000000 }\nvalues = 'fp64'\n[backends]\ntargets = ['h100']\n");
    assert_eq!(s.op, Op::Sort);
    assert!(s.modifiers.values);
    assert!(noted(&s, "read as `values = true`"), "{:?}", s.notes);
    // A word that is no dtype and no yes/no is still an error; a phrase is set aside with a note.
    assert!(parse_spec(
        "[kernel]\nname = 'k'\nop = 'sort'\ndtypes = ['int32']\nproblem = { n = 4 }\nvalues = 'index'\n[backends]\ntargets = ['h100']\n",
        Kb::builtin()
    )
    .is_err());
    let s = parse("[kernel]\nname = 'k'\nop = 'sort'\ndtypes = ['int32']\nproblem = { n = 4 }\nvalues = 'column index'\n[backends]\ntargets = ['h100']\n");
    assert!(!s.modifiers.values);
    assert!(noted(&s, "`kernel.values` set aside"), "{:?}", s.notes);
}

#[test]
fn the_direction_in_the_op_name_is_the_direction() {
    let conv = |op: &str, extra: &str| {
        parse(&format!("[kernel]\nname = 'k'\nop = '{op}'\n{extra}dtypes = ['fp16', 'fp32']\nproblem = {{ batch = 8, height = 16, width = 16, channels = 64, kernel = 3 }}\n[backends]\ntargets = ['gfx1100']\n"))
    };
    for (op, gradient) in [
        ("conv-backward-data", Some("data")),
        ("conv2d-dgrad", Some("data")),
        ("conv-wgrad", Some("weight")),
        ("conv-bwd", None),
        ("conv-weight-gradient", Some("weight")),
    ] {
        let s = conv(op, "");
        assert_eq!(s.direction, Direction::Backward, "{op}");
        assert_eq!(s.modifiers.gradient.as_deref(), gradient, "{op}");
        assert!(noted(&s, "read from the op name"), "{op}: {:?}", s.notes);
    }
    // A lone `grad` names no direction.
    let s = parse("[kernel]\nname = 'k'\nop = 'grad-norm'\ndtypes = ['fp32']\nproblem = { rows = 8, cols = 64 }\n[backends]\ntargets = ['h100']\n");
    assert_eq!(s.direction, Direction::Forward);
    // The `direction` key wins over the name.
    let s = conv("conv-backward-data", "direction = 'forward'\n");
    assert_eq!(s.direction, Direction::Forward);
    // The Spec line prints the direction.
    let p = build_plan(
        &conv("conv-backward-data", ""),
        Kb::builtin(),
        &PlanInputs::default(),
    );
    assert!(markdown(&p).contains("direction `backward`"));
}

#[test]
fn a_fused_name_lists_the_other_op_words() {
    let s = parse("[kernel]\nname = 'k'\nop = 'softmax-then-topk-over-gemm-output'\ndtypes = ['fp32']\nproblem = { rows = 64, cols = 4096 }\n[backends]\ntargets = ['h100']\n");
    assert_eq!(s.op, Op::Softmax);
    assert!(noted(&s, "also names `topk`, `gemm`"), "{:?}", s.notes);
    // A knowledge entry read from the first words says the others too.
    let s = parse("[kernel]\nname = 'k'\nop = 'fused allreduce rmsnorm'\ndtypes = ['bf16']\nproblem = { tokens = 16, hidden = 4096 }\n[backends]\ntargets = ['h100']\n");
    assert_eq!(s.kb_op(), "collective");
    assert!(noted(&s, "also names `rmsnorm`"), "{:?}", s.notes);
}

#[test]
fn a_knowledge_entry_with_a_base_class_keeps_the_work_model() {
    let text = "[kernel]\nname = 'k'\nop = 'multi-head latent attention decode'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 64, heads = 128, kv_heads = 1, seq_q = 1, seq_kv = 4096, head_dim = 576, head_dim_v = 512, page_size = 64 }\n[backends]\ntargets = ['h100', 'mi300x']\n";
    let s = parse(text);
    assert_eq!(s.op, Op::Attention);
    assert_eq!(s.kb_op(), "mla");
    assert_eq!(s.custom_op, None);
    let p = build_plan(&s, Kb::builtin(), &PlanInputs::default());
    assert!(p.operation.flops > 0.0 && p.operation.work_unknown.is_none());
    assert_eq!(p.operation.knowledge_entry.as_deref(), Some("mla"));
    let md = markdown(&p);
    assert!(
        !md.contains("no op class, work model or library knowledge"),
        "{md}"
    );
    assert!(md.contains("read as the op knowledge base entry `mla`"));
    // A knowledge-only entry without a base: a custom op that still has library knowledge.
    let s = parse("[kernel]\nname = 'k'\nop = 'minhash'\ndtypes = ['uint32']\nproblem = { documents = 1000 }\n[backends]\ntargets = ['h100']\n");
    assert_eq!(s.op, Op::Custom);
    let md = markdown(&build_plan(&s, Kb::builtin(), &PlanInputs::default()));
    assert!(!md.contains("library knowledge for it"), "{md}");
    assert!(md.contains("op knowledge base entry `minhash`"));
}

#[test]
fn a_library_ci_leg_states_the_library_version_not_the_architecture_floor() {
    let text = "[kernel]\nname = 'k'\nop = 'fft'\ndtypes = ['fp32', 'complex64']\nproblem = { n = 1000 }\n[backends]\ntargets = ['a100', 'mi250x']\n[abstraction]\nallowed = ['vendor-library']\n";
    let p = build_plan(&parse(text), Kb::builtin(), &PlanInputs::default());
    assert_eq!(p.verdict.decision.as_str(), "use-vendor-library");
    let leg = p.ci.legs.iter().find(|l| l.target == "mi250x").unwrap();
    // A vendor library ships with the toolkit.
    assert!(
        leg.toolchain
            .contains("rocFFT / hipFFT: the one shipped with ROCm"),
        "{}",
        leg.toolchain
    );
    // An open-source kernel library with no sourced minimum says so, not the ROCm floor.
    let text = "[kernel]\nname = 'k'\nop = 'attention'\ndtypes = ['bf16', 'fp32']\nproblem = { batch = 2, heads = 16, seq = 4096, head_dim = 128 }\n[backends]\ntargets = ['mi300x']\n[abstraction]\nallowed = ['vendor-library']\n";
    let p = build_plan(&parse(text), Kb::builtin(), &PlanInputs::default());
    let leg = p.ci.legs.iter().find(|l| l.target == "mi300x").unwrap();
    assert!(
        leg.toolchain
            .contains("CK FMHA / AITER: minimum version unknown"),
        "{}",
        leg.toolchain
    );
    assert!(
        leg.toolchain.contains("; gfx942 itself needs ROCm"),
        "{}",
        leg.toolchain
    );
    // A library with a sourced minimum prints it.
    let text = "[kernel]\nname = 'k'\nop = 'sort'\ndtypes = ['int32']\nproblem = { n = 1000000 }\n[backends]\ntargets = ['a100']\n[abstraction]\nallowed = ['vendor-library']\n";
    let p = build_plan(&parse(text), Kb::builtin(), &PlanInputs::default());
    let leg = p.ci.legs.iter().find(|l| l.target == "a100").unwrap();
    assert!(leg.toolchain.contains("CUDA 11.0"), "{}", leg.toolchain);
}
