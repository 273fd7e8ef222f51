//! The spec accepts the names kernel engineers write: dtypes, generic features, op aliases,
//! modifiers, expertise and abstraction aliases; "did you mean" only for misspellings.

use kplan_kb::{Dtype, Kb};
use kplan_plan::analysis::work;
use kplan_plan::spec::{BlockScale, Direction, Expertise, Op};
use kplan_plan::{parse_spec, Spec};

fn spec(kernel: &str, targets: &str) -> Result<Spec, kplan_plan::SpecError> {
    let t = format!("[kernel]\nname = 'x'\n{kernel}\n[backends]\ntargets = [{targets}]\n");
    parse_spec(&t, Kb::builtin())
}

#[test]
fn integer_and_narrow_float_dtypes_are_accepted() {
    let s = spec(
        "op = 'histogram'\ndtypes = ['uint8', 'uint32']\nproblem = { n = 100, bins = 256 }",
        "'sm_80'",
    )
    .unwrap();
    assert_eq!((s.storage, s.output), (Dtype::Uint8, Dtype::Uint8));
    assert_eq!(s.compute, Dtype::Uint32);
    let s = spec(
        "op = 'quantize'\ndtypes = ['bf16', 'fp32', 'nvfp4']\nproblem = { rows = 4, cols = 64 }",
        "'b200'",
    )
    .unwrap();
    assert_eq!(s.output, Dtype::Fp4);
    assert_eq!(s.block_scale, Some(BlockScale::Nvfp4));
    // 4-bit output: half a byte per element, plus one 1-byte scale per 16 values.
    assert_eq!(work(&s).bytes, 256.0 * 2.0 + 256.0 * 0.5 + 16.0);
    for d in ["int32", "int4", "fp4", "fp6", "mxfp4", "uint32", "int64"] {
        spec(
            &format!("op = 'elementwise'\ndtypes = ['{d}']\nproblem = {{ n = 8 }}"),
            "'sm_80'",
        )
        .unwrap_or_else(|e| panic!("{d}: {e}"));
    }
}

#[test]
fn suggestions_are_misspellings_only() {
    let e = spec(
        "op = 'elementwise'\ndtypes = ['in32']\nproblem = { n = 8 }",
        "'sm_80'",
    )
    .unwrap_err();
    assert_eq!(e.suggestion.as_deref(), Some("int32"));
    // A name of another kind (a target where a dtype belongs) gets the list, no "did you mean".
    let e = spec(
        "op = 'elementwise'\ndtypes = ['gfx942']\nproblem = { n = 8 }",
        "'sm_80'",
    )
    .unwrap_err();
    assert!(e.message.contains("expected one of"), "{}", e.message);
    assert_eq!(e.suggestion, None);
    // Before: `int32` was offered `int8`; now it is known, and `in8` is a misspelling of `int8`.
    let e = spec(
        "op = 'elementwise'\ndtypes = ['in8']\nproblem = { n = 8 }",
        "'sm_80'",
    )
    .unwrap_err();
    assert_eq!(e.suggestion.as_deref(), Some("int8"));
    // An op kplan has no class for is planned as a custom op, with a note that says so.
    let s = spec(
        "op = 'bogosort'\ndtypes = ['fp32']\nproblem = { n = 8 }",
        "'sm_80'",
    )
    .unwrap();
    assert_eq!(s.custom_op.as_deref(), Some("bogosort"));
    assert!(
        s.notes
            .iter()
            .any(|n| n.message.contains("planned as a custom op") && n.message.contains("flops")),
        "{:?}",
        s.notes
    );
}

#[test]
fn generic_features_and_aliases_resolve() {
    let s = spec(
        "op = 'scatter'\ndtypes = ['fp32']\nproblem = { n = 8, dim = 4 }\nreduce = 'sum'\nfeatures = ['atomics', 'warp-shuffles', 'tensor-cores', 'cooperative-groups', 'fp8']",
        "'sm_80'",
    )
    .unwrap();
    assert_eq!(
        s.features,
        [
            "fp32-atomic-add",
            "warp-shuffle",
            "tensor-cores",
            "cooperative-launch",
            "fp8"
        ]
    );
    let s = spec("op = 'histogram'\ndtypes = ['int32', 'uint32']\nproblem = { n = 8, bins = 4 }\nfeatures = ['atomics']", "'sm_80'").unwrap();
    assert_eq!(s.features, ["int-atomics"]);
}

#[test]
fn op_aliases_modifiers_and_team_names() {
    let t = "[kernel]\nname = 'x'\nop = 'rmsnorm'\ndirection = 'backward'\ndtypes = ['bf16', 'fp32']\nproblem = { rows = 2, cols = 8 }\n[backends]\ntargets = ['h100-pcie', 'mi300a']\n[requirements]\nlatency_us = 5\n[team]\nexpertise = ['rocm', 'ck']\n[abstraction]\nallowed = ['torch', 'hipcub', 'composable-kernel']\n";
    let s = parse_spec(t, Kb::builtin()).unwrap();
    assert_eq!(
        (s.op, s.direction, s.kind()),
        (Op::Norm, Direction::Backward, Some("rmsnorm"))
    );
    assert_eq!(s.expertise, [Expertise::Hip, Expertise::Ck]);
    assert_eq!(s.latency_us, Some(5.0));
    assert_eq!(s.named_libraries, ["hipcub"]);
    // Backward RMSNorm reads x, dy, gamma and the saved rstd; writes dx and dgamma.
    assert_eq!(
        work(&s).bytes,
        2.0 * 16.0 * 2.0 + 8.0 * 2.0 + 2.0 * 4.0 + 16.0 * 2.0 + 8.0 * 2.0
    );
    // A modifier on an op it does not apply to is ignored, with a note that says where it
    // applies; the plan is the one without it.
    let s = spec(
        "op = 'softmax'\ndtypes = ['fp32']\nproblem = { rows = 2, cols = 8 }\nragged = true",
        "'sm_80'",
    )
    .unwrap();
    assert!(!s.modifiers.ragged);
    assert!(
        s.notes
            .iter()
            .any(|n| n.message.contains("not to op `softmax`")),
        "{:?}",
        s.notes
    );
    let s = spec(
        "op = 'norm'\ndtypes = ['bf16']\nproblem = { rows = 2, cols = 8 }\nweight_dtype = 'fp8'",
        "'sm_80'",
    )
    .unwrap();
    assert_eq!(s.modifiers.weight_dtype, None);
    // Both passes: planned as the backward pass, with a note; an op without a backward model
    // still says so.
    let s = spec(
        "op = 'softmax'\ndirection = 'forward-backward'\ndtypes = ['fp32']\nproblem = { rows = 2, cols = 8 }",
        "'sm_80'",
    )
    .unwrap();
    assert_eq!(s.direction, Direction::Backward);
    assert!(s
        .notes
        .iter()
        .any(|n| n.message.contains("read as `backward`")));
    // Both passes of an op without a backward model: the forward pass is planned, with a note.
    let s = spec("op = 'topk'\ndirection = 'both'\ndtypes = ['fp32']\nproblem = { rows = 2, cols = 8, k = 2 }", "'sm_80'").unwrap();
    assert_eq!(s.direction, Direction::Forward);
    assert!(s
        .notes
        .iter()
        .any(|n| n.message.contains("no backward work model")));
    // An explicit backward pass of such an op is still an error.
    assert!(spec("op = 'topk'\ndirection = 'backward'\ndtypes = ['fp32']\nproblem = { rows = 2, cols = 8, k = 2 }", "'sm_80'").is_err());
    // A known kind with qualifiers is read as that kind.
    let s = spec(
        "op = 'reduction'\nreduce = 'l2-norm'\ndtypes = ['fp32']\nproblem = { n = 1024 }",
        "'sm_80'",
    )
    .unwrap();
    assert_eq!(s.kind(), Some("l2"));
    // Two known words: no one variant is meant; the op's general model, with a note.
    let s = spec(
        "op = 'reduction'\nreduce = 'max-min'\ndtypes = ['fp32']\nproblem = { n = 1024 }",
        "'sm_80'",
    )
    .unwrap();
    assert!(s
        .notes
        .iter()
        .any(|n| n.message.contains("not a variant kplan models")));
    // A misspelt variant is an error.
    assert!(spec(
        "op = 'reduction'\nreduce = 'argmx'\ndtypes = ['fp32']\nproblem = { n = 1024 }",
        "'sm_80'",
    )
    .is_err());
    // `bool` storage is one byte.
    let s = spec(
        "op = 'elementwise'\ndtypes = ['bool']\nproblem = { n = 1024 }",
        "'sm_80'",
    )
    .unwrap();
    assert_eq!(s.storage.bytes(), 1);
    let e = spec("op = 'topk'\ndirection = 'backward'\ndtypes = ['fp32']\nproblem = { rows = 2, cols = 8, k = 2 }", "'sm_80'").unwrap_err();
    assert!(
        e.message.contains("no backward work model"),
        "{}",
        e.message
    );
}

#[test]
fn an_unknown_expertise_is_a_note_with_the_closest_known_one() {
    let t = "[kernel]\nname = 'x'\nop = 'softmax'\ndtypes = ['fp32']\nproblem = { rows = 2, cols = 8 }\n[backends]\ntargets = ['sm_80']\n[team]\nexpertise = ['cuda', 'kokkos', 'tritn']\n";
    let s = parse_spec(t, Kb::builtin()).unwrap();
    assert_eq!(s.expertise, [Expertise::Cuda]);
    let msgs: Vec<&str> = s.notes.iter().map(|n| n.message.as_str()).collect();
    assert!(
        msgs.iter()
            .any(|m| m.contains("expertise `kokkos` not used")),
        "{msgs:?}"
    );
    assert!(
        msgs.iter().any(|m| m.contains("if `triton` was meant")),
        "{msgs:?}"
    );
}

#[test]
fn product_variants_carry_their_own_numbers() {
    let kb = Kb::builtin();
    let pcie = kb.resolve("h100-pcie").unwrap().device.unwrap();
    let sxm = kb.resolve("h100").unwrap().device.unwrap();
    assert_eq!(pcie.compute_units.value, Some(114));
    assert_eq!(pcie.bandwidth_gbs(), Some(2000.0));
    assert_ne!(pcie.bandwidth_gbs(), sxm.bandwidth_gbs());
    assert_eq!(
        kb.resolve("a100-40gb")
            .unwrap()
            .device
            .unwrap()
            .bandwidth_gbs(),
        Some(1555.0)
    );
    // No sourced bandwidth for MI300A: unknown, not MI300X's figure.
    assert_eq!(
        kb.resolve("mi300a")
            .unwrap()
            .device
            .unwrap()
            .bandwidth_gbs(),
        None
    );
    for t in [
        "sm_100", "sm_103", "gfx940", "gfx941", "gfx1101", "gfx1102", "gfx1200",
    ] {
        assert_eq!(kb.resolve(t).unwrap().arch.id, t);
    }
}

/// Keys kplan does not read: descriptive ones become notes, typos of known keys stay errors.
#[test]
fn descriptive_keys_are_notes_not_errors() {
    let s = spec(
        "op = 'norm'\nmodel = 'llama-3-70b'\ndtypes = ['bf16', 'fp32']\nproblem = { rows = 8, cols = 64, seq_kv = 128 }",
        "'sm_90'",
    )
    .unwrap();
    let notes: Vec<&str> = s.notes.iter().map(|n| n.message.as_str()).collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].starts_with("key `model` not used by kplan"),
        "{notes:?}"
    );
    assert!(
        notes[1].starts_with("problem key `seq_kv` not used by kplan")
            && notes[1].contains("`attention`"),
        "{notes:?}"
    );
    // A spelling of this op's key is a typo, not a description.
    let e = spec(
        "op = 'norm'\ndtypes = ['bf16']\nproblem = { rows = 8, colls = 64 }",
        "'sm_90'",
    )
    .unwrap_err();
    assert_eq!(e.suggestion.as_deref(), Some("cols"));
    // A misspelt boolean modifier is an error with the known key.
    let e = spec(
        "op = 'attention'\ndtypes = ['bf16']\ncasual = true\nproblem = { batch = 1, heads = 8, seq = 128, head_dim = 64 }",
        "'sm_90'",
    )
    .unwrap_err();
    assert_eq!(e.suggestion.as_deref(), Some("causal"));
}

#[test]
fn unknown_device_is_a_note_when_other_targets_remain() {
    let k = "op = 'norm'\ndtypes = ['bf16']\nproblem = { rows = 8, cols = 64 }";
    let s = spec(k, "'h100', 'acme-x1000'").unwrap();
    assert_eq!(s.targets, ["h100"]);
    assert!(s.notes[0]
        .message
        .starts_with("device `acme-x1000` not used by kplan"));
    // Alone it is the only target: an error.
    assert!(spec(k, "'acme-x1000'").is_err());
    // A misspelt architecture name is an error (code would be built for the wrong one).
    let e = spec(k, "'h100', 'gfx9420'").unwrap_err();
    assert_eq!(e.suggestion.as_deref(), Some("gfx942"));
}
