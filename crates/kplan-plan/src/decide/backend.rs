//! Section 1 (backend matrix) and section 2 (operation analysis per target, dtype support).

use super::Target;
use crate::analysis::{ridge_point, tidy, Bound, Work};
use crate::model::{BackendEntry, DtypeSupport, OpTarget};
use crate::spec::{Fp8Encoding, Spec};
use kplan_kb::{Availability, Dtype, Kb, ResolvedVia, Vendor};

/// The KB features the spec needs: its `features` plus the features its dtypes need for this op
/// (e.g. `fp8-matrix` for an fp8 GEMM). Their per-architecture minimum toolchains raise the
/// architecture's own minimum.
pub fn required_features(spec: &Spec) -> Vec<String> {
    let mut v: Vec<String> = spec.features.clone();
    for d in [spec.storage, spec.compute] {
        for f in dtype_features(spec, d) {
            if !v.iter().any(|x| x == f) {
                v.push(f.to_string());
            }
        }
    }
    v
}

/// The minimum toolchain for `arch` given the required features, and the KB source of the
/// feature entry that raised it above the architecture's own minimum (if one did).
pub fn min_toolchain(
    kb: &Kb,
    arch: &kplan_kb::Arch,
    features: &[String],
) -> (Option<String>, Option<String>) {
    let ids: Vec<&str> = features.iter().map(|s| s.as_str()).collect();
    let min = kb.min_toolchain_with(arch, &ids);
    if min.is_none() || min.as_deref() == arch.min_toolchain.value.as_deref() {
        return (min, None);
    }
    let src = ids.iter().find_map(|f| {
        kb.support(f, &arch.id)
            .filter(|s| s.min_toolchain.as_deref() == min.as_deref())
            .map(|s| s.source.clone())
    });
    (min, src)
}

pub fn backend_matrix(spec: &Spec, kb: &Kb, targets: &[Target]) -> Vec<BackendEntry> {
    let features = required_features(spec);
    targets
        .iter()
        .map(|t| {
            let a = t.arch;
            let (min_toolchain, raised_by) = min_toolchain(kb, a, &features);
            let mut sources = vec![
                a.warp_size.source.clone(),
                a.max_threads_per_block.source.clone(),
                a.shared_per_block_bytes.source.clone(),
                a.min_toolchain.source.clone(),
            ];
            sources.extend(raised_by);
            if let Some(d) = t.device.as_deref() {
                sources.push(d.compute_units.source.clone());
                sources.push(d.bandwidth_gbs.source.clone());
            }
            sources.sort();
            sources.dedup();
            BackendEntry {
                target: t.name.clone(),
                vendor: a.vendor.as_str().to_string(),
                arch: a.id.clone(),
                family: a.family.clone(),
                device: t.device.as_deref().map(|d| d.id.clone()),
                device_name: t.device.as_deref().map(|d| d.name.clone()),
                resolved_via: match t.via {
                    ResolvedVia::Arch => "architecture".into(),
                    ResolvedVia::Device => "device".into(),
                },
                warp_size: a.warp_size.value,
                warp_sizes: if a.warp_sizes.is_empty() {
                    a.warp_size.value.into_iter().collect()
                } else {
                    a.warp_sizes.clone()
                },
                max_threads_per_block: a.max_threads_per_block.value,
                shared_per_block_bytes: a.shared_per_block_bytes.value,
                compute_units: t.device.as_deref().and_then(|d| d.compute_units.value),
                bandwidth_gbs: t.device.as_deref().and_then(|d| d.bandwidth_gbs.value),
                min_toolchain,
                compile_target: a.compile_target.clone(),
                sources,
            }
        })
        .collect()
}

/// The dtype whose peak bounds the compute: matrix ops run their inner product in the input
/// dtype (accumulating in the compute dtype), other ops compute in the compute dtype.
/// Whether a spec's op runs on the matrix units: a matrix op class, or any op whose features
/// name them (`tensor-cores`, `matrix-cores`, or an MMA/MFMA/WMMA feature of the KB).
pub fn uses_matrix_units(spec: &Spec) -> bool {
    spec.op.uses_matrix_units() || names_matrix_units(spec)
}

/// The spec's features name the matrix units.
pub fn names_matrix_units(spec: &Spec) -> bool {
    spec.features.iter().any(|f| {
        let f = f.to_ascii_lowercase();
        matches!(
            f.as_str(),
            "tensor-cores" | "matrix-cores" | "tensor-core" | "matrix-core"
        ) || f.contains("mma")
            || f.contains("mfma")
            || f.contains("tcgen05")
    })
}

pub fn math_dtype(spec: &Spec) -> Dtype {
    if uses_matrix_units(spec) {
        spec.storage
    } else {
        spec.compute
    }
}

/// Peak TFLOP/s for the spec's math dtype on a target: (value, table, dtype read, source, note).
pub fn peak(spec: &Spec, t: &Target) -> Option<(f64, &'static str, Dtype, String, Option<String>)> {
    let d = t.device.as_deref()?;
    let m = math_dtype(spec);
    let get = |tab: &std::collections::BTreeMap<Dtype, kplan_kb::Fact<f64>>, dt: Dtype| {
        tab.get(&dt)
            .and_then(|f| f.value.filter(|v| *v > 0.0).map(|v| (v, f.source.clone())))
    };
    if uses_matrix_units(spec) {
        if let Some((v, s)) = get(&d.peak_tflops, m) {
            return Some((v, "matrix", m, s, None));
        }
        if let Some((v, s)) = get(&d.peak_vector_tflops, m) {
            return Some((
                v,
                "vector",
                m,
                s,
                Some(format!(
                    "no matrix-unit peak for {} in the KB; vector peak used",
                    m.as_str()
                )),
            ));
        }
        // No rate for the dtype: the fallback path upconverts (fp8 -> bf16/fp16, tf32 -> fp32).
        let wider: &[Dtype] = match m {
            Dtype::Fp8 => &[Dtype::Bf16, Dtype::Fp16],
            Dtype::Int8 => &[Dtype::Fp16, Dtype::Bf16],
            Dtype::Tf32 => &[Dtype::Fp32],
            _ => &[],
        };
        for w in wider {
            if let Some((v, s)) = get(&d.peak_tflops, *w).or_else(|| get(&d.peak_vector_tflops, *w))
            {
                return Some((
                    v,
                    "matrix",
                    *w,
                    s,
                    Some(format!("no {} peak on {} (see dtype support): the fallback upconverts to {}, whose peak is used", m.as_str(), d.name, w.as_str())),
                ));
            }
        }
        return None;
    }
    if let Some((v, s)) = get(&d.peak_vector_tflops, m) {
        return Some((v, "vector", m, s, None));
    }
    // fp32 "matrix" entries of GPUs without fp32 matrix units (NVIDIA, RDNA) are the vector peak;
    // for half types without a vector entry, the fp32 vector rate is the conservative bound.
    let fp32_note = |what: &str| {
        Some(format!(
            "no vector {} peak in the KB; {what} used",
            m.as_str()
        ))
    };
    if let Some((v, s)) = get(&d.peak_vector_tflops, Dtype::Fp32) {
        return Some((
            v,
            "vector",
            Dtype::Fp32,
            s,
            fp32_note("the vector fp32 peak"),
        ));
    }
    if let Some((v, s)) = get(&d.peak_tflops, Dtype::Fp32) {
        return Some((v, "fp32-table", Dtype::Fp32, s, fp32_note("the fp32 peak")));
    }
    if t.vendor() == Vendor::Cpu {
        if let Some((v, s)) = get(&d.peak_tflops, m) {
            return Some((v, "matrix", m, s, None));
        }
    }
    None
}

pub fn op_targets(spec: &Spec, work: &Work, targets: &[Target]) -> Vec<OpTarget> {
    targets
        .iter()
        .map(|t| {
            let pk = peak(spec, t);
            let bw = t
                .device
                .as_deref()
                .and_then(|d| d.bandwidth_gbs.value)
                .filter(|v| *v > 0.0);
            let mut sources = Vec::new();
            if let Some((_, _, _, s, _)) = &pk {
                sources.push(s.clone());
            }
            if let Some(d) = t.device.as_deref() {
                if bw.is_some() {
                    sources.push(d.bandwidth_gbs.source.clone());
                }
            }
            sources.dedup();
            let ridge = match (&pk, bw) {
                (Some((p, ..)), Some(b)) => ridge_point(*p, b),
                _ => None,
            };
            let bound = match (ridge, work.intensity) {
                _ if work.unknown.is_some() => None,
                (Some(r), Some(i)) => Some(if i < r { Bound::Memory } else { Bound::Compute }),
                (Some(_), None) => Some(Bound::Compute),
                _ => None,
            };
            let mut notes = Vec::new();
            if let Some((_, _, _, _, Some(n))) = &pk {
                notes.push(n.clone());
            }
            match t.device.as_deref() {
                None => notes.push(format!(
                    "the KB has no device for {}: bandwidth and peak unknown",
                    t.arch.id
                )),
                Some(d) => {
                    if bw.is_none() {
                        notes.push(format!("bandwidth of {} unknown in the KB", d.name));
                    }
                    if pk.is_none() {
                        notes.push(format!(
                            "peak {} TFLOP/s of {} unknown in the KB",
                            math_dtype(spec).as_str(),
                            d.name
                        ));
                    }
                }
            }
            OpTarget {
                target: t.name.clone(),
                peak_tflops: pk.as_ref().map(|p| p.0),
                peak_kind: pk.as_ref().map(|p| p.1.to_string()),
                peak_dtype: pk.as_ref().map(|p| p.2.as_str().to_string()),
                bandwidth_gbs: bw,
                ridge_point: ridge.map(tidy),
                bound,
                note: (!notes.is_empty()).then(|| notes.join("; ")),
                sources,
            }
        })
        .collect()
}

/// The KB features that say whether a dtype is usable on a target for this op.
fn dtype_features(spec: &Spec, d: Dtype) -> Vec<&'static str> {
    let matrix = spec.op.uses_matrix_units();
    match d {
        Dtype::Bf16 if matrix => vec!["bf16-matrix"],
        Dtype::Bf16 => vec!["bf16"],
        Dtype::Fp16 => vec!["fp16"],
        Dtype::Tf32 => vec!["tf32-matrix"],
        Dtype::Fp8 => match spec.fp8_encoding {
            Some(Fp8Encoding::Ocp) => vec!["fp8-ocp"],
            Some(Fp8Encoding::Fnuz) => vec!["fp8-fnuz"],
            None if matrix => vec!["fp8-matrix"],
            None => vec!["fp8-ocp", "fp8-fnuz"],
        },
        _ => vec![],
    }
}

pub fn dtype_support(spec: &Spec, kb: &Kb, targets: &[Target]) -> Vec<DtypeSupport> {
    let mut out = Vec::new();
    let mut seen = Vec::new();
    // Every dtype the kernel touches: storage, compute, output (an fp8 quantize output), the
    // KV-cache and the weight dtype.
    for d in spec.all_dtypes() {
        if seen.contains(&d) {
            continue;
        }
        seen.push(d);
        for t in targets {
            let feats = dtype_features(spec, d);
            if feats.is_empty() {
                out.push(DtypeSupport {
                    target: t.name.clone(),
                    dtype: d.as_str().into(),
                    status: "yes".into(),
                    feature: None,
                    note: Some("native type on every supported architecture".into()),
                    source: None,
                });
                continue;
            }
            // fp8 without a named encoding: say which encodings the target has.
            if feats.len() > 1 {
                let parts: Vec<(String, Availability, Option<String>)> = feats
                    .iter()
                    .map(|f| {
                        (
                            f.to_string(),
                            kb.availability(f, &t.arch.id),
                            kb.support(f, &t.arch.id).map(|s| s.source.clone()),
                        )
                    })
                    .collect();
                let yes: Vec<&str> = parts
                    .iter()
                    .filter(|p| p.1 == Availability::Yes)
                    .map(|p| p.0.as_str())
                    .collect();
                let status = if !yes.is_empty() {
                    "yes"
                } else if parts.iter().any(|p| p.1 == Availability::Partial) {
                    "partial"
                } else if parts.iter().all(|p| p.1 == Availability::No) {
                    "no"
                } else {
                    "unknown"
                };
                let note = if yes.is_empty() {
                    None
                } else {
                    Some(format!(
                        "encodings: {}",
                        yes.iter()
                            .map(|f| if *f == "fp8-ocp" {
                                "OCP (e4m3fn/e5m2)"
                            } else {
                                "FNUZ (e4m3fnuz/e5m2fnuz)"
                            })
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                };
                out.push(DtypeSupport {
                    target: t.name.clone(),
                    dtype: d.as_str().into(),
                    status: status.into(),
                    feature: Some(feats.join(" | ")),
                    note,
                    source: parts.iter().find_map(|p| p.2.clone()),
                });
                continue;
            }
            let f = feats[0];
            let s = kb.support(f, &t.arch.id);
            let status = kb.availability(f, &t.arch.id);
            out.push(DtypeSupport {
                target: t.name.clone(),
                dtype: d.as_str().into(),
                status: avail_str(status).into(),
                feature: Some(f.into()),
                note: s.and_then(|s| s.note.clone()).or_else(|| {
                    (status == Availability::Unknown)
                        .then(|| format!("the KB has no `{f}` entry for {}", t.arch.id))
                }),
                source: s.map(|s| s.source.clone()),
            });
        }
    }
    out
}

pub fn avail_str(a: Availability) -> &'static str {
    match a {
        Availability::Yes => "yes",
        Availability::No => "no",
        Availability::Partial => "partial",
        Availability::Unknown => "unknown",
    }
}
