//! No input makes the parser, the planner or the renderers panic: every prefix of every example
//! spec, and every single-line deletion, either plans or gives a located error.

use kplan_kb::Kb;
use kplan_plan::render::{json, markdown};
use kplan_plan::{build_plan, parse_spec, PlanInputs};
use std::path::Path;

fn check(name: &str, text: &str) {
    let kb = Kb::builtin();
    match parse_spec(text, kb) {
        Ok(spec) => {
            let p = build_plan(&spec, kb, &PlanInputs::default());
            let _ = markdown(&p);
            let _ = json(&p);
        }
        Err(e) => {
            let r = e.render(name, text);
            assert!(r.starts_with(&format!("{name}:")), "{r}");
            assert!(r.contains(": error: "), "{r}");
        }
    }
}

#[test]
fn prefixes_and_line_deletions_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (i, _) in text.char_indices() {
            check("spec.toml", &text[..i]);
            n += 1;
        }
        let lines: Vec<&str> = text.lines().collect();
        for skip in 0..lines.len() {
            let t: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != skip)
                .map(|(_, l)| *l)
                .collect();
            check("spec.toml", &t.join("\n"));
            n += 1;
        }
    }
    assert!(n > 1000, "only {n} cases");
}

#[test]
fn hostile_values_are_errors_not_panics() {
    for text in [
        "",
        "\u{feff}[kernel]",
        "[kernel]\nname='é'\nop='norm'\ndtypes=['bf16']\nproblem={rows=1,cols=9223372036854775807}\n[backends]\ntargets=['sm_80']\n",
        "[kernel]\nname='x'\nop='norm'\ndtypes=['bf16']\nproblem={rows=-1,cols=1}\n[backends]\ntargets=['sm_80']\n",
        "[kernel]\nname='x'\nop='custom'\ndtypes=['bf16']\nproblem={flops=nan,bytes=1}\n[backends]\ntargets=['sm_80']\n",
        "[kernel]\nname='x'\nop='custom'\ndtypes=['bf16']\nproblem={flops=1,bytes=inf}\n[backends]\ntargets=['sm_80']\n",
        "[kernel]\nname='x'\nop='attention'\ndtypes=['bf16']\nproblem={batch=1,heads=3,kv_heads=2,seq=1,head_dim=1}\n[backends]\ntargets=['sm_80']\n",
        "[kernel]\nname='x'\nop='gemm'\ndtypes=[]\nproblem={m=1,n=1,k=1}\n[backends]\ntargets=['sm_80']\n",
        "[kernel]\nname='x'\nop='gemm'\ndtypes=['fp8-e4m3fn','fp8-e4m3fnuz']\nproblem={m=1,n=1,k=1}\n[backends]\ntargets=['sm_80']\n",
        "[kernel]\nname='x'\nop='gemm'\ndtypes=['bf16']\nproblem={m=1,n=1,k=1}\n[backends]\ntargets=[]\n",
        "[kernel]\nname='x'\nop='gemm'\ndtypes=['bf16']\nproblem={m=1,n=1,k=1}\n[backends]\ntargets=['sm_80','sm_80']\n",
        "[kernel]\nname='  '\nop='gemm'\ndtypes=['bf16']\nproblem={m=1,n=1,k=1}\n[backends]\ntargets=['sm_80']\n",
        "[kernel]\nname='x'\nop='gemm'\ndtypes=['bf16']\nproblem={m=1,n=1,k=1}\n[backends]\ntargets=['sm_80']\n[abstraction]\nallowed=[]\n",
    ] {
        let r = parse_spec(text, Kb::builtin());
        assert!(r.is_err(), "accepted: {text}");
        let e = r.unwrap_err();
        let rendered = e.render("s.toml", text);
        assert!(rendered.starts_with("s.toml:"), "{rendered}");
    }
}

#[test]
fn odd_kb_limits_and_spans_inside_characters_do_not_panic() {
    let mut kb: Kb = Kb::builtin().clone();
    for a in kb.archs.iter_mut() {
        a.warp_size.value = Some(0);
        a.max_threads_per_block.value = Some(1);
        a.shared_per_block_bytes.value = Some(0);
    }
    let text = "[kernel]\nname='x'\nop='gemm'\ndtypes=['bf16']\nproblem={m=7,n=7,k=7}\n[backends]\ntargets=['sm_90a','gfx942','gfx1100','cpu']\n";
    let spec = parse_spec(text, &kb).unwrap();
    let p = build_plan(&spec, &kb, &PlanInputs::default());
    let _ = markdown(&p);
    for op in ["softmax", "elementwise", "attention"] {
        let problem = if op == "attention" {
            "batch=1,heads=1,seq=9,head_dim=9"
        } else {
            "rows=3,cols=5"
        };
        let problem = if op == "elementwise" { "n=5" } else { problem };
        let t = text
            .replace("'gemm'", &format!("'{op}'"))
            .replace("m=7,n=7,k=7", problem);
        let p = build_plan(&parse_spec(&t, &kb).unwrap(), &kb, &PlanInputs::default());
        let _ = json(&p);
    }
    let e = kplan_plan::SpecError {
        span: Some(1..2),
        message: "m".into(),
        suggestion: None,
    };
    let r = e.render("s.toml", "é\nx");
    assert!(r.starts_with("s.toml:1:1"), "{r}");
}

#[test]
fn spec_text_cannot_inject_headings() {
    let text = "[kernel]\nname = \"x\\n## 1. Backend matrix\\n\"\ndescription = \"\\n## Review checklist\\n```\"\nop = 'norm'\ndtypes = ['bf16']\nproblem = {rows=2, cols=2}\n[backends]\ntargets = ['sm_80']\n";
    let spec = parse_spec(text, Kb::builtin()).unwrap();
    let md = markdown(&build_plan(&spec, Kb::builtin(), &PlanInputs::default()));
    assert_eq!(md.matches("\n## 1. Backend matrix\n").count(), 1);
    assert_eq!(md.matches("\n## Review checklist\n").count(), 1);
}

#[test]
fn largest_allowed_sizes_do_not_overflow() {
    // Every size at the 2^40 limit: products of sizes exceed u64 and must not panic.
    let kb = kplan_kb::Kb::builtin();
    const L: &str = "1099511627776";
    for (op, problem) in [
        ("attention", format!("batch = {L}, heads = {L}, seq = {L}, head_dim = {L}")),
        ("attention", format!("batch = {L}, heads = {L}, seq_q = 1, seq_kv = {L}, head_dim = {L}, page_size = 1, total_tokens = {L}")),
        ("spmv", format!("rows = {L}, cols = {L}, nnz = {L}")),
        ("grouped-gemm", format!("groups = {L}, m = {L}, n = {L}, k = {L}")),
        ("conv", format!("batch = {L}, height = {L}, width = {L}, channels = {L}, kernel_h = {L}, kernel_w = {L}")),
        ("stencil", format!("nx = {L}, ny = {L}, nz = {L}, points = {L}, steps = {L}")),
        ("topk", format!("rows = {L}, cols = {L}, k = {L}")),
        ("sort", format!("n = {L}, key_bits = {L}")),
        ("quantize", format!("rows = {L}, cols = {L}, block = 1")),
        ("moe", format!("tokens = {L}, experts = {L}, top_k = {L}, block_size = {L}")),
    ] {
        let text = format!(
            "[kernel]\nname = \"x\"\nop = \"{op}\"\ndtypes = [\"bf16\", \"fp32\"]\nproblem = {{ {problem} }}\n[backends]\ntargets = [\"sm_80\", \"gfx942\"]\n"
        );
        let spec = kplan_plan::parse_spec(&text, kb)
            .unwrap_or_else(|e| panic!("{}", e.render("x.toml", &text)));
        let plan = kplan_plan::build_plan(&spec, kb, &kplan_plan::PlanInputs::default());
        let _ = kplan_plan::render::markdown(&plan);
        let _ = kplan_plan::render::json(&plan);
    }
    let text = "[kernel]\nname = \"x\"\nop = \"gemm\"\ndtypes = [\"bf16\"]\nproblem = { batch = 1099511627776, m = 1099511627776, n = 1099511627776, k = 1099511627776 }\n[backends]\ntargets = [\"sm_80\"]\n";
    let spec =
        kplan_plan::parse_spec(text, kb).unwrap_or_else(|e| panic!("{}", e.render("x.toml", text)));
    let plan = kplan_plan::build_plan(&spec, kb, &kplan_plan::PlanInputs::default());
    let _ = kplan_plan::render::markdown(&plan);
}
