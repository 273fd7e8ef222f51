//! `kplan_new::generate` over every example spec: a project with every placeholder filled and
//! the files each strategy needs, or an `Unsupported` error that names what is supported; and
//! the writer's no-overwrite and no-partial-tree rules.

use kplan_kb::Kb;
use kplan_new::{generate, write_project, NewError, Options};
use std::path::PathBuf;

fn examples() -> Vec<PathBuf> {
    let dir = kplan_test_support::workspace_root().join("examples");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

fn plan_of(spec: &std::path::Path) -> kplan_plan::Plan {
    let kb = Kb::builtin();
    let text = std::fs::read_to_string(spec).unwrap();
    let s = kplan_plan::parse_spec(&text, kb).unwrap();
    kplan_plan::build_plan(&s, kb, &kplan_plan::PlanInputs::default())
}

fn placeholder(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(i) = rest.find("{{") {
        let after = &rest[i + 2..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if !name.is_empty() && after[name.len()..].starts_with("}}") {
            return Some(name);
        }
        rest = &rest[i + 1..];
    }
    None
}

#[test]
fn every_example_gives_a_project_or_says_what_is_supported() {
    let kb = Kb::builtin();
    let (mut made, mut refused) = (0, 0);
    for spec in examples() {
        let plan = plan_of(&spec);
        let opts = Options {
            source_path: spec.display().to_string(),
            ..Options::default()
        };
        match generate(&plan, kb, &opts) {
            Ok(p) => {
                made += 1;
                for f in &p.files {
                    assert!(
                        placeholder(&f.text).is_none(),
                        "{}: {} keeps {{{{{}}}}}",
                        spec.display(),
                        f.path,
                        placeholder(&f.text).unwrap()
                    );
                }
                let has = |suffix: &str| p.files.iter().any(|f| f.path.ends_with(suffix));
                for must in [
                    "include/kplan_portability.h",
                    ".github/workflows/kplan.yml",
                    "kplan.toml",
                    "README.md",
                    "Makefile",
                    "_cpu.cpp",
                ] {
                    assert!(has(must), "{}: no {must}", spec.display());
                }
                match p.kind {
                    "library" => assert!(has("_dispatch.cpp") && !has(".cu"), "{}", spec.display()),
                    "triton" => assert!(
                        has(".py") && has(".cu") && has(".toml"),
                        "{}",
                        spec.display()
                    ),
                    _ => assert!(
                        has(".cu") && has("_config.h") && has(".toml") && has("CMakeLists.txt"),
                        "{}",
                        spec.display()
                    ),
                }
                // the workflow's legs name the project's own files
                let wf = &p.file(".github/workflows/kplan.yml").unwrap().text;
                for f in &p.files {
                    if f.path.starts_with("kernels/")
                        && (f.path.ends_with(".toml") || f.path.ends_with(".cu"))
                    {
                        let named = wf.contains(&f.path);
                        assert!(
                            named || p.kind == "triton",
                            "{}: the workflow does not name {}",
                            spec.display(),
                            f.path
                        );
                    }
                }
            }
            Err(NewError::Unsupported(m)) => {
                refused += 1;
                assert!(m.contains(&plan.kernel.name), "{}: {m}", spec.display());
            }
            Err(e) => panic!("{}: {e}", spec.display()),
        }
    }
    assert!(made >= 8, "{made} projects, {refused} refused");
}

#[test]
fn nothing_is_written_over_existing_files_and_nothing_is_left_on_error() {
    let kb = Kb::builtin();
    let spec = kplan_test_support::workspace_root().join("examples/rmsnorm.toml");
    let p = generate(&plan_of(&spec), kb, &Options::default()).unwrap();
    let tmp = kplan_test_support::tempdir("new-write");
    let dir = tmp.path().join("proj");
    let written = write_project(&p, &dir, false).unwrap();
    assert_eq!(written.len(), p.files.len());
    std::fs::write(dir.join("kplan.toml"), "mine\n").unwrap();
    match write_project(&p, &dir, false) {
        Err(NewError::Exists { files, .. }) => assert_eq!(files.len(), p.files.len()),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("kplan.toml")).unwrap(),
        "mine\n"
    );
    write_project(&p, &dir, true).unwrap();
    assert_ne!(
        std::fs::read_to_string(dir.join("kplan.toml")).unwrap(),
        "mine\n"
    );
    // a destination that is a file fails before anything is written
    let f = tmp.path().join("file");
    std::fs::write(&f, "x").unwrap();
    assert!(write_project(&p, &f, true).is_err());
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}
