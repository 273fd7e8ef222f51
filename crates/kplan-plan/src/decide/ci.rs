//! Section 7: the CI matrix. Compile legs (no GPU needed) and run legs (need the hardware) are
//! named separately; coverage rules add legs the spec's targets do not provide: at least two
//! NVIDIA SM generations when NVIDIA is in scope, at least one CDNA target when AMD is, and the
//! CPU fallback on the CI host.

use super::strategy::Decided;
use super::Abstraction;
use super::Target;
use crate::analysis::Work;
use crate::model::{Ci, CiLeg, HostShape};
use crate::spec::{Problem, Spec};
use kplan_kb::{Kb, Vendor};

/// The CPU architecture of the CI host (x86-64 with AVX2), where CPU run legs execute.
const HOST_CPU_ARCH: &str = "cpu-x86_64-avx2";

/// AMD architectures whose device code ROCm's AddressSanitizer instruments (xnack+): ROCm
/// documentation, "Using the AddressSanitizer on a GPU" (6.0) and "Install AMD ROCm with ASAN".
pub const AMD_ASAN_ARCHS: &[&str] = &["gfx90a", "gfx942", "gfx950"];

/// Memory of a GitHub-hosted Linux runner for a private repository (2 cores, 7 GB; public
/// repositories get 16 GB): the CPU reference of a CI leg must fit the smaller, with half left
/// for the kernel's own buffers and the runner.
pub const HOSTED_RUNNER_MEMORY_BYTES: f64 = 7.0e9;

fn toolchain(
    kb: &Kb,
    t_arch: &kplan_kb::Arch,
    abstraction: Option<Abstraction>,
    features: &[String],
) -> String {
    let triton = abstraction == Some(Abstraction::Triton);
    let min = super::backend::min_toolchain(kb, t_arch, features)
        .0
        .unwrap_or_else(|| "version unknown".into());
    let target = t_arch
        .compile_target
        .clone()
        .unwrap_or_else(|| t_arch.id.clone());
    match (t_arch.vendor, triton) {
        // Triton's floors are its own, not the architecture's: NVIDIA compute capability 8.0+
        // with the ptxas its wheel bundles, AMD with ROCm 6.2+ (TRITON-README).
        (Vendor::Nvidia, true) => format!(
            "triton (GPUTarget cuda {target}; the wheel bundles its ptxas, no CUDA toolkit or GPU needed to compile; Triton supports compute capability 8.0+)"
        ),
        (Vendor::Amd, true) => format!(
            "triton (GPUTarget hip {target}; no GPU needed to compile; ROCm 6.2 or newer to run)"
        ),
        (Vendor::Nvidia, _) => format!("nvcc -arch={target} ({min} or newer)"),
        (Vendor::Amd, _) => format!("hipcc / clang --offload-arch={target} ({min} or newer)"),
        (Vendor::Intel, true) => "intel-xpu-backend-for-triton".into(),
        (Vendor::Intel, _) => "icpx -fsycl (oneAPI DPC++)".into(),
        (Vendor::Apple, _) => "xcrun metal".into(),
        (Vendor::Cpu, _) => format!("host C++/Rust compiler, {min}"),
    }
}

pub fn plan(cx: &super::Context, strategy: &Decided, features: &[String]) -> Ci {
    let (kb, targets) = (cx.kb, &cx.targets[..]);
    let mut legs: Vec<CiLeg> = Vec::new();
    let mut notes = Vec::new();
    let gpu_abs: Option<Abstraction> = strategy
        .per_target
        .iter()
        .map(|p| p.abstraction)
        .find(|a| *a != Abstraction::CpuFallback);

    // A library or framework call is tested where it runs; there is no kernel to compile.
    if strategy.gpu_all_library() {
        return library_plan(cx, strategy, features);
    }
    let stem = file_stem(&cx.spec.name);

    for t in targets {
        let abs = strategy.abstraction(t.index);
        if abs == Abstraction::None {
            notes.push(format!(
                "no leg for {}: no allowed abstraction reaches it (section 3), so there is no code to build or test",
                t.name
            ));
            continue;
        }
        let ts = toolchain(kb, t.arch, Some(abs), features);
        if t.is_gpu() {
            legs.push(CiLeg {
                command: None,
                name: format!("compile-{}", t.arch.id),
                kind: "compile".into(),
                target: t.name.clone(),
                arch: t.arch.id.clone(),
                toolchain: ts.clone(),
                runner: if t.vendor() == Vendor::Apple {
                    "macOS runner (the Metal compiler ships with Xcode)".into()
                } else {
                    "CI host (no GPU)".into()
                },
                why: "spec target: the code must build for it on every change".into(),
            });
            legs.push(CiLeg {
                command: None,
                name: format!("run-{}", t.arch.id),
                kind: "run".into(),
                target: t.name.clone(),
                arch: t.arch.id.clone(),
                toolchain: ts,
                runner: format!("self-hosted runner with {}", t.device.as_deref().map(|d| d.name.clone()).unwrap_or_else(|| format!("a {} GPU", t.arch.id))),
                why: "spec target: the kernel's tests on the device, checked against the CPU reference (its time against section 8 is measured by hand, e.g. `kplan bench`: CI does not gate on it)".into(),
            });
        } else if t.arch.id == HOST_CPU_ARCH {
            legs.push(CiLeg {
                command: None,
                name: format!("run-{}", t.arch.id),
                kind: "run".into(),
                target: t.name.clone(),
                arch: t.arch.id.clone(),
                toolchain: ts,
                runner: "CI host".into(),
                why: "CPU fallback and verification reference: builds and runs on every CI run"
                    .into(),
            });
        } else {
            // The CI host is x86-64 with AVX2: other CPU levels build there and run elsewhere.
            let cross = !t.arch.id.starts_with("cpu-x86_64");
            legs.push(CiLeg {
                command: None,
                name: format!("compile-{}", t.arch.id),
                kind: "compile".into(),
                target: t.name.clone(),
                arch: t.arch.id.clone(),
                toolchain: if cross {
                    format!("{ts} (cross-compiled)")
                } else {
                    ts.clone()
                },
                runner: "CI host".into(),
                why: "CPU target: the fallback must build for it on every change".into(),
            });
            legs.push(CiLeg {
                command: None,
                name: format!("run-{}", t.arch.id),
                kind: "run".into(),
                target: t.name.clone(),
                arch: t.arch.id.clone(),
                toolchain: ts,
                runner: if cross {
                    format!("a {} runner (or user-mode emulation)", t.arch.family)
                } else {
                    format!("a runner whose CPU has {}", t.arch.family)
                },
                why: "CPU target: the CI host cannot execute this instruction set".into(),
            });
        }
    }

    // Coverage architectures the spec does not name: compiled, never run (a run leg needs a
    // GPU the project has, and the spec names the GPUs it has).
    let mut coverage_only: Vec<String> = Vec::new();
    let mut wave64_coverage = false;
    // Two NVIDIA SM generations.
    let nv: Vec<&Target> = targets
        .iter()
        .filter(|t| t.vendor() == Vendor::Nvidia)
        .collect();
    if !nv.is_empty() {
        let mut gens: Vec<u32> = nv.iter().filter_map(|t| t.sm()).map(|s| s / 10).collect();
        gens.sort();
        gens.dedup();
        if gens.len() < 2 {
            let have = gens.first().copied().unwrap_or(0);
            // Another generation from the KB: the newest older one, else the oldest newer one.
            // Never older than the strategy supports: Triton needs compute capability 8.0+.
            let floor = if gpu_abs == Some(Abstraction::Triton) {
                8
            } else {
                0
            };
            let mut cands: Vec<&kplan_kb::Arch> = kb
                .archs
                .iter()
                .filter(|a| a.vendor == Vendor::Nvidia)
                .filter(|a| {
                    a.compute_capability()
                        .is_some_and(|(major, _)| major != have && major >= floor)
                })
                .collect();
            cands.sort_by_key(|a| {
                let (g, minor) = a.compute_capability().unwrap_or((0, 0));
                let s = g * 10 + minor;
                (
                    if g < have { 0 } else { 1 },
                    if g < have { u32::MAX - s } else { s },
                )
            });
            if let Some(a) = cands.first() {
                legs.push(CiLeg {
                    command: None,
                    name: format!("compile-{}", a.id),
                    kind: "compile".into(),
                    target: a.id.clone(),
                    arch: a.id.clone(),
                    toolchain: toolchain(kb, a, gpu_abs, features),
                    runner: "CI host (no GPU)".into(),
                    why: if floor > 0 {
                        format!("coverage: at least two NVIDIA compute-capability majors (every NVIDIA target of the spec is {have}.x; Triton needs sm_{floor}0 or newer)")
                    } else {
                        format!("coverage: at least two NVIDIA compute-capability majors (every NVIDIA target of the spec is {have}.x)")
                    },
                });
                coverage_only.push(a.id.clone());
            } else {
                notes.push("only one NVIDIA SM generation in the KB: a second generation leg cannot be named".into());
            }
        }
    }

    // One CDNA target.
    let amd: Vec<&Target> = targets
        .iter()
        .filter(|t| t.vendor() == Vendor::Amd)
        .collect();
    if !amd.is_empty() && !amd.iter().any(|t| t.is_cdna()) {
        let pick = kb.arch("gfx942").or_else(|| {
            kb.archs
                .iter()
                .find(|a| a.vendor == Vendor::Amd && !a.id.starts_with("gfx1"))
        });
        match pick {
            Some(a) => {
                legs.push(CiLeg {
                    command: None,
                    name: format!("compile-{}", a.id),
                    kind: "compile".into(),
                    target: a.id.clone(),
                    arch: a.id.clone(),
                    toolchain: toolchain(kb, a, gpu_abs, features),
                    runner: "CI host (no GPU)".into(),
                    why: "coverage: at least one CDNA (wave64) target when AMD is in scope (compile only: no wave64 target is in scope)"
                        .into(),
                });
                coverage_only.push(a.id.clone());
                wave64_coverage = true;
            }
            None => {
                notes.push("no CDNA architecture in the KB: CDNA coverage cannot be named".into())
            }
        }
    }

    if !coverage_only.is_empty() {
        notes.push(format!(
            "coverage legs for {} compile only: the spec names no GPU of that architecture, so no runner with one is assumed{}",
            super::join_names(&coverage_only),
            if wave64_coverage && strategy.per_target.iter().any(|p| p.abstraction.is_cuda_hip()) {
                "; wave64 semantics run on every commit in `simt-warp-32-64` on the CI host"
            } else {
                ""
            }
        ));
    }
    if !targets.iter().any(|t| !t.is_gpu()) {
        // The plan is the same on every machine: the CI host is the x86-64 one.
        let host = HOST_CPU_ARCH;
        if let Ok(r) = kb.resolve(host) {
            legs.push(CiLeg {
                command: None,
                name: format!("run-{}", r.arch.id),
                kind: "run".into(),
                target: host.into(),
                arch: r.arch.id.clone(),
                toolchain: toolchain(kb, r.arch, Some(Abstraction::CpuFallback), features),
                runner: "CI host".into(),
                why: "coverage: the CPU reference runs on the CI host even though the spec names no CPU target".into(),
            });
        } else {
            notes.push("the KB has no CPU architecture for the CI host: add a CPU target to run the reference".into());
        }
    }
    // Two spec names for one architecture (`sm_90a` and `h200`) share a leg.
    let mut merged: Vec<CiLeg> = Vec::new();
    for l in legs {
        match merged
            .iter_mut()
            .find(|m| m.kind == l.kind && m.arch == l.arch)
        {
            Some(m) => {
                if m.target != l.target && !m.why.contains(&format!("`{}`", l.target)) {
                    m.why = format!("{} (also covers spec target `{}`)", m.why, l.target);
                }
            }
            None => merged.push(l),
        }
    }
    let mut legs = merged;
    // CUDA/HIP kernel code meets warps of 32 (NVIDIA, RDNA) and wavefronts of 64 (CDNA): the
    // kernel's harness runs on the CI host with both widths, no GPU needed.
    let writes_cuda_hip = strategy
        .per_target
        .iter()
        .any(|p| p.abstraction.is_cuda_hip());
    if writes_cuda_hip {
        legs.push(CiLeg {
            command: Some("kplan verify HARNESS.toml --backend cpu-simt --warp 32,64".into()),
            name: "simt-warp-32-64".into(),
            kind: "run".into(),
            target: "cpu-simt".into(),
            arch: "cpu-simt".into(),
            toolchain: "kplan cpu-simt (the kernel run on the CPU, one fiber per GPU thread)".into(),
            runner: "CI host (no GPU)".into(),
            why: "wave64 semantics on every commit without a GPU: the same kernel with 32- and 64-lane warps \
                  catches a hard-coded 32 (ballot width, shuffle loops, per-warp buffers), the cheapest check of \
                  AMD CDNA's wave64"
                .into(),
        });
    }
    // `kplan build` compiles CUDA/HIP single-source and Triton files for any KB target.
    for l in legs.iter_mut().filter(|l| l.kind == "compile") {
        // A spec target's leg builds that target's code; a coverage leg the GPU code.
        let abs = targets
            .iter()
            .find(|t| t.name == l.target)
            .map(|t| strategy.abstraction(t.index))
            .or(gpu_abs);
        let ext = match abs {
            Some(Abstraction::Triton) => Some("py"),
            Some(
                Abstraction::HipSingleSource
                | Abstraction::PerBackend
                | Abstraction::Cutlass
                | Abstraction::CpuFallback,
            ) => Some("cu"),
            _ => None,
        };
        let gpu_or_cpu = l.arch.starts_with("sm_")
            || l.arch.starts_with("gfx")
            || l.arch.starts_with("cpu-x86_64");
        if let (Some(ext), true) = (ext, gpu_or_cpu) {
            l.command = Some(format!(
                "kplan build kernels/{stem}.{ext} --targets {}",
                l.arch
            ));
        }
    }
    // Run legs kplan can drive: the kernel's harness (docs/verify.md) on an NVIDIA GPU through
    // libcuda + NVRTC, and on the CI host's CPU. Other run legs run the project's own tests.
    let harness = format!("kernels/{stem}.toml");
    for l in legs
        .iter_mut()
        .filter(|l| l.kind == "run" && l.command.is_none())
    {
        if l.arch == HOST_CPU_ARCH {
            l.command = Some(format!("kplan verify {harness} --backend cpu"));
        } else if kb.arch(&l.arch).is_some_and(|a| a.vendor == Vendor::Nvidia) {
            l.command = Some(format!("kplan verify {harness} --backend cuda"));
        }
    }
    if let Some(pos) = legs.iter().position(|l| l.name == "simt-warp-32-64") {
        legs[pos].command = Some(format!(
            "kplan verify {harness} --backend cpu-simt --warp 32,64"
        ));
    }
    notes.push("compile legs run on every push on the CI host; run legs need the named GPUs (self-hosted runners, nightly or pre-merge)".into());
    notes.push("`kplan ci SPEC.toml` writes these legs as a GitHub Actions workflow".into());
    notes.push(sanitizer_note(kb, &legs));
    Ci {
        legs,
        notes,
        host_shape: None,
    }
}

/// What runs under a sanitizer in the workflow `kplan ci` writes, and what does not.
fn sanitizer_note(kb: &Kb, legs: &[CiLeg]) -> String {
    let vendor = |l: &CiLeg| kb.arch(&l.arch).map(|a| a.vendor);
    let names = |f: &dyn Fn(&CiLeg) -> bool| -> Vec<String> {
        legs.iter()
            .filter(|l| l.kind == "run" && f(l))
            .map(|l| l.name.clone())
            .collect()
    };
    let nv_kplan = names(&|l| {
        vendor(l) == Some(Vendor::Nvidia)
            && l.command
                .as_deref()
                .is_some_and(|c| c.contains("--backend cuda"))
    });
    let nv_other = names(&|l| {
        vendor(l) == Some(Vendor::Nvidia)
            && !l
                .command
                .as_deref()
                .is_some_and(|c| c.contains("--backend cuda"))
    });
    let cpu_kplan = names(&|l| l.arch == HOST_CPU_ARCH && l.command.is_some());
    let cpu = names(&|l| l.arch == HOST_CPU_ARCH && l.command.is_none());
    let amd_asan =
        names(&|l| vendor(l) == Some(Vendor::Amd) && AMD_ASAN_ARCHS.contains(&l.arch.as_str()));
    let amd_gap =
        names(&|l| vendor(l) == Some(Vendor::Amd) && !AMD_ASAN_ARCHS.contains(&l.arch.as_str()));
    let mut parts = Vec::new();
    if !nv_kplan.is_empty() {
        parts.push(format!(
            "{}: `kplan verify` under compute-sanitizer memcheck, racecheck, synccheck and initcheck",
            super::join_names(&nv_kplan)
        ));
    }
    if !cpu_kplan.is_empty() {
        parts.push(format!(
            "{}: `kplan verify` again with the kernel compiled under UBSan (-fsanitize=undefined; not ASan, which does not follow the fiber stacks of kplan's CPU execution)",
            super::join_names(&cpu_kplan)
        ));
    }
    if !cpu.is_empty() {
        parts.push(format!(
            "{}: the CPU fallback again under ASan and UBSan (-fsanitize=address,undefined)",
            super::join_names(&cpu)
        ));
    }
    if !amd_asan.is_empty() {
        parts.push(format!(
            "{}: the project's tests again under ROCm's AddressSanitizer (xnack+ device code, HSA_XNACK=1)",
            super::join_names(&amd_asan)
        ));
    }
    let mut gaps = Vec::new();
    if !amd_gap.is_empty() {
        gaps.push(format!(
            "{} (ROCm's device ASan is documented for {} only)",
            super::join_names(&amd_gap),
            AMD_ASAN_ARCHS.join(", ")
        ));
    }
    if !nv_other.is_empty() {
        gaps.push(format!(
            "{} (the project's own tests; run them under compute-sanitizer in ci/test-on-device.sh)",
            super::join_names(&nv_other)
        ));
    }
    format!(
        "sanitizers: {}{}",
        if parts.is_empty() {
            "none".to_string()
        } else {
            parts.join("; ")
        },
        if gaps.is_empty() {
            String::new()
        } else {
            format!("; no sanitizer leg: {}", gaps.join("; "))
        }
    )
}

/// The CPU reference's memory at `work`: the tensors in the storage dtype plus a copy in the
/// compute dtype.
fn reference_bytes(spec: &Spec, work: &Work) -> f64 {
    let ratio = spec.compute.bytes().max(1) as f64 / spec.storage.bytes().max(1) as f64;
    work.bytes * (1.0 + ratio.max(1.0))
}

/// When the CPU reference at the spec's shape does not fit a hosted runner, a reduced shape for
/// the CPU legs: the largest dimension halved until it fits (batch and sequence dimensions
/// first; head and row widths, which pick the kernel's code path, kept).
pub fn add_host_shape(ci: &mut Ci, spec: &Spec, work: &Work) {
    let budget = HOSTED_RUNNER_MEMORY_BYTES / 2.0;
    let full = reference_bytes(spec, work);
    if !ci.legs.iter().any(|l| l.arch == HOST_CPU_ARCH) || full <= budget {
        return;
    }
    let page = spec.dims.get("page_size").copied().unwrap_or(1).max(1);
    let self_attn = spec.dims.contains_key("seq") && !spec.dims.contains_key("seq_kv");
    let mut s2 = spec.clone();
    let mut bytes = full;
    for _ in 0..128 {
        if bytes <= budget {
            break;
        }
        // (name, value, floor, multiple) of the dimensions that may shrink
        let dims: Vec<(&str, u64, u64, u64)> = match &s2.problem {
            Problem::Flat { n } => vec![("n", *n, 1024, 1)],
            Problem::Rows { rows, .. } => vec![("rows", *rows, 8, 1)],
            Problem::Gemm { batch, m, n, .. } => {
                vec![
                    ("batch", *batch, 1, 1),
                    ("m", *m, 64, 64),
                    ("n", *n, 64, 64),
                ]
            }
            // a self-attention spec (`seq`) shrinks both sequences together
            Problem::Attention { batch, seq_kv, .. } if self_attn => vec![
                ("batch", *batch, 2, 1),
                ("seq", *seq_kv, (2 * page).max(256), page),
            ],
            Problem::Attention {
                batch,
                seq_q,
                seq_kv,
                ..
            } => vec![
                ("batch", *batch, 2, 1),
                ("seq_kv", *seq_kv, (2 * page).max(256), page),
                ("seq_q", *seq_q, 1, 1),
            ],
            Problem::Custom { .. } => vec![],
        };
        let Some(&(name, v, _, mult)) = dims
            .iter()
            .filter(|(_, v, floor, _)| *v > *floor)
            .max_by_key(|(_, v, _, _)| *v)
        else {
            break;
        };
        let next = (v / 2).div_ceil(mult) * mult;
        let next = next.max(1);
        match &mut s2.problem {
            Problem::Flat { n } => *n = next,
            Problem::Rows { rows, .. } => *rows = next,
            Problem::Gemm { batch, m, n, .. } => match name {
                "batch" => *batch = next,
                "m" => *m = next,
                _ => *n = next,
            },
            Problem::Attention {
                batch,
                seq_q,
                seq_kv,
                ..
            } => match name {
                "batch" => *batch = next,
                "seq_kv" => *seq_kv = next,
                "seq" => {
                    *seq_q = next;
                    *seq_kv = next;
                }
                _ => *seq_q = next,
            },
            Problem::Custom { .. } => {}
        }
        s2.dims.insert(name.to_string(), next);
        bytes = reference_bytes(&s2, &crate::analysis::work(&s2));
    }
    let shape: std::collections::BTreeMap<String, u64> = s2
        .dims
        .iter()
        .filter(|(k, v)| spec.dims.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    let si = crate::render::si_bytes;
    let why = if shape.is_empty() || bytes > budget {
        format!(
            "the CPU reference needs about {} at the spec's shape, more than half of a hosted runner's {}, and kplan finds no smaller shape of this problem: run the CPU legs on a larger self-hosted runner",
            si(full),
            si(HOSTED_RUNNER_MEMORY_BYTES)
        )
    } else {
        format!(
            "the CPU reference needs about {} at the spec's shape, more than half of a hosted runner's {}; the CPU legs verify at {} (about {}); the full shape, and index ranges only it reaches, are checked on the GPU legs",
            si(full),
            si(HOSTED_RUNNER_MEMORY_BYTES),
            shape
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            si(bytes)
        )
    };
    ci.notes.push(format!("CPU verification shape: {why}"));
    if !shape.is_empty() && bytes <= budget {
        ci.host_shape = Some(HostShape {
            shape,
            bytes: crate::analysis::tidy(bytes),
            full_bytes: crate::analysis::tidy(full),
            why,
        });
    }
}

/// The kernel name as a file stem (`kernels/<stem>.cu`).
pub fn file_stem(kernel: &str) -> String {
    kernel
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Legs for a library or framework verdict: the call's tests on each GPU kind in scope and the
/// CPU fallback on the CI host; no compile legs (no kernel is written) and no coverage legs.
fn library_plan(cx: &super::Context, strategy: &Decided, features: &[String]) -> Ci {
    let (kb, targets) = (cx.kb, &cx.targets[..]);
    let mut legs: Vec<CiLeg> = Vec::new();
    // A library call's leg needs the library's own minimum version (the knowledge base's, where
    // a source gives one), not the architecture's toolkit floor.
    let library_build = |t: &Target, i: usize| -> Option<String> {
        if strategy.abstraction(i) == Abstraction::Framework || !t.is_gpu() {
            return None;
        }
        let libs = super::verdict::covering_libraries(cx.spec, kb, targets, t.vendor().as_str());
        if libs.is_empty() {
            return None;
        }
        // The toolkit the target needs (a feature the spec needs, such as fp8 MMA, can raise it
        // above the architecture's own floor).
        let (floor, raised) = super::backend::min_toolchain(kb, t.arch, features);
        let each: Vec<String> = libs
            .iter()
            .map(|l| match (&l.min_version, l.kind, &floor) {
                (Some(v), _, _) => format!("{}: {}", l.name, super::scoped(v, targets)),
                // A library shipped with the vendor's toolkit comes with the toolkit.
                (None, kplan_kb::LibraryKind::Vendor, Some(f)) => {
                    format!("{}: the one shipped with {f} or newer", l.name)
                }
                _ => format!(
                    "{}: minimum version unknown (no source in the knowledge base)",
                    l.name
                ),
            })
            .collect();
        // The library's own minimum does not lower the architecture's (a library release older
        // than the architecture's first toolkit does not run on it): both are said.
        let shipped = libs
            .iter()
            .all(|l| l.min_version.is_none() && l.kind == kplan_kb::LibraryKind::Vendor);
        let toolkit = match (&floor, raised) {
            (Some(min), Some(_)) => {
                format!(
                    "; {} needs {min} or newer for the features the spec needs",
                    t.arch.id
                )
            }
            (Some(min), None) if !shipped => format!("; {} itself needs {min} or newer", t.arch.id),
            _ => String::new(),
        };
        Some(format!(
            "the library build for {} ({}{toolkit})",
            t.arch.id,
            each.join("; ")
        ))
    };
    let imp_of = |t: &Target| {
        strategy
            .per_target
            .get(t.index)
            .map(|p| p.implementation.clone())
            .unwrap_or_default()
    };
    let mut uncovered: Vec<String> = Vec::new();
    for t in targets {
        if legs.iter().any(|l| l.arch == t.arch.id) {
            continue;
        }
        // nothing is planned for a target no allowed abstraction reaches: no leg to run
        if strategy.abstraction(t.index) == Abstraction::None {
            uncovered.push(t.name.clone());
            continue;
        }
        let on_host = t.arch.id == HOST_CPU_ARCH;
        legs.push(CiLeg {
            name: format!("test-{}", t.arch.id),
            kind: "run".into(),
            target: t.name.clone(),
            arch: t.arch.id.clone(),
            toolchain: match library_build(t, t.index) {
                Some(b) => b,
                None => match super::backend::min_toolchain(kb, t.arch, features).0 {
                Some(min) => format!(
                    "the library/framework build for {} ({min} or newer)",
                    t.arch.id
                ),
                None => format!("the library/framework build for {}", t.arch.id),
                },
            },
            runner: if on_host {
                "CI host".into()
            } else if t.is_gpu() {
                format!(
                    "self-hosted runner with {}",
                    t.device
                        .as_deref()
                        .map(|d| d.name.clone())
                        .unwrap_or_else(|| format!("a {} GPU", t.arch.id))
                )
            } else {
                format!("a runner whose CPU has {}", t.arch.family)
            },
            why: format!(
                "the library call ({}) on {}, checked against the CPU reference{}",
                imp_of(t),
                t.name,
                if t.is_gpu() {
                    " (its time per call against section 8 is measured by hand: CI does not gate on it)"
                } else {
                    ""
                }
            ),
            command: None,
        });
    }
    if !legs.iter().any(|l| l.arch == HOST_CPU_ARCH) {
        if let Ok(r) = kb.resolve(HOST_CPU_ARCH) {
            legs.push(CiLeg {
                name: format!("test-{}", r.arch.id),
                kind: "run".into(),
                target: HOST_CPU_ARCH.into(),
                arch: r.arch.id.clone(),
                toolchain: "the library/framework CPU build".into(),
                runner: "CI host".into(),
                why: "the CPU fallback and reference on the CI host".into(),
                command: None,
            });
        }
    }
    let sanitizers = sanitizer_note(kb, &legs);
    let mut notes = vec![
        "the verdict is a library or framework call: no kernel compile legs; each leg runs the project's tests of the call against the CPU reference (`kplan ci SPEC.toml` writes the workflow)".into(),
        sanitizers,
    ];
    if !uncovered.is_empty() {
        notes.push(format!(
            "no leg for {}: no allowed abstraction reaches it (section 3), so there is nothing to test there",
            uncovered.join(", ")
        ));
    }
    Ci {
        legs,
        notes,
        host_shape: None,
    }
}
