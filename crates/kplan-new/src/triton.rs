//! The Triton kernel of a Triton project (`kernels/<file>.py`), with the plan's section 6
//! candidates as its launch configurations per backend.

use crate::family::Family;
use crate::files::Ctx;
use crate::template::{self, render};
use crate::{NewError, Project, ProjectFile};
use std::fmt::Write;

/// `BLOCK_N=4096, num_warps=2, num_stages=1` as Python dict entries (`"BLOCK_N": 4096, ...`);
/// None when an entry is not `NAME=INTEGER`.
fn candidate(c: &str) -> Option<Vec<(String, u64)>> {
    c.split(',')
        .map(|kv| {
            let (k, v) = kv.trim().split_once('=')?;
            let k = k.trim();
            if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return None;
            }
            Some((k.to_string(), v.trim().parse::<u64>().ok()?))
        })
        .collect()
}

/// The configurations for one backend: the default tile's first, then the other candidates.
fn configs_for(ctx: &Ctx, vendor: &str) -> Vec<Vec<(String, u64)>> {
    let plan = ctx.plan;
    let mut out: Vec<Vec<(String, u64)>> = Vec::new();
    for t in &plan.tiles {
        let Some(b) = plan.backend_matrix.iter().find(|b| b.target == t.target) else {
            continue;
        };
        if b.vendor != vendor {
            continue;
        }
        let default_warps = t.tile.get("num_warps").copied();
        let mut cands: Vec<Vec<(String, u64)>> = t
            .candidates
            .iter()
            .filter_map(|c| candidate(c))
            .filter(|c| c.iter().any(|(k, _)| k == "BLOCK_N"))
            .filter(|c| {
                c.iter()
                    .find(|(k, _)| k == "BLOCK_N")
                    .is_some_and(|(_, v)| v.is_power_of_two())
            })
            .collect();
        // the plan's chosen num_warps first
        cands.sort_by_key(|c| {
            let w = c.iter().find(|(k, _)| k == "num_warps").map(|(_, v)| *v);
            u8::from(w != default_warps)
        });
        for c in cands {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    if out.is_empty() {
        let mut c = vec![("BLOCK_N".to_string(), 1024), ("num_warps".to_string(), 4)];
        c.push(("num_stages".to_string(), 1));
        out.push(c);
    }
    out
}

pub fn add(ctx: &Ctx, f: &Family, p: &mut Project) -> Result<(), NewError> {
    let (body, doc, entry) = match f {
        Family::RmsNorm => (
            template::TRITON_RMSNORM,
            "Row RMSNorm: y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * w, one program per row.",
            "rmsnorm(x, w, eps, out)",
        ),
        Family::Softmax => (
            template::TRITON_SOFTMAX,
            "Row softmax: y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)), one program per row,\nonline (one read for the maximum and the sum, one for the output); a row of -inf gives zeros.",
            "softmax(x, out)",
        ),
        _ => {
            return Err(NewError::Unsupported(format!(
                "no Triton skeleton for `{}`",
                f.name()
            )))
        }
    };
    let mut configs = String::new();
    let mut directive = Vec::new();
    let mut block_n = 1024;
    let mut backends = Vec::new();
    for (vendor, backend) in [("nvidia", "cuda"), ("amd", "hip")] {
        if !ctx.plan.backend_matrix.iter().any(|b| b.vendor == vendor) && backend == "hip" {
            continue;
        }
        backends.push(backend);
        let cs = configs_for(ctx, vendor);
        let _ = writeln!(configs, "    \"{backend}\": [");
        for c in &cs {
            let kv: Vec<String> = c.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
            let _ = writeln!(configs, "        {{{}}},", kv.join(", "));
        }
        configs.push_str("    ],\n");
        if let Some(first) = cs.first() {
            if let Some((_, w)) = first.iter().find(|(k, _)| k == "num_warps") {
                directive.push(format!("{backend}:num_warps={w}"));
            }
            if backend == "cuda" {
                if let Some((_, b)) = first.iter().find(|(k, _)| k == "BLOCK_N") {
                    block_n = *b;
                }
            }
        }
    }
    if !backends.contains(&"cuda") {
        // the interpreter takes the CUDA table
        let _ = writeln!(
            configs,
            "    \"cuda\": [{{\"BLOCK_N\": 1024, \"num_warps\": 4, \"num_stages\": 1}}],"
        );
    }
    let configs = configs.trim_end().to_string();
    let mut vars = ctx.vars();
    vars.push(("CONFIGS", configs));
    vars.push(("DOC", doc.to_string()));
    vars.push(("ENTRY", entry.to_string()));
    vars.push(("BLOCK_N", block_n.to_string()));
    vars.push(("BUILD_DIRECTIVE", directive.join(" ")));
    let r = ctx.as_refs(&vars);
    let mut text = render(template::TRITON_HEAD, &r);
    text.push_str(&render(body, &r));
    p.files.push(ProjectFile {
        path: format!("kernels/{}.py", ctx.file),
        text,
    });
    Ok(())
}
