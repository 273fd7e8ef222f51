//! Every `examples/*.toml` has its plan committed as `examples/plans/<name>.md` and `.json`
//! (`cargo xtask generate` writes them; crates/xtask checks the committed copies). These tests
//! check the plans themselves: headings, sources, JSON, schema.

use kplan_kb::Kb;
use kplan_plan::render::{json, markdown, HEADINGS};
use kplan_plan::{build_plan, parse_spec, PlanInputs};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn example_specs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .expect("examples/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

#[test]
fn example_plans_are_well_formed() {
    let kb = Kb::builtin();
    let specs = example_specs();
    assert!(
        specs.len() >= 6,
        "expected at least six example specs, found {}",
        specs.len()
    );
    for spec_path in specs {
        let text = std::fs::read_to_string(&spec_path).unwrap();
        let spec = parse_spec(&text, kb)
            .unwrap_or_else(|e| panic!("{}", e.render(&spec_path.display().to_string(), &text)));
        let plan = build_plan(&spec, kb, &PlanInputs::default());
        let stem = spec_path.file_stem().unwrap().to_string_lossy().to_string();
        let md = markdown(&plan);
        let js = json(&plan);
        // Every heading, in order.
        let mut at = 0;
        for h in HEADINGS {
            let needle = format!("\n## {h}\n");
            let pos = md[at..]
                .find(&needle)
                .unwrap_or_else(|| panic!("{stem}: heading `{h}` missing or out of order"));
            at += pos + needle.len();
        }
        serde_json::from_str::<serde_json::Value>(&js).expect("valid JSON");
        // Every cited source key resolves to a titled source (KB or efficiency table).
        let unresolved: Vec<&str> = plan
            .sources
            .iter()
            .filter(|s| s.kind == "unknown")
            .map(|s| s.key.as_str())
            .collect();
        assert!(
            unresolved.is_empty(),
            "{stem}: unresolved source keys {unresolved:?}"
        );
    }
}

/// Every example plan's JSON, and plans for specs unlike the examples, validate against
/// docs/plan.schema.json (draft 2020-12).
#[test]
fn plans_validate_against_the_schema() {
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/plan.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
    let kb = Kb::builtin();
    let mut texts: Vec<(String, String)> = example_specs()
        .into_iter()
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    texts.push((
        "odd".into(),
        "[kernel]\nname='odd'\nop='custom'\ndtypes=['fp64']\nproblem={flops=0, bytes=7}\n[backends]\ntargets=['m3','pvc','gfx1201','sm_120']\n".into(),
    ));
    for (name, text) in texts {
        let spec = parse_spec(&text, kb).unwrap();
        let plan = build_plan(&spec, kb, &PlanInputs::default());
        let value: serde_json::Value = serde_json::from_str(&json(&plan)).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
    // The schema is not vacuous: a plan missing a key or with a bad status fails.
    let spec = parse_spec(
        &std::fs::read_to_string(root().join("examples/rmsnorm.toml")).unwrap(),
        kb,
    )
    .unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&json(&build_plan(&spec, kb, &PlanInputs::default()))).unwrap();
    v["checklist"][0]["status"] = "maybe".into();
    assert!(!validator.is_valid(&v));
    v.as_object_mut().unwrap().remove("tiles");
    assert!(!validator.is_valid(&v));
}

/// The risk register is not a template: across the example plans no single risk id makes up
/// more than 15% of all risk entries.
#[test]
fn no_risk_id_dominates_the_example_plans() {
    let kb = Kb::builtin();
    let mut count: std::collections::BTreeMap<String, usize> = Default::default();
    let mut total = 0usize;
    for spec_path in example_specs() {
        let text = std::fs::read_to_string(&spec_path).unwrap();
        let spec = parse_spec(&text, kb).unwrap();
        for r in build_plan(&spec, kb, &PlanInputs::default()).risks {
            *count.entry(r.id).or_default() += 1;
            total += 1;
        }
    }
    let (id, n) = count.iter().max_by_key(|(_, n)| **n).unwrap();
    assert!(
        (*n as f64) <= 0.15 * total as f64,
        "risk `{id}` is {n} of {total} risk entries across the examples (more than 15%)"
    );
}
