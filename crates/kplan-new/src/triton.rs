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

/// The reference Triton kernels (`kernels/triton/`, which `kplan verify` checks): a skeleton
/// takes its launch wrapper's argument checks, and the RMSNorm skeleton its looped kernel's body,
/// from them, so the two cannot drift apart.
const REFERENCE_RMSNORM: &str = include_str!("../../../kernels/triton/rmsnorm.py");
const REFERENCE_SOFTMAX: &str = include_str!("../../../kernels/triton/softmax.py");

/// The lines of the top-level `def NAME(` in `src` after its signature (one line or several), up
/// to the next top-level line, trailing blank lines dropped.
fn def_body<'a>(src: &'a str, name: &str) -> Option<Vec<&'a str>> {
    let lines: Vec<&str> = src.lines().collect();
    let head = format!("def {name}(");
    let start = lines.iter().position(|l| l.starts_with(&head))?;
    let sig_end = (start..lines.len()).find(|&i| lines[i].trim_end().ends_with(':'))?;
    let mut body: Vec<&str> = lines[sig_end + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || l.starts_with(char::is_whitespace))
        .copied()
        .collect();
    while body.last().is_some_and(|l| l.trim().is_empty()) {
        body.pop();
    }
    (!body.is_empty()).then_some(body)
}

/// The argument checks of the reference wrapper `name`: its body after the docstring, up to its
/// own launch (the `launch_config(` call).
fn wrapper_checks(src: &str, name: &str) -> Option<String> {
    let body = def_body(src, name)?;
    let skip = usize::from(body.first()?.trim_start().starts_with("\"\"\""));
    let end = body.iter().position(|l| l.contains("launch_config("))?;
    (end > skip).then(|| body[skip..end].join("\n"))
}

/// What a skeleton takes from its reference kernel: `(KERNEL_BODY, WRAPPER_CHECKS)` (the body
/// empty for a skeleton whose kernel is its own).
fn from_reference(f: &Family) -> Option<(String, String)> {
    match f {
        Family::RmsNorm => {
            let body = def_body(REFERENCE_RMSNORM, "rmsnorm_looped_kernel")?
                .join("\n")
                .replace("BLOCK_SIZE", "BLOCK_N");
            Some((body, wrapper_checks(REFERENCE_RMSNORM, "rmsnorm")?))
        }
        Family::Softmax => Some((String::new(), wrapper_checks(REFERENCE_SOFTMAX, "softmax")?)),
        _ => None,
    }
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
    let (kernel_body, checks) = from_reference(f).ok_or_else(|| {
        NewError::Unsupported(format!(
            "the reference Triton kernel of `{}` lacks the function the skeleton takes from it",
            f.name()
        ))
    })?;
    vars.push(("KERNEL_BODY", kernel_body));
    vars.push(("WRAPPER_CHECKS", checks));
    let r = ctx.as_refs(&vars);
    let mut text = render(template::TRITON_HEAD, &r);
    text.push_str(&render(body, &r));
    p.files.push(ProjectFile {
        path: format!("kernels/{}.py", ctx.file),
        text,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skeletons_take_their_shared_code_from_the_reference_kernels() {
        let (body, checks) = from_reference(&Family::RmsNorm).unwrap();
        assert!(body.starts_with("    row = tl.program_id(0)"), "{body}");
        assert!(
            body.contains("for start in range(0, n_cols, BLOCK_N):"),
            "{body}"
        );
        assert!(
            !body.contains("BLOCK_SIZE") && !body.ends_with('\n'),
            "{body}"
        );
        assert!(checks.starts_with("    if len(x.shape) != 2:"), "{checks}");
        assert!(checks.ends_with("raise ValueError(\"rmsnorm needs unit stride along the row\")"));
        let (body, checks) = from_reference(&Family::Softmax).unwrap();
        assert!(body.is_empty());
        assert!(checks.ends_with("raise ValueError(\"softmax needs unit stride along the row\")"));
        // a one-line and a two-line signature, a body that ends the file
        assert_eq!(
            def_body(
                "def f(a,\n      b):\n    x = 1\n\n    y\n\n\ndef g():\n    z\n",
                "f"
            )
            .unwrap(),
            ["    x = 1", "", "    y"]
        );
        assert_eq!(def_body("def g(): \n    z", "g").unwrap(), ["    z"]);
        assert_eq!(def_body("def g():\n", "g"), None);
        assert_eq!(
            wrapper_checks(
                "def w(x):\n    \"\"\"Doc.\"\"\"\n    launch_config(x)\n",
                "w"
            ),
            None
        );
    }
}
