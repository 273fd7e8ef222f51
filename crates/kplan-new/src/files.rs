//! What every project holds: the names derived from the plan, the strategy, the header, the
//! build files, `kplan.toml`, the workflow and the README.

use crate::family::{self, Family};
use crate::template::{self, render};
use crate::tiles::Tiles;
use crate::{NewError, Options, Project, ProjectFile};
use kplan_kb::{Arch, Kb, Vendor};
use kplan_plan::model::Decision;
use kplan_plan::Plan;
use std::fmt::Write;

/// Which template set a plan gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    SingleSource,
    Triton,
    Library,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::SingleSource => "hip-single-source",
            Kind::Triton => "triton",
            Kind::Library => "library",
        }
    }
}

/// The project kind for the plan's verdict and strategy.
pub fn strategy_kind(plan: &Plan) -> Result<Kind, NewError> {
    let chosen = plan.strategy.chosen.as_str();
    let k = &plan.kernel.name;
    match (plan.verdict.decision, chosen) {
        (
            Decision::CustomKernel | Decision::NvidiaOnly | Decision::AmdOnly,
            "hip-single-source" | "per-backend",
        ) => {
            Ok(Kind::SingleSource)
        }
        (Decision::CustomKernel | Decision::AmdOnly, "triton") => Ok(Kind::Triton),
        (
            Decision::UseVendorLibrary | Decision::NvidiaOnly | Decision::AmdOnly,
            "vendor-blas",
        ) => Ok(Kind::Library),
        (Decision::UseFramework, _) => Err(NewError::Unsupported(format!(
            "kernel `{k}`: the plan's verdict is use-framework ({}): there is no kernel or library call to write a project for; call the framework's op",
            plan.verdict.reason
        ))),
        (d, c) => Err(NewError::Unsupported(format!(
            "kernel `{k}`: verdict `{}` with strategy `{c}` has no project template; kplan new writes projects for the strategies hip-single-source, per-backend and triton (custom kernels) and vendor-blas (library verdicts)",
            d.as_str()
        ))),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    F32,
    F64,
    Bf16,
    Fp16,
}

impl Storage {
    fn of(plan: &Plan) -> Result<Storage, NewError> {
        match plan.kernel.storage_dtype.as_str() {
            "fp32" => Ok(Storage::F32),
            "fp64" => Ok(Storage::F64),
            "bf16" => Ok(Storage::Bf16),
            "fp16" => Ok(Storage::Fp16),
            other => Err(NewError::Unsupported(format!(
                "kernel `{}`: storage dtype `{other}` has no kernel skeleton (kplan new writes fp32, fp64, fp16 and bf16 storage)",
                plan.kernel.name
            ))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Storage::F32 => "fp32",
            Storage::F64 => "fp64",
            Storage::Bf16 => "bf16",
            Storage::Fp16 => "fp16",
        }
    }
    pub fn harness_dtype(self) -> &'static str {
        self.name()
    }
    pub fn compute_harness_dtype(self) -> &'static str {
        if self == Storage::F64 {
            "fp64"
        } else {
            "fp32"
        }
    }
    pub fn inf(self) -> &'static str {
        if self == Storage::F64 {
            "__builtin_huge_val()"
        } else {
            "__builtin_huge_valf()"
        }
    }
    /// The `[tolerance]` line: the kernel accumulates in fp32 (fp64) in another order than the
    /// double reference, then rounds once to the storage type.
    pub fn harness_tolerance(self, f: &Family) -> String {
        let long_sum = matches!(f, Family::ReduceFlat(_));
        match self {
            Storage::F32 if long_sum => "fp32 = { rel = 1e-5, abs = 2e-2 }  # fp32 sums of up to 2^20 elements, in another order than the double reference".into(),
            Storage::F32 => "fp32 = { rel = 1e-4, abs = 1e-5 }".into(),
            Storage::F64 => "fp64 = { rel = 1e-9, abs = 1e-9 }".into(),
            Storage::Bf16 => "bf16 = { rel = 1.6e-2, abs = 1e-3 }  # one bf16 rounding of an fp32 result".into(),
            Storage::Fp16 => "fp16 = { rel = 2e-3, abs = 1e-3 }  # one fp16 rounding of an fp32 result".into(),
        }
    }
}

/// The names and parts every file uses.
pub struct Ctx<'a> {
    pub plan: &'a Plan,
    pub source_path: String,
    /// The kernel name as a file stem (`kernels/<file>.cu`, as the plan's CI legs name it).
    pub file: String,
    /// As a C identifier (entry points, types).
    pub stem: String,
    /// Upper-case macro prefix.
    pub prefix: String,
    pub storage: Storage,
    pub tiles: Tiles,
    /// Architectures kplan builds for (the knowledge base's): the spec's NVIDIA, AMD and CPU
    /// targets, then the CI matrix's coverage architectures.
    pub targets: Vec<&'a Arch>,
    pub header: String,
    pub workflow: String,
    pub notes: Vec<String>,
}

fn c_ident(file: &str) -> String {
    let mut s: String = file
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if !s.starts_with(|c: char| c.is_ascii_alphabetic()) {
        s.insert_str(0, "k_");
    }
    s
}

impl<'a> Ctx<'a> {
    pub fn new(
        plan: &'a Plan,
        kb: &'a Kb,
        opts: &Options,
        f: &Family,
    ) -> Result<Ctx<'a>, NewError> {
        let storage = Storage::of(plan)?;
        let file = kplan_plan::decide::ci::file_stem(&plan.kernel.name);
        let stem = c_ident(&file);
        let prefix = stem.to_ascii_uppercase();
        let mut notes = Vec::new();
        let mut targets: Vec<&'a Arch> = Vec::new();
        let mut push = |arch: &'a Arch| {
            if !targets.iter().any(|t| t.id == arch.id) {
                targets.push(arch);
            }
        };
        for b in &plan.backend_matrix {
            match b.vendor.as_str() {
                "nvidia" | "amd" | "cpu" => match kb.arch(&b.arch) {
                    Some(a) => push(a),
                    // only a plan read back from JSON can name one (`--plan`)
                    None => notes.push(format!(
                        "{} ({}): not an architecture of the knowledge base, so this target gets no code",
                        b.target, b.arch
                    )),
                },
                _ => notes.push(format!(
                    "{} ({}, {}): kplan new writes CUDA/HIP and C++ only; this target gets no code (plan section 3: {})",
                    b.target,
                    b.arch,
                    b.vendor,
                    plan.strategy
                        .per_target
                        .iter()
                        .find(|p| p.target == b.target)
                        .map(|p| p.implementation.as_str())
                        .unwrap_or("no abstraction")
                )),
            }
        }
        for l in &plan.ci.legs {
            if let Some(a) = kb.arch(&l.arch) {
                if matches!(a.vendor, Vendor::Nvidia | Vendor::Amd | Vendor::Cpu) {
                    push(a);
                }
            }
        }
        // the CI host runs the CPU fallback
        if let Ok(r) = kb.resolve("cpu-x86_64-avx2") {
            push(r.arch);
        }
        let header = kplan_gen::render_header(&kplan_gen::HeaderConfig::from_archs(&targets));
        let unused = kplan_plan::render::workflow::unused_runner_keys(plan, &opts.runners);
        if !unused.is_empty() {
            return Err(NewError::Unsupported(format!(
                "runner kind {} matches no leg that needs a self-hosted runner",
                unused.join(", ")
            )));
        }
        let workflow = kplan_plan::render::workflow(
            plan,
            &kplan_plan::render::WorkflowOptions {
                spec_path: opts.source_path.clone(),
                runners: opts.runners.clone(),
                kplan_version: opts.kplan_version.clone(),
                kplan_rev: opts.kplan_rev.clone(),
            },
        );
        if plan.operation.class == "norm" && plan.operation.kind.is_none() {
            notes.push(
                "the spec's norm names no `kind`: the skeleton is RMSNorm (`kind = \"layernorm\"` gives LayerNorm)"
                    .into(),
            );
        }
        Ok(Ctx {
            plan,
            source_path: opts.source_path.clone(),
            file,
            stem,
            prefix,
            storage,
            tiles: Tiles::new(plan, f),
            targets,
            header,
            workflow,
            notes,
        })
    }

    /// The variables every template may use.
    pub fn vars(&self) -> Vec<(&'static str, String)> {
        let st = self.storage;
        let (storage_t, compute_t, exp, sqrt) = match st {
            Storage::F64 => ("double", "double", "exp", "sqrt"),
            Storage::F32 => ("float", "float", "expf", "sqrtf"),
            Storage::Bf16 | Storage::Fp16 => ("unsigned short", "float", "expf", "sqrtf"),
        };
        let algorithm = self
            .plan
            .operation
            .knowledge
            .as_ref()
            .and_then(|k| k.algorithms.first())
            .map(|a| format!("{} ({})", a.name, a.when))
            .unwrap_or_else(|| "none recorded for this op class".into());
        vec![
            ("SPEC", self.source_path.clone()),
            ("NAME", self.plan.kernel.name.clone()),
            ("OP", self.plan.operation.class.clone()),
            ("FILE", self.file.clone()),
            ("STEM", self.stem.clone()),
            ("P", self.prefix.clone()),
            ("STORAGE", st.name().into()),
            (
                "COMPUTE",
                if st == Storage::F64 { "fp64" } else { "fp32" }.into(),
            ),
            ("STORAGE_T", storage_t.into()),
            ("COMPUTE_T", compute_t.into()),
            ("EXP", exp.into()),
            ("SQRT", sqrt.into()),
            ("INF", st.inf().into()),
            ("ALGORITHM", algorithm),
        ]
    }

    pub fn as_refs<'v>(&self, vars: &'v [(&'static str, String)]) -> Vec<(&'static str, &'v str)> {
        vars.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }

    pub fn render(&self, tpl: &str) -> String {
        let vars = self.vars();
        render(tpl, &self.as_refs(&vars))
    }

    pub fn gpu_targets(&self) -> impl Iterator<Item = &'a Arch> + '_ {
        self.targets
            .iter()
            .copied()
            .filter(|t| t.vendor != Vendor::Cpu)
    }
}

fn add(p: &mut Project, path: impl Into<String>, text: String) {
    let path = path.into();
    p.files.retain(|f| f.path != path);
    p.files.push(ProjectFile { path, text });
}

/// The kernel configuration header: types, conversions, math and the tile macros.
fn config_header(ctx: &Ctx) -> String {
    let mut o = ctx.render(template::CONFIG_HEAD);
    match ctx.storage {
        Storage::F32 | Storage::F64 => o.push_str(&ctx.render(template::CONFIG_STORAGE_F32)),
        Storage::Bf16 => {
            o.push_str(&ctx.render(template::CONFIG_STORAGE_16));
            o.push_str(&ctx.render(template::CONFIG_BF16));
        }
        Storage::Fp16 => {
            o.push_str(&ctx.render(template::CONFIG_STORAGE_16));
            o.push_str(&ctx.render(template::CONFIG_FP16));
        }
    }
    o.push_str(&ctx.render(template::CONFIG_MATH));
    o.push_str(&ctx.tiles.render(&ctx.prefix));
    let _ = writeln!(o, "\n#endif /* {}_CONFIG_H */", ctx.prefix);
    o
}

/// The portable kernel, its configuration, harness, CPU fallback and test. `cpu_form`: the
/// project is a Triton one, where the portable kernel is the CPU fallback's kernel form.
pub fn single_source(ctx: &Ctx, f: &Family, p: &mut Project, cpu_form: bool) {
    let file = &ctx.file;
    add(p, format!("kernels/{file}.cu"), family::kernel(ctx, f));
    add(p, format!("kernels/{file}_config.h"), config_header(ctx));
    add(p, format!("kernels/{file}.toml"), family::harness(ctx, f));
    cpu_files(ctx, f, p);
    let _ = cpu_form;
}

/// The CPU fallback and its test.
pub fn cpu_files(ctx: &Ctx, f: &Family, p: &mut Project) {
    let file = &ctx.file;
    let (h, cpp) = family::cpu(ctx, f);
    add(p, format!("src/{file}_cpu.h"), h);
    add(p, format!("src/{file}_cpu.cpp"), cpp);
    add(
        p,
        format!("tests/test_{file}_cpu.cpp"),
        family::cpu_test(ctx, f),
    );
}

/// The header, `kplan.toml`, the build files, the workflow and the README.
pub fn common(ctx: &Ctx, f: &Family, p: &mut Project) {
    add(p, "include/kplan_portability.h", ctx.header.clone());
    add(p, ".github/workflows/kplan.yml", ctx.workflow.clone());
    add(p, "kplan.toml", kplan_toml(ctx));
    add(p, ".gitignore", "/build/\n__pycache__/\n".into());
    if p.kind != "library" {
        add(p, "Makefile", makefile(ctx));
        add(p, "CMakeLists.txt", cmake(ctx));
    }
    add(p, "README.md", readme(ctx, f, p));
}

fn kplan_toml(ctx: &Ctx) -> String {
    let mut o = format!(
        "# @generated by `kplan new {}`. kplan reads this file for `kplan scan` and `kplan build`\n# (the targets when --targets is not given); docs/scan.md in kplan lists every key.\n",
        ctx.source_path
    );
    let t: Vec<String> = ctx
        .targets
        .iter()
        .map(|t| format!("\"{}\"", t.id))
        .collect();
    let _ = writeln!(o, "targets = [{}]", t.join(", "));
    o.push_str("header = \"include/kplan_portability.h\"\n");
    o
}

fn makefile(ctx: &Ctx) -> String {
    build_file(ctx, template::MAKEFILE, " ", |a| a.to_string())
}

fn cmake(ctx: &Ctx) -> String {
    build_file(ctx, template::CMAKE, ";", |a| {
        a.trim_start_matches("sm_").to_string()
    })
}

/// A build file template with the NVIDIA architectures (spelled by `nv_arch`) and the AMD ones,
/// each list joined by `sep`.
fn build_file(ctx: &Ctx, tpl: &str, sep: &str, nv_arch: impl Fn(&str) -> String) -> String {
    let archs = |vendor: Vendor| -> Vec<String> {
        ctx.gpu_targets()
            .filter(|t| t.vendor == vendor)
            .map(|t| t.id.clone())
            .collect()
    };
    let nvs = archs(Vendor::Nvidia)
        .iter()
        .map(|a| nv_arch(a))
        .collect::<Vec<_>>()
        .join(sep);
    let amds = archs(Vendor::Amd).join(sep);
    let vars = ctx.vars();
    let mut r = ctx.as_refs(&vars);
    r.push(("NV_ARCHS", &nvs));
    r.push(("AMD_ARCHS", &amds));
    render(tpl, &r)
}

fn readme(ctx: &Ctx, f: &Family, p: &Project) -> String {
    let plan = ctx.plan;
    let k = &plan.kernel;
    let file = &ctx.file;
    let mut o = String::new();
    let _ = writeln!(o, "# {}\n", k.name);
    let _ = writeln!(
        o,
        "Written by `kplan new {}` from the kernel plan (`kplan plan {}` prints it in full). This\nfile is yours: kplan does not read it.\n",
        ctx.source_path, ctx.source_path
    );
    if let Some(d) = &k.description {
        let _ = writeln!(o, "{d}\n");
    }
    let _ = writeln!(o, "## The plan\n");
    let _ = writeln!(
        o,
        "- **Op**: `{}`{}, {} storage, {} compute; skeleton family `{}`.",
        plan.operation.class,
        plan.operation
            .kind
            .as_ref()
            .map(|x| format!(" ({x})"))
            .unwrap_or_default(),
        k.storage_dtype,
        k.compute_dtype,
        f.name()
    );
    let _ = writeln!(
        o,
        "- **Verdict**: `{}`: {}.",
        plan.verdict.decision.as_str(),
        plan.verdict.reason
    );
    let _ = writeln!(o, "- **Strategy**: {}.", plan.strategy.summary);
    if let Some(kn) = &plan.operation.knowledge {
        let _ = writeln!(
            o,
            "- **Tile hint** (operation knowledge base): {}.",
            kn.tile_hint
        );
        for a in &kn.algorithms {
            let _ = writeln!(o, "- **Algorithm**: {} ({}).", a.name, a.when);
        }
    }
    o.push_str("\n| target | architecture | implementation |\n|---|---|---|\n");
    for t in &plan.strategy.per_target {
        let arch = plan
            .backend_matrix
            .iter()
            .find(|b| b.target == t.target)
            .map(|b| b.arch.as_str())
            .unwrap_or("");
        let _ = writeln!(o, "| {} | {} | {} |", t.target, arch, t.implementation);
    }
    let high: Vec<&kplan_plan::model::Risk> =
        plan.risks.iter().filter(|r| r.severity == "high").collect();
    if !high.is_empty() {
        o.push_str("\nHigh risks (plan section 4):\n\n");
        for r in high {
            let _ = writeln!(
                o,
                "- {} ({}): {}",
                r.title,
                r.targets.join(", "),
                r.mitigation
            );
        }
    }
    if !p.notes.is_empty() {
        o.push_str("\nNotes from `kplan new`:\n\n");
        for n in &p.notes {
            let _ = writeln!(o, "- {n}");
        }
    }
    o.push_str("\n## Layout\n\n");
    for pf in &p.files {
        let what = match pf.path.as_str() {
            x if x.starts_with("include/") => "the portability header (`kplan header`) for the targets below".to_string(),
            x if x.ends_with("_config.h") => "tile macros with the plan's per-target defaults (section 6), storage type and conversions".to_string(),
            x if x.ends_with(".cu") && p.kind == "triton" => "the portable kernel on the header's names: the CPU fallback's kernel form, which the plan's CPU legs build and verify".to_string(),
            x if x.ends_with(".cu") => "the kernel: a simple, correct implementation on the header's names".to_string(),
            x if x.ends_with(".py") && x.starts_with("kernels/") => "the Triton kernel with its launch configurations per backend".to_string(),
            x if x.ends_with("_ref.py") => "the reference in plain Python".to_string(),
            x if x.starts_with("kernels/") && x.ends_with(".toml") => "the `kplan verify` harness: edge sizes, adversarial data, every tile default".to_string(),
            x if x.starts_with("src/") && x.ends_with("_cpu.cpp") => "the CPU fallback in C++, also the harness's reference".to_string(),
            x if x.starts_with("src/") => "declarations".to_string(),
            x if x.starts_with("tests/") => "the CPU fallback's own test (`make test`)".to_string(),
            ".github/workflows/kplan.yml" => "the CI matrix (plan section 7), as `kplan ci` writes it".to_string(),
            "kplan.toml" => "targets for `kplan scan` and `kplan build`".to_string(),
            "Makefile" | "CMakeLists.txt" => "the build: CPU fallback and its test; the kernel with nvcc and HIP clang".to_string(),
            _ => continue,
        };
        let _ = writeln!(o, "- `{}`: {what}", pf.path);
    }
    o.push_str("\n## Checks\n\n```sh\n");
    o.push_str("make test                                   # the CPU fallback's own test\n");
    match p.kind {
        "library" => {
            o.push_str("make dispatch                               # the library wrapper, where the libraries are found\n");
        }
        _ => {
            if p.kind == "triton" {
                let _ = writeln!(o, "kplan build kernels/{file}.py                # the Triton kernel for every GPU target");
                let _ = writeln!(o, "kplan verify kernels/{file}.py --backend cpu # the Triton kernel under the interpreter");
            }
            let _ = writeln!(o, "kplan build kernels/{file}.cu                # every target in kplan.toml, real compilers");
            let _ = writeln!(o, "kplan verify kernels/{file}.toml             # the kernel on the CPU at 32 and 64 lanes per warp");
        }
    }
    o.push_str("kplan scan .                                # portability hazards\n```\n");
    o.push_str("\n## What to fill in\n\n");
    match p.kind {
        "library" => o.push_str(&crate::library::fill_in(ctx)),
        _ => o.push_str(&family::fill_in(ctx, f)),
    }
    o.push_str("\n\nThe workflow needs the repository variable `KPLAN_GIT` (kplan's git URL) and, for the GPU\nlegs, self-hosted runners with the labels under `runs-on`; GPU legs kplan cannot drive run\n`ci/test-on-device.sh ARCH`, which is yours to write.\n");
    o
}
