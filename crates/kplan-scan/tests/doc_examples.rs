//! Every rule's documentation, CUDA and Triton alike: its "Example" must fire the rule and its
//! "Use instead" must not, with every target family in scope (wave64 CDNA, wave32 RDNA, OCP-fp8
//! CDNA4, Hopper).

use kplan_kb::Kb;
use kplan_scan::{scan_text, FileKind, Lang, RuleMeta, ScanCtx};
use std::path::Path;

const SCOPE: &[&str] = &["sm_90a", "gfx942", "gfx950", "gfx1100"];

/// The snippet as a file of the rule's language: Triton snippets are statements, so they go in
/// the body of a function of a module that imports Triton; a CUDA snippet that defines no
/// function is statements too, and goes in the body of a kernel (of a host function when it
/// launches one).
fn as_file(meta: &RuleMeta, body: &str) -> (&'static str, FileKind, String) {
    match meta.lang {
        // a launch (`<<<...>>>`) is host code: the statements go in the body of a host function
        Lang::Cuda if body.contains("<<<") && !body.contains("__global__") => (
            "doc.cu",
            FileKind::Cuda,
            format!("void doc_example(const float* x, dim3 grid) {{\n{body}\n}}\n"),
        ),
        Lang::Cuda if !body.contains("__global__") && !body.contains("__device__") => (
            "doc.cu",
            FileKind::Cuda,
            format!("__global__ void doc_example(float* sdata, int tid) {{\n{body}\n}}\n"),
        ),
        Lang::Cuda => ("doc.cu", FileKind::Cuda, body.to_string()),
        Lang::Python => (
            "doc.py",
            FileKind::Python,
            format!(
                "import triton\nimport triton.language as tl\nimport torch\n\n\ndef f(x):\n{}\n",
                body.lines()
                    .map(|l| format!("    {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        ),
    }
}

fn hits(ctx: &ScanCtx, meta: &RuleMeta, body: &str) -> Vec<String> {
    let (name, kind, text) = as_file(meta, body);
    scan_text(ctx, Path::new(name), kind, &text)
        .into_iter()
        .filter(|f| f.rule == meta.id)
        .map(|f| format!("{}:{} {}", f.line, f.column, f.message))
        .collect()
}

#[test]
fn every_rule_example_fires_and_its_fix_does_not() {
    let ctx = ScanCtx::with_targets(Kb::builtin(), SCOPE).unwrap();
    let rules = kplan_scan::all_rules();
    assert!(rules.iter().any(|r| r.lang == Lang::Cuda));
    assert!(rules.iter().any(|r| r.lang == Lang::Python));
    let mut failures = Vec::new();
    for meta in rules {
        if hits(&ctx, meta, meta.example).is_empty() {
            failures.push(format!(
                "{}: the doc example does not fire:\n{}",
                meta.id, meta.example
            ));
        }
        let fixed = hits(&ctx, meta, meta.use_instead);
        if !fixed.is_empty() {
            failures.push(format!(
                "{}: the doc's \"use instead\" fires: {fixed:?}",
                meta.id
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}
