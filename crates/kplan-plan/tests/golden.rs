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
    assert!(specs.len() >= 6, "expected at least six example specs, found {}", specs.len());
    let mut stale = Vec::new();
    for spec_path in specs {
        let text = std::fs::read_to_string(&spec_path).unwrap();
        let spec = parse_spec(&text, kb).unwrap_or_else(|e| panic!("{}", e.render(&spec_path.display().to_string(), &text)));
        let plan = build_plan(&spec, kb, &PlanInputs::default());
        let stem = spec_path.file_stem().unwrap().to_string_lossy().to_string();
        let md = markdown(&plan);
        let js = json(&plan);
        // Every heading, in order.
        let mut at = 0;
        for h in HEADINGS {
            let needle = format!("\n## {h}\n");
            let pos = md[at..].find(&needle).unwrap_or_else(|| panic!("{stem}: heading `{h}` missing or out of order"));
            at += pos + needle.len();
        }
        serde_json::from_str::<serde_json::Value>(&js).expect("valid JSON");
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
    assert!(stale.is_empty(), "stale generated plans (run `UPDATE_GOLDEN=1 cargo test -p kplan-plan`): {stale:?}");
}
