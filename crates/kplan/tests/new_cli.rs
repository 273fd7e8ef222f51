//! `kplan new` through the real binary: projects for example specs of every strategy and several
//! op classes, each checked with the real tools: `kplan build` for every target in its
//! kplan.toml, `kplan verify` on its harness (cpu-simt at 32 and 64 lanes; the Triton kernel
//! under the interpreter), `kplan scan` without errors, the workflow against the GitHub workflow
//! schema, and the Makefile build of the CPU fallback with its own test. A missing toolchain is a
//! skip with the reason (a failure under KPLAN_REQUIRE_TOOLCHAINS=1).

use kplan_test_support::cli::{self, json, text};
use kplan_test_support::{kplan_command, toolchain};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kplan(args: &[&str]) -> Output {
    cli::output(kplan_command!().args(args))
}

fn root() -> PathBuf {
    kplan_test_support::workspace_root()
}

/// The tools the Makefile test needs: `make` and a host C++ compiler.
fn make_and_cxx() -> Result<(), String> {
    let ok = |c: &str, a: &str| {
        Command::new(c)
            .arg(a)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !ok("make", "--version") {
        return Err("no `make` on PATH".into());
    }
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    if !ok(&cxx, "--version") {
        return Err(format!("no host C++ compiler `{cxx}` (set CXX)"));
    }
    Ok(())
}

struct Generated {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    file: String,
}

/// `kplan new SPEC DIR` into a fresh temp dir; checks the kind it reports and that no template
/// placeholder is left in any file.
fn generate(spec: &Path, kind: &str, family: &str) -> Generated {
    let tmp = kplan_test_support::tempdir("new");
    let dir = tmp.path().join("proj");
    let o = kplan(&["new", spec.to_str().unwrap(), dir.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "kplan new {}:\n{}",
        spec.display(),
        text(&o)
    );
    let said = text(&o);
    assert!(
        said.contains(&format!("a {kind} project")) && said.contains(&format!("({family},")),
        "expected a {kind} project ({family}) for {}:\n{said}",
        spec.display()
    );
    let mut file = String::new();
    for e in walk(&dir) {
        let t = std::fs::read_to_string(&e).unwrap();
        assert!(
            !t.contains("{{")
                || !t
                    .split("{{")
                    .skip(1)
                    .any(|r| r
                        .split("}}")
                        .next()
                        .is_some_and(|n| !n.is_empty()
                            && n.chars().all(|c| c.is_ascii_uppercase() || c == '_'))),
            "{} has an unfilled placeholder",
            e.display()
        );
        let rel = e.strip_prefix(&dir).unwrap().to_string_lossy().to_string();
        if let Some(s) = rel
            .strip_prefix("kernels/")
            .and_then(|s| s.strip_suffix(".toml"))
        {
            file = s.to_string();
        }
        if let Some(s) = rel
            .strip_prefix("src/")
            .and_then(|s| s.strip_suffix("_dispatch.cpp"))
        {
            file = s.to_string();
        }
    }
    assert!(
        !file.is_empty(),
        "no harness or dispatch file in {}",
        dir.display()
    );
    Generated {
        _tmp: tmp,
        dir,
        file,
    }
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn check_scan(g: &Generated) {
    let o = kplan(&["scan", g.dir.to_str().unwrap(), "--format", "json"]);
    let j = json(&o);
    let errors: Vec<&serde_json::Value> = j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert!(
        errors.is_empty(),
        "kplan scan reports errors:\n{}",
        text(&o)
    );
    assert!(
        j["files_scanned"].as_u64().unwrap() >= 3,
        "kplan scan read too few files:\n{}",
        text(&o)
    );
}

fn check_workflow(g: &Generated) {
    let Some(tool) = toolchain::require(toolchain::check_jsonschema()) else {
        return;
    };
    let wf = g.dir.join(".github/workflows/kplan.yml");
    let o = Command::new(&tool)
        .args(["--builtin-schema", "vendor.github-workflows"])
        .arg(&wf)
        .output()
        .expect("run check-jsonschema");
    assert!(o.status.success(), "workflow rejected:\n{}", text(&o));
}

fn check_make(g: &Generated, extra: &[&str]) {
    if toolchain::require(make_and_cxx()).is_none() {
        return;
    }
    for target in std::iter::once("test").chain(extra.iter().copied()) {
        let o = Command::new("make")
            .arg("-C")
            .arg(&g.dir)
            .arg(target)
            .output()
            .expect("run make");
        assert!(o.status.success(), "make {target}:\n{}", text(&o));
        if target == "test" {
            assert!(
                text(&o).contains("CPU fallback test passed"),
                "make test:\n{}",
                text(&o)
            );
        }
    }
}

/// `make cuda` with the nvcc `scripts/test-env.sh` names (KPLAN_NVCC), for every NVIDIA target.
fn check_make_cuda(g: &Generated) {
    let Some(nvcc) = toolchain::require(
        std::env::var("KPLAN_NVCC")
            .map_err(|_| "KPLAN_NVCC is not set (source scripts/test-env.sh)".to_string()),
    ) else {
        return;
    };
    if toolchain::require(make_and_cxx()).is_none() {
        return;
    }
    let o = Command::new("make")
        .arg("-C")
        .arg(&g.dir)
        .arg("cuda")
        .arg(format!("NVCC={nvcc}"))
        .output()
        .expect("run make");
    assert!(o.status.success(), "make cuda:\n{}", text(&o));
}

/// `kplan build FILE` with the targets of the project's kplan.toml (or `targets`): every target
/// ok; a skipped target is a skip with the compiler's reason.
fn check_build(g: &Generated, file: &str, targets: Option<&str>) {
    let path = g.dir.join(file);
    let mut args = vec!["build", path.to_str().unwrap(), "--format", "json"];
    if let Some(t) = targets {
        args.extend(["--targets", t]);
    }
    let o = kplan(&args);
    let j = json(&o);
    let results = j["results"].as_array().unwrap();
    assert!(!results.is_empty(), "no targets built:\n{}", text(&o));
    for r in results {
        match r["status"].as_str().unwrap() {
            "ok" => {}
            "skipped" => toolchain::skip(format!(
                "{file} for {}: {}",
                r["target"],
                r["diagnostics"].as_str().unwrap_or("")
            )),
            _ => panic!(
                "kplan build {file} failed for {}:\n{}",
                r["target"],
                text(&o)
            ),
        }
    }
    assert!(o.status.success(), "kplan build {file}:\n{}", text(&o));
}

fn check_verify(g: &Generated, file: &str, backend: &[&str]) {
    let path = g.dir.join(file);
    let mut args = vec!["verify", path.to_str().unwrap(), "--format", "json"];
    args.extend(backend);
    let o = kplan(&args);
    assert!(o.status.success(), "kplan verify {file}:\n{}", text(&o));
    let j = json(&o);
    let status = j["status"].as_str().unwrap_or("");
    if status == "skipped" {
        toolchain::skip(format!("kplan verify {file}: {}", j["skip"]));
        return;
    }
    assert_eq!(status, "passed", "kplan verify {file}:\n{}", text(&o));
    assert!(j["runs"].as_u64().unwrap() > 0, "no runs:\n{}", text(&o));
}

fn gpu_targets(g: &Generated) -> String {
    let t = std::fs::read_to_string(g.dir.join("kplan.toml")).unwrap();
    let line = t.lines().find(|l| l.starts_with("targets")).unwrap();
    line.split('"')
        .skip(1)
        .step_by(2)
        .filter(|a| !a.starts_with("cpu-"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A single-source project: build every target, verify at 32 and 64 lanes, scan, workflow, make.
fn single_source(spec: &str, family: &str) {
    let g = generate(&root().join(spec), "hip-single-source", family);
    check_scan(&g);
    check_workflow(&g);
    check_make(&g, &["host"]);
    check_make_cuda(&g);
    check_build(&g, &format!("kernels/{}.cu", g.file), None);
    check_verify(
        &g,
        &format!("kernels/{}.toml", g.file),
        &["--backend", "cpu-simt", "--warp", "32,64"],
    );
}

#[test]
fn rmsnorm_bf16_single_source() {
    single_source("examples/rmsnorm.toml", "rmsnorm");
}

#[test]
fn elementwise_fp16_single_source() {
    single_source("examples/fused-bias-gelu.toml", "elementwise");
}

#[test]
fn layernorm_fp16_single_source() {
    single_source("examples/layernorm-fwd-turing.toml", "layernorm");
}

#[test]
fn softmax_fp16_single_source() {
    single_source("examples/softmax-masked-short-rows.toml", "softmax");
}

#[test]
fn reduce_sum_fp64_per_backend() {
    single_source(
        "examples/reduction-sum-fp64-deterministic.toml",
        "reduce-sum",
    );
}

#[test]
fn gemm_fp32_single_source() {
    single_source(
        "crates/kplan/tests/fixtures/new/gemm-fp32-simple.toml",
        "gemm",
    );
}

#[test]
fn row_max_fp32_single_source() {
    single_source("crates/kplan/tests/fixtures/new/row-max.toml", "row-max");
}

/// A Triton project: the Triton kernel for every GPU target and under the interpreter, the
/// portable kernel (the CPU fallback's kernel form) as in a single-source project.
fn triton(spec: &str, family: &str) {
    let g = generate(&root().join(spec), "triton", family);
    check_scan(&g);
    check_workflow(&g);
    check_make(&g, &[]);
    let gpus = gpu_targets(&g);
    check_build(&g, &format!("kernels/{}.py", g.file), Some(&gpus));
    check_verify(&g, &format!("kernels/{}.py", g.file), &["--backend", "cpu"]);
    check_verify(
        &g,
        &format!("kernels/{}.toml", g.file),
        &["--backend", "cpu-simt", "--warp", "32,64"],
    );
}

#[test]
fn softmax_bf16_triton() {
    triton("examples/softmax.toml", "softmax");
}

#[test]
fn rmsnorm_bf16_triton() {
    triton("examples/rmsnorm-h200.toml", "rmsnorm");
}

#[test]
fn gemm_bf16_library() {
    let g = generate(&root().join("examples/gemm-bf16.toml"), "library", "gemm");
    assert!(
        !g.dir.join("kernels").exists(),
        "a library project has no kernel"
    );
    check_scan(&g);
    check_workflow(&g);
    check_make(&g, &["dispatch"]);
}

#[test]
fn existing_files_are_kept_without_force() {
    let tmp = kplan_test_support::tempdir("new-force");
    let dir = tmp.path().join("p");
    let spec = root().join("examples/rmsnorm.toml");
    let s = spec.to_str().unwrap();
    let d = dir.to_str().unwrap();
    assert!(kplan(&["new", s, d]).status.success());
    let readme = dir.join("README.md");
    std::fs::write(&readme, "mine\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "keep\n").unwrap();
    let o = kplan(&["new", s, d]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("would be overwritten") && text(&o).contains("README.md"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), "mine\n");
    let o = kplan(&["new", s, d, "--force"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_ne!(std::fs::read_to_string(&readme).unwrap(), "mine\n");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "keep\n"
    );
    // nothing left beside the project
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(left, vec!["p".to_string()]);
}

#[test]
fn an_op_without_a_skeleton_is_an_error_and_writes_nothing() {
    let tmp = kplan_test_support::tempdir("new-unsupported");
    let dir = tmp.path().join("p");
    for (spec, says) in [
        (
            "examples/stencil-7pt-3d-amd.toml",
            "no kernel skeleton for op class `stencil`",
        ),
        ("examples/rowsum-framework.toml", "use-framework"),
    ] {
        let o = kplan(&[
            "new",
            root().join(spec).to_str().unwrap(),
            dir.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{spec}: {}", text(&o));
        assert!(text(&o).contains(says), "{spec}: {}", text(&o));
        assert!(
            std::fs::read_dir(tmp.path()).unwrap().next().is_none(),
            "{spec} left files"
        );
    }
}

#[test]
fn a_bad_spec_is_located_and_writes_nothing() {
    let tmp = kplan_test_support::tempdir("new-bad");
    let spec = tmp.path().join("bad.toml");
    std::fs::write(
        &spec,
        "[kernel]\nname = \"x\"\nop = \"softmaxx\"\ndtypes = [\"fp32\"]\nproblem = { rows = 2, cols = 2 }\n[backends]\ntargets = [\"sm_80\"]\n",
    )
    .unwrap();
    let dir = tmp.path().join("p");
    let o = kplan(&["new", spec.to_str().unwrap(), dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("bad.toml:3:"), "{}", text(&o));
    assert!(!dir.exists());
}

#[test]
fn a_plan_json_gives_the_same_project_as_its_spec() {
    let tmp = kplan_test_support::tempdir("new-plan");
    let spec = root().join("examples/rmsnorm.toml");
    let pj = tmp.path().join("plan.json");
    let o = kplan(&[
        "plan",
        spec.to_str().unwrap(),
        "--format",
        "json",
        "-o",
        pj.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    assert!(kplan(&["new", spec.to_str().unwrap(), a.to_str().unwrap()])
        .status
        .success());
    let o = kplan(&["new", "--plan", pj.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let fa = walk(&a);
    let fb = walk(&b);
    assert_eq!(fa.len(), fb.len());
    for (x, y) in fa.iter().zip(&fb) {
        assert_eq!(x.strip_prefix(&a).unwrap(), y.strip_prefix(&b).unwrap());
        let tx = std::fs::read_to_string(x)
            .unwrap()
            .replace(spec.to_str().unwrap(), "SRC");
        let ty = std::fs::read_to_string(y)
            .unwrap()
            .replace(pj.to_str().unwrap(), "SRC");
        assert!(
            tx == ty,
            "{} differs between the spec and its plan JSON",
            x.display()
        );
    }
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{\"schema_version\": 1}").unwrap();
    let o = kplan(&[
        "new",
        "--plan",
        bad.to_str().unwrap(),
        tmp.path().join("c").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("schema_version 1"), "{}", text(&o));
}
