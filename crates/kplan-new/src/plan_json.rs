//! `kplan new --plan PLAN.json`: a plan read back from its JSON (`kplan plan --format json`,
//! docs/plan.schema.json). Only what a project is made from is read: the kernel summary, the
//! verdict, the backend matrix, the operation, the strategy, the risks, the tiles and the CI
//! legs; the other sections stay empty.

use crate::NewError;
use kplan_plan::model::*;
use serde_json::Value;
use std::collections::BTreeMap;

struct R<'a> {
    path: &'a str,
}

impl R<'_> {
    fn err(&self, at: &str, what: &str) -> NewError {
        NewError::BadPlan {
            path: self.path.to_string(),
            message: format!(
                "`{at}`: expected {what} (a plan written by `kplan plan --format json`)"
            ),
        }
    }
    fn obj<'v>(
        &self,
        v: &'v Value,
        at: &str,
    ) -> Result<&'v serde_json::Map<String, Value>, NewError> {
        v.as_object().ok_or_else(|| self.err(at, "an object"))
    }
    fn s(&self, v: &Value, key: &str, at: &str) -> Result<String, NewError> {
        v.get(key)
            .and_then(|x| x.as_str())
            .map(str::to_string)
            .ok_or_else(|| self.err(&format!("{at}.{key}"), "a string"))
    }
    fn os(&self, v: &Value, key: &str) -> Option<String> {
        v.get(key).and_then(|x| x.as_str()).map(str::to_string)
    }
    fn strs(&self, v: &Value, key: &str) -> Vec<String> {
        v.get(key)
            .and_then(|x| x.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
    fn arr<'v>(&self, v: &'v Value, key: &str, at: &str) -> Result<&'v Vec<Value>, NewError> {
        v.get(key)
            .and_then(|x| x.as_array())
            .ok_or_else(|| self.err(&format!("{at}.{key}"), "a list"))
    }
    fn u32o(&self, v: &Value, key: &str) -> Option<u32> {
        v.get(key)
            .and_then(|x| x.as_u64())
            .and_then(|x| u32::try_from(x).ok())
    }
}

/// The plan in `text` (JSON), named `path` in errors.
pub fn plan_from_json(text: &str, path: &str) -> Result<Plan, NewError> {
    let r = R { path };
    let v: Value = serde_json::from_str(text).map_err(|e| NewError::BadPlan {
        path: path.to_string(),
        message: format!("{}:{}: {e}", e.line(), e.column()),
    })?;
    r.obj(&v, "plan")?;
    let schema = v.get("schema_version").and_then(|x| x.as_u64());
    if schema != Some(SCHEMA_VERSION as u64) {
        return Err(NewError::BadPlan {
            path: path.to_string(),
            message: format!(
                "schema_version {}: this kplan reads plans of schema version {SCHEMA_VERSION} (rewrite it with `kplan plan --format json`)",
                schema.map(|s| s.to_string()).unwrap_or_else(|| "missing".into())
            ),
        });
    }
    let k = v
        .get("kernel")
        .ok_or_else(|| r.err("kernel", "an object"))?;
    let kernel = KernelSummary {
        name: r.s(k, "name", "kernel")?,
        op: r.s(k, "op", "kernel")?,
        description: r.os(k, "description"),
        dtypes: r.strs(k, "dtypes"),
        storage_dtype: r.s(k, "storage_dtype", "kernel")?,
        compute_dtype: r.s(k, "compute_dtype", "kernel")?,
        features: r.strs(k, "features"),
        performance_requirement: r.os(k, "performance_requirement").unwrap_or_default(),
        framework_expressible: k
            .get("framework_expressible")
            .and_then(|x| x.as_bool())
            .unwrap_or(false),
        expertise: r.strs(k, "expertise"),
        allowed: r.strs(k, "allowed"),
        notes: r.strs(k, "notes"),
    };
    let vd = v
        .get("verdict")
        .ok_or_else(|| r.err("verdict", "an object"))?;
    let decision: Decision = r.s(vd, "decision", "verdict")?.parse().map_err(|_| {
        r.err(
            "verdict.decision",
            "custom-kernel, use-framework, use-vendor-library or nvidia-only",
        )
    })?;
    let verdict = Verdict {
        decision,
        reason: r.os(vd, "reason").unwrap_or_default(),
        inputs: r.strs(vd, "inputs"),
        sources: r.strs(vd, "sources"),
    };
    let mut backend_matrix = Vec::new();
    for b in r.arr(&v, "backend_matrix", "plan")? {
        backend_matrix.push(BackendEntry {
            target: r.s(b, "target", "backend_matrix[]")?,
            vendor: r.s(b, "vendor", "backend_matrix[]")?,
            arch: r.s(b, "arch", "backend_matrix[]")?,
            family: r.os(b, "family").unwrap_or_default(),
            device: r.os(b, "device"),
            device_name: r.os(b, "device_name"),
            resolved_via: r.os(b, "resolved_via").unwrap_or_default(),
            warp_size: r.u32o(b, "warp_size"),
            warp_sizes: b
                .get("warp_sizes")
                .and_then(|x| x.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_u64().map(|n| n as u32))
                        .collect()
                })
                .unwrap_or_default(),
            max_threads_per_block: r.u32o(b, "max_threads_per_block"),
            shared_per_block_bytes: b.get("shared_per_block_bytes").and_then(|x| x.as_u64()),
            compute_units: r.u32o(b, "compute_units"),
            bandwidth_gbs: b.get("bandwidth_gbs").and_then(|x| x.as_f64()),
            min_toolchain: r.os(b, "min_toolchain"),
            compile_target: r.os(b, "compile_target"),
            sources: r.strs(b, "sources"),
        });
    }
    let op = v
        .get("operation")
        .ok_or_else(|| r.err("operation", "an object"))?;
    let knowledge = match op.get("knowledge") {
        Some(kn) if kn.is_object() => Some(OpKnowledge {
            name: r.os(kn, "name").unwrap_or_default(),
            latency_bound: r.os(kn, "latency_bound").unwrap_or_default(),
            tile_hint: r.os(kn, "tile_hint").unwrap_or_default(),
            libraries: Vec::new(),
            algorithms: kn
                .get("algorithms")
                .and_then(|x| x.as_array())
                .map(|a| {
                    a.iter()
                        .map(|al| AlgorithmRef {
                            name: r.os(al, "name").unwrap_or_default(),
                            when: r.os(al, "when").unwrap_or_default(),
                            source: r.os(al, "source").unwrap_or_default(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            latency: r.os(kn, "latency"),
        }),
        _ => None,
    };
    let operation = Operation {
        class: r.s(op, "class", "operation")?,
        problem: op.get("problem").cloned().unwrap_or(Value::Null),
        flops: op.get("flops").and_then(|x| x.as_f64()).unwrap_or(0.0),
        bytes: op.get("bytes").and_then(|x| x.as_f64()).unwrap_or(0.0),
        intensity: op.get("intensity").and_then(|x| x.as_f64()),
        flops_formula: r.os(op, "flops_formula").unwrap_or_default(),
        bytes_formula: r.os(op, "bytes_formula").unwrap_or_default(),
        math_dtype: r.os(op, "math_dtype").unwrap_or_default(),
        per_target: Vec::new(),
        dtype_support: Vec::new(),
        direction: r.os(op, "direction").unwrap_or_else(|| "forward".into()),
        kind: r.os(op, "kind"),
        knowledge,
        custom_op: r.os(op, "custom_op"),
        knowledge_entry: r.os(op, "knowledge_entry"),
        work_unknown: r.os(op, "work_unknown"),
    };
    let st = v
        .get("strategy")
        .ok_or_else(|| r.err("strategy", "an object"))?;
    let mut per_target = Vec::new();
    for t in r.arr(st, "per_target", "strategy")? {
        per_target.push(TargetStrategy {
            target: r.s(t, "target", "strategy.per_target[]")?,
            abstraction: r.s(t, "abstraction", "strategy.per_target[]")?,
            implementation: r.os(t, "implementation").unwrap_or_default(),
        });
    }
    let strategy = Strategy {
        chosen: r.s(st, "chosen", "strategy")?,
        summary: r.os(st, "summary").unwrap_or_default(),
        per_target,
        alternatives: Vec::new(),
        inputs: r.strs(st, "inputs"),
    };
    let mut risks = Vec::new();
    for x in v
        .get("risks")
        .and_then(|x| x.as_array())
        .into_iter()
        .flatten()
    {
        risks.push(Risk {
            id: r.os(x, "id").unwrap_or_default(),
            title: r.os(x, "title").unwrap_or_default(),
            kind: r.os(x, "kind").unwrap_or_default(),
            targets: r.strs(x, "targets"),
            severity: r.os(x, "severity").unwrap_or_default(),
            mitigation: r.os(x, "mitigation").unwrap_or_default(),
            fallback: r.os(x, "fallback"),
            evidence: r.strs(x, "evidence"),
            sources: r.strs(x, "sources"),
        });
    }
    let mut tiles = Vec::new();
    for t in r.arr(&v, "tiles", "plan")? {
        let tile: BTreeMap<String, u64> = t
            .get("tile")
            .and_then(|x| x.as_object())
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_u64().map(|n| (k.clone(), n)))
                    .collect()
            })
            .unwrap_or_default();
        tiles.push(Tile {
            target: r.s(t, "target", "tiles[]")?,
            block_threads: r
                .u32o(t, "block_threads")
                .ok_or_else(|| r.err("tiles[].block_threads", "an integer"))?,
            tile,
            shared_bytes: t.get("shared_bytes").and_then(|x| x.as_u64()).unwrap_or(0),
            shared_budget_bytes: t.get("shared_budget_bytes").and_then(|x| x.as_u64()),
            occupancy: t.get("occupancy").and_then(|x| x.as_f64()),
            blocks_per_sm: r.u32o(t, "blocks_per_sm"),
            limiter: r.os(t, "limiter"),
            occupancy_unit: r.os(t, "occupancy_unit"),
            occupancy_note: r.os(t, "occupancy_note"),
            registers_assumed: r.u32o(t, "registers_assumed").unwrap_or(0),
            configuration: r.os(t, "configuration").unwrap_or_default(),
            candidates: r.strs(t, "candidates"),
            candidate_checks: Vec::new(),
            why: r.os(t, "why").unwrap_or_default(),
            sources: r.strs(t, "sources"),
        });
    }
    let ci = v.get("ci").ok_or_else(|| r.err("ci", "an object"))?;
    let mut legs = Vec::new();
    for l in r.arr(ci, "legs", "ci")? {
        legs.push(CiLeg {
            name: r.s(l, "name", "ci.legs[]")?,
            kind: r.s(l, "kind", "ci.legs[]")?,
            target: r.s(l, "target", "ci.legs[]")?,
            arch: r.s(l, "arch", "ci.legs[]")?,
            toolchain: r.os(l, "toolchain").unwrap_or_default(),
            runner: r.os(l, "runner").unwrap_or_default(),
            why: r.os(l, "why").unwrap_or_default(),
            command: r.os(l, "command"),
        });
    }
    Ok(Plan {
        generated: r.os(&v, "generated").unwrap_or_default(),
        schema_version: SCHEMA_VERSION,
        kernel,
        verdict,
        blocking: r.strs(&v, "blocking"),
        backend_matrix,
        operation,
        strategy,
        risks,
        header: r.os(&v, "header"),
        header_note: r.os(&v, "header_note").unwrap_or_default(),
        tiles,
        ci: Ci {
            legs,
            notes: r.strs(ci, "notes"),
            host_shape: ci.get("host_shape").and_then(|h| {
                Some(kplan_plan::model::HostShape {
                    shape: h
                        .get("shape")?
                        .as_object()?
                        .iter()
                        .filter_map(|(k, v)| v.as_u64().map(|n| (k.clone(), n)))
                        .collect(),
                    bytes: h.get("bytes")?.as_f64()?,
                    full_bytes: h.get("full_bytes")?.as_f64()?,
                    why: h.get("why")?.as_str()?.to_string(),
                })
            }),
        },
        // the dispatch knobs of a library verdict are shown in the plan, not used by the project
        dispatch: Vec::new(),
        performance: Vec::new(),
        performance_notes: Vec::new(),
        checklist: Vec::new(),
        sources: Vec::new(),
    })
}
