//! Repository tasks. `cargo xtask generate` rewrites every generated file of the repository
//! from its source; `cargo xtask generate --check` changes nothing and fails (exit 1) naming
//! each file that differs from what its generator makes. The tests of this crate run the check,
//! one test per entry of [`TABLE`]; under `UPDATE_GOLDEN=1` they write instead, like every other
//! golden file of the workspace ([`kplan_test_support::golden`]).
//!
//! | entry | committed files | generated from |
//! |---|---|---|
//! | `rule-docs` | `docs/rules/*.md` | the scan rule registry (`kplan_scan::all_rules`) |
//! | `target-docs` | `docs/targets.md` | the knowledge base (`kplan_kb::render::targets_markdown`) |
//! | `example-plans` | `examples/plans/*.{md,json,svg}` | `examples/*.toml` through `kplan plan` (`-o NAME.md` writes the roofline chart NAME.svg) |
//! | `efficiency-table` | the marked table in `docs/plan.md` | `crates/kplan-plan/data/efficiency.toml` |
//! | `header` | `include/kplan_portability.h` | `kplan_gen::render_header` for every backend |
//! | `bench-docs` | `docs/bench.md`, `docs/bench.svg` | the committed GPU run [`BENCH_RUN`] |
//! | `kb-measurements` | the generated part of `crates/kplan-kb/data/measurements.toml` | [`BENCH_RUN`] |
//! | `plan-schema` | `docs/plan.schema.json` | the plan model (`kplan_plan::schema`, schemars) |
//!
//! Every example plan validates against `docs/plan.schema.json` (`crates/kplan-plan/tests/golden.rs`).

use anyhow::{anyhow, bail, Context, Result};
use kplan_test_support::golden::{self, Mode, Outcome};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The committed GPU run that the bench docs and the KB's measured figures come from.
pub const BENCH_RUN: &str = "bench/results/h200-2026-12-01c.json";
/// The `sources.toml` key that the KB measurements of [`BENCH_RUN`] cite.
pub const BENCH_SOURCE: &str = "KPLAN-H200-BENCH-2026-12-01C";

/// What the generated files say about where they come from.
pub const REGENERATE: &str = "cargo xtask generate";

/// A generated file: its path relative to the root, and its text.
pub type Rendered = (PathBuf, String);

/// One generated file, or a directory of them.
pub struct Generated {
    /// Short name (`cargo xtask generate --only NAME`).
    pub name: &'static str,
    /// A file, or a directory that this entry owns entirely (files there that the generator does
    /// not make are stale).
    pub path: &'static str,
    pub owns_dir: bool,
    /// The source, in words.
    pub from: &'static str,
    /// Renders `(path relative to the root, text)` for every file.
    pub render: fn(&Path) -> Result<Vec<Rendered>>,
}

/// Every generated file of the repository, each with its one generator.
pub const TABLE: &[Generated] = &[
    Generated {
        name: "rule-docs",
        path: "docs/rules",
        owns_dir: true,
        from: "the scan rule registry (each rule's META)",
        render: rule_docs,
    },
    Generated {
        name: "target-docs",
        path: "docs/targets.md",
        owns_dir: false,
        from: "crates/kplan-kb/data/*.toml",
        render: target_docs,
    },
    Generated {
        name: "example-plans",
        path: "examples/plans",
        owns_dir: true,
        from: "examples/*.toml through `kplan plan`",
        render: example_plans,
    },
    Generated {
        name: "efficiency-table",
        path: "docs/plan.md",
        owns_dir: false,
        from: "crates/kplan-plan/data/efficiency.toml (between the efficiency-table markers)",
        render: efficiency_table,
    },
    Generated {
        name: "plan-schema",
        path: "docs/plan.schema.json",
        owns_dir: false,
        from: "the plan model (crates/kplan-plan/src/model.rs)",
        render: plan_schema,
    },
    Generated {
        name: "header",
        path: "include/kplan_portability.h",
        owns_dir: false,
        from: "kplan-gen, every backend (`kplan header`)",
        render: header,
    },
    Generated {
        name: "bench-docs",
        path: "docs/bench.md",
        owns_dir: false,
        from: BENCH_RUN,
        render: bench_docs,
    },
    Generated {
        name: "kb-measurements",
        path: "crates/kplan-kb/data/measurements.toml",
        owns_dir: false,
        from: BENCH_RUN,
        render: kb_measurements,
    },
];

/// The entry called `name`.
pub fn entry(name: &str) -> Option<&'static Generated> {
    TABLE.iter().find(|g| g.name == name)
}

/// The repository root (the workspace of this crate).
pub fn root() -> PathBuf {
    kplan_test_support::workspace_root()
}

/// What [`run`] found or did.
#[derive(Debug, Default)]
pub struct Report {
    pub written: Vec<PathBuf>,
    /// Files that differ from their generator's text, with the first difference.
    pub stale: Vec<(PathBuf, String)>,
    /// Files in an owned directory that no generator makes (removed in [`Mode::Write`]).
    pub extra: Vec<PathBuf>,
    pub checked: usize,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.stale.is_empty() && self.extra.is_empty()
    }
    fn absorb(&mut self, other: Report) {
        self.written.extend(other.written);
        self.stale.extend(other.stale);
        self.extra.extend(other.extra);
        self.checked += other.checked;
    }
    /// One line per stale or extra file, then the command that fixes them.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for (p, why) in &self.stale {
            let _ = writeln!(s, "stale: {} ({why})", p.display());
        }
        for p in &self.extra {
            let _ = writeln!(s, "not generated: {}", p.display());
        }
        if !self.is_clean() {
            let _ = writeln!(s, "run `{REGENERATE}` and commit the result");
        }
        s
    }
}

/// Checks or writes one entry's files.
pub fn run(root: &Path, g: &Generated, mode: Mode) -> Result<Report> {
    let files = (g.render)(root).with_context(|| format!("generating {}", g.name))?;
    let mut report = Report::default();
    for (rel, text) in &files {
        let path = root.join(rel);
        report.checked += 1;
        match golden::compare(&path, text, mode)
            .with_context(|| format!("writing {}", path.display()))?
        {
            Outcome::Same => {}
            Outcome::Written => report.written.push(rel.clone()),
            Outcome::Stale { first_difference } => {
                report.stale.push((rel.clone(), first_difference))
            }
        }
    }
    if g.owns_dir {
        let dir = root.join(g.path);
        let rd = std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
        let mut extra: Vec<PathBuf> = rd
            .flatten()
            .map(|e| Path::new(g.path).join(e.file_name()))
            .filter(|p| !files.iter().any(|(f, _)| f == p))
            .collect();
        extra.sort();
        for p in extra {
            if mode == Mode::Write {
                let abs = root.join(&p);
                std::fs::remove_file(&abs)
                    .with_context(|| format!("removing {}", abs.display()))?;
                report.written.push(p);
            } else {
                report.extra.push(p);
            }
        }
    }
    Ok(report)
}

/// Checks or writes every entry of [`TABLE`].
pub fn run_all(root: &Path, mode: Mode) -> Result<Report> {
    let mut report = Report::default();
    for g in TABLE {
        report.absorb(run(root, g, mode)?);
    }
    Ok(report)
}

fn read(root: &Path, rel: &str) -> Result<String> {
    let p = root.join(rel);
    std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))
}

// ---- generators -------------------------------------------------------------------------

fn rule_docs(_root: &Path) -> Result<Vec<Rendered>> {
    let header = format!("<!-- @generated by `{REGENERATE}`; edit the rule's META instead -->\n\n");
    let dir = Path::new("docs/rules");
    let mut out = Vec::new();
    let mut index = header.clone();
    index.push_str("# kplan scan rules\n\n`kplan rules` lists them; `kplan explain RULE` prints a page.\n\n| rule | language | default severity | applies when | summary |\n|---|---|---|---|---|\n");
    for r in kplan_scan::all_rules() {
        let _ = writeln!(
            index,
            "| [{id}]({id}.md) | {} | {} | {} | {} |",
            r.lang.as_str(),
            r.severity.as_str(),
            r.scope_text(),
            r.summary.replace('|', "\\|"),
            id = r.id
        );
        out.push((
            dir.join(format!("{}.md", r.id)),
            format!("{header}{}", r.doc_markdown()),
        ));
    }
    out.push((dir.join("README.md"), index));
    Ok(out)
}

fn target_docs(_root: &Path) -> Result<Vec<Rendered>> {
    Ok(vec![(
        "docs/targets.md".into(),
        kplan_kb::render::targets_markdown(kplan_kb::Kb::builtin()),
    )])
}

/// The example specs, `examples/*.toml`, sorted.
pub fn example_specs(root: &Path) -> Result<Vec<PathBuf>> {
    let dir = root.join("examples");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    Ok(v)
}

fn example_plans(root: &Path) -> Result<Vec<Rendered>> {
    let kb = kplan_kb::Kb::builtin();
    let mut out = Vec::new();
    for spec_path in example_specs(root)? {
        let text = std::fs::read_to_string(&spec_path)
            .with_context(|| format!("reading {}", spec_path.display()))?;
        let spec = kplan_plan::parse_spec(&text, kb)
            .map_err(|e| anyhow!("{}", e.render(&spec_path.display().to_string(), &text)))?;
        let plan = kplan_plan::build_plan(&spec, kb, &kplan_plan::PlanInputs::default());
        let stem = spec_path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dir = Path::new("examples/plans");
        out.push((
            dir.join(format!("{stem}.md")),
            kplan_plan::render::markdown_with_chart(&plan, Some(&format!("{stem}.svg"))),
        ));
        out.push((
            dir.join(format!("{stem}.svg")),
            kplan_plan::render::roofline_svg(&plan),
        ));
        out.push((
            dir.join(format!("{stem}.json")),
            kplan_plan::render::json(&plan),
        ));
    }
    Ok(out)
}

/// The markers around the generated table in `docs/plan.md`.
pub const EFFICIENCY_MARKERS: (&str, &str) = (
    "<!-- efficiency-table:start (@generated from crates/kplan-plan/data/efficiency.toml) -->\n",
    "<!-- efficiency-table:end -->",
);

fn efficiency_table(root: &Path) -> Result<Vec<Rendered>> {
    let rel = "docs/plan.md";
    let doc = read(root, rel)?;
    let (start, end) = EFFICIENCY_MARKERS;
    let a = doc
        .find(start)
        .ok_or_else(|| anyhow!("{rel}: no `{}` marker", start.trim_end()))?
        + start.len();
    let b = doc
        .find(end)
        .filter(|&b| b >= a)
        .ok_or_else(|| anyhow!("{rel}: no `{end}` marker after the start marker"))?;
    let table =
        kplan_plan::efficiency::markdown_table(kplan_plan::efficiency::EfficiencyTable::builtin());
    Ok(vec![(
        rel.into(),
        format!("{}{}{}", &doc[..a], table, &doc[b..]),
    )])
}

fn plan_schema(_root: &Path) -> Result<Vec<Rendered>> {
    Ok(vec![(
        "docs/plan.schema.json".into(),
        kplan_plan::schema::plan_schema_json(),
    )])
}

fn header(_root: &Path) -> Result<Vec<Rendered>> {
    Ok(vec![(
        "include/kplan_portability.h".into(),
        kplan_gen::render_header(&kplan_gen::HeaderConfig::all()),
    )])
}

fn bench_run(root: &Path) -> Result<Value> {
    serde_json::from_str(&read(root, BENCH_RUN)?).with_context(|| format!("parsing {BENCH_RUN}"))
}

fn bench_docs(root: &Path) -> Result<Vec<Rendered>> {
    let doc = bench_run(root)?;
    Ok(vec![
        (
            "docs/bench.md".into(),
            kplan_run::report::render_markdown(&doc, BENCH_RUN),
        ),
        (
            "docs/bench.svg".into(),
            kplan_run::report::render_svg(&doc, BENCH_RUN),
        ),
    ])
}

/// The line after which `measurements.toml` is generated.
pub const MEASUREMENTS_MARKER: &str = "# --- measured by bench/run-gpu.sh (generated by `cargo xtask generate`; do not edit below) ---";
/// Earlier spellings of [`MEASUREMENTS_MARKER`], replaced by it.
const OLD_MEASUREMENTS_MARKERS: [&str; 2] = [
    "# --- measured by bench/run-gpu.sh (generated by bench/kb_measurements.py; do not edit below) ---",
    "# --- H200, bench/results/h200-2026-11-30.json (bench/run-gpu.sh) ---",
];

fn kb_measurements(root: &Path) -> Result<Vec<Rendered>> {
    let rel = "crates/kplan-kb/data/measurements.toml";
    let mut text = read(root, rel)?;
    for m in std::iter::once(MEASUREMENTS_MARKER).chain(OLD_MEASUREMENTS_MARKERS) {
        if let Some(i) = text.find(m) {
            text.truncate(i);
        }
    }
    let entries = measurements(&bench_run(root)?, BENCH_RUN)?;
    Ok(vec![(
        rel.into(),
        format!(
            "{}\n\n{MEASUREMENTS_MARKER}\n\n{}",
            text.trim_end(),
            entries.join("\n")
        ),
    )])
}

/// One `[[measurement]]` per kplan default configuration whose output was checked
/// (`kplan-cuda`), per Triton kernel (`kplan-triton`) and per torch eager anchor of the run
/// `d` (read from `path`), each citing [`BENCH_SOURCE`].
pub fn measurements(d: &Value, path: &str) -> Result<Vec<String>> {
    let str_of = |v: &Value, what: &str| -> Result<String> {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| anyhow!("{path}: {what} is not a string"))
    };
    let num_of = |v: &Value, what: &str| -> Result<f64> {
        v.as_f64()
            .ok_or_else(|| anyhow!("{path}: {what} is not a number"))
    };
    let peak = num_of(&d["bench"]["peak_gbs"], "bench.peak_gbs")?;
    let started = str_of(&d["started"], "started")?;
    let date = started
        .get(..10)
        .ok_or_else(|| anyhow!("{path}: started `{started}` is not a date"))?;
    let op_of = |k: &str| -> Result<&'static str> {
        Ok(match k {
            "reduce_sum" => "reduction",
            "add" => "elementwise",
            "softmax" => "softmax",
            "rmsnorm" => "norm",
            "quantize_fp8" => "custom",
            _ => bail!("{path}: unknown kernel `{k}`"),
        })
    };
    let shape = |s: &str| match s.split_once('x') {
        Some((r, c)) => format!("{{ rows = {r}, cols = {c} }}"),
        None => format!("{{ n = {s} }}"),
    };
    let mut out = Vec::new();
    let mut ent = |imp: &str, r: &Value, gbs: f64, cmd: &str, note: &str| -> Result<()> {
        let k = str_of(&r["kernel"], "kernel")?;
        let dt = str_of(&r["dtype"], "dtype")?;
        let s = str_of(&r["shape"], "shape")?;
        out.push(format!(
            "[[measurement]]\nid = \"h200-{k}-{dt}-{s}-{imp}\"\nkernel = \"{k}\"\nop = \"{op}\"\nimplementation = \"{imp}\"\ndevice = \"h200\"\ndtype = \"{dt}\"\nshape = {shape}\nachieved = {gbs:.0}\nunit = \"GB/s\"\nfraction_of_peak = {frac:.3}\ndate = \"{date}\"\ncommand = \"{cmd}\"\nsource = \"{BENCH_SOURCE}\"\nnote = \"{note}\"\n",
            op = op_of(&k)?,
            shape = shape(&s),
            frac = gbs / peak,
        ));
        Ok(())
    };
    let empty = Vec::new();
    for r in d["bench"]["records"].as_array().unwrap_or(&empty) {
        if r["default"].as_bool() == Some(true) && r["output_checked"].as_bool() == Some(true) {
            let note = format!(
                "{path}; default tile configuration {}; median of {} runs, L2 flushed",
                str_of(&r["config"], "config")?,
                r["runs"]
            );
            ent(
                "kplan-cuda",
                r,
                num_of(&r["gbs"], "gbs")?,
                "bench/run-gpu.sh (kplan bench all --kernels kernels --alternatives)",
                &note,
            )?;
        }
    }
    for a in d["anchors"]["records"].as_array().unwrap_or(&empty) {
        // kplan's own kernels timed by the anchors script are a cross-check, not a KB figure
        if a.get("gbs").is_none() || !matches!(a["impl"].as_str(), Some("triton" | "torch")) {
            continue;
        }
        let triton = a["impl"].as_str() == Some("triton");
        let what = if triton {
            "kernels/triton".to_string()
        } else {
            format!("torch {}", d["anchors"]["torch"].as_str().unwrap_or(""))
        };
        ent(
            if triton {
                "kplan-triton"
            } else {
                "torch-eager"
            },
            a,
            num_of(&a["gbs"], "gbs")?,
            "bench/run-gpu.sh (python3 bench/anchors.py)",
            &format!("{path}; triton.testing.do_bench median, L2 cleared; {what}"),
        )?;
    }
    Ok(out)
}
