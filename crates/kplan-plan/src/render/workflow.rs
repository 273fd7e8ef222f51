//! The plan's CI matrix (section 7) as a GitHub Actions workflow: every job comes from one of
//! the plan's CI legs, so the plan and the workflow cannot disagree.
//!
//! - `kplan`: builds kplan's wheel once per pinned revision (from the GitHub repository in the
//!   variable `KPLAN_REPO`, cached by revision) and hands the binary and the wheel to the other
//!   jobs as artifacts;
//! - `scan`: kplan's GitHub Action (action.yml) at the same revision as a gate, its SARIF
//!   uploaded to code scanning;
//! - one job per compile leg on a hosted runner that runs the leg's `kplan build --strict`
//!   command (no GPU needed): HIP legs in AMD's ROCm development image at the architecture's
//!   ROCm floor, the others in a Debian container that installs the toolchain;
//! - one job per run leg: CPU legs the CI host can execute run there (the harness against the
//!   CPU reference, the 32/64-lane `cpu-simt` check where the harness exists); GPU legs and CPU
//!   legs for another instruction set run on self-hosted runners, labelled per architecture
//!   (overridable per kind), and not for pull requests (self-hosted runners should not execute
//!   untrusted code).

use crate::decide::ci::{file_stem, AMD_ASAN_ARCHS};
use crate::model::{CiLeg, Plan};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Toolchain pins for the compile legs; the same as scripts/install-test-deps.sh uses.
const NVCC_PIP_VERSION: &str = "13.0.88";
const TRITON_VERSION: &str = "3.6.0";
/// maturin builds kplan's wheel (pyproject.toml); the same pin as scripts/install-test-deps.sh.
const MATURIN_VERSION: &str = "1.16.0";
/// The hosted runner image, and the container the NVIDIA, Triton and CPU toolchain jobs run in.
const HOSTED: &str = "ubuntu-latest";
const CONTAINER: &str = "debian:bookworm";
/// kplan is built on the oldest hosted image so that its binary runs on newer ones and in the
/// containers (Debian 12, Ubuntu 22.04).
const KPLAN_BUILD_RUNNER: &str = "ubuntu-22.04";
const HOST_CPU_ARCH: &str = "cpu-x86_64-avx2";
/// The ROCm development images AMD publishes (`rocm/dev-ubuntu-22.04:TAG`, ROCm's hipcc, clang
/// and device libraries under /opt/rocm), oldest first: the tags the vendor's ROCm-docker
/// repository pushes (push_all.sh, 6.0 in January 2024 to 6.4.1 in May 2025). A HIP compile leg
/// runs in the oldest image at or above the architecture's ROCm floor (plan section 1).
const ROCM_DEV_IMAGE: &str = "rocm/dev-ubuntu-22.04";
const ROCM_DEV_TAGS: &[&str] = &["6.0", "6.1.1", "6.1.2", "6.2", "6.3.1", "6.4", "6.4.1"];

/// Options for [`workflow`].
#[derive(Debug, Clone, Default)]
pub struct WorkflowOptions {
    /// The spec's path as given to `kplan ci` (named in the workflow's header comment).
    pub spec_path: String,
    /// Self-hosted runner labels per kind: an architecture (`gfx942`), a spec target name
    /// (`mi300x`) or a vendor (`amd`); the first that matches a leg wins, in that order. A value
    /// may hold several comma-separated labels.
    pub runners: BTreeMap<String, String>,
    /// The version of the kplan that writes the workflow (named in its header).
    pub kplan_version: String,
    /// The git revision of kplan the workflow builds and runs: the generating binary's, or one
    /// given by hand. `None`: the workflow takes it from the repository variable `KPLAN_REV`
    /// and fails with that message while it is unset.
    pub kplan_rev: Option<String>,
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

/// A Triton leg: its command compiles or runs a `.py` kernel.
fn is_triton(l: &CiLeg) -> bool {
    l.command.as_deref().is_some_and(|c| c.contains(".py "))
}

/// A HIP (not Triton) compile leg for an AMD architecture: it runs in a ROCm image.
fn is_hip_compile(l: &CiLeg) -> bool {
    l.kind == "compile" && l.arch.starts_with("gfx") && !is_triton(l)
}

/// The ROCm floor a leg states (`ROCm 6.0.0` in its toolchain) as numbers.
fn rocm_floor(l: &CiLeg) -> Option<Vec<u32>> {
    let at = l.toolchain.find("ROCm ")? + "ROCm ".len();
    let v: String = l.toolchain[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let parts: Vec<u32> = v
        .trim_end_matches('.')
        .split('.')
        .filter_map(|p| p.parse().ok())
        .collect();
    (!parts.is_empty()).then_some(parts)
}

fn version_cmp(a: &[u32], b: &[u32]) -> std::cmp::Ordering {
    let n = a.len().max(b.len());
    let at = |v: &[u32], i: usize| v.get(i).copied().unwrap_or(0);
    (0..n)
        .map(|i| at(a, i).cmp(&at(b, i)))
        .find(|o| o.is_ne())
        .unwrap_or(std::cmp::Ordering::Equal)
}

/// The ROCm image tag a HIP compile leg runs in: the oldest published one at or above its
/// floor. `Err` with the reason when no published image reaches the floor.
fn rocm_image_tag(l: &CiLeg) -> Result<(&'static str, Option<String>), String> {
    let floor = rocm_floor(l);
    let parse = |t: &str| -> Vec<u32> { t.split('.').filter_map(|p| p.parse().ok()).collect() };
    match &floor {
        None => Ok((ROCM_DEV_TAGS[0], None)),
        Some(f) => ROCM_DEV_TAGS
            .iter()
            .find(|t| version_cmp(&parse(t), f).is_ge())
            .map(|t| {
                (
                    *t,
                    Some(f.iter().map(u32::to_string).collect::<Vec<_>>().join(".")),
                )
            })
            .ok_or_else(|| {
                format!(
                    "its ROCm floor is {} and the newest {ROCM_DEV_IMAGE} image kplan names is {}; compile it where that ROCm is installed (a self-hosted runner) or add the job by hand",
                    f.iter().map(u32::to_string).collect::<Vec<_>>().join("."),
                    ROCM_DEV_TAGS[ROCM_DEV_TAGS.len() - 1]
                )
            }),
    }
}

/// The apt packages and pip requirements a compile or host run leg installs (HIP legs run in a
/// ROCm image that has their toolchain).
fn toolchain_steps(l: &CiLeg) -> Vec<Y> {
    if is_hip_compile(l) {
        return vec![step(
            "Use the image's ROCm",
            "echo \"ROCM_PATH=/opt/rocm\" >> \"$GITHUB_ENV\"\n/opt/rocm/bin/hipconfig --version || true\n"
                .into(),
        )];
    }
    let (apt, pip, env): (&str, Vec<String>, &str) = if is_triton(l) {
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

/// The project file a command needs (`kernels/<kernel>.{cu,py,toml}`), if it names one.
fn needed_file(command: &str) -> Option<&str> {
    command.split_whitespace().find(|w| {
        w.starts_with("kernels/")
            && (w.ends_with(".toml") || w.ends_with(".cu") || w.ends_with(".py"))
    })
}

/// Steps running `command` (with `env`), skipped with a visible warning when it needs a project
/// file that does not exist yet.
fn command_steps(command: &str, title: &str, env: Vec<(&str, Y)>) -> Vec<Y> {
    let run_step = |cond: Option<String>| {
        let mut e: Vec<(&str, Y)> = vec![("name", s(title))];
        if let Some(c) = cond {
            e.push(("if", s(c)));
        }
        if !env.is_empty() {
            e.push(("env", m(env.clone())));
        }
        e.push(("run", s(command)));
        m(e)
    };
    match needed_file(command) {
        Some(h) => vec![
            run_step(Some(format!("hashFiles('{h}') != ''"))),
            m(vec![
                ("name", s(format!("{title}: skipped, no {h}"))),
                ("if", s(format!("hashFiles('{h}') == ''"))),
                (
                    "run",
                    s(format!(
                        "echo \"::warning::{title} skipped: {h} does not exist yet ({})\"",
                        if h.ends_with(".toml") {
                            "docs/verify.md describes the harness file"
                        } else {
                            "the kernel source the plan names"
                        }
                    )),
                ),
            ]),
        ],
        None => vec![run_step(None)],
    }
}

/// A step running the project's own test script for `arch` when it exists, else a visible
/// warning that nothing was tested on that runner.
fn project_script_step(title: &str, arch: &str, what: &str, env: Vec<(&str, Y)>) -> Y {
    let mut e = vec![("name", s(title))];
    if !env.is_empty() {
        e.push(("env", m(env)));
    }
    e.push((
        "run",
        s(format!(
            "if [ ! -x ci/test-on-device.sh ]; then\n  echo \"::warning::{title} skipped: the project has no ci/test-on-device.sh yet (it runs {what} on {arch}; kplan has no command for it)\"\n  exit 0\nfi\nci/test-on-device.sh {arch}\n"
        )),
    ));
    m(e)
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

/// The revision expression the workflow pins kplan to.
fn rev_expr(opts: &WorkflowOptions) -> String {
    match &opts.kplan_rev {
        Some(r) => r.clone(),
        None => "${{ vars.KPLAN_REV }}".into(),
    }
}

/// The checkout of kplan's repository at the pinned revision into `path`.
fn kplan_checkout(opts: &WorkflowOptions, path: &str) -> Y {
    m(vec![
        ("name", s(format!("Check out kplan at {}", short_rev(opts)))),
        ("uses", s("actions/checkout@v4")),
        (
            "with",
            m(vec![
                ("repository", s("${{ vars.KPLAN_REPO }}")),
                ("ref", s(rev_expr(opts))),
                ("path", s(path)),
            ]),
        ),
    ])
}

fn short_rev(opts: &WorkflowOptions) -> String {
    match &opts.kplan_rev {
        Some(r) => r.chars().take(12).collect(),
        None => "vars.KPLAN_REV".into(),
    }
}

/// The job that builds kplan once per pinned revision (a wheel, cached by revision) and hands
/// the binary and the wheel to the other jobs.
fn kplan_job(opts: &WorkflowOptions) -> Y {
    let rev = rev_expr(opts);
    let check = format!(
        "if [ -z \"$KPLAN_REPO\" ]; then\n  echo \"::error::set the repository variable KPLAN_REPO to kplan's GitHub repository (owner/name)\"\n  exit 1\nfi\nif [ -z \"$KPLAN_REV\" ]; then\n  echo \"::error::{}\"\n  exit 1\nfi\n",
        if opts.kplan_rev.is_some() {
            "the pinned kplan revision is empty".to_string()
        } else {
            "set the repository variable KPLAN_REV to the kplan git revision this workflow runs (the kplan that wrote it knew none: regenerate with `kplan ci --kplan-rev REV`)".to_string()
        }
    );
    m(vec![
        (
            "name",
            s(format!(
                "build kplan {} (rev {})",
                opts.kplan_version,
                short_rev(opts)
            )),
        ),
        ("runs-on", s(KPLAN_BUILD_RUNNER)),
        ("timeout-minutes", Y::N(45)),
        (
            "outputs",
            m(vec![("wheel", s("${{ steps.binary.outputs.wheel }}"))]),
        ),
        (
            "steps",
            Y::L(vec![
                m(vec![
                    ("name", s("Check the kplan pin")),
                    (
                        "env",
                        m(vec![
                            ("KPLAN_REPO", s("${{ vars.KPLAN_REPO }}")),
                            ("KPLAN_REV", s(rev.clone())),
                        ]),
                    ),
                    ("run", s(check)),
                ]),
                kplan_checkout(opts, ".kplan"),
                m(vec![
                    ("name", s("Cache the kplan wheel of this revision")),
                    ("id", s("cache")),
                    ("uses", s("actions/cache@v4")),
                    (
                        "with",
                        m(vec![
                            ("path", s("${{ runner.temp }}/kplan-wheel")),
                            (
                                "key",
                                s(format!("kplan-wheel-{rev}-{KPLAN_BUILD_RUNNER}")),
                            ),
                        ]),
                    ),
                ]),
                m(vec![
                    ("name", s(format!("Build the kplan wheel (maturin {MATURIN_VERSION}, --locked)"))),
                    ("if", s("steps.cache.outputs.cache-hit != 'true'")),
                    (
                        "run",
                        s(format!(
                            "python3 -m pip install --disable-pip-version-check maturin=={MATURIN_VERSION}\ncd .kplan\nmaturin build --release --locked --out \"$RUNNER_TEMP/kplan-wheel\"\n"
                        )),
                    ),
                ]),
                m(vec![
                    ("name", s("Take the binary out of the wheel")),
                    ("id", s("binary")),
                    (
                        "run",
                        s("whl=$(ls \"$RUNNER_TEMP\"/kplan-wheel/kplan-*.whl | head -n 1)\necho \"wheel=$(basename \"$whl\")\" >> \"$GITHUB_OUTPUT\"\npython3 -m zipfile -e \"$whl\" \"$RUNNER_TEMP/kplan-unpacked\"\nmkdir -p \"$RUNNER_TEMP/kplan-bin\"\ncp \"$RUNNER_TEMP\"/kplan-unpacked/kplan-*.data/scripts/kplan \"$RUNNER_TEMP/kplan-bin/kplan\"\nchmod +x \"$RUNNER_TEMP/kplan-bin/kplan\"\n\"$RUNNER_TEMP/kplan-bin/kplan\" --version\n"),
                    ),
                ]),
                m(vec![
                    ("uses", s("actions/upload-artifact@v4")),
                    (
                        "with",
                        m(vec![
                            ("name", s("kplan")),
                            ("path", s("${{ runner.temp }}/kplan-bin/kplan")),
                        ]),
                    ),
                ]),
                m(vec![
                    ("uses", s("actions/upload-artifact@v4")),
                    (
                        "with",
                        m(vec![
                            ("name", s("kplan-wheel")),
                            ("path", s("${{ runner.temp }}/kplan-wheel")),
                        ]),
                    ),
                ]),
            ]),
        ),
    ])
}

/// The scan gate: kplan's own GitHub Action (action.yml) at the pinned revision, installing the
/// wheel the `kplan` job built; SARIF to code scanning except from fork pull requests, whose
/// token cannot write it.
fn scan_job(opts: &WorkflowOptions, targets: &[&str]) -> Y {
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
        (
            "steps",
            Y::L(vec![
                m(vec![("uses", s("actions/checkout@v4"))]),
                // a hidden directory: `kplan scan .` does not walk into it
                kplan_checkout(opts, ".kplan-action"),
                m(vec![
                    ("uses", s("actions/download-artifact@v4")),
                    (
                        "with",
                        m(vec![
                            ("name", s("kplan-wheel")),
                            ("path", s("${{ runner.temp }}/kplan-wheel")),
                        ]),
                    ),
                ]),
                m(vec![
                    ("name", s("Scan for portability hazards")),
                    ("uses", s("./.kplan-action")),
                    (
                        "with",
                        m(vec![
                            ("paths", s(".")),
                            ("targets", s(targets.join(","))),
                            ("fail-on", s("error")),
                            (
                                "upload",
                                s("${{ github.event_name != 'pull_request' || github.event.pull_request.head.repo.full_name == github.repository }}"),
                            ),
                            ("category", s("kplan")),
                            (
                                "install",
                                s("${{ runner.temp }}/kplan-wheel/${{ needs.kplan.outputs.wheel }}"),
                            ),
                        ]),
                    ),
                ]),
            ]),
        ),
    ])
}

/// A HIP compile leg that no job of this workflow can compile: no published ROCm image reaches
/// its floor (gfx950 needs ROCm 7.0).
fn hip_compile_gap(l: &CiLeg) -> Option<String> {
    if !is_hip_compile(l) || l.command.is_none() {
        return None;
    }
    rocm_image_tag(l).err()
}

/// The workflow for the plan's CI matrix, as YAML.
pub fn workflow(plan: &Plan, opts: &WorkflowOptions) -> String {
    let k = &plan.kernel;
    let stem = file_stem(&k.name);
    let legs = &plan.ci.legs;
    let mut jobs: Vec<(String, Y)> = Vec::new();
    let mut by_hand: Vec<String> = Vec::new();
    let mut gaps: Vec<String> = Vec::new();

    jobs.push(("kplan".into(), kplan_job(opts)));
    let targets: Vec<&str> = plan
        .backend_matrix
        .iter()
        .map(|b| b.target.as_str())
        .collect();
    jobs.push(("scan".into(), scan_job(opts, &targets)));

    let host_shape_env: Vec<(&str, Y)> = plan
        .ci
        .host_shape
        .as_ref()
        .map(|h| {
            vec![(
                "KPLAN_CI_SHAPE",
                s(h.shape
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")),
            )]
        })
        .unwrap_or_default();

    for l in legs {
        let id = job_id(&l.name);
        let title = format!("{} ({}, {})", l.name, l.target, l.kind);
        match (l.kind.as_str(), &l.command) {
            ("compile", Some(_)) if hip_compile_gap(l).is_some() => by_hand.push(format!(
                "{} ({}: {})",
                l.name,
                l.toolchain,
                hip_compile_gap(l).unwrap_or_default()
            )),
            ("compile", Some(cmd)) => {
                let mut steps = fetch_kplan();
                steps.extend(toolchain_steps(l));
                // in CI a target whose compiler is missing fails instead of passing as skipped
                steps.extend(command_steps(&format!("{cmd} --strict"), "Compile", vec![]));
                let (container, name) = if is_hip_compile(l) {
                    let (tag, floor) = rocm_image_tag(l).unwrap_or((ROCM_DEV_TAGS[0], None));
                    (
                        format!("{ROCM_DEV_IMAGE}:{tag}"),
                        format!(
                            "{} ({}, compile, ROCm {tag}{})",
                            l.name,
                            l.target,
                            match floor {
                                Some(f) => format!(": the floor {f}"),
                                None => ": floor unknown, the oldest image".into(),
                            }
                        ),
                    )
                } else {
                    (CONTAINER.to_string(), title)
                };
                jobs.push((
                    id,
                    m(vec![
                        ("name", s(name)),
                        ("needs", s("kplan")),
                        ("runs-on", s(HOSTED)),
                        ("timeout-minutes", Y::N(30)),
                        ("container", s(container)),
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
                            && hip_compile_gap(c).is_none()
                    })
                    .map(|c| job_id(&c.name));
                let needs = match compile_dep {
                    Some(c) => Y::L(vec![s("kplan"), s(c)]),
                    None => s("kplan"),
                };
                job.push(("needs", needs));
                let on_host = !needs_self_hosted(l);
                if on_host {
                    job.push(("runs-on", s(HOSTED)));
                    job.push(("timeout-minutes", Y::N(30)));
                    job.push(("container", s(CONTAINER)));
                    steps.extend(toolchain_steps(l));
                } else {
                    job.push(("if", s("github.event_name != 'pull_request'")));
                    job.push(("runs-on", runs_on(l, &vendor, &opts.runners)));
                    // a hung kernel must not hold a GPU runner for the 6-hour default
                    job.push(("timeout-minutes", Y::N(60)));
                }
                let host_env = if on_host {
                    host_shape_env.clone()
                } else {
                    vec![]
                };
                match &l.command {
                    Some(cmd) => {
                        // on a GPU runner a skipped kernel (no driver, no NVRTC) is a failure
                        let strict = if on_host {
                            cmd.clone()
                        } else {
                            format!("{cmd} --strict")
                        };
                        steps.extend(command_steps(
                            &strict,
                            "Test against the CPU reference",
                            host_env.clone(),
                        ));
                        if vendor == "nvidia" && cmd.contains("--backend cuda") {
                            for tool in ["memcheck", "racecheck", "synccheck", "initcheck"] {
                                steps.extend(command_steps(
                                    &format!("compute-sanitizer --tool {tool} --error-exitcode 1 {cmd} --strict"),
                                    &format!("compute-sanitizer {tool}"),
                                    vec![],
                                ));
                            }
                        }
                        if l.arch == HOST_CPU_ARCH && cmd.contains("--backend cpu") {
                            // the CPU fallback compiled with UBSan (kplan verify compiles with
                            // KPLAN_CXX): undefined behaviour fails here. Not ASan: kplan's CPU
                            // execution switches fiber stacks, which ASan does not follow (every
                            // run fails under it)
                            steps.push(step(
                                "A sanitizing compiler (UBSan)",
                                "printf '#!/bin/sh\\nexec g++ -fsanitize=undefined -fno-sanitize-recover=undefined -g \"$@\"\\n' > \"$RUNNER_TEMP/g++-ubsan\"\nchmod +x \"$RUNNER_TEMP/g++-ubsan\"\n".into(),
                            ));
                            let mut env = vec![
                                ("KPLAN_CXX", s("${{ runner.temp }}/g++-ubsan")),
                                ("UBSAN_OPTIONS", s("print_stacktrace=1:halt_on_error=1")),
                            ];
                            env.extend(host_env.clone());
                            steps.extend(command_steps(cmd, "CPU fallback under UBSan", env));
                            gaps.push(format!(
                                "{}: no AddressSanitizer run of the kernel on the CPU; kplan's CPU execution switches fiber stacks, which ASan does not follow",
                                l.name
                            ));
                        }
                    }
                    None => {
                        steps.push(project_script_step(
                            "The project's tests on this runner",
                            &l.arch,
                            &format!("{stem}'s tests against the CPU reference"),
                            host_env.clone(),
                        ));
                        if l.arch == HOST_CPU_ARCH {
                            steps.push(project_script_step(
                                "The project's CPU tests under ASan and UBSan",
                                &l.arch,
                                &format!("{stem}'s CPU fallback built with CXXFLAGS"),
                                vec![
                                    (
                                        "CXXFLAGS",
                                        s("-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"),
                                    ),
                                    ("LDFLAGS", s("-fsanitize=address,undefined")),
                                    ("ASAN_OPTIONS", s("detect_leaks=1:abort_on_error=1")),
                                    ("UBSAN_OPTIONS", s("print_stacktrace=1:halt_on_error=1")),
                                ]
                                .into_iter()
                                .chain(host_env.clone())
                                .collect(),
                            ));
                        }
                    }
                }
                if vendor == "amd" && !on_host {
                    if AMD_ASAN_ARCHS.contains(&l.arch.as_str()) {
                        // ROCm's device AddressSanitizer: xnack+ code, XNACK on at run time,
                        // through hipcc's append variables
                        let flags = format!(
                            "-fsanitize=address -shared-libsan -g --offload-arch={}:xnack+",
                            l.arch
                        );
                        steps.push(project_script_step(
                            "The project's tests under ROCm AddressSanitizer",
                            &l.arch,
                            &format!("{stem}'s tests built by hipcc with ASan"),
                            vec![
                                ("HIPCC_COMPILE_FLAGS_APPEND", s(flags)),
                                (
                                    "HIPCC_LINK_FLAGS_APPEND",
                                    s("-fsanitize=address -shared-libsan"),
                                ),
                                ("HSA_XNACK", s("1")),
                            ],
                        ));
                    } else {
                        gaps.push(format!(
                            "{}: no AddressSanitizer leg; ROCm's device ASan needs xnack+, documented for {} only",
                            l.name,
                            AMD_ASAN_ARCHS.join(", ")
                        ));
                    }
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
        "# @generated by `kplan ci {}` (kplan {}, rev {}); do not edit (regenerate instead).",
        opts.spec_path,
        opts.kplan_version,
        opts.kplan_rev.as_deref().unwrap_or("unknown")
    );
    let _ = writeln!(
        o,
        "# The CI matrix of kernel `{}` (verdict `{}`, strategy `{}`): plan section 7, one job per leg.",
        one_line(&k.name),
        plan.verdict.decision.as_str(),
        plan.strategy.chosen
    );
    let _ = writeln!(
        o,
        "# Needs: the repository variable KPLAN_REPO (kplan's GitHub repository, owner/name){}. kplan is built\n# once per revision from it (a wheel, cached) and the scan gate runs its action (action.yml) at that revision.",
        if opts.kplan_rev.is_none() {
            " and KPLAN_REV (the revision to run)"
        } else {
            ""
        }
    );
    o.push_str("# Self-hosted runners carry the labels under runs-on (`kplan ci --runner KIND=LABEL` renames them).\n");
    let has_vendor_run = |v: &str| {
        legs.iter()
            .any(|l| l.kind == "run" && needs_self_hosted(l) && vendor_of(plan, l) == v)
    };
    if has_vendor_run("nvidia") {
        o.push_str("# NVIDIA runners need: the driver (libcuda), NVRTC (CUDA toolkit or the nvidia-cuda-nvrtc wheel) and\n# compute-sanitizer on PATH (memcheck, racecheck, synccheck, initcheck legs).\n");
    }
    if has_vendor_run("amd") {
        o.push_str("# AMD runners need: ROCm at or above the plan's floor with hipcc; the ASan leg needs XNACK (HSA_XNACK=1).\n");
    }
    if legs.iter().any(|l| l.kind == "run" && l.command.is_none()) {
        o.push_str("# Run legs kplan cannot drive call ci/test-on-device.sh ARCH, the project's own tests; until\n# that script exists they say so (a warning) and test nothing.\n");
    }
    if legs
        .iter()
        .any(|l| l.kind == "run" && l.arch == HOST_CPU_ARCH)
    {
        o.push_str("# The CPU fallback runs on the hosted runner, once plain and once under a sanitizer.\n");
    }
    if let Some(h) = &plan.ci.host_shape {
        let _ = writeln!(
            o,
            "# CPU legs get KPLAN_CI_SHAPE ({}): {}.",
            h.shape
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            one_line(&h.why)
        );
    }
    for b in &by_hand {
        let _ = writeln!(o, "# Not in this workflow: {b}");
    }
    for g in &gaps {
        let _ = writeln!(o, "# Gap: {g}");
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
