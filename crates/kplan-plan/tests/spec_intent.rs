//! Specs written the way users of other projects write them: library names as the allowed
//! level, one gradient of a backward pass, sentences for flags, lists for one name, complex and
//! GGUF activation dtypes, more than three dtypes, op names made of words, architectures the
//! knowledge base has no facts for. Each is read as meant, with a note; a value that cannot be
//! read is still an error at its line and column.

use kplan_kb::{Dtype, Kb};
use kplan_plan::analysis::work;
use kplan_plan::spec::{Abstraction, Direction, Op};
use kplan_plan::{parse_spec, Spec};

fn spec_with(kernel: &str, targets: &str, rest: &str) -> Result<Spec, kplan_plan::SpecError> {
    let t = format!("[kernel]\nname = 'x'\n{kernel}\n[backends]\ntargets = [{targets}]\n{rest}");
    parse_spec(&t, Kb::builtin())
}

fn spec(kernel: &str, targets: &str) -> Result<Spec, kplan_plan::SpecError> {
    spec_with(kernel, targets, "")
}

fn noted(s: &Spec, what: &str) -> bool {
    s.notes.iter().any(|n| n.message.contains(what))
}

const CONV: &str = "op = 'conv'\ndtypes = ['fp16', 'fp32']\nproblem = { batch = 8, height = 16, width = 16, channels = 64, kernel = 3 }";

#[test]
fn library_names_are_the_vendor_library_level() {
    let s = spec_with(
        CONV,
        "'h100', 'mi300x'",
        "[abstraction]\nallowed = ['cudnn', 'miopen', 'hipblas', 'per-backend']\n",
    )
    .unwrap();
    assert!(s.allowed.contains(&Abstraction::VendorBlas));
    assert!(s.library_names_only);
    for l in ["cudnn", "miopen", "hipblas", "rocblas", "hipblaslt"] {
        assert!(
            s.named_libraries.iter().any(|n| n == l),
            "{l}: {:?}",
            s.named_libraries
        );
    }
    // A library the op knowledge base names (first word of a library entry) is read the same way.
    let s = spec_with(CONV, "'h100'", "[abstraction]\nallowed = ['flashinfer']\n").unwrap();
    assert_eq!(s.named_libraries, ["flashinfer"]);
    // A misspelt level is still an error with the spelling.
    let e = spec_with(CONV, "'h100'", "[abstraction]\nallowed = ['tritn']\n").unwrap_err();
    assert_eq!(e.suggestion.as_deref(), Some("triton"));
}

#[test]
fn one_gradient_of_a_backward_pass() {
    let fwd = work(&spec(CONV, "'h100'").unwrap());
    for (d, which) in [
        ("backward-data", "data"),
        ("dgrad", "data"),
        ("bwd_input", "data"),
        ("backward-weight", "weight"),
        ("wgrad", "weight"),
    ] {
        let s = spec(&format!("{CONV}\ndirection = '{d}'"), "'h100'").unwrap();
        assert_eq!(s.direction, Direction::Backward, "{d}");
        assert_eq!(s.modifiers.gradient.as_deref(), Some(which), "{d}");
        // One gradient costs the forward's FLOPs, not both gradients' (2x).
        assert_eq!(work(&s).flops, fwd.flops, "{d}");
    }
    let both = spec(&format!("{CONV}\ndirection = 'backward'"), "'h100'").unwrap();
    assert_eq!(work(&both).flops, 2.0 * fwd.flops);
    let e = spec(&format!("{CONV}\ndirection = 'sideways'"), "'h100'").unwrap_err();
    assert!(e.message.contains("backward-data"), "{}", e.message);
}

const RED: &str = "op = 'reduction'\ndtypes = ['fp32']\nproblem = { n = 1000 }";

#[test]
fn flags_in_words_and_names_in_lists() {
    let s = spec_with(
        RED,
        "'h100'",
        "[requirements]\ndeterministic = 'nice to have'\n",
    )
    .unwrap();
    assert!(!s.modifiers.deterministic);
    assert!(noted(&s, "read as a preference"), "{:?}", s.notes);
    for w in [
        "bitwise identical across runs",
        "required",
        "must match run to run",
    ] {
        let s = spec_with(
            RED,
            "'h100'",
            &format!("[requirements]\ndeterminism = '{w}'\n"),
        )
        .unwrap();
        assert!(s.modifiers.deterministic, "{w}");
    }
    let s = spec(&format!("{RED}\nstable = 'yes'"), "'h100'").unwrap();
    assert!(
        !s.modifiers.stable,
        "`stable` does not apply to a reduction: a note"
    );
    // A list of variants: the first is planned, the rest noted.
    let s = spec(&format!("{RED}\nreduce = ['max', 'mean']"), "'h100'").unwrap();
    assert_eq!(s.kind(), Some("max"));
    assert!(noted(&s, "planned for `max`"), "{:?}", s.notes);
    // What cannot be read is an error at the value, with its line.
    let text = format!("[kernel]\nname = 'x'\n{RED}\n[backends]\ntargets = ['h100']\n[requirements]\ndeterministic = 'banana'\n");
    let e = parse_spec(&text, Kb::builtin()).unwrap_err();
    let (line, _) = kplan_kb::line_col(&text, e.span.clone().unwrap().start);
    assert_eq!(line, 9);
    assert!(
        e.message.contains("expected `true` or `false`"),
        "{}",
        e.message
    );
    // a list of numbers where names are expected: set aside with a note, not planned from
    let s = spec(&format!("{RED}\nreduce = [1, 2]"), "'h100'").unwrap();
    assert!(noted(&s, "`kernel.reduce` set aside"));
    assert!(noted(&s, "wrong type for `reduce`"));
}

#[test]
fn segmented_reductions_count_every_element() {
    let s = spec(
        "op = 'segment-reduce'\ndtypes = ['fp32']\nproblem = { segments = 1000, nnz = 20000, features = 8 }",
        "'mi300x'",
    )
    .unwrap();
    assert_eq!(s.op, Op::Reduction);
    // Reads nnz x features once; writes segments x features.
    let w = work(&s);
    assert_eq!(
        w.bytes,
        (20000.0 * 8.0 + 1000.0 * 8.0) * 4.0,
        "{}",
        w.bytes_formula
    );
}

#[test]
fn complex_and_gguf_activation_dtypes() {
    let s = spec(
        "op = 'elementwise'\ndtypes = ['complex64']\nproblem = { n = 1000 }",
        "'h100'",
    )
    .unwrap();
    assert_eq!(s.storage, Dtype::Fp32);
    assert!(s.complex && s.complex_output);
    // 8 bytes in, 8 bytes out per complex64 element.
    assert_eq!(work(&s).bytes, 1000.0 * 16.0);
    let s = spec(
        "op = 'gemm'\ndtypes = ['q4_k', 'q8_1', 'int32', 'fp32']\nproblem = { m = 64, n = 256, k = 256 }",
        "'gfx1100'",
    )
    .unwrap();
    assert_eq!(s.extra_inputs, [Dtype::Int8]);
    assert_eq!((s.compute, s.output), (Dtype::Int32, Dtype::Fp32));
    assert!(noted(&s, "further inputs `q8_1`"), "{:?}", s.notes);
    assert!(spec(
        "op = 'gemm'\ndtypes = ['fp8', 'fp8', 'fp8', 'fp8', 'fp32', 'bf16', 'fp16']\nproblem = { m = 64, n = 64, k = 64 }",
        "'h100'",
    )
    .is_err());
}

#[test]
fn op_names_are_read_from_their_words() {
    let attn = "dtypes = ['bf16']\nproblem = { batch = 2, heads = 8, seq = 128, head_dim = 64 }";
    let s = spec(&format!("op = 'block-sparse-attention'\n{attn}"), "'h100'").unwrap();
    assert_eq!(s.op, Op::Attention);
    assert_eq!(s.custom_op, None);
    // a knowledge entry with a base class: the class's work model, the entry's knowledge
    assert_eq!(s.kb_op(), "block-sparse-attention");
    assert!(
        noted(&s, "a variant of op class `attention`"),
        "{:?}",
        s.notes
    );
    // without the entry's own words, the attention alias inside the name decides
    let s = spec(&format!("op = 'local-sparse-attention'\n{attn}"), "'h100'").unwrap();
    assert_eq!(s.op, Op::Attention);
    assert!(noted(&s, "read as op class `attention`"), "{:?}", s.notes);
    // `gemv` is a GEMM, not a misspelt `gemm`.
    let s = spec(
        "op = 'gemv'\ndtypes = ['bf16']\nproblem = { m = 1, n = 4096, k = 4096 }",
        "'h100'",
    )
    .unwrap();
    assert_eq!(s.op, Op::Gemm);
    // A knowledge-base entry named by a word of the op: a custom op with that knowledge.
    let s = spec(
        "op = 'fused-allreduce-rmsnorm'\ndtypes = ['bf16']\nproblem = { tokens = 16, hidden = 4096 }",
        "'h100'",
    )
    .unwrap();
    assert_eq!(s.custom_knowledge.as_deref(), Some("collective"));
    // Words that name an op only as a whole name do not decide a compound.
    let s = spec(
        "op = 'linear-recurrence'\ndtypes = ['fp32']\nproblem = { n = 1000 }",
        "'h100'",
    )
    .unwrap();
    assert_eq!(s.op, Op::Custom);
    // MoE expert GEMMs sized by tokens and top_k.
    let s = spec(
        "op = 'moe-gemm'\ndtypes = ['bf16']\nproblem = { tokens = 100, experts = 8, topk = 2, hidden = 64, intermediate = 128 }",
        "'h100'",
    )
    .unwrap();
    assert_eq!(s.op, Op::GroupedGemm);
    assert_eq!(s.dim("total_m"), Some(200));
    assert_eq!(work(&s).flops, 2.0 * 200.0 * 128.0 * 64.0);
    // N:M structured sparsity is not a sparse x sparse product.
    let s = spec(
        "op = 'sparse-gemm'\nsparsity = '2:4'\ndtypes = ['fp8', 'fp32', 'bf16']\nproblem = { m = 64, n = 64, k = 64 }",
        "'h100'",
    )
    .unwrap();
    assert_eq!(
        s.custom_knowledge.as_deref(),
        Some("structured-sparse-gemm")
    );
    // The longest compound at a word decides: `2:4 sparse gemm` and `semi-structured sparse
    // gemm` are the structured-sparse entry, not the `sparse-gemm` alias of SpGEMM inside them.
    for name in ["2:4 sparse gemm", "semi-structured sparse gemm"] {
        let s = spec(
            &format!("op = '{name}'\ndtypes = ['fp8', 'fp32', 'bf16']\nproblem = {{ m = 64, n = 64, k = 64 }}"),
            "'h100'",
        )
        .unwrap();
        assert_eq!(
            s.custom_knowledge.as_deref(),
            Some("structured-sparse-gemm"),
            "{name}: {:?}",
            s.op
        );
    }
}

/// Every compound name of the op knowledge base fits the longest compound the reader tries.
#[test]
fn op_aliases_fit_the_compound_reader() {
    for o in &Kb::builtin().ops {
        for a in std::iter::once(&o.id).chain(&o.aliases) {
            let words = a
                .split(['-', '_', ' ', ':'])
                .filter(|w| !w.is_empty())
                .count();
            assert!(words <= 4, "`{a}` of op `{}` has {words} words", o.id);
        }
    }
}

#[test]
fn architectures_without_facts_are_notes_not_guesses() {
    let k = "op = 'scan'\ndtypes = ['int64']\nproblem = { rows = 1, cols = 16384 }";
    let s = spec(k, "'gfx1151', 'gfx1100'").unwrap();
    assert_eq!(s.targets, ["gfx1100"]);
    assert!(
        noted(&s, "architecture `gfx1151` not planned"),
        "{:?}",
        s.notes
    );
    // No other architecture's number is offered as a spelling of it.
    assert!(
        !s.notes.iter().any(|n| n.message.contains("gfx1101")),
        "{:?}",
        s.notes
    );
    // Alone, there is nothing to plan: an error, without a "did you mean" of another part.
    let e = spec(k, "'gfx1151'").unwrap_err();
    assert_eq!(e.suggestion, None);
    let e = spec(k, "'sm_88'").unwrap_err();
    assert_ne!(e.suggestion.as_deref(), Some("sm_86"));
    // A name that has no real architecture's form is a typo, an error even beside other
    // targets; target-id features and LLVM generic targets are real forms.
    for typo in ["sm_8O", "gfx94x", "gfx_9_4_2x"] {
        assert!(spec(k, &format!("'{typo}', 'gfx1100'")).is_err(), "{typo}");
    }
    for real in ["gfx11-generic", "gfx1151"] {
        let s = spec(k, &format!("'{real}', 'gfx1100'")).unwrap();
        assert_eq!(s.targets, ["gfx1100"], "{real}");
    }
}

/// Sizes written as users write them: a range is planned at its upper end, per-dimension
/// window sizes are the conv's per-dimension keys, an integer in quotes is that integer, and a
/// padding word is read; each with a note. A word that is no size stays an error.
#[test]
fn sizes_as_ranges_lists_and_words() {
    let norm = "op = 'norm'\ndtypes = ['bf16']\nproblem = { rows = [1, 16384], cols = 7168 }";
    let s = spec(norm, "'h100'").unwrap();
    assert_eq!(s.dim("rows"), Some(16384));
    assert!(noted(&s, "read as a range: planned at the upper end 16384"));
    // a set of sizes: the largest
    let s = spec(&norm.replace("[1, 16384]", "[64, 4096, 512]"), "'h100'").unwrap();
    assert_eq!(s.dim("rows"), Some(4096));
    assert!(noted(&s, "read as a set of sizes"));
    let s = spec(&norm.replace("[1, 16384]", "'16_384'"), "'h100'").unwrap();
    assert_eq!(s.dim("rows"), Some(16384));
    // per-dimension kernel sizes, NCDHW one-letter names and a causal padding word
    let conv3d = "op = 'conv3d'\ndtypes = ['fp16', 'fp32']\nproblem = { n = 1, c = 256, k = 256, d = 35, h = 130, w = 130, kernel = [3, 3, 3], stride = [1, 1, 1], padding = 'causal' }";
    let s = spec(conv3d, "'gfx1100'").unwrap();
    assert_eq!(s.dim("kernel_d"), Some(3));
    assert_eq!(s.dim("kernel_w"), Some(3));
    assert_eq!(s.dim("batch"), Some(1));
    assert_eq!(s.dim("out_channels"), Some(256));
    assert!(noted(&s, "read as a causal convolution"));
    assert!(work(&s).flops > 0.0);
    // a word that is no size is still an error at the value
    let e = spec(&norm.replace("[1, 16384]", "'dynamic'"), "'h100'").unwrap_err();
    assert!(e.message.contains("wrong type for `rows`"), "{}", e.message);
}

/// Requirements in words and other units: a performance phrase is graded by its words, a
/// latency in ms is converted, both directions of an op without a backward model plan the
/// forward pass; a one-word typo is still an error.
#[test]
fn requirements_in_words_and_units() {
    let norm = "op = 'norm'\ndtypes = ['bf16']\nproblem = { rows = 64, cols = 7168 }";
    let s = spec_with(
        norm,
        "'h100'",
        "[requirements]\nperformance = 'bandwidth-bound is fine'\nlatency_ms = 5\n",
    )
    .unwrap();
    assert_eq!(s.performance.as_str(), "reasonable");
    assert_eq!(s.latency_us, Some(5000.0));
    assert!(noted(&s, "`latency_ms` read as `latency_us = 5000`"));
    let s = spec_with(
        norm,
        "'h100'",
        "[requirements]\nperformance = 'as close to the roofline as we can'\n",
    )
    .unwrap();
    assert_eq!(s.performance.as_str(), "near-peak");
    let e = spec_with(
        norm,
        "'h100'",
        "[requirements]\nperformance = 'near-peek'\n",
    )
    .unwrap_err();
    assert_eq!(e.suggestion.as_deref(), Some("near-peak"));
    let moe = "op = 'moe'\ndirection = 'forward+backward'\ndtypes = ['bf16', 'fp32']\nproblem = { tokens = 4096, experts = 64, top_k = 8 }";
    let s = spec(moe, "'h100'").unwrap();
    assert_eq!(s.direction, Direction::Forward);
    assert!(noted(&s, "no backward work model for op `moe`"));
    // an operating-system list in [backends] is a note; the targets stay
    let s = spec_with(norm, "'gfx1100'", "os = ['linux', 'windows']\n").unwrap();
    assert!(noted(&s, "`os`"));
}

/// One name where a list is expected is the list of that name; a duration may carry its unit in
/// a text; a latency without a unit is a note, a word that is no duration an error.
#[test]
fn one_name_for_a_list_and_durations_in_text() {
    let norm = "op = 'norm'\ndtypes = 'bf16'\nproblem = { rows = 64, cols = 7168 }";
    let t = format!("[kernel]\nname = 'x'\n{norm}\n[backends]\ntargets = 'h100'\nstretch = 'm3-max'\n[team]\nexpertise = 'cuda'\n[abstraction]\nallowed = 'triton'\n");
    let s = parse_spec(&t, Kb::builtin()).unwrap();
    assert_eq!(s.targets.len(), 2, "{:?}", s.targets);
    assert_eq!(s.allowed, vec![Abstraction::Triton]);
    // a misspelt single target is still an error at its value
    let e = parse_spec(&t.replace("'h100'", "'gfx9420'"), Kb::builtin()).unwrap_err();
    assert_eq!(e.suggestion.as_deref(), Some("gfx942"));
    for (line, us) in [
        ("latency = '20 us'", Some(20.0)),
        ("latency = '5ms'", Some(5000.0)),
        ("latency_ms = '0.5'", Some(500.0)),
        ("latency_us = '20'", Some(20.0)),
        ("latency = 20", None),
    ] {
        let s = spec_with(norm, "'h100'", &format!("[requirements]\n{line}\n")).unwrap();
        assert_eq!(s.latency_us, us, "{line}");
    }
    assert!(spec_with(norm, "'h100'", "[requirements]\nlatency = 'fast'\n").is_err());
    let s = spec_with(norm, "'h100'", "[requirements]\nperformance = 'high'\n").unwrap();
    assert_eq!(s.performance.as_str(), "near-peak");
}

/// Op names of the classes the knowledge base now knows are read as those entries, and a
/// communication word decides a fused op's reading wherever it stands.
#[test]
fn knowledge_entries_by_name_and_communication_first() {
    for (op, entry) in [
        ("cholesky", "dense-solver"),
        ("batched-cholesky", "dense-solver"),
        ("tridiagonal-solve", "tridiagonal-solve"),
        ("monte-carlo", "random-generation"),
        ("hash-count", "hash-table"),
        ("sparse-conv", "sparse-conv"),
        ("grid-sample", "grid-sample"),
        ("nms", "nms"),
        ("gate-apply", "statevector"),
        ("neighbor-list", "neighbor-list"),
        ("gemm-reduce-scatter", "collective"),
        ("matmul-allreduce", "collective"),
        ("viterbi", "viterbi"),
        ("forced-alignment", "viterbi"),
        ("bvh-traversal", "ray-tracing"),
    ] {
        let s = spec(
            &format!("op = '{op}'\ndtypes = ['fp32']\nproblem = {{ n = 1024 }}"),
            "'h100', 'mi300x'",
        )
        .unwrap();
        assert_eq!(s.kb_op(), entry, "{op}");
    }
}

/// A weight-only quantized format after the activations' dtype of a matrix op is the weight
/// dtype (with a note), not the compute dtype; elsewhere the dtypes keep their positions.
#[test]
fn a_quantized_weight_format_in_dtypes_is_the_weight_dtype() {
    let s = spec(
        "op = 'gemm'\ndtypes = ['fp16', 'int4-awq-g128', 'fp16']\nproblem = { m = 16, n = 4096, k = 4096 }",
        "'h100'",
    )
    .unwrap();
    assert_eq!(s.compute, Dtype::Fp16);
    assert!(s.weight_quant.is_some());
    assert!(noted(&s, "read as the weight dtype"));
    let s = spec(
        "op = 'gemm'\ndtypes = ['fp16', 'fp32', 'fp16']\nproblem = { m = 16, n = 4096, k = 4096 }",
        "'h100'",
    )
    .unwrap();
    assert!(s.weight_quant.is_none());
    assert_eq!(s.compute, Dtype::Fp32);
}

/// MoE permute / unpermute move one hidden row per (token, expert) assignment: `hidden` is in
/// their work model, and the permuted tensor's size decides the index-width risk.
#[test]
fn moe_permute_moves_hidden_rows() {
    let s = spec(
        "op = 'moe-permute'\ndtypes = ['bf16', 'fp32']\nproblem = { tokens = 65536, experts = 256, top_k = 8, hidden = 7168 }",
        "'h100'",
    )
    .unwrap();
    assert_eq!(s.kind(), Some("permute"));
    assert!(!noted(&s, "is not in the work model"));
    let w = work(&s);
    assert!(
        w.bytes >= 65536.0 * 8.0 * 7168.0 * 2.0,
        "{}",
        w.bytes_formula
    );
    assert_eq!(w.flops, 0.0);
    let s = spec(
        "op = 'moe-unpermute'\ndtypes = ['bf16', 'fp32']\nproblem = { tokens = 1024, experts = 64, top_k = 8, hidden = 4096 }",
        "'h100'",
    )
    .unwrap();
    assert_eq!(work(&s).flops, 2.0 * 1024.0 * 8.0 * 4096.0);
}

/// An op without a work model is sized from `n` (or `rows` x `cols`) only when those are its
/// only sizes: beside others (`c`, `h`, `w`, `systems`) `n` may be a batch, so the traffic stays
/// unknown and a note names the sizes.
#[test]
fn no_streaming_guess_beside_other_sizes() {
    let alone = spec(
        "op = 'custom'\ndtypes = ['fp32']\nproblem = { n = 1048576 }",
        "'h100'",
    )
    .unwrap();
    assert!(work(&alone).unknown.is_none());
    assert!(work(&alone).bytes > 0.0);
    let beside = spec(
        "op = 'grid-sample'\ndtypes = ['fp32']\nproblem = { n = 8, c = 64, h_in = 256, w_in = 256, h_out = 256, w_out = 256 }",
        "'h100'",
    )
    .unwrap();
    assert!(work(&beside).unknown.is_some());
    assert!(noted(&beside, "sizes besides `n`"), "{:?}", beside.notes);
}
