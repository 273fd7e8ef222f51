//! Every `examples/*.toml` has its plan committed as `examples/plans/<name>.md` and `.json`;
//! this test regenerates them and diffs. `UPDATE_GOLDEN=1 cargo test -p kplan-plan` refreshes.

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
fn example_plans_are_up_to_date() {
    let kb = Kb::builtin();
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let specs = example_specs();
    assert!(
        specs.len() >= 6,
        "expected at least six example specs, found {}",
        specs.len()
    );
    let mut stale = Vec::new();
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
        for (ext, text) in [("md", md), ("json", js)] {
            let path = root().join("examples/plans").join(format!("{stem}.{ext}"));
            let old = std::fs::read_to_string(&path).unwrap_or_default();
            if old != text {
                if update {
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(&path, &text).unwrap();
                } else {
                    stale.push(path.display().to_string());
                }
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated plans (run `UPDATE_GOLDEN=1 cargo test -p kplan-plan`): {stale:?}"
    );
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

/// docs/plan.md embeds the efficiency table between markers; regenerate and diff it.
#[test]
fn docs_efficiency_table_is_up_to_date() {
    let path = root().join("docs/plan.md");
    let doc = std::fs::read_to_string(&path).expect("docs/plan.md");
    let (start, end) = ("<!-- efficiency-table:start (@generated from crates/kplan-plan/data/efficiency.toml) -->\n", "<!-- efficiency-table:end -->");
    let a = doc.find(start).expect("start marker") + start.len();
    let b = doc.find(end).expect("end marker");
    let table =
        kplan_plan::efficiency::markdown_table(kplan_plan::efficiency::EfficiencyTable::builtin());
    if doc[a..b] != table {
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(&path, format!("{}{}{}", &doc[..a], table, &doc[b..])).unwrap();
        } else {
            panic!("docs/plan.md efficiency table is stale (run `UPDATE_GOLDEN=1 cargo test -p kplan-plan`)");
        }
    }
}
