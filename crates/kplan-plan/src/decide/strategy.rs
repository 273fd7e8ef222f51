//! Section 3: the abstraction strategy. Candidates are tried highest abstraction first; the
//! first that is allowed, covers every NVIDIA/AMD GPU target, meets the performance requirement
//! and that the team can write is chosen. Intel, Apple and CPU targets get their own legs.

use super::Abstraction as Impl;
use super::{join_names, Context, Target};
use crate::efficiency::EfficiencyTable;
use crate::model::{Alternative, Decision, Strategy, TargetStrategy, Verdict};
use crate::spec::{Abstraction, Expertise, Op, PerfReq, Spec};
use kplan_kb::{Availability, Kb, Vendor};

/// Fraction of the roofline that counts as "near peak" when judging an abstraction.
pub const NEAR_PEAK_FRACTION: f64 = 0.85;

/// Below this fraction of hand-written/library efficiency, Triton does not meet a near-peak
/// requirement on a backend (MI300X GEMM: 0.66-0.73 of hipBLASLt, TRITON-7199).
pub const TRITON_MIN_RATIO: f64 = 0.75;

/// The matrix-instruction family a target's fastest path uses, from the KB's features.
pub fn matrix_family(kb: &Kb, t: &Target) -> &'static str {
    let yes = |f: &str| kb.availability(f, &t.arch.id) == Availability::Yes;
    match t.vendor() {
        Vendor::Nvidia if yes("tcgen05") => "tcgen05",
        Vendor::Nvidia if yes("wgmma") => "wgmma",
        Vendor::Nvidia if yes("mma-sync") => "mma.sync",
        Vendor::Nvidia => "CUDA cores",
        Vendor::Amd if yes("mfma") => "MFMA",
        Vendor::Amd if yes("rdna-wmma") => "RDNA WMMA",
        Vendor::Amd => "vector ALU",
        _ => "none",
    }
}

/// Features Triton cannot express (no grid sync, no device-side launch, no lane matching);
/// inline assembly only as elementwise `inline_asm_elementwise`.
const TRITON_BLOCKERS: [&str; 3] = ["cooperative-launch", "dynamic-parallelism", "warp-match"];

/// Whether Triton (upstream) compiles for this target (source: TRITON-README).
pub fn triton_supports(t: &Target) -> bool {
    match t.vendor() {
        Vendor::Nvidia => t.sm().is_some_and(|s| s >= 80),
        Vendor::Amd => true,
        // Intel through the out-of-tree XPU backend (TRITON-XPU); Apple and CPU: no.
        Vendor::Intel => true,
        Vendor::Apple | Vendor::Cpu => false,
    }
}

/// Efficiency-table class of the spec's op.
pub fn op_class(spec: &Spec, targets: &[Target]) -> &'static str {
    let rows = matches!(spec.problem, crate::spec::Problem::Rows { .. });
    match spec.op {
        Op::Gemm => "gemm",
        Op::Attention | Op::LinearAttention => "attention",
        Op::Softmax | Op::Norm => "row",
        Op::Reduction | Op::Scan if rows => "row",
        // Counters beyond the smallest shared memory/LDS in scope are global atomics; a
        // scatter that reduces into its destinations is atomic-bound too.
        Op::Histogram if histogram_counters_exceed_shared(spec, targets) => "atomic",
        Op::Scatter | Op::Embedding
            if spec
                .modifiers
                .reduce
                .as_deref()
                .is_some_and(|r| r != "none")
                || (spec.op == Op::Embedding && spec.is_backward()) =>
        {
            "atomic"
        }
        // A custom op that names the matrix units runs as a matrix kernel.
        _ if super::backend::names_matrix_units(spec) => "gemm",
        _ => "streaming",
    }
}

/// Whether a histogram's counters (bins x counter bytes) exceed the smallest shared
/// memory/LDS per block of the GPU targets in scope.
fn histogram_counters_exceed_shared(spec: &Spec, targets: &[Target]) -> bool {
    let facts = super::risks::facts(spec, targets, &[]);
    match (facts.nums.get("counter_bytes"), facts.nums.get("lds_bytes")) {
        (Some(c), Some(l)) => c > l,
        _ => false,
    }
}

/// Efficiency-table strategy group of an abstraction.
pub fn strategy_group(a: Abstraction) -> &'static str {
    match a {
        Abstraction::Framework => "framework",
        Abstraction::VendorBlas => "vendor-library",
        Abstraction::Triton => "triton",
        _ => "hand-written",
    }
}

struct Eval {
    outcome: &'static str,
    why: String,
}

fn can_write(spec: &Spec, a: Abstraction) -> Result<(), String> {
    if spec.expertise.is_empty() {
        return Ok(());
    }
    let has = |e: Expertise| spec.expertise.contains(&e);
    let ok = match a {
        Abstraction::Framework | Abstraction::VendorBlas => true,
        Abstraction::Triton => has(Expertise::Triton),
        Abstraction::HipSingleSource => has(Expertise::Cuda) || has(Expertise::Hip),
        Abstraction::Cutlass => has(Expertise::Cuda) || has(Expertise::Cutlass),
        Abstraction::ComposableKernel => has(Expertise::Hip) || has(Expertise::Ck),
        Abstraction::PerBackend => {
            has(Expertise::Cuda)
                || has(Expertise::Hip)
                || has(Expertise::Cutlass)
                || has(Expertise::Ck)
        }
        Abstraction::Sycl => has(Expertise::Sycl),
        Abstraction::Opencl => has(Expertise::Opencl),
        Abstraction::Metal => has(Expertise::Metal),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the team lists no {} experience ({})",
            match a {
                Abstraction::Triton => "Triton",
                Abstraction::Cutlass => "CUDA/CUTLASS",
                Abstraction::ComposableKernel => "HIP/Composable Kernel",
                Abstraction::Sycl => "SYCL",
                Abstraction::Opencl => "OpenCL",
                Abstraction::Metal => "Metal",
                _ => "CUDA or HIP",
            },
            spec.expertise
                .iter()
                .map(|e| e.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// One target's implementation: the abstraction its code is written in and what that is.
#[derive(Debug, Clone)]
pub struct Choice {
    pub abstraction: super::Abstraction,
    pub implementation: String,
}

/// Section 3 as decided: `per_target` is aligned with [`Context::targets`].
#[derive(Debug, Clone)]
pub struct Decided {
    /// The chosen level for the NVIDIA/AMD targets, `per-target` or `none` (see [`Strategy`]).
    pub chosen: String,
    pub summary: String,
    pub per_target: Vec<Choice>,
    pub alternatives: Vec<Alternative>,
    pub inputs: Vec<String>,
}

impl Decided {
    /// The targets paired with their choices.
    pub fn with_targets<'s, 'kb>(
        &'s self,
        targets: &'s [Target<'kb>],
    ) -> impl Iterator<Item = (&'s Target<'kb>, &'s Choice)> {
        targets.iter().zip(&self.per_target)
    }
    /// The abstraction of the target at `i` (as in [`Context::targets`]).
    pub fn abstraction(&self, i: usize) -> super::Abstraction {
        self.per_target
            .get(i)
            .map_or(super::Abstraction::None, |c| c.abstraction)
    }
    /// Every choice is a library or framework call, or the CPU fallback (no GPU kernel code).
    /// A target nothing covers (a stretch target no allowed abstraction reaches) gets no code
    /// either way and does not turn the plan's CI into kernel legs.
    pub fn gpu_all_library(&self) -> bool {
        let gpu: Vec<&Choice> = self
            .per_target
            .iter()
            .filter(|p| {
                p.abstraction != super::Abstraction::CpuFallback
                    && p.abstraction != super::Abstraction::None
            })
            .collect();
        !gpu.is_empty() && gpu.iter().all(|p| p.abstraction.is_library())
    }
    /// The printable section 3.
    pub fn to_model(&self, targets: &[Target]) -> Strategy {
        Strategy {
            chosen: self.chosen.clone(),
            summary: self.summary.clone(),
            per_target: self
                .with_targets(targets)
                .map(|(t, c)| TargetStrategy {
                    target: t.name.clone(),
                    abstraction: c.abstraction.to_string(),
                    implementation: c.implementation.clone(),
                })
                .collect(),
            alternatives: self.alternatives.clone(),
            inputs: self.inputs.clone(),
        }
    }
}

pub fn decide(cx: &Context, verdict: &Verdict) -> Decided {
    let (spec, kb, targets) = (cx.spec, cx.kb, &cx.targets[..]);
    let eff = EfficiencyTable::builtin();
    let class = op_class(spec, targets);
    let nv_only = verdict.decision == Decision::NvidiaOnly;
    let amd_only = verdict.decision == Decision::AmdOnly;
    // The targets the main abstraction must cover; under an nvidia-only (amd-only) verdict,
    // NVIDIA (AMD) alone.
    let core: Vec<&Target> = targets
        .iter()
        .filter(|t| {
            if nv_only {
                t.vendor() == Vendor::Nvidia
            } else if amd_only {
                t.vendor() == Vendor::Amd
            } else {
                matches!(t.vendor(), Vendor::Nvidia | Vendor::Amd)
            }
        })
        .collect();
    let has_vendor = |v: Vendor| targets.iter().any(|t| t.vendor() == v);
    // The efficiency evidence of a vendor is chosen by the bound class its targets are in: a
    // matrix op that is memory-bound on every core target of the vendor (a GEMV, a decode
    // attention) is judged with the streaming figures, as section 8 does.
    let ops = super::backend::op_targets(spec, &cx.work, targets);
    let class_of = |v: Vendor| -> &'static str {
        let of: Vec<&Target> = core.iter().copied().filter(|t| t.vendor() == v).collect();
        let memory = !of.is_empty()
            && of.iter().all(|t| {
                ops.get(t.index).and_then(|o| o.bound) == Some(crate::analysis::Bound::Memory)
            });
        if memory && matches!(class, "gemm" | "attention") {
            "streaming"
        } else {
            class
        }
    };
    let mut inputs = vec![
        format!("verdict = {}", verdict.decision.as_str()),
        format!("op class = {class}"),
        format!("performance = {}", spec.performance.as_str()),
        format!(
            "expertise = {}",
            if spec.expertise.is_empty() {
                "(not given)".to_string()
            } else {
                spec.expertise
                    .iter()
                    .map(|e| e.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
    ];

    // Features missing (KB: no) on some core target.
    let missing: Vec<(String, Vec<String>)> = spec
        .features
        .iter()
        .filter_map(|f| {
            let miss: Vec<String> = core
                .iter()
                .filter(|t| kb.availability(f, &t.arch.id) == Availability::No)
                .map(|t| t.name.clone())
                .collect();
            (!miss.is_empty()).then(|| (f.clone(), miss))
        })
        .collect();
    if !missing.is_empty() {
        inputs.push(format!(
            "features missing on some targets: {}",
            missing
                .iter()
                .map(|(f, t)| format!("{f} on {}", t.join("/")))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }

    let evaluate = |a: Abstraction, respect_expertise: bool| -> Eval {
        // A library verdict reached through a library's own abstraction (CUTLASS or CK
        // allowed, `vendor-library` not) reuses that library: the library level is admitted.
        let via_library =
            a == Abstraction::VendorBlas && verdict.decision == Decision::UseVendorLibrary;
        if !spec.allowed.contains(&a) && !via_library {
            return Eval {
                outcome: "not-allowed",
                why: "not in [abstraction] allowed".into(),
            };
        }
        let fail = |w: String| Eval {
            outcome: "rejected",
            why: w,
        };
        let meets = |w: String| -> Eval {
            if respect_expertise {
                if let Err(e) = can_write(spec, a) {
                    return Eval {
                        outcome: "rejected",
                        why: format!("{e}; {w}"),
                    };
                }
            }
            Eval {
                outcome: "meets",
                why: w,
            }
        };
        match a {
            Abstraction::Framework => {
                if !spec.framework_expressible {
                    return fail("the spec does not say the framework expresses the operation (`framework_expressible` is false or not given)".into());
                }
                if spec.performance == PerfReq::NearPeak {
                    // Every GPU vendor in scope counts, not NVIDIA alone.
                    for v in [Vendor::Nvidia, Vendor::Amd] {
                        if !core.iter().any(|t| t.vendor() == v) {
                            continue;
                        }
                        let class = class_of(v);
                        if let Some(h) = eff.lookup(v.as_str(), class, "framework").map(|e| e.high)
                        {
                            if h < NEAR_PEAK_FRACTION {
                                return fail(format!(
                                    "near-peak is required and framework kernels of class `{class}` reach at most {:.0}% of the roofline on {} (section 8)",
                                    h * 100.0,
                                    v.as_str().to_uppercase()
                                ));
                            }
                        }
                    }
                }
                meets("the framework expresses the operation and meets the requirement on every backend it runs on".into())
            }
            Abstraction::VendorBlas => {
                let uncovered: Vec<&str> = {
                    let mut v: Vec<&str> = core
                        .iter()
                        .map(|t| t.vendor().as_str())
                        .filter(|v| super::verdict::libraries_for(spec, kb, targets, v).is_empty())
                        .collect();
                    v.dedup();
                    v
                };
                if core.is_empty() || !uncovered.is_empty() {
                    return Eval {
                        outcome: "not-applicable",
                        why: format!(
                            "no vendor library for `{}` on {} (operation KB)",
                            spec.op_name(),
                            if uncovered.is_empty() {
                                "the GPU targets".to_string()
                            } else {
                                uncovered.join(", ")
                            }
                        ),
                    };
                }
                let libs: Vec<String> = {
                    let mut vs: Vec<Vendor> = core.iter().map(|t| t.vendor()).collect();
                    vs.dedup();
                    vs.iter()
                        .map(|v| {
                            format!(
                                "{} on {}",
                                super::verdict::libraries_for(spec, kb, targets, v.as_str())
                                    .join(" / "),
                                v.as_str()
                            )
                        })
                        .collect()
                };
                if matches!(
                    verdict.decision,
                    Decision::UseVendorLibrary | Decision::NvidiaOnly | Decision::AmdOnly
                ) {
                    return meets(format!("{}, behind one dispatch function", libs.join("; ")));
                }
                fail("the verdict found a need a library call does not cover (see the verdict inputs)".into())
            }
            Abstraction::Triton => {
                if core.is_empty() {
                    return Eval {
                        outcome: "not-applicable",
                        why: "no NVIDIA or AMD GPU target".into(),
                    };
                }
                let unsupported: Vec<&str> = core
                    .iter()
                    .filter(|t| !triton_supports(t))
                    .map(|t| t.name.as_str())
                    .collect();
                if !unsupported.is_empty() {
                    return fail(format!(
                        "upstream Triton does not support {} (compute capability 8.0+ only)",
                        join_names(&unsupported)
                    ));
                }
                let blockers: Vec<&str> = spec
                    .features
                    .iter()
                    .map(String::as_str)
                    .filter(|f| TRITON_BLOCKERS.contains(f))
                    .collect();
                if !blockers.is_empty() {
                    return fail(format!("Triton cannot express {}", blockers.join(", ")));
                }
                if spec
                    .features
                    .iter()
                    .any(|f| f == "inline-ptx" || f == "inline-gcn-asm")
                {
                    return fail("inline assembly is only expressible as elementwise `inline_asm_elementwise`, per vendor".into());
                }
                if spec.performance == PerfReq::NearPeak
                    && spec.allowed.contains(&Abstraction::PerBackend)
                {
                    for v in [Vendor::Nvidia, Vendor::Amd] {
                        if !core.iter().any(|t| t.vendor() == v) {
                            continue;
                        }
                        let class = class_of(v);
                        let tri = eff.lookup(v.as_str(), class, "triton").map(|e| e.high);
                        let hand = eff
                            .lookup(v.as_str(), class, "hand-written")
                            .map(|e| e.high);
                        if let (Some(tri), Some(hand)) = (tri, hand) {
                            if tri < hand * TRITON_MIN_RATIO {
                                return fail(format!(
                                    "near-peak {class}{} on {}: Triton reaches up to {:.0}% vs {:.0}% for hand-written code (section 8), below {:.0}% of it",
                                    if class != op_class(spec, targets) { " (memory-bound at this shape)" } else { "" },
                                    v.as_str(),
                                    tri * 100.0,
                                    hand * 100.0,
                                    TRITON_MIN_RATIO * 100.0
                                ));
                            }
                        }
                    }
                }
                // What the one source compiles for, said for the vendors and families in scope.
                let mut legs: Vec<String> = Vec::new();
                if core.iter().any(|t| t.vendor() == Vendor::Nvidia) {
                    legs.push("NVIDIA (sm_80+)".into());
                }
                let fams: Vec<&str> = [
                    ("CDNA", core.iter().any(|t| t.is_cdna())),
                    ("RDNA", core.iter().any(|t| t.is_rdna())),
                ]
                .into_iter()
                .filter(|(_, on)| *on)
                .map(|(f, _)| f)
                .collect();
                if core.iter().any(|t| t.vendor() == Vendor::Amd) {
                    legs.push(if fams.is_empty() {
                        "AMD".into()
                    } else {
                        format!("AMD ({})", fams.join("/"))
                    });
                }
                if core.iter().any(|t| t.vendor() == Vendor::Intel) {
                    legs.push("Intel (XPU backend)".into());
                }
                meets(format!(
                    "{} compiles for {}; tiles become autotune configs",
                    if legs.len() > 1 {
                        "one Python source"
                    } else {
                        "the Python source"
                    },
                    if legs.is_empty() {
                        "the GPU targets".to_string()
                    } else {
                        join_names(&legs)
                    }
                ))
            }
            Abstraction::HipSingleSource => {
                if nv_only {
                    return Eval {
                        outcome: "not-applicable",
                        why: "the verdict is nvidia-only: no AMD leg to share source with".into(),
                    };
                }
                if core.is_empty() {
                    return Eval {
                        outcome: "not-applicable",
                        why: "no NVIDIA or AMD GPU target".into(),
                    };
                }
                if spec.performance == PerfReq::NearPeak
                    && spec.op.uses_matrix_units()
                    && spec.allowed.contains(&Abstraction::PerBackend)
                {
                    let mut fams: Vec<String> = core
                        .iter()
                        .map(|t| format!("{} on {}", matrix_family(kb, t), t.name))
                        .collect();
                    let mut distinct: Vec<&str> =
                        core.iter().map(|t| matrix_family(kb, t)).collect();
                    distinct.sort();
                    distinct.dedup();
                    if distinct.len() > 1 {
                        fams.dedup();
                        return fail(format!(
                            "near-peak {class} needs each target's own matrix instructions ({}): one CUDA/HIP source would run the lowest common path",
                            fams.join(", ")
                        ));
                    }
                }
                if spec.performance == PerfReq::NearPeak {
                    let hard: Vec<String> = missing
                        .iter()
                        .filter(|(f, _)| kb.feature(f).is_some_and(|x| x.origin != "portable"))
                        .map(|(f, t)| format!("{f} (missing on {})", t.join("/")))
                        .collect();
                    if !hard.is_empty() && spec.allowed.contains(&Abstraction::PerBackend) {
                        return fail(format!(
                            "near-peak needs vendor-specific features that one source would have to emulate: {}; per-backend dispatch keeps each at full speed",
                            hard.join(", ")
                        ));
                    }
                }
                if core.iter().all(|t| t.vendor() == Vendor::Amd) {
                    return meets("HIP source compiled by hipcc for the AMD targets alone (no NVIDIA target: no CUDA build), with the portability header for the wave32/wave64 differences (section 5)".into());
                }
                meets("CUDA-style source compiled by nvcc and hipcc through the thin portability header (section 5)".into())
            }
            Abstraction::Cutlass => {
                if !has_vendor(Vendor::Nvidia) {
                    return Eval {
                        outcome: "not-applicable",
                        why: "no NVIDIA target".into(),
                    };
                }
                if core.iter().any(|t| t.vendor() != Vendor::Nvidia) {
                    return fail("CUTLASS covers NVIDIA only; usable as the NVIDIA leg of per-backend dispatch".into());
                }
                if !spec.op.uses_matrix_units() {
                    return fail(format!(
                        "CUTLASS/CuTe pays off for matrix ops; `{}` is memory-bound code",
                        spec.op_name()
                    ));
                }
                meets("NVIDIA-only matrix kernel: CUTLASS/CuTe gives wgmma/TMA pipelines without hand-written PTX".into())
            }
            Abstraction::ComposableKernel => {
                if !has_vendor(Vendor::Amd) {
                    return Eval {
                        outcome: "not-applicable",
                        why: "no AMD target".into(),
                    };
                }
                if core.iter().any(|t| t.vendor() != Vendor::Amd) {
                    return fail("Composable Kernel covers AMD only; usable as the AMD leg of per-backend dispatch".into());
                }
                if !spec.op.uses_matrix_units() {
                    return fail(format!(
                        "Composable Kernel pays off for matrix ops; `{}` is memory-bound code",
                        spec.op_name()
                    ));
                }
                meets("AMD-only matrix kernel: Composable Kernel gives MFMA/WMMA pipelines without hand-written assembly".into())
            }
            Abstraction::PerBackend => {
                if core.is_empty() {
                    return Eval {
                        outcome: "not-applicable",
                        why: "no NVIDIA or AMD GPU target".into(),
                    };
                }
                if core.iter().all(|t| t.vendor() == Vendor::Amd) {
                    return meets("HIP per AMD architecture family (CK where it pays; CDNA wave64 and RDNA wave32 as separate paths where they differ), compiled by hipcc alone: no CUDA build".into());
                }
                if core.iter().all(|t| t.vendor() == Vendor::Nvidia) {
                    return meets("CUDA per NVIDIA generation (CUTLASS where it pays), compiled by nvcc alone: no HIP build".into());
                }
                meets("one implementation per vendor (CUDA/CUTLASS on NVIDIA, HIP/CK on AMD) behind one dispatch; highest cost, full use of each ISA".into())
            }
            Abstraction::Sycl => {
                if !has_vendor(Vendor::Intel) {
                    return Eval {
                        outcome: "not-applicable",
                        why: "no Intel target".into(),
                    };
                }
                meets("SYCL (oneAPI DPC++) for the Intel GPU leg".into())
            }
            Abstraction::Opencl => {
                if !has_vendor(Vendor::Intel) && !has_vendor(Vendor::Apple) {
                    return Eval {
                        outcome: "not-applicable",
                        why: "no Intel or Apple target".into(),
                    };
                }
                meets("OpenCL C for the Intel leg (Apple's OpenCL is deprecated)".into())
            }
            Abstraction::Metal => {
                if !has_vendor(Vendor::Apple) {
                    return Eval {
                        outcome: "not-applicable",
                        why: "no Apple target".into(),
                    };
                }
                meets("Metal Shading Language for the Apple GPU leg".into())
            }
        }
    };

    let core_order: Vec<Abstraction> = match verdict.decision {
        Decision::UseFramework => vec![Abstraction::Framework],
        Decision::UseVendorLibrary => vec![Abstraction::VendorBlas],
        Decision::NvidiaOnly
            if spec.performance == PerfReq::NearPeak && spec.op.uses_matrix_units() =>
        {
            vec![
                Abstraction::Framework,
                Abstraction::VendorBlas,
                Abstraction::Cutlass,
                Abstraction::Triton,
                Abstraction::PerBackend,
            ]
        }
        Decision::NvidiaOnly => vec![
            Abstraction::Framework,
            Abstraction::VendorBlas,
            Abstraction::Triton,
            Abstraction::PerBackend,
        ],
        Decision::AmdOnly => vec![
            Abstraction::Framework,
            Abstraction::VendorBlas,
            Abstraction::Triton,
            Abstraction::HipSingleSource,
            Abstraction::ComposableKernel,
            Abstraction::PerBackend,
        ],
        Decision::CustomKernel => Abstraction::STANDARD.to_vec(),
    };
    let mut chosen = None;
    let mut ramp_up = None;
    if !core.is_empty()
        || matches!(
            verdict.decision,
            Decision::UseFramework | Decision::UseVendorLibrary
        )
    {
        chosen = core_order
            .iter()
            .copied()
            .find(|a| evaluate(*a, true).outcome == "meets");
        if chosen.is_none() {
            chosen = core_order
                .iter()
                .copied()
                .find(|a| evaluate(*a, false).outcome == "meets");
            if let Some(a) = chosen {
                ramp_up = can_write(spec, a).err();
            }
        }
    }

    let mut alternatives = Vec::new();
    for a in Abstraction::ALL {
        let e = evaluate(a, true);
        let outcome = if Some(a) == chosen {
            "chosen"
        } else if e.outcome == "meets" {
            "rejected"
        } else {
            e.outcome
        };
        let why = if Some(a) == chosen {
            match &ramp_up {
                Some(r) => format!("{}; {r}: budget ramp-up time", evaluate(a, false).why),
                None => e.why,
            }
        } else if e.outcome == "meets" {
            match chosen {
                Some(c)
                    if core_order.contains(&a)
                        && core_order.iter().position(|x| *x == c)
                            < core_order.iter().position(|x| *x == a) =>
                {
                    format!(
                        "viable, but `{}` is a higher abstraction that also meets the requirement",
                        c.as_str()
                    )
                }
                _ => format!("viable for its targets ({})", e.why),
            }
        } else {
            e.why
        };
        alternatives.push(Alternative {
            abstraction: a.as_str().into(),
            allowed: spec.allowed.contains(&a),
            outcome: outcome.into(),
            why,
            sources: if matches!(outcome, "not-allowed" | "not-applicable") {
                Vec::new()
            } else {
                alternative_sources(spec, kb, &core, class, a)
            },
        });
    }

    // Per-target implementation.
    let per_target: Vec<Choice> = targets
        .iter()
        .map(|t| {
            let (abstraction, implementation) = if nv_only && t.is_gpu() && t.vendor() != Vendor::Nvidia {
                (Impl::Framework, "no custom kernel (verdict nvidia-only): the framework or a simple portable path".to_string())
            } else {
                implementation(spec, kb, t, targets, chosen, &evaluate)
            };
            Choice { abstraction, implementation }
        })
        .collect();

    let summary = match chosen {
        Some(c) => {
            let mut s = format!(
                "`{}`: the highest allowed abstraction that covers {} and meets the `{}` requirement",
                c.as_str(),
                if core.is_empty() { "the targets".to_string() } else { join_names(&core.iter().map(|t| t.name.as_str()).collect::<Vec<_>>()) },
                spec.performance.as_str()
            );
            if let Some(r) = &ramp_up {
                s.push_str(&format!(" ({r}; no allowed option the team already knows covers every target)"));
            }
            s
        }
        None if core.is_empty() => "no NVIDIA/AMD GPU target: each target gets its own implementation (below)".into(),
        None => "no allowed abstraction covers every GPU target: widen [abstraction] allowed (see the alternatives)".into(),
    };
    Decided {
        chosen: chosen.map(|c| c.as_str().to_string()).unwrap_or_else(|| {
            if core.is_empty() {
                "per-target".into()
            } else {
                "none".into()
            }
        }),
        summary,
        per_target,
        alternatives,
        inputs,
    }
}

fn implementation(
    spec: &Spec,
    kb: &Kb,
    t: &Target,
    all: &[Target],
    chosen: Option<Abstraction>,
    evaluate: &dyn Fn(Abstraction, bool) -> Eval,
) -> (Impl, String) {
    let allowed = |a: Abstraction| spec.allowed.contains(&a);
    match t.vendor() {
        Vendor::Cpu => {
            let simd = t
                .arch
                .simd_bits
                .as_ref()
                .and_then(|f| f.value)
                .map(|b| format!(" ({b}-bit SIMD)"))
                .unwrap_or_default();
            if chosen == Some(Abstraction::Framework) {
                return (Impl::Framework, "the framework's CPU path".into());
            }
            let cpu_libs = super::verdict::libraries_for(spec, kb, all, "cpu");
            if allowed(Abstraction::VendorBlas) && !cpu_libs.is_empty() {
                let (label, libs) = super::verdict::library_label(spec, kb, all, "cpu");
                return (label, format!("{libs} for {}{simd}", t.arch.id));
            }
            (
                Impl::CpuFallback,
                format!(
                    "portable C++/Rust loop nest with the same tiling parameters, vectorised for {}{simd}; doubles as the verification reference",
                    t.arch.id
                ),
            )
        }
        Vendor::Nvidia | Vendor::Amd => match chosen {
            Some(Abstraction::PerBackend) => {
                if t.vendor() == Vendor::Nvidia {
                    let cut = spec.op.uses_matrix_units() && allowed(Abstraction::Cutlass);
                    let mma = if kb.availability("wgmma", &t.arch.id) == Availability::Yes {
                        "wgmma + TMA"
                    } else if kb.availability("tcgen05", &t.arch.id) == Availability::Yes {
                        "tcgen05"
                    } else {
                        "mma.sync"
                    };
                    if cut {
                        (
                            Impl::Cutlass,
                            format!("CUTLASS/CuTe kernel ({mma}) for {}", t.arch.id),
                        )
                    } else if spec.op.uses_matrix_units() {
                        (
                            Impl::PerBackend,
                            format!("CUDA kernel using {mma} for {}", t.arch.id),
                        )
                    } else {
                        (Impl::PerBackend, format!("CUDA kernel for {}", t.arch.id))
                    }
                } else {
                    let mm = if kb.availability("mfma", &t.arch.id) == Availability::Yes {
                        "MFMA"
                    } else if kb.availability("rdna-wmma", &t.arch.id) == Availability::Yes {
                        "RDNA WMMA"
                    } else {
                        "vector ALU"
                    };
                    if spec.op.uses_matrix_units() {
                        (
                            Impl::PerBackend,
                            format!(
                                "HIP kernel using {mm} for {} (or Composable Kernel)",
                                t.arch.id
                            ),
                        )
                    } else {
                        (
                            Impl::PerBackend,
                            format!(
                                "HIP kernel for {} (wave{})",
                                t.arch.id,
                                t.warp().unwrap_or(64)
                            ),
                        )
                    }
                }
            }
            Some(Abstraction::Triton) => (
                Impl::Triton,
                format!("Triton kernel, autotuned for {}", t.arch.id),
            ),
            Some(Abstraction::HipSingleSource) => (
                Impl::HipSingleSource,
                format!(
                    "{} built with {} for {}",
                    if all.iter().any(|x| x.vendor() == Vendor::Nvidia) {
                        "shared CUDA/HIP source"
                    } else {
                        "HIP source (no NVIDIA target: no CUDA build)"
                    },
                    if t.vendor() == Vendor::Nvidia {
                        "nvcc"
                    } else {
                        "hipcc"
                    },
                    t.arch.compile_target.as_deref().unwrap_or(&t.arch.id)
                ),
            ),
            Some(Abstraction::VendorBlas) => {
                let (label, libs) =
                    super::verdict::library_label(spec, kb, all, t.vendor().as_str());
                (label, libs)
            }
            Some(Abstraction::Framework) => (Impl::Framework, "the framework's built-in op".into()),
            Some(Abstraction::Cutlass) => (
                Impl::Cutlass,
                format!("CUTLASS/CuTe kernel for {}", t.arch.id),
            ),
            Some(other) => (
                Impl::of_level(other),
                format!("{} for {}", other.as_str(), t.arch.id),
            ),
            None => (
                Impl::None,
                "uncovered: no allowed abstraction reaches this target".into(),
            ),
        },
        Vendor::Intel => {
            if chosen == Some(Abstraction::Framework) {
                return (Impl::Framework, "the framework's XPU path".into());
            }
            if chosen == Some(Abstraction::Triton) {
                return (
                    Impl::Triton,
                    "Triton through intel-xpu-backend-for-triton (out of tree)".into(),
                );
            }
            for a in [Abstraction::Sycl, Abstraction::Opencl] {
                if evaluate(a, false).outcome == "meets" {
                    return (
                        Impl::of_level(a),
                        format!(
                            "{} kernel for {} (sub-group size chosen explicitly)",
                            a.as_str(),
                            t.arch.id
                        ),
                    );
                }
            }
            (
                Impl::None,
                "uncovered: add `sycl` or `opencl` to [abstraction] allowed".into(),
            )
        }
        Vendor::Apple => {
            if chosen == Some(Abstraction::Framework) {
                return (Impl::Framework, "the framework's MPS path".into());
            }
            if evaluate(Abstraction::Metal, false).outcome == "meets" {
                return (
                    Impl::Metal,
                    format!("Metal compute kernel for {} (SIMD-group 32)", t.arch.id),
                );
            }
            (
                Impl::None,
                "uncovered: add `metal` to [abstraction] allowed".into(),
            )
        }
    }
}

/// The source keys behind an alternative's evaluation: the KB support entries of the features
/// it checked, the efficiency rows it compared, the Triton support statement.
fn alternative_sources(
    spec: &Spec,
    kb: &Kb,
    core: &[&Target],
    class: &str,
    a: Abstraction,
) -> Vec<String> {
    let eff = EfficiencyTable::builtin();
    let mut v: Vec<String> = Vec::new();
    let vendors: Vec<&str> = {
        let mut x: Vec<&str> = core.iter().map(|t| t.vendor().as_str()).collect();
        x.sort();
        x.dedup();
        x
    };
    let eff_rows = |v: &mut Vec<String>, strategy: &str| {
        for vendor in &vendors {
            if let Some(e) = eff.lookup(vendor, class, strategy) {
                v.extend(e.sources.iter().cloned());
            }
        }
    };
    // The sources of what the targets have: a feature a target lacks (an NVIDIA instruction
    // on an AMD target) is no evidence for the alternative there.
    let support = |v: &mut Vec<String>, features: &[&str]| {
        for t in core {
            for f in features {
                if let Some(s) = kb.support(f, &t.arch.id) {
                    if kb.availability(f, &t.arch.id) != Availability::No {
                        v.push(s.source.clone());
                    }
                }
            }
        }
    };
    let spec_features: Vec<&str> = spec.features.iter().map(String::as_str).collect();
    match a {
        Abstraction::Framework => eff_rows(&mut v, "framework"),
        Abstraction::VendorBlas if spec.op == Op::Gemm => {
            eff_rows(&mut v, "vendor-library");
            support(&mut v, &["bf16-matrix", "fp8-matrix", "tf32-matrix"]);
        }
        Abstraction::Triton => {
            v.push("TRITON-README".into());
            if core.iter().any(|t| t.vendor() == Vendor::Intel) {
                v.push("TRITON-XPU".into());
            }
            if spec.performance == PerfReq::NearPeak {
                eff_rows(&mut v, "triton");
                eff_rows(&mut v, "hand-written");
            }
        }
        Abstraction::HipSingleSource | Abstraction::Cutlass | Abstraction::PerBackend => {
            if spec.op.uses_matrix_units() {
                support(
                    &mut v,
                    &["tcgen05", "wgmma", "mma-sync", "mfma", "rdna-wmma"],
                );
            }
            support(&mut v, &spec_features);
        }
        _ => {}
    }
    v.sort();
    v.dedup();
    v
}
