//! Every Triton rule against its fixtures: `tests/fixtures/<rule-id>/fire.py` must produce exactly
//! the findings annotated `# expect: <rule-id>` (on the finding's first line), and `pass.py` must
//! produce none. Targets: sm_90a, gfx942 (wave64, FNUZ fp8, 64 KiB LDS), gfx950 (OCP fp8,
//! 160 KiB LDS) and gfx1100, so every per-target branch of the rules is in scope.

use kplan_kb::Kb;
use kplan_scan::{python, scan_text, FileKind, ScanCtx};
use kplan_test_support::fixtures;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    fixtures::dir()
}

/// Every Triton fixture file (`tests/fixtures/triton-*/{fire,pass}.py`).
fn fixture_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = python::RULES
        .iter()
        .flat_map(|m| ["fire.py", "pass.py"].map(|f| fixtures().join(m.id).join(f)))
        .collect();
    v.sort();
    v
}

fn ctx() -> ScanCtx<'static> {
    ScanCtx::with_targets(Kb::builtin(), &["sm_90a", "gfx942", "gfx950", "gfx1100"]).unwrap()
}

fn expected(text: &str) -> BTreeSet<(u32, String)> {
    fixtures::annotations(text)
}

fn found(ctx: &ScanCtx, path: &Path, text: &str) -> BTreeSet<(u32, String)> {
    scan_text(ctx, path, FileKind::Python, text)
        .into_iter()
        .map(|f| (f.line, f.rule.to_string()))
        .collect()
}

#[test]
fn every_rule_has_fixtures_that_fire_and_that_stay_clean() {
    let ctx = ctx();
    for meta in python::RULES {
        let fires = fixtures::fire(meta.id, true);
        let clean = fixtures::pass(meta.id, true);
        let text =
            std::fs::read_to_string(&fires).unwrap_or_else(|e| panic!("{}: {e}", fires.display()));
        let want = expected(&text);
        assert!(
            want.iter().any(|(_, r)| r == meta.id),
            "{} annotates no `{}` finding",
            fires.display(),
            meta.id
        );
        assert_eq!(found(&ctx, &fires, &text), want, "{}", fires.display());
        let text =
            std::fs::read_to_string(&clean).unwrap_or_else(|e| panic!("{}: {e}", clean.display()));
        assert_eq!(
            found(&ctx, &clean, &text),
            BTreeSet::new(),
            "{}",
            clean.display()
        );
    }
}

#[test]
fn scope_decides_who_hears_about_it() {
    let text = std::fs::read_to_string(fixtures().join("triton-num-warps-wave64/fire.py")).unwrap();
    let nv = ScanCtx::with_targets(Kb::builtin(), &["sm_90a", "sm_80"]).unwrap();
    let p = Path::new("k.py");
    assert!(scan_text(&nv, p, FileKind::Python, &text)
        .iter()
        .all(|f| f.rule != "triton-num-warps-wave64"));
    let amd = ScanCtx::with_targets(Kb::builtin(), &["gfx942"]).unwrap();
    let f = scan_text(&amd, p, FileKind::Python, &text);
    let hit = f
        .iter()
        .find(|f| f.rule == "triton-num-warps-wave64")
        .unwrap();
    assert_eq!(hit.targets, vec!["gfx942".to_string()]);
    assert!(hit.message.contains("2048 threads"), "{}", hit.message);
    // fp8: OCP dtypes matter only where a FNUZ-only target is in scope
    let fp8 = std::fs::read_to_string(fixtures().join("triton-fp8-encoding/fire.py")).unwrap();
    let ocp_only = ScanCtx::with_targets(Kb::builtin(), &["sm_90a", "gfx950"]).unwrap();
    let f = scan_text(&ocp_only, p, FileKind::Python, &fp8);
    assert!(f.iter().any(|f| f.message.contains("float8_e4m3fnuz")));
    assert!(!f.iter().any(|f| f.message.contains("float8e4nv")));
}

#[test]
fn messages_follow_the_house_style_and_suppressions_work() {
    let ctx = ctx();
    for path in fixture_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        for f in scan_text(&ctx, &path, FileKind::Python, &text) {
            let first = f.message.chars().next().unwrap();
            assert!(
                !first.is_uppercase() && !f.message.ends_with('.'),
                "{}: {}",
                path.display(),
                f.message
            );
            assert!(!f.help.is_empty() && !f.targets.is_empty());
        }
    }
    let text = "import triton\nCFG = triton.Config({}, num_warps=32)  # kplan: allow(triton-num-warps-wave64)\n";
    assert!(found(&ctx, Path::new("k.py"), text).is_empty());
}

#[test]
fn reference_kernels_are_clean() {
    let ctx = ctx();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../kernels/triton");
    for name in ["softmax.py", "rmsnorm.py"] {
        let path = root.join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(found(&ctx, &path, &text), BTreeSet::new(), "{name}");
    }
}

#[test]
fn truncated_and_mangled_files_never_panic() {
    let ctx = ctx();
    let mut texts: Vec<String> = Vec::new();
    for path in fixture_files() {
        texts.push(std::fs::read_to_string(path).unwrap());
    }
    for text in &texts {
        // every prefix (unclosed brackets, strings, defs cut mid-way) and a dedented copy
        let cuts: Vec<usize> = text.char_indices().map(|(i, _)| i).step_by(7).collect();
        for &c in &cuts {
            let _ = scan_text(&ctx, Path::new("t.py"), FileKind::Python, &text[..c]);
        }
        let dedented: String = text
            .lines()
            .map(|l| l.trim_start())
            .collect::<Vec<_>>()
            .join("\n");
        let _ = scan_text(&ctx, Path::new("t.py"), FileKind::Python, &dedented);
        let no_newlines = text.replace('\n', " ");
        let _ = scan_text(&ctx, Path::new("t.py"), FileKind::Python, &no_newlines);
    }
}

#[test]
fn files_named_for_a_cpu_another_backend_or_one_arch_are_not_scanned() {
    let ctx = ctx();
    let path = fixtures().join("triton-fp8-encoding/fire.py");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!found(&ctx, Path::new("quant/kernels.py"), &text).is_empty());
    for other in [
        "inductor_passes/x86.py",
        "fx_passes/concat_linear_fusion_cpu.py",
        "codegen/cpp_sdpa_template.py",
        "ops/xpu/kernels.py",
        // written for one architecture on purpose
        "gluon_kernels/gfx1250/attention.py",
        "gluon_kernels/gfx950/attention/decode.py",
        "kernels/gemm_sm100.py",
    ] {
        assert_eq!(
            found(&ctx, Path::new(other), &text),
            BTreeSet::new(),
            "{other}"
        );
    }
    // folders above the file's own are not read: a checkout under `/home/cpu/` still scans
    assert!(!found(&ctx, Path::new("/home/cpu/src/quant/kernels.py"), &text).is_empty());
}

#[test]
fn fp8_encoding_is_silent_in_pytest_files() {
    let text = std::fs::read_to_string(fixtures::fire("triton-fp8-encoding", true)).unwrap();
    let ctx = ctx();
    let f = scan_text(
        &ctx,
        Path::new("tests/test_fp8.py"),
        FileKind::Python,
        &text,
    );
    assert!(f.iter().all(|f| f.rule != "triton-fp8-encoding"));
    let f = scan_text(&ctx, Path::new("ops/fp8.py"), FileKind::Python, &text);
    assert!(f.iter().any(|f| f.rule == "triton-fp8-encoding"));
}
