//! The plan's CI matrix (section 7) as a GitHub Actions workflow: every job comes from one of
//! the plan's CI legs, so the plan and the workflow cannot disagree.
//!
//! - `kplan`: builds kplan once (from the git URL in the repository variable `KPLAN_GIT`) and
//!   hands the binary to the other jobs as an artifact;
//! - `scan`: `kplan scan` over the repository as a gate, its SARIF uploaded to code scanning;
//! - one job per compile leg on a hosted runner (Debian container) that installs the toolchain
//!   and runs the leg's `kplan build` command (no GPU needed);
//! - one job per run leg: CPU legs the CI host can execute run there (the harness against the
//!   CPU reference, the 32/64-lane `cpu-simt` check where the harness exists); GPU legs and CPU
//!   legs for another instruction set run on self-hosted runners, labelled per architecture
//!   (overridable per kind), and not for pull requests (self-hosted runners should not execute
//!   untrusted code).

use crate::decide::ci::file_stem;
use crate::model::{CiLeg, Plan};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Toolchain pins for the compile legs; the same as scripts/install-test-deps.sh uses.
const NVCC_PIP_VERSION: &str = "13.0.88";
const TRITON_VERSION: &str = "3.6.0";
/// The hosted runner image, and the container the toolchain jobs run in (its apt archive has
/// clang-19, the HIP headers and the ROCm device libraries).
const HOSTED: &str = "ubuntu-latest";
const CONTAINER: &str = "debian:bookworm";
/// kplan is built on the oldest hosted image so that its binary runs on newer ones and in the
/// container.
const KPLAN_BUILD_RUNNER: &str = "ubuntu-22.04";
const HOST_CPU_ARCH: &str = "cpu-x86_64-avx2";

/// Options for [`workflow`].
#[derive(Debug, Clone, Default)]
pub struct WorkflowOptions {
    /// The spec's path as given to `kplan ci` (named in the workflow's header comment).
    pub spec_path: String,
    /// Self-hosted runner labels per kind: an architecture (`gfx942`), a spec target name
    /// (`mi300x`) or a vendor (`amd`); the first that matches a leg wins, in that order. A value
    /// may hold several comma-separated labels.
    pub runners: BTreeMap<String, String>,
}

/// The run legs that need a self-hosted runner, as the kinds `runners` may name: for each, its
/// architecture, spec target name and vendor.
pub fn runner_kinds(plan: &Plan) -> Vec<[String; 3]> {
    plan.ci
        .legs
        .iter()
        .filter(|l| needs_self_hosted(l))
        .map(|l| [l.arch.clone(), l.target.clone(), vendor_of(plan, l)])
        .collect()
}

/// `--runner` keys that match no leg needing a self-hosted runner.
pub fn unused_runner_keys(plan: &Plan, runners: &BTreeMap<String, String>) -> Vec<String> {
    let kinds = runner_kinds(plan);
    runners
        .keys()
        .filter(|k| !kinds.iter().any(|ks| ks.contains(k)))
        .cloned()
        .collect()
}

fn needs_self_hosted(l: &CiLeg) -> bool {
    l.kind == "run" && l.runner != "CI host" && l.runner != "CI host (no GPU)"
}

fn vendor_of(plan: &Plan, l: &CiLeg) -> String {
    plan.backend_matrix
        .iter()
        .find(|b| b.arch == l.arch)
        .map(|b| b.vendor.clone())
        .unwrap_or_else(|| {
            if l.arch.starts_with("sm_") {
                "nvidia".into()
            } else if l.arch.starts_with("gfx") {
                "amd".into()
            } else if l.arch.starts_with("cpu-") {
                "cpu".into()
            } else {
                String::new()
            }
        })
}

/// A YAML node: the little of YAML a workflow needs, keys in insertion order.
#[derive(Debug, Clone)]
enum Y {
    S(String),
    /// A number (`timeout-minutes`).
    N(u32),
    M(Vec<(String, Y)>),
    L(Vec<Y>),
}

fn s(v: impl Into<String>) -> Y {
    Y::S(v.into())
}

fn m(entries: Vec<(&str, Y)>) -> Y {
    Y::M(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// A scalar as YAML: plain when it cannot be read as anything but this string, else a JSON
/// string literal (a valid YAML double-quoted scalar).
fn scalar(v: &str) -> String {
    let plain = !v.is_empty()
        && v.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, ' ' | '_' | '-' | '.' | '/' | '(' | ')' | ',')
        })
        && v.starts_with(|c: char| c.is_ascii_alphabetic())
        && !v.ends_with(' ')
        && !matches!(
            v.to_ascii_lowercase().as_str(),
            "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
        );
    if plain {
        v.to_string()
    } else {
        serde_json::to_string(v).unwrap_or_else(|_| "\"\"".into())
    }
}

fn key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        serde_json::to_string(k).unwrap_or_else(|_| "\"\"".into())
    }
}

/// Emits `v` as the value of a key (after `key:`), at `indent` for its children.
fn emit_value(o: &mut String, v: &Y, indent: usize) {
    match v {
        Y::S(t) if t.contains('\n') => {
            let body = t.strip_suffix('\n').unwrap_or(t);
            o.push_str(if t.ends_with('\n') { " |\n" } else { " |-\n" });
            for line in body.lines() {
                if line.is_empty() {
                    o.push('\n');
                } else {
                    let _ = writeln!(o, "{:indent$}{line}", "");
                }
            }
        }
        Y::S(t) => {
            let _ = writeln!(o, " {}", scalar(t));
        }
        Y::N(n) => {
            let _ = writeln!(o, " {n}");
        }
        Y::M(e) if e.is_empty() => o.push_str(" {}\n"),
        Y::L(e) if e.is_empty() => o.push_str(" []\n"),
        Y::M(_) | Y::L(_) => {
            o.push('\n');
            emit_block(o, v, indent);
        }
    }
}

/// Emits a map or list as a block at `indent`.
fn emit_block(o: &mut String, v: &Y, indent: usize) {
    match v {
        Y::M(entries) => {
            for (k, val) in entries {
                let _ = write!(o, "{:indent$}{}:", "", key(k));
                emit_value(o, val, indent + 2);
            }
        }
        Y::L(items) => {
            for it in items {
                match it {
                    Y::M(e) if !e.is_empty() => {
                        // The first entry follows the dash; the rest line up under it.
                        let mut inner = String::new();
                        emit_block(&mut inner, it, indent + 2);
                        let rest = inner.get(indent + 2..).unwrap_or("");
                        let _ = write!(o, "{:indent$}- {rest}", "");
                    }
                    other => {
                        let _ = write!(o, "{:indent$}-", "");
                        emit_value(o, other, indent + 2);
                    }
                }
            }
        }
        other => emit_value(o, other, indent),
    }
}

fn job_id(name: &str) -> String {
    let mut id: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !id.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        id.insert(0, '_');
    }
    id
}

fn step(name: &str, run: String) -> Y {
    m(vec![("name", s(name)), ("run", s(run))])
}

fn fetch_kplan() -> Vec<Y> {
    vec![
        m(vec![("uses", s("actions/checkout@v4"))]),
        m(vec![
            ("uses", s("actions/download-artifact@v4")),
            (
                "with",
                m(vec![
                    ("name", s("kplan")),
                    ("path", s("${{ runner.temp }}/kplan-bin")),
                ]),
            ),
        ]),
        step(
            "Put kplan on PATH",
            "chmod +x \"$RUNNER_TEMP/kplan-bin/kplan\"\necho \"$RUNNER_TEMP/kplan-bin\" >> \"$GITHUB_PATH\"\n".into(),
        ),
    ]
}

/// The apt packages and pip requirements a compile or host run leg installs.
fn toolchain_steps(l: &CiLeg) -> Vec<Y> {
    let cmd = l.command.as_deref().unwrap_or("");
    let triton = cmd.contains(".py ");
    let (apt, pip, env): (&str, Vec<String>, &str) = if triton {
        (
            "python3-venv g++",
            vec![format!("triton=={TRITON_VERSION}"), "numpy".into()],
            "echo \"KPLAN_PYTHON=$PWD/.venv/bin/python\" >> \"$GITHUB_ENV\"\n",
        )
    } else if l.arch.starts_with("sm_") {
        (
            "python3-venv g++",
            ["nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-runtime", "nvidia-cuda-crt"]
                .iter()
                .map(|p| format!("{p}=={NVCC_PIP_VERSION}"))
                .collect(),
            "echo \"KPLAN_NVCC=$(ls \"$PWD\"/.venv/lib/python3*/site-packages/nvidia/cu1*/bin/nvcc | head -n 1)\" >> \"$GITHUB_ENV\"\n",
        )
    } else if l.arch.starts_with("gfx") {
        (
            "clang-19 lld-19 llvm-19 libamdhip64-dev rocm-device-libs",
            vec![],
            "echo \"KPLAN_HIP_CLANG=/usr/bin/clang-19\" >> \"$GITHUB_ENV\"\n",
        )
    } else {
        ("g++", vec![], "")
    };
    let mut script = format!(
        "apt-get update -qq\nDEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates {apt}\n"
    );
    if !pip.is_empty() {
        let _ = writeln!(
            script,
            "python3 -m venv .venv\n.venv/bin/pip install -q --no-cache-dir {}",
            pip.join(" ")
        );
    }
    script.push_str(env);
    vec![step("Install the toolchain", script)]
}

/// A step running `command`, skipped with a visible warning when it needs a harness file that
/// does not exist.
fn command_steps(command: &str, title: &str) -> Vec<Y> {
    let harness = command
        .split_whitespace()
        .find(|w| w.ends_with(".toml") && w.starts_with("kernels/"));
    match harness {
        Some(h) => vec![
            m(vec![
                ("name", s(title)),
                ("if", s(format!("hashFiles('{h}') != ''"))),
                ("run", s(command)),
            ]),
            m(vec![
                ("name", s(format!("No harness ({h})"))),
                ("if", s(format!("hashFiles('{h}') == ''"))),
                (
                    "run",
                    s(format!(
                        "echo \"::warning::skipped: {h} does not exist (docs/verify.md describes the harness file)\""
                    )),
                ),
            ]),
        ],
        None => vec![step(title, command.to_string())],
    }
}

fn runs_on(l: &CiLeg, vendor: &str, runners: &BTreeMap<String, String>) -> Y {
    let label = [l.arch.as_str(), l.target.as_str(), vendor]
        .iter()
        .find_map(|k| runners.get(*k));
    let mut labels: Vec<String> = vec!["self-hosted".into()];
    match label {
        Some(v) => labels.extend(
            v.split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty() && x != "self-hosted"),
        ),
        None => {
            labels.push("linux".into());
            labels.push(l.arch.clone());
        }
    }
    Y::L(labels.into_iter().map(Y::S).collect())
}

/// The workflow for the plan's CI matrix, as YAML.
/// AMD architectures the compile container's clang-19 rejects (`invalid target ID`): LLVM 20
/// added gfx950.
const CLANG19_LACKS: &[&str] = &["gfx950"];

/// A HIP compile leg (not Triton, which brings its own LLVM) for such an architecture.
fn clang19_lacks(l: &CiLeg) -> bool {
    let triton = l.command.as_deref().is_some_and(|c| c.contains(".py "));
    !triton && CLANG19_LACKS.contains(&l.arch.as_str())
}

pub fn workflow(plan: &Plan, opts: &WorkflowOptions) -> String {
    let k = &plan.kernel;
    let stem = file_stem(&k.name);
    let legs = &plan.ci.legs;
    let mut jobs: Vec<(String, Y)> = Vec::new();
    let mut by_hand: Vec<String> = Vec::new();

    jobs.push((
        "kplan".into(),
        m(vec![
            ("name", s("build kplan")),
            ("runs-on", s(KPLAN_BUILD_RUNNER)),
            ("timeout-minutes", Y::N(30)),
            (
                "steps",
                Y::L(vec![
                    m(vec![
                        ("name", s("Install kplan")),
                        ("env", m(vec![("KPLAN_GIT", s("${{ vars.KPLAN_GIT }}"))])),
                        (
                            "run",
                            s("if [ -z \"$KPLAN_GIT\" ]; then\n  echo \"::error::set the repository variable KPLAN_GIT to the git URL kplan is installed from\"\n  exit 1\nfi\ncargo install --locked --git \"$KPLAN_GIT\" kplan --root \"$RUNNER_TEMP/kplan\"\n"),
                        ),
                    ]),
                    m(vec![
                        ("uses", s("actions/upload-artifact@v4")),
                        (
                            "with",
                            m(vec![
                                ("name", s("kplan")),
                                ("path", s("${{ runner.temp }}/kplan/bin/kplan")),
                            ]),
                        ),
                    ]),
                ]),
            ),
        ]),
    ));

    let targets: Vec<&str> = plan
        .backend_matrix
        .iter()
        .map(|b| b.target.as_str())
        .collect();
    let mut scan_steps = fetch_kplan();
    scan_steps.push(step(
        "Scan for portability hazards",
        format!(
            "kplan scan . --targets {} --format sarif -o kplan.sarif",
            targets.join(",")
        ),
    ));
    scan_steps.push(m(vec![
        ("name", s("Upload the findings to code scanning")),
        // a pull request from a fork gets a read-only token: the upload would fail the gate
        (
            "if",
            s("always() && hashFiles('kplan.sarif') != '' && (github.event_name != 'pull_request' || github.event.pull_request.head.repo.full_name == github.repository)"),
        ),
        ("uses", s("github/codeql-action/upload-sarif@v3")),
        (
            "with",
            m(vec![
                ("sarif_file", s("kplan.sarif")),
                ("category", s("kplan")),
            ]),
        ),
    ]));
    jobs.push((
        "scan".into(),
        m(vec![
            ("name", s("kplan scan (portability gate)")),
            ("needs", s("kplan")),
            ("runs-on", s(HOSTED)),
            ("timeout-minutes", Y::N(30)),
            (
                "permissions",
                m(vec![
                    ("actions", s("read")),
                    ("contents", s("read")),
                    ("security-events", s("write")),
                ]),
            ),
            ("steps", Y::L(scan_steps)),
        ]),
    ));

    for l in legs {
        let id = job_id(&l.name);
        let title = format!("{} ({}, {})", l.name, l.target, l.kind);
        match (l.kind.as_str(), &l.command) {
            // Debian's clang-19, which the compile container installs, does not know every
            // architecture (`kplan build` with it says so and skips the target)
            ("compile", Some(_)) if clang19_lacks(l) => by_hand.push(format!(
                "{} ({}: Debian's clang-19 does not know {}; compile it in a ROCm container whose amdclang++ does)",
                l.name, l.toolchain, l.arch
            )),
            ("compile", Some(cmd)) => {
                let mut steps = fetch_kplan();
                steps.extend(toolchain_steps(l));
                steps.push(step("Compile", cmd.clone()));
                jobs.push((
                    id,
                    m(vec![
                        ("name", s(title)),
                        ("needs", s("kplan")),
                        ("runs-on", s(HOSTED)),
                        ("timeout-minutes", Y::N(30)),
                        ("container", s(CONTAINER)),
                        ("steps", Y::L(steps)),
                    ]),
                ));
            }
            ("compile", None) => by_hand.push(format!(
                "{} ({}; no kplan command compiles it)",
                l.name, l.toolchain
            )),
            _ => {
                let vendor = vendor_of(plan, l);
                let mut steps = fetch_kplan();
                let mut job: Vec<(&str, Y)> = vec![("name", s(title))];
                let compile_dep = legs
                    .iter()
                    .find(|c| {
                        c.kind == "compile"
                            && c.arch == l.arch
                            && c.command.is_some()
                            && !clang19_lacks(c)
                    })
                    .map(|c| job_id(&c.name));
                let needs = match compile_dep {
                    Some(c) => Y::L(vec![s("kplan"), s(c)]),
                    None => s("kplan"),
                };
                job.push(("needs", needs));
                if needs_self_hosted(l) {
                    job.push(("if", s("github.event_name != 'pull_request'")));
                    job.push(("runs-on", runs_on(l, &vendor, &opts.runners)));
                    // a hung kernel must not hold a GPU runner for the 6-hour default
                    job.push(("timeout-minutes", Y::N(60)));
                } else {
                    job.push(("runs-on", s(HOSTED)));
                    job.push(("timeout-minutes", Y::N(30)));
                    job.push(("container", s(CONTAINER)));
                    steps.extend(toolchain_steps(l));
                }
                match &l.command {
                    Some(cmd) => {
                        steps.extend(command_steps(cmd, "Test against the CPU reference"));
                        if vendor == "nvidia" && cmd.contains("--backend cuda") {
                            for tool in ["memcheck", "racecheck"] {
                                steps.extend(command_steps(
                                    &format!("compute-sanitizer --tool {tool} --error-exitcode 1 {cmd}"),
                                    &format!("compute-sanitizer {tool}"),
                                ));
                            }
                        }
                    }
                    None => steps.push(step(
                        "The project's tests on this runner",
                        format!(
                            "# {}\nif [ ! -x ci/test-on-device.sh ]; then\n  echo \"::error::ci/test-on-device.sh is missing: it runs {stem}'s tests on {} against the CPU reference\"\n  exit 1\nfi\nci/test-on-device.sh {}\n",
                            l.why.replace('\n', " "),
                            l.target,
                            l.arch
                        ),
                    )),
                }
                job.push(("steps", Y::L(steps)));
                jobs.push((id, m(job)));
            }
        }
    }

    let doc = m(vec![
        ("name", s(format!("kplan {}", k.name))),
        (
            "on",
            m(vec![
                ("push", m(vec![("branches", Y::L(vec![s("main")]))])),
                ("pull_request", Y::M(vec![])),
                ("schedule", Y::L(vec![m(vec![("cron", s("0 3 * * *"))])])),
                ("workflow_dispatch", Y::M(vec![])),
            ]),
        ),
        ("permissions", m(vec![("contents", s("read"))])),
        // one run per ref at a time: a push and the nightly run do not share a GPU runner
        (
            "concurrency",
            m(vec![(
                "group",
                s("kplan-${{ github.workflow }}-${{ github.ref }}"),
            )]),
        ),
        ("jobs", Y::M(jobs)),
    ]);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# @generated by `kplan ci {}`; do not edit (regenerate instead).",
        opts.spec_path
    );
    let _ = writeln!(
        o,
        "# The CI matrix of kernel `{}` (verdict `{}`, strategy `{}`): plan section 7, one job per leg.",
        one_line(&k.name),
        plan.verdict.decision.as_str(),
        plan.strategy.chosen
    );
    o.push_str("# Needs: the repository variable KPLAN_GIT (kplan's git URL); self-hosted runners with the\n# labels under runs-on for the GPU legs (`kplan ci --runner KIND=LABEL` renames them).\n");
    if plan
        .ci
        .legs
        .iter()
        .any(|l| l.kind == "run" && l.command.is_none())
    {
        o.push_str("# Run legs kplan cannot drive call ci/test-on-device.sh ARCH, the project's own tests.\n");
    }
    if plan
        .ci
        .legs
        .iter()
        .any(|l| l.kind == "run" && l.arch == HOST_CPU_ARCH)
    {
        o.push_str("# The CPU fallback runs on the hosted runner.\n");
    }
    for b in &by_hand {
        let _ = writeln!(o, "# Not in this workflow: {b}");
    }
    emit_block(&mut o, &doc, 0);
    o
}

fn one_line(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_that_yaml_would_reinterpret_are_quoted() {
        for v in [
            "on", "yes", "No", "1.5", "", "a: b", "x #y", "${{ x }}", "-a", "*a",
        ] {
            assert!(scalar(v).starts_with('"'), "{v}");
        }
        assert_eq!(scalar("ubuntu-24.04"), "ubuntu-24.04");
        assert_eq!(key("on"), "on");
        assert_eq!(key("a b"), "\"a b\"");
    }

    #[test]
    fn lists_of_maps_and_block_strings() {
        let mut o = String::new();
        emit_block(
            &mut o,
            &m(vec![(
                "steps",
                Y::L(vec![
                    m(vec![("name", s("a")), ("run", s("x\ny\n"))]),
                    s("plain"),
                ]),
            )]),
            0,
        );
        assert_eq!(
            o,
            "steps:\n  - name: a\n    run: |\n      x\n      y\n  - plain\n"
        );
    }
}
