//! Section 4: the portability risk register. One entry per (feature or hazard) x the targets it
//! affects, with mitigation, the KB's fallback (and its penalty) where a feature is missing, and
//! the evidence (KB facts with source keys, or source-scan locations).

use super::{join_names, kib, Target};
use crate::model::{Risk, Strategy};
use crate::spec::{Fp8Encoding, Spec};
use kplan_kb::{Availability, Dtype, Kb, Vendor};
use std::collections::BTreeMap;

/// A portability hazard found in existing source (from `kplan plan --source`).
#[derive(Debug, Clone)]
pub struct SourceFinding {
    /// KB feature id or scanner rule id.
    pub feature: String,
    pub rule: String,
    pub count: usize,
    /// `path:line:col`
    pub locations: Vec<String>,
}

pub fn register(
    spec: &Spec,
    kb: &Kb,
    targets: &[Target],
    strategy: &Strategy,
    findings: &[SourceFinding],
) -> Vec<Risk> {
    let mut risks = Vec::new();
    let gpu: Vec<&Target> = targets.iter().filter(|t| t.is_gpu()).collect();
    // Kernel-code hazards (warp size, wavefront mode, LDS budget, tuning constants) concern only
    // the GPU targets the strategy writes kernel code for: a library or framework call meets none.
    let coded: Vec<&Target> = gpu
        .iter()
        .copied()
        .filter(|t| {
            strategy.per_target.iter().any(|p| {
                p.target == t.name
                    && !matches!(
                        p.abstraction.as_str(),
                        "framework" | "vendor-library" | "kernel-library" | "library"
                    )
            })
        })
        .collect();
    let names = |v: &[&Target]| v.iter().map(|t| t.name.clone()).collect::<Vec<_>>();

    // Warp / wavefront size.
    let mut sizes: BTreeMap<u32, Vec<&Target>> = BTreeMap::new();
    for t in &coded {
        if let Some(w) = t.warp() {
            sizes.entry(w).or_default().push(t);
        }
        for w in &t.arch.warp_sizes {
            if Some(*w) != t.warp() {
                sizes.entry(*w).or_default().push(t);
            }
        }
    }
    if sizes.len() > 1 {
        let affected: Vec<&Target> = coded
            .iter()
            .copied()
            .filter(|t| t.warp() != Some(32) || t.arch.warp_sizes.len() > 1)
            .collect();
        let evidence: Vec<String> = coded
            .iter()
            .map(|t| {
                let sel = if t.arch.warp_sizes.len() > 1 {
                    format!(
                        " (selectable: {})",
                        t.arch
                            .warp_sizes
                            .iter()
                            .map(|w| w.to_string())
                            .collect::<Vec<_>>()
                            .join("/")
                    )
                } else {
                    String::new()
                };
                format!(
                    "{}: warp size {}{sel} [{}]",
                    t.name,
                    t.warp()
                        .map(|w| w.to_string())
                        .unwrap_or_else(|| "unknown".into()),
                    t.arch.warp_size.source
                )
            })
            .collect();
        let mut srcs: Vec<String> = coded
            .iter()
            .map(|t| t.arch.warp_size.source.clone())
            .collect();
        srcs.push("LCPP-11519".into());
        srcs.sort();
        srcs.dedup();
        risks.push(Risk {
            id: "warp-size".into(),
            title: {
                let all = sizes.keys().map(|w| w.to_string()).collect::<Vec<_>>();
                let defaults: std::collections::BTreeSet<u32> =
                    coded.iter().filter_map(|t| t.warp()).collect();
                if defaults.len() == 1 {
                    // Every target defaults to the same size; the others are a compile mode.
                    format!(
                        "warp/wavefront size is {} on every target by default but selectable ({})",
                        defaults.iter().next().copied().unwrap_or(0),
                        all.join("/")
                    )
                } else {
                    format!("warp/wavefront size differs across targets ({})", all.join(" vs "))
                }
            },
            kind: "hazard".into(),
            targets: names(&affected),
            severity: "high".into(),
            mitigation: if coded
                .iter()
                .all(|t| strategy.per_target.iter().any(|p| p.target == t.name && p.abstraction == "triton"))
            {
                "Triton keeps lanes inside tl.* operations, so kernel code has no warp size; the exposure is the launch: \
                 never derive thread counts from 32, and tune num_warps per backend (risk `triton-num-warps`)"
                    .to_string()
            } else {
                "never write 32: where the size must be a compile-time constant (array extents, unrolled shuffle \
                 loops, template arguments) use the header's `KPLAN_WARP_SIZE` or a per-target template parameter; \
                 `warpSize` is a run-time value only (it is not constexpr on ROCm 7) and the host sizes launches from \
                 the device query; use 64-bit ballot/activemask types; loop shuffle reductions from KPLAN_WARP_SIZE/2; \
                 make block sizes multiples of 64 so they are whole warps everywhere; size per-warp shared buffers by \
                 blockDim / KPLAN_WARP_SIZE"
                    .to_string()
            },
            fallback: None,
            evidence,
            sources: srcs,
        });
    }

    // RDNA wave32 vs CDNA wave64: same vendor, same HIP source, different wavefront.
    let rdna: Vec<&Target> = coded.iter().copied().filter(|t| t.is_rdna()).collect();
    let cdna: Vec<&Target> = coded.iter().copied().filter(|t| t.is_cdna()).collect();
    if !rdna.is_empty() && !cdna.is_empty() {
        risks.push(Risk {
            id: "rdna-wave32".into(),
            title: "RDNA runs wave32 while CDNA runs wave64 from the same HIP source".into(),
            kind: "hazard".into(),
            targets: names(&rdna),
            severity: "medium".into(),
            mitigation: format!(
                "RDNA runs wave32 under HIP (the HIP runtime does not support wave64 on RDNA), so wave32 is a supported \
                 configuration of every kernel, not a fallback: build RDNA targets wave32 and test them as a separate leg; \
                 do not tune AMD once for both: {} and {} need separate block-size/tile configs (section 6)",
                join_names(&names(&rdna)),
                join_names(&names(&cdna))
            ),
            fallback: Some(
                "make the wave size a template parameter of the kernel and instantiate 32 and 64 (selected per target \
                 by `KPLAN_WARP_SIZE`), so one source serves both without forcing wave64 on RDNA"
                    .into(),
            ),
            evidence: rdna
                .iter()
                .chain(cdna.iter())
                .map(|t| format!("{}: {} warp size {} [{}]", t.name, t.arch.family, t.warp().unwrap_or(0), t.arch.warp_size.source))
                .collect(),
            sources: rdna.iter().chain(cdna.iter()).map(|t| t.arch.warp_size.source.clone()).collect::<std::collections::BTreeSet<_>>().into_iter().collect(),
        });
    }

    // Shared memory / LDS budget.
    let budgets: Vec<(&Target, u64)> = coded
        .iter()
        .filter_map(|t| t.arch.shared_per_block_bytes.value.map(|b| (*t, b)))
        .collect();
    // Only a kernel that stages data in shared memory / LDS meets the budget difference.
    if let (true, Some(min), Some(max)) = (
        spec.uses_shared_memory(),
        budgets.iter().map(|b| b.1).min(),
        budgets.iter().map(|b| b.1).max(),
    ) {
        if max as f64 > 1.5 * min as f64 {
            let small: Vec<&Target> = budgets
                .iter()
                .filter(|b| (b.1 as f64) * 1.5 < max as f64)
                .map(|b| b.0)
                .collect();
            risks.push(Risk {
                id: "shared-memory-budget".into(),
                title: format!("shared memory/LDS per block differs: {} to {}", kib(min), kib(max)),
                kind: "hazard".into(),
                targets: names(&small),
                severity: "medium".into(),
                mitigation: "derive tile shapes from each target's budget (section 6), never from the largest; query the \
                             limit at runtime (cudaDevAttrMaxSharedMemoryPerBlockOptin / hipDeviceAttributeMaxSharedMemoryPerBlock) \
                             and opt in above 48 KiB on NVIDIA with cudaFuncSetAttribute"
                    .into(),
                fallback: Some("fewer pipeline stages or smaller tiles on the small-LDS targets".into()),
                evidence: budgets
                    .iter()
                    .map(|(t, b)| format!("{}: {} per block [{}]", t.name, kib(*b), t.arch.shared_per_block_bytes.source))
                    .collect(),
                sources: budgets.iter().map(|(t, _)| t.arch.shared_per_block_bytes.source.clone()).collect::<std::collections::BTreeSet<_>>().into_iter().collect(),
            });
        }
    }

    // Spec features: missing/partial/unknown somewhere, and every NVIDIA-specific one.
    for f in &spec.features {
        let Some(feat) = kb.feature(f) else { continue };
        let mut by: BTreeMap<&'static str, Vec<&Target>> = BTreeMap::new();
        for t in &gpu {
            let a = kb.availability(f, &t.arch.id);
            let k = match a {
                Availability::Yes => "yes",
                Availability::No => "no",
                Availability::Partial => "partial",
                Availability::Unknown => "unknown",
            };
            by.entry(k).or_default().push(t);
        }
        let evidence: Vec<String> = gpu
            .iter()
            .map(|t| match kb.support(f, &t.arch.id) {
                Some(s) => format!(
                    "{}: {}{}{} [{}]",
                    t.name,
                    super::backend::avail_str(s.status),
                    s.min_toolchain
                        .as_ref()
                        .map(|m| format!(" (from {m})"))
                        .unwrap_or_default(),
                    s.note
                        .as_ref()
                        .map(|n| format!(", {n}"))
                        .unwrap_or_default(),
                    s.source
                ),
                None => format!("{}: unknown (no KB entry)", t.name),
            })
            .collect();
        let sources: Vec<String> = gpu
            .iter()
            .filter_map(|t| kb.support(f, &t.arch.id).map(|s| s.source.clone()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let fallback = feat.fallback.clone();
        for (status, sev) in [("no", "high"), ("partial", "medium"), ("unknown", "medium")] {
            if let Some(ts) = by.get(status) {
                risks.push(Risk {
                    id: format!("feature-{f}-{status}"),
                    title: match status {
                        "no" => format!("`{f}` ({}) is missing on {}", feat.name, join_names(&names(ts))),
                        "partial" => format!("`{f}` ({}) is only partly available on {}", feat.name, join_names(&names(ts))),
                        _ => format!("availability of `{f}` unknown on {}", join_names(&names(ts))),
                    },
                    kind: "feature".into(),
                    targets: names(ts),
                    severity: sev.into(),
                    mitigation: match status {
                        "no" => format!(
                            "guard the use behind the header's feature macro and dispatch to the fallback on {}",
                            join_names(&names(ts))
                        ),
                        "partial" => "check the KB note for which variants exist; test the partial path on its own CI leg".into(),
                        _ => "verify on the hardware or in the vendor docs before relying on it; add the fact to the KB with a source".into(),
                    },
                    fallback: fallback.clone(),
                    evidence: evidence.clone(),
                    sources: sources.clone(),
                });
            }
        }
        let non_nv: Vec<&Target> = gpu
            .iter()
            .copied()
            .filter(|t| t.vendor() != Vendor::Nvidia)
            .collect();
        if feat.origin == "nvidia"
            && !non_nv.is_empty()
            && !by.contains_key("no")
            && !by.contains_key("partial")
            && !by.contains_key("unknown")
        {
            risks.push(Risk {
                id: format!("feature-{f}-nvidia-origin"),
                title: format!("`{f}` is NVIDIA's API; other targets provide it through a translation", ),
                kind: "feature".into(),
                targets: names(&non_nv),
                severity: "low".into(),
                mitigation: "use it through the header's portable name; check mask width and semantics differences on each non-NVIDIA target".into(),
                fallback,
                evidence,
                sources,
            });
        }
    }

    // fp8 encodings.
    // Any fp8 tensor: storage, compute, output (a quantize kernel's scale goes wrong there), KV.
    if spec.uses_fp8() {
        let ocp: Vec<&Target> = gpu
            .iter()
            .copied()
            .filter(|t| kb.availability("fp8-ocp", &t.arch.id) == Availability::Yes)
            .collect();
        let fnuz: Vec<&Target> = gpu
            .iter()
            .copied()
            .filter(|t| kb.availability("fp8-fnuz", &t.arch.id) == Availability::Yes)
            .collect();
        let neither: Vec<&Target> = gpu
            .iter()
            .copied()
            .filter(|t| {
                !ocp.iter().any(|o| o.name == t.name) && !fnuz.iter().any(|o| o.name == t.name)
            })
            .collect();
        let fnuz_only: Vec<&Target> = fnuz
            .iter()
            .copied()
            .filter(|t| !ocp.iter().any(|o| o.name == t.name))
            .collect();
        let ocp_only: Vec<&Target> = ocp
            .iter()
            .copied()
            .filter(|t| !fnuz.iter().any(|o| o.name == t.name))
            .collect();
        let mismatch_with_spec: Vec<&Target> = match spec.fp8_encoding {
            Some(Fp8Encoding::Ocp) => fnuz_only.clone(),
            Some(Fp8Encoding::Fnuz) => ocp_only.clone(),
            None => Vec::new(),
        };
        if (!fnuz_only.is_empty() && !ocp.is_empty())
            || !mismatch_with_spec.is_empty()
            || !neither.is_empty()
        {
            let mut affected = fnuz_only.clone();
            affected.extend(
                mismatch_with_spec
                    .iter()
                    .copied()
                    .filter(|t| !fnuz_only.iter().any(|o| o.name == t.name)),
            );
            affected.extend(neither.iter().copied());
            risks.push(Risk {
                id: "fp8-encoding".into(),
                title: "fp8 encodings differ: OCP e4m3fn/e5m2 vs FNUZ e4m3fnuz/e5m2fnuz".into(),
                kind: "dtype".into(),
                targets: names(&affected),
                severity: "high".into(),
                mitigation: {
                    let mut m = String::from("keep one logical fp8 format at the API boundary and convert per target; FNUZ has no negative zero, \
                             a different exponent bias and max (e4m3fnuz 240 vs e4m3fn 448): scale factors must be computed per \
                             encoding, and the CPU reference must emulate the target's encoding");
                    if spec.output == Dtype::Fp8 || spec.modifiers.kv_dtype == Some(Dtype::Fp8) {
                        m.push_str("; the fp8 output is written with a saturating conversion (satfinite: clamp to the encoding's max), \
                                    not one that overflows to NaN/Inf, with the scale from absmax / max of the target's encoding");
                    }
                    m
                },
                fallback: Some(if spec.op.uses_matrix_units() {
                    "where no fp8 matrix path exists, upconvert to bf16/fp16 and use those matrix units (2x the bytes, half the peak)".into()
                } else {
                    "where a target has no fp8 conversion instructions, convert in software (bit manipulation per element): a few ALU ops per value on a memory-bound kernel".into()
                }),
                evidence: gpu
                    .iter()
                    .map(|t| {
                        format!(
                            "{}: OCP {}, FNUZ {}",
                            t.name,
                            super::backend::avail_str(kb.availability("fp8-ocp", &t.arch.id)),
                            super::backend::avail_str(kb.availability("fp8-fnuz", &t.arch.id))
                        )
                    })
                    .collect(),
                sources: gpu
                    .iter()
                    .flat_map(|t| ["fp8-ocp", "fp8-fnuz"].into_iter().filter_map(|f| kb.support(f, &t.arch.id).map(|s| s.source.clone())))
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect(),
            });
        }
    }

    // Other dtypes missing on some target.
    for d in [spec.storage, spec.compute] {
        let f = match d {
            Dtype::Bf16 if spec.op.uses_matrix_units() => "bf16-matrix",
            Dtype::Bf16 => "bf16",
            Dtype::Tf32 => "tf32-matrix",
            _ => continue,
        };
        let miss: Vec<&Target> = gpu
            .iter()
            .copied()
            .filter(|t| kb.availability(f, &t.arch.id) == Availability::No)
            .collect();
        if !miss.is_empty() && !risks.iter().any(|r| r.id == format!("dtype-{f}")) {
            risks.push(Risk {
                id: format!("dtype-{f}"),
                title: format!(
                    "{} not supported natively on {}",
                    d.as_str(),
                    join_names(&names(&miss))
                ),
                kind: "dtype".into(),
                targets: names(&miss),
                severity: "high".into(),
                mitigation: format!(
                    "store {} but compute in fp32 on these targets (convert on load)",
                    d.as_str()
                ),
                fallback: kb.feature(f).and_then(|x| x.fallback.clone()),
                evidence: miss
                    .iter()
                    .map(|t| {
                        format!(
                            "{}: `{f}` no [{}]",
                            t.name,
                            kb.support(f, &t.arch.id)
                                .map(|s| s.source.as_str())
                                .unwrap_or("-")
                        )
                    })
                    .collect(),
                sources: miss
                    .iter()
                    .filter_map(|t| kb.support(f, &t.arch.id).map(|s| s.source.clone()))
                    .collect(),
            });
        }
    }

    // Inline assembly in the spec's features.
    for (f, vendor) in [
        ("inline-ptx", Vendor::Nvidia),
        ("inline-gcn-asm", Vendor::Amd),
    ] {
        if spec.features.iter().any(|x| x == f) {
            let other: Vec<&Target> = gpu
                .iter()
                .copied()
                .filter(|t| t.vendor() != vendor)
                .collect();
            risks.push(Risk {
                id: format!("{f}-guard"),
                title: format!("`{f}` ties code to one ISA"),
                kind: "hazard".into(),
                targets: names(&other),
                severity: "high".into(),
                mitigation: "wrap every asm block in the header's per-vendor guard with a C++ fallback next to it; test the fallback path on the other vendor's CI leg".into(),
                fallback: kb.feature(f).and_then(|x| x.fallback.clone()),
                evidence: vec![format!("spec features list `{f}`")],
                sources: vec![],
            });
        }
    }

    // Triton num_warps semantics on wave64.
    let triton_used = strategy
        .per_target
        .iter()
        .any(|p| p.abstraction == "triton");
    let wave64: Vec<&Target> = gpu
        .iter()
        .copied()
        .filter(|t| t.warp() == Some(64))
        .collect();
    if triton_used && !wave64.is_empty() {
        risks.push(Risk {
            id: "triton-num-warps".into(),
            title: "Triton `num_warps` counts 64-lane wavefronts on wave64 AMD targets".into(),
            kind: "hazard".into(),
            targets: names(&wave64),
            severity: "medium".into(),
            mitigation: "autotune num_warps per backend (num_warps = 8 is 256 threads on NVIDIA but 512 on CDNA; at most 16 on wave64 \
                         with the 1024-thread limit); halve NVIDIA's num_warps as the AMD starting point; never hard-code 32 lanes in launch code"
                .into(),
            fallback: None,
            evidence: vec!["halving num_warps on AMD restored 16-B vectorization, ~10% (PT-125084)".into(), "Triton caps num_warps by the device warp size (TRITON-6106)".into()],
            sources: vec!["PT-125084".into(), "TRITON-6106".into()],
        });
    }

    // AMD tuning gap for memory-bound code.
    let amd: Vec<&Target> = coded
        .iter()
        .copied()
        .filter(|t| t.vendor() == Vendor::Amd)
        .collect();
    if !amd.is_empty() && coded.iter().any(|t| t.vendor() == Vendor::Nvidia) {
        risks.push(Risk {
            id: "amd-tuning".into(),
            title: "AMD paths land 3-5x below their roofline when NVIDIA launch/tuning constants are reused".into(),
            kind: "hazard".into(),
            targets: names(&amd),
            severity: "medium".into(),
            mitigation: "keep tuning constants per backend (vector width, elements per thread, num_warps, waves_per_eu); emit 16-byte \
                         vector loads; launch enough workgroups (MI300X: >= 1024); check achieved bandwidth with `kplan bench` on AMD"
                .into(),
            fallback: None,
            evidence: vec![
                "MI300X torch.sum 33% -> 60% of peak after one reduce-config change (PT-132964, PT-135397)".into(),
                "Triton RMSNorm on MI300 below half of peak until constexpr N and vector loads (ROCM-TRITON-422)".into(),
            ],
            sources: vec!["PT-132964".into(), "PT-135397".into(), "ROCM-TRITON-422".into()],
        });
    }

    // Intel / Apple: a third code path in another language.
    for t in gpu
        .iter()
        .filter(|t| matches!(t.vendor(), Vendor::Intel | Vendor::Apple))
    {
        let imp = strategy.per_target.iter().find(|p| p.target == t.name);
        let lang = imp.map(|p| p.abstraction.as_str()).unwrap_or("none");
        let mut evidence = vec![format!(
            "{}: {} warp/sub-group size {}{} [{}]",
            t.name,
            t.arch.family,
            t.warp()
                .map(|w| w.to_string())
                .unwrap_or_else(|| "unknown".into()),
            if t.arch.warp_sizes.len() > 1 {
                format!(
                    " (selectable: {})",
                    t.arch
                        .warp_sizes
                        .iter()
                        .map(|w| w.to_string())
                        .collect::<Vec<_>>()
                        .join("/")
                )
            } else {
                String::new()
            },
            t.arch.warp_size.source
        )];
        if let Some(n) = &t.arch.warp_size.note {
            evidence.push(format!("{}: {n}", t.name));
        }
        evidence.extend(t.arch.notes.iter().map(|n| format!("{}: {n}", t.name)));
        risks.push(Risk {
            id: format!("separate-language-{}", t.arch.id),
            title: format!("{} is programmed in {}, outside the CUDA/HIP source", t.name, if lang == "none" { "another language" } else { lang }),
            kind: "hazard".into(),
            targets: vec![t.name.clone()],
            severity: "medium".into(),
            mitigation: format!(
                "keep the algorithm's parameters (tile sizes, vector width, sub-group size) in one shared description and verify this leg against the same CPU reference; pin the sub-group/SIMD-group size explicitly{}",
                if t.vendor() == Vendor::Apple { "; Metal has no fp64 and needs a macOS runner to compile" } else { " (reqd_sub_group_size)" }
            ),
            fallback: Some("the framework's backend for this device (XPU / MPS) where the kernel is not worth a third implementation".into()),
            evidence,
            sources: vec![t.arch.warp_size.source.clone()],
        });
    }

    // CPU fallback.
    let cpu: Vec<&Target> = targets.iter().filter(|t| !t.is_gpu()).collect();
    if !cpu.is_empty() && !gpu.is_empty() {
        risks.push(Risk {
            id: "cpu-fallback-drift".into(),
            title: "the CPU fallback is separate code and can drift from the GPU kernels".into(),
            kind: "hazard".into(),
            targets: cpu.iter().map(|t| t.name.clone()).collect(),
            severity: "low".into(),
            mitigation: if spec.compute.is_integer() {
                format!(
                    "use the CPU path as the verification reference for every backend, run it on every CI run, and \
                     accumulate exactly in {} as the GPU kernels do (integer accumulation is exact: compare bit for bit, \
                     no tolerance, no floating-point conversion)",
                    spec.compute.as_str()
                )
            } else {
                format!(
                    "use the CPU path as the verification reference for every backend, run it on every CI run, and keep \
                     the accumulation order and dtype (compute in {}) the same as the GPU kernels",
                    spec.compute.as_str()
                )
            },
            fallback: None,
            evidence: cpu.iter().map(|t| format!("{}: {} ({} SIMD lanes per KB `warp_size`)", t.name, t.arch.family, t.warp().unwrap_or(1))).collect(),
            sources: vec![],
        });
    }

    // int32 indices at the problem's size: a tensor of 2^31 elements or more overflows 32-bit
    // offsets (the default index type of most kernels).
    let largest = largest_tensor(spec);
    if largest >= (1u64 << 31) as f64 && !gpu.is_empty() {
        risks.push(Risk {
            id: "int32-index-overflow".into(),
            title: format!("a tensor of {largest:.3e} elements overflows 32-bit indices (2^31 = 2.147e9)"),
            kind: "hazard".into(),
            targets: names(&gpu),
            severity: "high".into(),
            mitigation: "compute element offsets in 64 bits (size_t / int64 index math, Triton `tl.int64` program offsets); keep 32-bit indices only inside a tile".into(),
            fallback: Some("split the problem into chunks below 2^31 elements (one launch each)".into()),
            evidence: vec![format!("largest tensor: {largest:.3e} elements (problem {:?})", spec.dims)],
            sources: vec![],
        });
    }

    // Latency-bound: a latency budget, or a problem whose roofline time is a few microseconds.
    if let Some(b) = spec.latency_us {
        if !gpu.is_empty() {
            risks.push(Risk {
                id: "latency-bound".into(),
                title: format!("a {b} us per-call budget: launch overhead and occupancy decide, not bandwidth"),
                kind: "hazard".into(),
                targets: names(&gpu),
                severity: "medium".into(),
                mitigation: "capture the call in a CUDA/HIP graph, fuse with neighbouring kernels, size the grid to fill every SM/CU (split the work: split-KV, split rows), and measure end-to-end latency with `kplan bench` rather than bandwidth".into(),
                fallback: None,
                evidence: vec![format!("[requirements] latency_us = {b}")],
                sources: vec![],
            });
        }
    }

    // Multi-die devices: MI250X GCDs (one per launch) and MI300-class XCDs (one device, L2 per
    // XCD): a hazard for kernel code written for them (a library call handles its own placement).
    let multi: Vec<&Target> = coded
        .iter()
        .copied()
        .filter(|t| {
            t.device.as_deref().is_some_and(|d| {
                d.dies_per_package.is_some()
                    || d.compute_units
                        .note
                        .as_deref()
                        .is_some_and(|n| n.contains("per XCD"))
            })
        })
        .collect();
    if !multi.is_empty() {
        risks.push(Risk {
            id: "multi-die".into(),
            title: "multi-die GPUs: one launch sees one MI250X GCD; MI300-class XCDs have separate L2s".into(),
            kind: "hazard".into(),
            targets: names(&multi),
            severity: "medium".into(),
            mitigation: "plan MI250X per GCD (each is its own HIP device: split work across both explicitly); on MI300-class parts workgroups are dispatched round-robin over the XCDs whose L2s are not coherent with each other: keep a block's data in its own XCD (remap block ids), publish cross-block flags with release/acquire at agent scope, and check the partition mode (SPX/CPX) of the machine".into(),
            fallback: None,
            evidence: multi
                .iter()
                .map(|t| {
                    let d = t.device.as_deref().unwrap();
                    format!(
                        "{}: {} compute units ({}) [{}]",
                        t.name,
                        d.compute_units.value.map(|v| v.to_string()).unwrap_or_else(|| "unknown".into()),
                        d.compute_units.note.as_deref().unwrap_or(""),
                        d.compute_units.source
                    )
                })
                .collect(),
            sources: multi.iter().filter_map(|t| t.device.as_deref().map(|d| d.compute_units.source.clone())).collect::<std::collections::BTreeSet<_>>().into_iter().collect(),
        });
    }

    // Blackwell arch-specific code: sm_100a cubins run on compute capability 10.0 only.
    let bw_a: Vec<&Target> = gpu
        .iter()
        .copied()
        .filter(|t| t.arch.id == "sm_100a")
        .collect();
    let bw_other: Vec<&Target> = gpu
        .iter()
        .copied()
        .filter(|t| t.arch.id != "sm_100a" && t.arch.family == "Blackwell (datacenter)")
        .collect();
    if !bw_a.is_empty() && !bw_other.is_empty() {
        risks.push(Risk {
            id: "blackwell-arch-specific".into(),
            title: "sm_100a (arch-specific) code does not run on the other Blackwell targets".into(),
            kind: "toolchain".into(),
            targets: names(&bw_other),
            severity: "high".into(),
            mitigation: "build the family target (compute_100f, CUDA 12.9+) for code that must run on every Blackwell part, or ship one cubin per exact target (sm_100a, sm_103a) plus PTX".into(),
            fallback: Some("portable sm_100 code without tcgen05 (the wgmma-free, mma.sync path)".into()),
            evidence: bw_a.iter().chain(bw_other.iter()).map(|t| format!("{}: {} [CUDA-FS]", t.name, t.arch.notes.join(" "))).collect(),
            sources: vec!["CUDA-FS".into()],
        });
    }

    // Op-specific hazards from the operation knowledge base.
    // A custom op the knowledge base knows gets that entry's risks and the custom op's own.
    let entries: Vec<&kplan_kb::OpInfo> = [spec.kb_op(), spec.op.as_str()]
        .into_iter()
        .enumerate()
        .filter(|(i, id)| *i == 0 || *id != spec.kb_op())
        .filter_map(|(_, id)| kb.op_info(id))
        .collect();
    for info in entries {
        let affected: Vec<String> = if gpu.is_empty() {
            targets.iter().map(|t| t.name.clone()).collect()
        } else {
            names(&gpu)
        };
        let facts = facts(spec, targets, &coded);
        for r in info.risk.iter().filter(|r| {
            r.direction
                .as_deref()
                .map_or(true, |d| d == spec.direction.as_str())
                && r.when.as_deref().map_or(true, |w| {
                    // A condition the KB cannot parse is a KB error the drift test reports; the
                    // risk is kept rather than silently dropped.
                    super::when::parse(w).map_or(true, |c| c.eval(&facts))
                })
        }) {
            risks.push(Risk {
                id: r.id.clone(),
                title: r.title.clone(),
                kind: "op".into(),
                targets: affected.clone(),
                severity: "medium".into(),
                mitigation: r.mitigation.clone(),
                fallback: None,
                evidence: vec![format!("{} [{}]", r.why, r.source)],
                sources: vec![r.source.clone()],
            });
        }
    }

    // Hazard rules, one file each (`decide/hazards/`).
    let cx = super::hazards::Cx {
        spec,
        kb,
        targets,
        coded: coded
            .iter()
            .map(|t| {
                let abs = strategy
                    .per_target
                    .iter()
                    .find(|p| p.target == t.name)
                    .map(|p| p.abstraction.as_str())
                    .unwrap_or("");
                (*t, abs)
            })
            .collect(),
    };
    risks.extend(super::hazards::run(&cx));

    // Findings from existing source.
    let mut by_feature: BTreeMap<&str, Vec<&SourceFinding>> = BTreeMap::new();
    for s in findings {
        by_feature.entry(s.feature.as_str()).or_default().push(s);
    }
    for (feature, items) in by_feature {
        let count: usize = items.iter().map(|i| i.count).sum();
        let mut locs: Vec<String> = items
            .iter()
            .flat_map(|i| i.locations.iter().cloned())
            .collect();
        locs.sort();
        locs.dedup();
        let non_nv = || {
            gpu.iter()
                .filter(|t| t.vendor() != Vendor::Nvidia)
                .map(|t| t.name.clone())
                .collect::<Vec<_>>()
        };
        let mut affected: Vec<String> = match kb.feature(feature) {
            Some(_) => gpu
                .iter()
                .filter(|t| kb.availability(feature, &t.arch.id) != Availability::Yes)
                .map(|t| t.name.clone())
                .collect(),
            None => non_nv(),
        };
        // Available everywhere, but written in NVIDIA's API: the translation is the risk.
        let translated_only = affected.is_empty();
        if translated_only && kb.feature(feature).is_some_and(|f| f.origin == "nvidia") {
            affected = non_nv();
        }
        let fallback = kb.feature(feature).and_then(|f| f.fallback.clone());
        let rules: Vec<&str> = items
            .iter()
            .map(|i| i.rule.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut evidence: Vec<String> = locs.iter().take(20).cloned().collect();
        if locs.len() > 20 {
            evidence.push(format!("... and {} more locations", locs.len() - 20));
        }
        risks.push(Risk {
            id: format!("source-{feature}"),
            title: format!("existing source uses `{feature}` ({count} site{}; rule {})", if count == 1 { "" } else { "s" }, rules.join(", ")),
            kind: "source".into(),
            targets: affected,
            severity: if translated_only { "low".into() } else if fallback.is_some() { "medium".into() } else { "high".into() },
            mitigation: if translated_only {
                "available on every target through a translation: port each site through the header's portable name and check mask widths; `kplan scan` lists the fix per rule".into()
            } else {
                "port each site through the header or guard it per vendor, with the fallback where the feature is missing; `kplan scan` lists the fix per rule".into()
            },
            fallback,
            evidence,
            sources: vec![],
        });
    }

    risks
}

/// What an op risk's `when` condition can read (see [`super::when`]): the problem's sizes
/// (every key the spec gave and the sizes of its normalised shape), the modifiers and dtypes,
/// the vendors and families in scope and whether any GPU target gets hand-written code.
pub fn facts(spec: &Spec, targets: &[Target], coded: &[&Target]) -> super::when::Facts {
    use crate::spec::Problem;
    let mut f = super::when::Facts::default();
    for (k, v) in &spec.dims {
        f.nums.insert(k.clone(), *v as f64);
    }
    let mut put = |k: &str, v: u64| {
        f.nums.entry(k.to_string()).or_insert(v as f64);
    };
    match &spec.problem {
        Problem::Flat { n } => put("n", *n),
        Problem::Rows { rows, cols } => {
            put("rows", *rows);
            put("cols", *cols);
        }
        Problem::Gemm { batch, m, n, k } => {
            put("batch", *batch);
            put("m", *m);
            put("n", *n);
            put("k", *k);
        }
        Problem::Attention {
            batch,
            heads,
            kv_heads,
            seq_q,
            seq_kv,
            head_dim,
            ..
        } => {
            put("batch", *batch);
            put("heads", *heads);
            put("kv_heads", *kv_heads);
            put("seq_q", *seq_q);
            put("seq_kv", *seq_kv);
            put("head_dim", *head_dim);
        }
        Problem::Custom { .. } => {}
    }
    f.nums.insert("elements".into(), largest_tensor(spec));
    // The length one scan / sort / top-k / softmax row runs over: `cols` of a row problem,
    // `n` of a flat one.
    match &spec.problem {
        Problem::Rows { cols, .. } => {
            f.nums.insert("row_len".into(), *cols as f64);
        }
        Problem::Flat { n } => {
            f.nums.insert("row_len".into(), *n as f64);
        }
        _ => {}
    }
    f.nums
        .insert("storage_bytes".into(), spec.storage_size().max(0.125));
    f.nums
        .insert("out_bytes".into(), spec.output.size().max(0.125));
    if let Some(w) = spec.weight_size() {
        f.nums.insert("weight_bytes".into(), w.max(0.125));
    }
    if let Some(b) = spec.dim("bins") {
        let counter = if spec.output.is_integer() && spec.output.bytes() >= 8 {
            8
        } else {
            4
        };
        f.nums.insert("counter_bytes".into(), (b * counter) as f64);
    }
    let gpu: Vec<&Target> = targets.iter().filter(|t| t.is_gpu()).collect();
    if let Some(l) = gpu
        .iter()
        .filter_map(|t| t.arch.shared_per_block_bytes.value)
        .min()
    {
        f.nums.insert("lds_bytes".into(), l as f64);
    }
    f.nums.insert("gpu_targets".into(), gpu.len() as f64);
    let m = &spec.modifiers;
    let attn = matches!(spec.problem, Problem::Attention { .. });
    let decode = match &spec.problem {
        Problem::Attention { seq_q, .. } => *seq_q <= 8,
        _ => false,
    };
    let gqa =
        matches!(&spec.problem, Problem::Attention { heads, kv_heads, .. } if kv_heads < heads);
    let vendor = |v: Vendor| targets.iter().any(|t| t.vendor() == v);
    for (k, v) in [
        ("backward", spec.is_backward()),
        ("forward", !spec.is_backward()),
        ("decode", decode),
        ("prefill", attn && !decode),
        ("deterministic", m.deterministic),
        (
            "causal",
            m.causal || matches!(spec.problem, Problem::Attention { causal: true, .. }),
        ),
        ("varlen", m.varlen),
        ("ragged", m.ragged),
        ("stable", m.stable),
        ("exclusive", m.exclusive),
        ("values", m.values),
        ("fp8", spec.uses_fp8()),
        ("fp8_output", spec.output == Dtype::Fp8),
        (
            "integer",
            spec.storage.is_integer() || spec.output.is_integer(),
        ),
        ("block_scaled", spec.block_scale.is_some()),
        ("amd", vendor(Vendor::Amd)),
        ("nvidia", vendor(Vendor::Nvidia)),
        ("cpu", vendor(Vendor::Cpu)),
        ("cdna", targets.iter().any(|t| t.is_cdna())),
        ("rdna", targets.iter().any(|t| t.is_rdna())),
        (
            "multi_die",
            targets.iter().any(|t| {
                t.device.as_deref().is_some_and(|d| {
                    d.dies_per_package.is_some()
                        || d.compute_units
                            .note
                            .as_deref()
                            .is_some_and(|n| n.contains("per XCD"))
                })
            }),
        ),
        (
            "atomics",
            spec.features.iter().any(|x| x.contains("atomic")),
        ),
        ("library", !gpu.is_empty() && coded.is_empty()),
        ("latency_budget", spec.latency_us.is_some()),
        ("paged", spec.dim("page_size").is_some()),
        ("gqa", gqa),
        ("epilogue", m.epilogue.is_some()),
        ("masked", m.mask.as_deref().is_some_and(|x| x != "none")),
        (
            "weight_quant",
            spec.weight_quant.is_some()
                || m.weight_dtype
                    .is_some_and(|w| w.size() < spec.storage.size()),
        ),
        (
            "block_quant",
            spec.storage_quant.is_some()
                || spec.weight_quant.is_some()
                || spec.block_scale.is_some(),
        ),
        ("unknown_work", spec.work_unknown.is_some()),
    ] {
        f.flags.insert(k.into(), v);
    }
    for (k, v) in [
        ("kind", &m.kind),
        ("reduce", &m.reduce),
        ("granularity", &m.granularity),
        ("format", &m.format),
        ("layout", &m.layout),
        ("mask", &m.mask),
        ("epilogue", &m.epilogue),
    ] {
        if let Some(v) = v {
            f.texts.insert(k.into(), v.clone());
        }
    }
    f.texts
        .insert("storage".into(), spec.storage.as_str().into());
    f.texts.insert("output".into(), spec.output.as_str().into());
    if let Some(w) = m.weight_dtype {
        f.texts.insert("weight".into(), w.as_str().into());
    }
    if let Some(l) = spec.latency_us {
        f.nums.insert("latency_us".into(), l);
    }
    f
}

/// Elements of the largest tensor the op touches (from the problem's dims), for the 32-bit
/// index check.
fn largest_tensor(spec: &Spec) -> f64 {
    use crate::spec::Problem;
    let d = |k: &str| spec.dim(k).unwrap_or(0) as f64;
    let shape = match &spec.problem {
        Problem::Flat { n } => *n as f64,
        Problem::Rows { rows, cols } => *rows as f64 * *cols as f64,
        Problem::Gemm { batch, m, n, k } => {
            let (b, m, n, k) = (*batch as f64, *m as f64, *n as f64, *k as f64);
            (b * m * k).max(b * k * n).max(b * m * n)
        }
        Problem::Attention {
            batch,
            heads,
            kv_heads,
            seq_q,
            seq_kv,
            head_dim,
            ..
        } => {
            let q = *batch as f64 * *heads as f64 * *seq_q as f64 * *head_dim as f64;
            let kv = *batch as f64 * *kv_heads as f64 * *seq_kv as f64 * *head_dim as f64;
            q.max(kv)
        }
        Problem::Custom { .. } => 0.0,
    };
    // Tables and sparse arrays beyond the launch shape.
    shape
        .max(d("vocab") * d("dim"))
        .max(d("rows") * d("dim"))
        .max(d("nnz"))
        .max(d("n") * spec.dim("dim").unwrap_or(1) as f64)
        .max(d("num_pages") * d("page_size") * d("kv_heads") * d("head_dim"))
}
