//! The op families with a skeleton: which one a plan asks for, and its kernel, CPU fallback,
//! CPU test and `kplan verify` harness.

use crate::files::{Ctx, Kind, Storage};
use crate::template::{self, render};
use crate::NewError;
use kplan_plan::Plan;
use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum Reduce {
    Sum,
    Mean,
    Max,
    Min,
}

impl Reduce {
    fn as_str(self) -> &'static str {
        self.into()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Family {
    Elementwise { inputs: u32, outputs: u32 },
    Softmax,
    RmsNorm,
    LayerNorm,
    ReduceFlat(Reduce),
    ReduceRows(Reduce),
    Gemm,
}

const SUPPORTED: &str = "elementwise, softmax, norm (rmsnorm, layernorm), reduction (sum, mean, max, min; flat `n` or `rows` x `cols`) and gemm";

fn problem_u64(plan: &Plan, key: &str) -> Option<u64> {
    plan.operation.problem.get(key).and_then(|v| v.as_u64())
}

impl Family {
    pub fn of(plan: &Plan, kind: Kind) -> Result<Family, NewError> {
        let op = plan.operation.class.as_str();
        let kernel = &plan.kernel.name;
        if plan.operation.direction != "forward" {
            return Err(NewError::Unsupported(format!(
                "kernel `{kernel}`: kplan new has kernel skeletons for forward passes only (this spec is `direction = \"{}\"`); skeletons exist for {SUPPORTED}",
                plan.operation.direction
            )));
        }
        let kind_s = plan.operation.kind.as_deref();
        let f = match op {
            "elementwise" => Family::Elementwise {
                inputs: problem_u64(plan, "inputs").unwrap_or(1).clamp(1, 8) as u32,
                outputs: problem_u64(plan, "outputs").unwrap_or(1).clamp(1, 8) as u32,
            },
            "softmax" => Family::Softmax,
            "norm" => match kind_s {
                Some("layernorm") => Family::LayerNorm,
                _ => Family::RmsNorm,
            },
            "reduction" => {
                let r = match kind_s {
                    None | Some("sum") => Reduce::Sum,
                    Some("mean") => Reduce::Mean,
                    Some("max") => Reduce::Max,
                    Some("min") => Reduce::Min,
                    Some(k) => {
                        return Err(NewError::Unsupported(format!(
                            "kernel `{kernel}`: no kernel skeleton for reduction kind `{k}` (kplan new writes sum, mean, max and min reductions)"
                        )))
                    }
                };
                if problem_u64(plan, "rows").is_some() && problem_u64(plan, "cols").is_some() {
                    Family::ReduceRows(r)
                } else {
                    Family::ReduceFlat(r)
                }
            }
            "gemm" => Family::Gemm,
            other => {
                return Err(NewError::Unsupported(format!(
                    "kernel `{kernel}`: no kernel skeleton for op class `{other}` yet; kplan new writes projects for {SUPPORTED}. `kplan plan` still gives the plan, `kplan header` the portability header and `kplan ci` the workflow"
                )))
            }
        };
        if kind == Kind::Triton && !matches!(f, Family::Softmax | Family::RmsNorm) {
            return Err(NewError::Unsupported(format!(
                "kernel `{kernel}`: the plan chose Triton, and kplan new has Triton skeletons for softmax and rmsnorm only (the ops `kplan verify` checks Triton kernels for); for `{}` allow `hip-single-source` in the spec's [abstraction] to get the portable CUDA/HIP project",
                f.name()
            )));
        }
        if kind == Kind::Library && f != Family::Gemm {
            return Err(NewError::Unsupported(format!(
                "kernel `{kernel}`: the verdict is use-vendor-library, and kplan new has a library dispatch project for gemm only (cuBLAS, hipBLAS, CBLAS); the plan names {} for `{}`",
                crate::library::names(plan),
                f.name()
            )));
        }
        Ok(f)
    }

    pub fn name(&self) -> String {
        match self {
            Family::Elementwise { .. } => "elementwise".into(),
            Family::Softmax => "softmax".into(),
            Family::RmsNorm => "rmsnorm".into(),
            Family::LayerNorm => "layernorm".into(),
            Family::ReduceFlat(r) => format!("reduce-{}", r.as_str()),
            Family::ReduceRows(r) => format!("row-{}", r.as_str()),
            Family::Gemm => "gemm".into(),
        }
    }

    /// Whether the kernel uses the block reduction (and the `_BLOCK` macro sizes its scratch).
    fn reduces(&self) -> bool {
        matches!(
            self,
            Family::Softmax
                | Family::RmsNorm
                | Family::LayerNorm
                | Family::ReduceFlat(_)
                | Family::ReduceRows(_)
        )
    }

    /// The tile macros the harness sweeps: those that change what the kernel executes.
    pub fn verify_macros(&self) -> &'static [&'static str] {
        match self {
            Family::Gemm => &["TILE"],
            _ => self.tile_macros(),
        }
    }

    /// The tile macros this family's kernel reads (without the prefix).
    pub fn tile_macros(&self) -> &'static [&'static str] {
        match self {
            Family::Elementwise { .. } => &["BLOCK", "ITEMS"],
            Family::ReduceFlat(_) => &["BLOCK", "ITEMS", "GRID"],
            Family::Gemm => &["TILE", "TILE_M", "TILE_N", "TILE_K"],
            _ => &["BLOCK"],
        }
    }
}

fn reduce_parts(r: Reduce, st: Storage) -> [(&'static str, String); 8] {
    let inf = st.inf();
    let (opname, identity, cpu_identity, cpu_combine) = match r {
        Reduce::Sum | Reduce::Mean => ("SUM", "0".to_string(), "0.0", "v + e"),
        Reduce::Max => ("MAX", format!("-{inf}"), "-INFINITY", "e > v ? e : v"),
        Reduce::Min => ("MIN", inf.to_string(), "INFINITY", "e < v ? e : v"),
    };
    let title = match r {
        Reduce::Sum => "Sum",
        Reduce::Mean => "Mean",
        Reduce::Max => "Maximum",
        Reduce::Min => "Minimum",
    };
    [
        ("OPNAME", opname.into()),
        ("IDENTITY", identity),
        ("CPU_IDENTITY", cpu_identity.into()),
        ("CPU_COMBINE", cpu_combine.into()),
        ("KIND_TITLE", title.into()),
        ("KIND", r.as_str().into()),
        (
            "MEAN_NOTE",
            if r == Reduce::Mean {
                " and divides by n".into()
            } else {
                String::new()
            },
        ),
        (
            "CPU_FINISH",
            if r == Reduce::Mean {
                "v / (double)n".into()
            } else {
                "v".into()
            },
        ),
    ]
}

/// The kernel source (`kernels/<file>.cu`).
pub fn kernel(ctx: &Ctx, f: &Family) -> String {
    let mut vars = ctx.vars();
    let block_reduce = if f.reduces() {
        render(template::BLOCK_REDUCE, &ctx.as_refs(&vars))
    } else {
        String::new()
    };
    vars.push(("BLOCK_REDUCE", block_reduce));
    let tpl = match f {
        Family::Softmax => template::K_SOFTMAX,
        Family::RmsNorm => template::K_RMSNORM,
        Family::LayerNorm => template::K_LAYERNORM,
        Family::Gemm => template::K_GEMM,
        Family::ReduceFlat(r) | Family::ReduceRows(r) => {
            let flat = matches!(f, Family::ReduceFlat(_));
            for (k, v) in reduce_parts(*r, ctx.storage) {
                vars.push((k, v));
            }
            let finish = match (r, flat) {
                (Reduce::Mean, true) => "v / n",
                (Reduce::Mean, false) => "v / cols",
                _ => "v",
            };
            vars.push(("FINISH", finish.into()));
            if flat {
                template::K_REDUCE_FLAT
            } else {
                template::K_REDUCE_ROWS
            }
        }
        Family::Elementwise { inputs, outputs } => {
            let s = &ctx.stem;
            let mut kp = Vec::new();
            for i in 0..*inputs {
                kp.push(format!("const {s}_storage_t* KPLAN_RESTRICT x{i}"));
            }
            for j in 0..*outputs {
                kp.push(format!("{s}_storage_t* KPLAN_RESTRICT y{j}"));
            }
            let op_params: Vec<String> = (0..*inputs)
                .map(|i| format!("{s}_compute_t a{i}"))
                .collect();
            let op_body: Vec<String> = (0..*inputs).map(|i| format!("a{i}")).collect();
            let op_args: Vec<String> = (0..*inputs).map(|i| format!("{s}_load(x{i}[i])")).collect();
            let mut stores = String::new();
            for j in 0..*outputs {
                let _ = writeln!(stores, "            y{j}[i] = {s}_store(v);");
            }
            vars.push(("KERNEL_PARAMS", kp.join(", ")));
            vars.push(("OP_PARAMS", op_params.join(", ")));
            vars.push(("OP_BODY", op_body.join(" + ")));
            vars.push(("OP_ARGS", op_args.join(", ")));
            vars.push(("STORES", stores));
            vars.push(("INPUTS", inputs.to_string()));
            vars.push(("OUTPUTS", outputs.to_string()));
            template::K_ELEMENTWISE
        }
    };
    render(tpl, &ctx.as_refs(&vars))
}

/// The CPU fallback: `src/<file>_cpu.h` and `src/<file>_cpu.cpp`.
pub fn cpu(ctx: &Ctx, f: &Family) -> (String, String) {
    let mut vars = ctx.vars();
    let s = ctx.stem.clone();
    let storage = match ctx.storage {
        Storage::F32 | Storage::F64 => template::CPU_STORAGE_F32,
        Storage::Bf16 => template::CPU_STORAGE_BF16,
        Storage::Fp16 => template::CPU_STORAGE_FP16,
    };
    let storage = render(storage, &ctx.as_refs(&vars));
    let (tpl, decl) = match f {
        Family::Softmax => (
            template::CPU_SOFTMAX,
            format!("void {s}_cpu(const {s}_storage_t* x, {s}_storage_t* y, int rows, int cols);"),
        ),
        Family::RmsNorm => (
            template::CPU_RMSNORM,
            format!("void {s}_cpu(const {s}_storage_t* x, const {s}_storage_t* w, {s}_storage_t* y, int rows, int cols, float eps);"),
        ),
        Family::LayerNorm => (
            template::CPU_LAYERNORM,
            format!("void {s}_cpu(const {s}_storage_t* x, const {s}_storage_t* w, const {s}_storage_t* b, {s}_storage_t* y, int rows,\n             int cols, float eps);"),
        ),
        Family::Gemm => (
            template::CPU_GEMM,
            format!("void {s}_cpu(const {s}_storage_t* a, const {s}_storage_t* b, {s}_storage_t* c, int m, int n, int k);"),
        ),
        Family::ReduceFlat(r) => {
            for (k, v) in reduce_parts(*r, ctx.storage) {
                vars.push((k, v));
            }
            (
                template::CPU_REDUCE_FLAT,
                format!("void {s}_cpu(const {s}_storage_t* x, long long n, {s}_storage_t* out);"),
            )
        }
        Family::ReduceRows(r) => {
            for (k, v) in reduce_parts(*r, ctx.storage) {
                vars.push((k, v));
            }
            (
                template::CPU_REDUCE_ROWS,
                format!("void {s}_cpu(const {s}_storage_t* x, {s}_storage_t* y, int rows, int cols);"),
            )
        }
        Family::Elementwise { inputs, outputs } => {
            let mut params = Vec::new();
            for i in 0..*inputs {
                params.push(format!("const {s}_storage_t* x{i}"));
            }
            for j in 0..*outputs {
                params.push(format!("{s}_storage_t* y{j}"));
            }
            let op_params: Vec<String> = (0..*inputs).map(|i| format!("double a{i}")).collect();
            let op_body: Vec<String> = (0..*inputs).map(|i| format!("a{i}")).collect();
            let op_args: Vec<String> = (0..*inputs)
                .map(|i| format!("{s}_cpu_load(x{i}[i])"))
                .collect();
            let mut stores = String::new();
            for j in 0..*outputs {
                let _ = writeln!(stores, "        y{j}[i] = {s}_cpu_store(v);");
            }
            let decl = format!("void {s}_cpu({}, long long n);", params.join(", "));
            vars.push(("CPU_PARAMS", params.join(", ")));
            vars.push(("CPU_OP_PARAMS", op_params.join(", ")));
            vars.push(("CPU_OP_BODY", op_body.join(" + ")));
            vars.push(("CPU_OP_ARGS", op_args.join(", ")));
            vars.push(("CPU_STORES", stores));
            (template::CPU_ELEMENTWISE, decl)
        }
    };
    let body = render(tpl, &ctx.as_refs(&vars));
    vars.push(("CPU_STORAGE", storage));
    vars.push((
        "CPU_DECL",
        format!("/* The CPU fallback; also the harness's reference. */\n{decl}"),
    ));
    vars.push(("CPU_BODY", body));
    let r = ctx.as_refs(&vars);
    (
        render(template::CPU_HEAD, &r),
        render(template::CPU_FILE, &r),
    )
}

/// The CPU fallback's own test (`tests/test_<file>_cpu.cpp`).
pub fn cpu_test(ctx: &Ctx, f: &Family) -> String {
    let mut vars = ctx.vars();
    let s = ctx.stem.clone();
    let tol = match ctx.storage {
        Storage::F64 => "1e-12",
        Storage::F32 => "1e-6",
        Storage::Bf16 | Storage::Fp16 => "1e-2",
    };
    vars.push(("TEST_TOL", tol.into()));
    let body = match f {
        Family::Softmax => template::TEST_SOFTMAX.to_string(),
        Family::RmsNorm => template::TEST_RMSNORM.to_string(),
        Family::LayerNorm => template::TEST_LAYERNORM.to_string(),
        Family::Gemm => template::TEST_GEMM.to_string(),
        Family::ReduceFlat(r) | Family::ReduceRows(r) => {
            let want = match r {
                Reduce::Sum => "(double)n * (n + 1) / 2",
                Reduce::Mean => "(double)(n + 1) / 2",
                Reduce::Max => "(double)n",
                Reduce::Min => "1.0",
            };
            vars.push(("TEST_WANT", want.into()));
            vars.push(("KIND", r.as_str().into()));
            if matches!(f, Family::ReduceFlat(_)) {
                template::TEST_REDUCE_FLAT.to_string()
            } else {
                template::TEST_REDUCE_ROWS.to_string()
            }
        }
        Family::Elementwise { inputs, outputs } => {
            let mut setup = String::new();
            let mut args = Vec::new();
            for i in 0..*inputs {
                let _ = writeln!(setup, "        auto x{i} = filled(n, {}.0);", i + 1);
                args.push(format!("x{i}.data()"));
            }
            let mut checks = String::new();
            for j in 0..*outputs {
                let _ = writeln!(setup, "        auto y{j} = filled(n, 0.0);");
                args.push(format!("y{j}.data()"));
                let _ = writeln!(
                    checks,
                    "            expect(\"y{j} = sum of the inputs\", {s}_cpu_load(y{j}[i]), {}.0, tol);",
                    inputs * (inputs + 1) / 2
                );
            }
            vars.push(("TEST_ELEM_SETUP", setup.trim_end().to_string()));
            vars.push(("TEST_ELEM_ARGS", args.join(", ")));
            vars.push(("TEST_ELEM_CHECKS", checks));
            template::TEST_ELEMENTWISE.to_string()
        }
    };
    let body = render(&body, &ctx.as_refs(&vars));
    vars.push(("TEST_BODY", body.trim_end().to_string()));
    render(template::TEST_HEAD, &ctx.as_refs(&vars))
}

/// The `kplan verify` harness (`kernels/<file>.toml`): edge sizes around the warp widths (32,
/// 64) and block sizes, adversarial data for the op, every per-target tile default.
pub fn harness(ctx: &Ctx, f: &Family) -> String {
    let s = &ctx.stem;
    let p = &ctx.prefix;
    let dt = ctx.storage.harness_dtype();
    let ct = ctx.storage.compute_harness_dtype();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# @generated by `kplan new {}`: the harness `kplan verify` runs the kernel with\n# (docs/verify.md in kplan): every size, data case and configuration below, against the CPU\n# fallback (src/{}_cpu.cpp). `kplan verify kernels/{}.toml --backend cpu-simt --warp 32,64`\n# runs it on the CPU with 32- and 64-lane warps; `--backend cuda` on an NVIDIA GPU.",
        ctx.source_path, ctx.file, ctx.file
    );
    let reference = format!(
        "[reference]\nsource = \"../src/{}_cpu.cpp\"\nfunction = \"{s}_cpu\"\n",
        ctx.file
    );
    let configs = |o: &mut String| {
        o.push_str("\n[configs]  # the plan's per-target defaults (section 6), plus edge values\n");
        for m in f.verify_macros() {
            let vals = ctx.tiles.harness_values(m, f);
            let _ = writeln!(
                o,
                "{p}_{m} = [{}]",
                vals.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    };
    let row_sizes = "rows = [1, 3]\ncols = [1, 31, 32, 33, 63, 64, 65, 1000, 4097]\n";
    let x_data_row = if ctx.storage == Storage::Fp16 {
        "[\"random\", \"ones\", \"zeros\"]"
    } else {
        "[\"random\", \"ones\", \"zeros\", \"ramp\"]"
    };
    let arg = |o: &mut String,
               name: &str,
               kind: &str,
               dtype: &str,
               len: &str,
               data: Option<&str>| {
        let _ = write!(o, "[[args]]\nname = \"{name}\"\nkind = \"{kind}\"\ndtype = \"{dtype}\"\nlen = \"{len}\"\n");
        if let Some(d) = data {
            let _ = writeln!(o, "data = {d}");
        }
    };
    let scalar = |o: &mut String, name: &str, dtype: &str, value: &str| {
        let _ = write!(o, "[[args]]\nname = \"{name}\"\nkind = \"scalar\"\ndtype = \"{dtype}\"\nvalue = {value}\n");
    };
    let tol = ctx.storage.harness_tolerance(f);
    match f {
        Family::Softmax | Family::RmsNorm | Family::LayerNorm | Family::ReduceRows(_) => {
            let _ = write!(o, "[kernel]\nsource = \"{}.cu\"\nentry = \"{s}\"\ninclude = [\".\"]\n\n[params]\n{row_sizes}", ctx.file);
            configs(&mut o);
            o.push('\n');
            match f {
                Family::Softmax | Family::ReduceRows(_) => {
                    arg(
                        &mut o,
                        "x",
                        "in",
                        dt,
                        "rows * cols",
                        Some("[\"random\", \"large\", \"mixed-inf\", \"ones\"]"),
                    );
                    // softmax writes a row per row, a row reduction one value
                    let y = if matches!(f, Family::Softmax) {
                        "rows * cols"
                    } else {
                        "rows"
                    };
                    arg(&mut o, "y", "out", dt, y, None);
                }
                Family::RmsNorm => {
                    arg(&mut o, "x", "in", dt, "rows * cols", Some(x_data_row));
                    arg(&mut o, "w", "in", dt, "cols", None);
                    arg(&mut o, "y", "out", dt, "rows * cols", None);
                }
                _ => {
                    arg(&mut o, "x", "in", dt, "rows * cols", Some(x_data_row));
                    arg(&mut o, "w", "in", dt, "cols", None);
                    arg(&mut o, "b", "in", dt, "cols", None);
                    arg(&mut o, "y", "out", dt, "rows * cols", None);
                }
            }
            scalar(&mut o, "rows", "int32", "\"rows\"");
            scalar(&mut o, "cols", "int32", "\"cols\"");
            if matches!(f, Family::RmsNorm | Family::LayerNorm) {
                scalar(&mut o, "eps", "fp32", "1e-5");
            }
            let _ = write!(o, "\n[launch]\ngrid = \"rows\"\nblock = \"{p}_BLOCK\"\n");
        }
        Family::Elementwise { inputs, outputs } => {
            let _ = write!(o, "[kernel]\nsource = \"{}.cu\"\nentry = \"{s}\"\ninclude = [\".\"]\n\n[params]\nn = [1, 31, 32, 33, 63, 64, 65, 1000, 65537]\n", ctx.file);
            configs(&mut o);
            o.push('\n');
            for i in 0..*inputs {
                let data = if i == 0 {
                    "[\"random\", \"large\", \"mixed-inf\"]"
                } else {
                    "[\"random\"]"
                };
                arg(&mut o, &format!("x{i}"), "in", dt, "n", Some(data));
            }
            for j in 0..*outputs {
                arg(&mut o, &format!("y{j}"), "out", dt, "n", None);
            }
            scalar(&mut o, "n", "int64", "\"n\"");
            let _ = write!(
                o,
                "\n[launch]\ngrid = \"ceil(n / ({p}_BLOCK * {p}_ITEMS))\"\nblock = \"{p}_BLOCK\"\n"
            );
        }
        Family::ReduceFlat(_) => {
            let grid = format!("min(ceil(n / ({p}_BLOCK * {p}_ITEMS)), {p}_GRID)");
            let _ = write!(o, "[[kernel]]\nsource = \"{f}.cu\"\nentry = \"{s}_partial\"\ninclude = [\".\"]\nargs = [\"x\", \"n\", \"partials\"]\n[kernel.launch]\ngrid = \"{grid}\"\nblock = \"{p}_BLOCK\"\n\n[[kernel]]\nsource = \"{f}.cu\"\nentry = \"{s}_final\"\ninclude = [\".\"]\nargs = [\"partials\", \"n\", \"out\"]\n[kernel.launch]\ngrid = 1\nblock = \"{p}_BLOCK\"\n\n[params]\nn = [1, 31, 32, 33, 63, 64, 65, 1000, 1048583]\n", f = ctx.file);
            configs(&mut o);
            o.push('\n');
            arg(
                &mut o,
                "x",
                "in",
                dt,
                "n",
                Some("[\"random\", \"ones\", \"large\", \"mixed-inf\"]"),
            );
            scalar(&mut o, "n", "int64", "\"n\"");
            arg(&mut o, "partials", "scratch", ct, &grid, None);
            arg(&mut o, "out", "out", dt, "1", None);
        }
        Family::Gemm => {
            let _ = write!(o, "[kernel]\nsource = \"{}.cu\"\nentry = \"{s}\"\ninclude = [\".\"]\n\n[params]\nm = [1, 17, 64]\nn = [1, 33]\nk = [1, 31, 100]\n", ctx.file);
            configs(&mut o);
            o.push('\n');
            arg(
                &mut o,
                "a",
                "in",
                dt,
                "m * k",
                Some("[\"random\", \"ones\"]"),
            );
            arg(&mut o, "b", "in", dt, "k * n", None);
            arg(&mut o, "c", "out", dt, "m * n", None);
            scalar(&mut o, "m", "int32", "\"m\"");
            scalar(&mut o, "n", "int32", "\"n\"");
            scalar(&mut o, "k", "int32", "\"k\"");
            let _ = write!(o, "\n[launch]\ngrid = [\"ceil(n / {p}_TILE)\", \"ceil(m / {p}_TILE)\", 1]\nblock = [\"{p}_TILE\", \"{p}_TILE\", 1]\n");
        }
    }
    o.push('\n');
    o.push_str(&reference);
    let _ = write!(o, "\n[tolerance]\n{tol}\n");
    o
}

/// The README section for what the kernel computes and what to fill in.
pub fn fill_in(ctx: &Ctx, f: &Family) -> String {
    let file = &ctx.file;
    let s = &ctx.stem;
    match f {
        Family::Elementwise { .. } => format!("The spec does not say which function the element-wise map computes, so the skeleton computes\nthe sum of its inputs into every output. Put the real function in `{s}_op` (kernels/{file}.cu)\nand `{s}_cpu_op` (src/{file}_cpu.cpp), then run `kplan verify kernels/{file}.toml`."),
        _ => format!("The skeleton computes the whole op (see the comment at the top of kernels/{file}.cu); what\nis left is speed: vector loads, rows held in registers, several rows per block, the tile\nconfiguration per target in kernels/{file}_config.h. `kplan verify kernels/{file}.toml` keeps\nit correct at every step."),
    }
}
