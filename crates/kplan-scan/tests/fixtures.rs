//! Every CUDA/HIP rule has `tests/fixtures/<rule>/fire.cu` (each expected finding marked with
//! `//~ <rule>` on its line) and `pass.cu` (the portable rewrite: the rule must stay silent);
//! layout and annotations: `kplan_test_support::fixtures`.

use kplan_kb::Kb;
use kplan_scan::{scan_text, FileKind, Lang, ScanCtx};
use kplan_test_support::fixtures;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const SCOPE: &[&str] = &["sm_90a", "gfx942", "gfx1100"];

fn fixture_dir() -> PathBuf {
    fixtures::dir()
}

fn lines_of(ctx: &ScanCtx, path: &Path, rule: &str) -> (BTreeSet<u32>, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let f = scan_text(ctx, path, FileKind::Cuda, &text);
    let mine: Vec<_> = f.iter().filter(|f| f.rule == rule).collect();
    (
        mine.iter().map(|f| f.line).collect(),
        mine.iter()
            .map(|f| format!("{}:{} {}", f.line, f.column, f.message))
            .collect(),
    )
}

#[test]
fn every_rule_has_fixtures_that_fire_and_pass() {
    let kb = Kb::builtin();
    let ctx = ScanCtx::with_targets(kb, SCOPE).unwrap();
    let mut failures = Vec::new();
    for rule in kplan_scan::all_rules()
        .into_iter()
        .filter(|r| r.lang == Lang::Cuda)
    {
        let fire = fixtures::fire(rule.id, false);
        let pass = fixtures::pass(rule.id, false);
        assert!(
            fire.is_file() && pass.is_file(),
            "{} lacks fire.cu/pass.cu",
            rule.id
        );
        let want = fixtures::lines_of(&fixtures::read(&fire), rule.id);
        assert!(
            !want.is_empty(),
            "{}: fire.cu has no //~ annotations",
            rule.id
        );
        let (got, msgs) = lines_of(&ctx, &fire, rule.id);
        if got != want {
            failures.push(format!(
                "{}: fire.cu expected lines {:?}, got {:?}\n  {}",
                rule.id,
                want,
                got,
                msgs.join("\n  ")
            ));
        }
        let (got, msgs) = lines_of(&ctx, &pass, rule.id);
        if !got.is_empty() {
            failures.push(format!(
                "{}: pass.cu must not fire, got\n  {}",
                rule.id,
                msgs.join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// A rule whose hazard depends on the file being HIP source keeps `fire.hip` / `pass.hip`
/// next to its `.cu` fixtures; they are read with their own extension.
#[test]
fn hip_fixtures_fire_and_pass() {
    let kb = Kb::builtin();
    let ctx = ScanCtx::with_targets(kb, SCOPE).unwrap();
    let mut failures = Vec::new();
    let mut seen = 0;
    for rule in kplan_scan::all_rules()
        .into_iter()
        .filter(|r| r.lang == Lang::Cuda)
    {
        let dir = fixture_dir().join(rule.id);
        let (fire, pass) = (dir.join("fire.hip"), dir.join("pass.hip"));
        if !fire.is_file() && !pass.is_file() {
            continue;
        }
        seen += 1;
        assert!(
            fire.is_file() && pass.is_file(),
            "{}: fire.hip and pass.hip come together",
            rule.id
        );
        let want = fixtures::lines_of(&fixtures::read(&fire), rule.id);
        let (got, msgs) = lines_of(&ctx, &fire, rule.id);
        if want.is_empty() || got != want {
            failures.push(format!(
                "{}: fire.hip expected lines {want:?}, got {got:?}\n  {}",
                rule.id,
                msgs.join("\n  ")
            ));
        }
        let (got, msgs) = lines_of(&ctx, &pass, rule.id);
        if !got.is_empty() {
            failures.push(format!(
                "{}: pass.hip must not fire, got\n  {}",
                rule.id,
                msgs.join("\n  ")
            ));
        }
    }
    assert!(seen > 0, "no rule has .hip fixtures");
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn warp_size_rules_are_silent_for_nvidia_only_scope() {
    let kb = Kb::builtin();
    let ctx = ScanCtx::with_targets(kb, &["sm_90a", "sm_80"]).unwrap();
    for rule in [
        "warp-size-literal",
        "warp-size-constant",
        "shuffle-offset-literal",
        "ballot-narrowing",
        "lane-partials-size",
        "full-mask-literal",
    ] {
        let (got, msgs) = lines_of(&ctx, &fixture_dir().join(rule).join("fire.cu"), rule);
        assert!(
            got.is_empty(),
            "{rule} fired for an NVIDIA-only scope: {msgs:?}"
        );
    }
}

#[test]
fn warp_size_rules_are_errors_with_a_wave64_target() {
    let kb = Kb::builtin();
    let ctx = ScanCtx::with_targets(kb, &["sm_90a", "gfx942"]).unwrap();
    let path = fixture_dir().join("warp-size-literal/fire.cu");
    let text = std::fs::read_to_string(&path).unwrap();
    let f = scan_text(&ctx, &path, FileKind::Cuda, &text);
    let w: Vec<_> = f.iter().filter(|f| f.rule == "warp-size-literal").collect();
    assert!(!w.is_empty());
    // lane and warp arithmetic is an error; a block-size sweep in steps of 32 and a thread
    // count made from a number of warps are warnings
    assert!(w.iter().all(|f| (f.severity == kplan_scan::Severity::Error
        || f.severity == kplan_scan::Severity::Warning
            && (f.message.contains("steps block sizes")
                || f.message.contains("counts threads from a number of warps")
                || f.message.contains("half as many wavefronts")))
        && f.targets == vec!["gfx942".to_string()]));
    assert!(w.iter().any(|f| f.severity == kplan_scan::Severity::Warning
        && f.message.contains("half as many wavefronts")));
    assert!(w.iter().any(|f| f.severity == kplan_scan::Severity::Error));
}

#[test]
fn wave32_amd_scope_keeps_mask_rule_but_not_wave64_rules() {
    let kb = Kb::builtin();
    let ctx = ScanCtx::with_targets(kb, &["gfx1100"]).unwrap();
    let (got, _) = lines_of(
        &ctx,
        &fixture_dir().join("full-mask-literal/fire.cu"),
        "full-mask-literal",
    );
    assert!(
        !got.is_empty(),
        "HIP rejects 32-bit masks on every AMD target"
    );
    let (got, _) = lines_of(
        &ctx,
        &fixture_dir().join("warp-size-literal/fire.cu"),
        "warp-size-literal",
    );
    assert!(got.is_empty());
}

#[test]
fn suppression_comment_silences_one_rule() {
    let kb = Kb::builtin();
    let ctx = ScanCtx::with_targets(kb, SCOPE).unwrap();
    let src = "__global__ void k(int* x) {\n    // kplan: allow(warp-size-literal)\n    int lane = threadIdx.x % 32;\n    int w = threadIdx.x / 32; // kplan: allow(hardcoded-tile)\n    x[lane] = w;\n}\n";
    let f = scan_text(&ctx, Path::new("s.cu"), FileKind::Cuda, src);
    let lines: Vec<u32> = f
        .iter()
        .filter(|f| f.rule == "warp-size-literal")
        .map(|f| f.line)
        .collect();
    assert_eq!(lines, vec![4]);
}

#[test]
fn messages_follow_the_house_style() {
    let kb = Kb::builtin();
    let ctx = ScanCtx::with_targets(kb, SCOPE).unwrap();
    let mut n = 0;
    for rule in kplan_scan::all_rules()
        .into_iter()
        .filter(|r| r.lang == Lang::Cuda)
    {
        assert!(
            rule.summary
                .chars()
                .next()
                .is_some_and(|c| !c.is_uppercase()),
            "{}: summary starts uppercase",
            rule.id
        );
        assert!(
            !rule.summary.ends_with('.'),
            "{}: summary ends with a period",
            rule.id
        );
        let path = fixture_dir().join(rule.id).join("fire.cu");
        let text = std::fs::read_to_string(&path).unwrap();
        for f in scan_text(&ctx, &path, FileKind::Cuda, &text) {
            n += 1;
            let first = f.message.chars().next().unwrap();
            assert!(
                !first.is_uppercase(),
                "{}: message starts uppercase: {}",
                f.rule,
                f.message
            );
            assert!(
                !f.message.ends_with('.'),
                "{}: message ends with a period: {}",
                f.rule,
                f.message
            );
            assert!(
                !f.help.is_empty() && !f.help.ends_with('.'),
                "{}: help empty or ends with a period: {}",
                f.rule,
                f.help
            );
            assert!(!f.targets.is_empty(), "{}: finding without targets", f.rule);
        }
    }
    assert!(n > 20);
}

#[test]
fn rule_ids_are_unique_and_kebab_case() {
    let rules = kplan_scan::all_rules();
    let mut seen = BTreeSet::new();
    for r in &rules {
        assert!(seen.insert(r.id), "duplicate rule id {}", r.id);
        assert!(
            r.id.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{} is not kebab-case",
            r.id
        );
        assert!(
            !r.what.is_empty()
                && !r.why.is_empty()
                && !r.example.is_empty()
                && !r.use_instead.is_empty(),
            "{} lacks a doc section",
            r.id
        );
    }
}

#[test]
fn platform_branches_belong_in_the_portability_header() {
    let kb = Kb::builtin();
    let ctx = ScanCtx::with_targets(kb, SCOPE).unwrap();
    let path = fixture_dir().join("platform-ifdef-in-kernel/fire.cu");
    let text = std::fs::read_to_string(&path).unwrap();
    let f = scan_text(&ctx, Path::new("include/kplan.h"), FileKind::Cuda, &text);
    assert!(f.iter().all(|f| f.rule != "platform-ifdef-in-kernel"));
    // configured header
    let cfg = kplan_scan::Config::parse(
        Path::new("kplan.toml"),
        "header = \"src/port.cuh\"\n",
        &kplan_scan::check_rule_id,
    )
    .unwrap();
    let ctx = ScanCtx::new(kb, &["sm_90a".into(), "gfx942".into()], cfg).unwrap();
    assert!(
        scan_text(&ctx, Path::new("src/port.cuh"), FileKind::Cuda, &text)
            .iter()
            .all(|f| f.rule != "platform-ifdef-in-kernel")
    );
    assert!(
        scan_text(&ctx, Path::new("src/other.cu"), FileKind::Cuda, &text)
            .iter()
            .any(|f| f.rule == "platform-ifdef-in-kernel")
    );
}

#[test]
fn default_width_wrapper_every_caller_passes_is_a_note() {
    let kb = Kb::builtin();
    let ctx = ScanCtx::with_targets(kb, &["gfx942"]).unwrap();
    let text =
        "__device__ float w(float v, int m, int width = 32) { return __shfl_xor(v, m, width); }\n\
__device__ float a(float v) { return w(v, 1, 16); }\n\
__device__ float x(float v, int m, int width = 32) { return __shfl_xor(v, m, width); }\n\
__device__ float b(float v) { return x(v, 1); }\n";
    let f = scan_text(&ctx, Path::new("w.cu"), FileKind::Cuda, text);
    let mine: Vec<_> = f
        .iter()
        .filter(|f| f.rule == "shuffle-logical-warp-width")
        .map(|f| (f.line, f.severity))
        .collect();
    assert_eq!(
        mine,
        vec![
            (1, kplan_scan::Severity::Note),
            (3, kplan_scan::Severity::Warning)
        ]
    );
}

#[test]
fn ptx_behind_a_file_defined_cuda_arch_is_left_to_the_shim() {
    let kb = Kb::builtin();
    let ctx = ScanCtx::with_targets(kb, &["gfx942", "sm_90a"]).unwrap();
    let body = "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800\n\
__device__ void f() {}\n\
#else\n\
__device__ void f() { asm volatile(\"cp.async.commit_group;\\n\" ::); }\n\
#endif\n";
    let shim = format!(
        "#if defined(__HIP_DEVICE_COMPILE__) && !defined(__CUDA_ARCH__)\n#define __CUDA_ARCH__ 700\n#endif\n{body}"
    );
    let count = |text: &str| {
        scan_text(&ctx, Path::new("s.cu"), FileKind::Cuda, text)
            .iter()
            .filter(|f| f.rule == "inline-asm-unguarded")
            .count()
    };
    assert_eq!(count(body), 1);
    assert_eq!(count(&shim), 0);
}
