//! The Markdown plan as a document: a one-page summary first in every plan, library and
//! framework verdicts about one page (under 200 lines; no tiles, no kernel compile legs), the
//! `use-framework` example (rowsum-framework) under 150 lines, and every proxy efficiency band labelled in the text as in the JSON.

use kplan_kb::Kb;
use kplan_plan::model::Decision;
use kplan_plan::render::markdown;
use kplan_plan::{build_plan, parse_spec, PlanInputs};
use std::path::Path;

fn plans() -> Vec<(String, kplan_plan::Plan)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut v: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    let kb = Kb::builtin();
    v.into_iter()
        .map(|p| {
            let spec = parse_spec(&std::fs::read_to_string(&p).unwrap(), kb).unwrap();
            (
                p.file_stem().unwrap().to_string_lossy().to_string(),
                build_plan(&spec, kb, &PlanInputs::default()),
            )
        })
        .collect()
}

#[test]
fn summary_first_and_library_verdicts_fit_one_page() {
    let mut framework = 0;
    for (stem, plan) in plans() {
        let md = markdown(&plan);
        let summary = md
            .find("\n## Summary\n")
            .unwrap_or_else(|| panic!("{stem}: no summary"));
        assert!(
            summary < md.find("\n## 1. ").unwrap(),
            "{stem}: summary not first"
        );
        let head = &md[summary..md.find("\n## 1. ").unwrap()];
        for part in [
            "**Verdict**",
            "**Top risks**",
            "**Expected per target**",
            "**Build first**",
            "**Open questions**",
        ] {
            assert!(head.contains(part), "{stem}: summary lacks {part}");
        }
        for p in &plan.performance {
            assert!(
                head.contains(&format!("  - {}: ", p.target)),
                "{stem}: no expectation for {}",
                p.target
            );
        }
        if matches!(
            plan.verdict.decision,
            Decision::UseFramework | Decision::UseVendorLibrary
        ) {
            assert!(plan.tiles.is_empty(), "{stem}: tiles for a library verdict");
            assert!(
                plan.ci.legs.iter().all(|l| l.kind != "compile"),
                "{stem}: kernel compile legs for a library verdict"
            );
            let lines = md.lines().count();
            assert!(
                lines < 200,
                "{stem}: {lines} lines for a `{}` plan",
                plan.verdict.decision.as_str()
            );
            if stem == "rowsum-framework" {
                assert_eq!(plan.verdict.decision, Decision::UseFramework);
                assert!(
                    lines < 150,
                    "{stem}: {lines} lines for a use-framework plan"
                );
                framework += 1;
            }
        }
        // A proxy band says so in the text, with its reason.
        for p in &plan.performance {
            if let Some(e) = p.efficiency.as_ref().filter(|e| e.proxy) {
                let r = e.proxy_reason.as_deref().expect("a proxy has a reason");
                assert!(
                    md.contains(&format!("proxy: {r}")),
                    "{stem} {}: proxy not labelled",
                    p.target
                );
            }
        }
    }
    assert!(framework > 0, "examples/rowsum-framework.toml is missing");
}

#[test]
fn expected_time_is_never_below_the_launch_floor_and_small_problems_are_latency_bound() {
    let mut latency = 0;
    for (stem, plan) in plans() {
        for p in &plan.performance {
            if let (Some(t), Some(f)) = (p.expected_time_us, p.launch_floor_us) {
                assert!(t >= f, "{stem} {}: {t} us below the {f} us floor", p.target);
            }
            if let (Some(r), Some(f)) = (p.roofline_time_us, p.launch_floor_us) {
                assert_eq!(p.latency_bound, r < 3.0 * f, "{stem} {}", p.target);
            }
            if p.latency_bound {
                latency += 1;
                let n = p.latency_note.as_deref().unwrap_or("");
                assert!(n.contains("latency-bound"), "{stem} {}: {n}", p.target);
            }
        }
    }
    assert!(
        latency > 0,
        "no example is latency-bound: the floor check ran on nothing"
    );
}
