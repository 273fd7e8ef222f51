//! `shared-memory-over-limit`: static shared arrays and dynamic shared-memory requests above the
//! smallest limit among the targets in scope.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::consts::{type_size, Consts};

pub static META: RuleMeta = RuleMeta {
    id: "shared-memory-over-limit",
    summary: "shared memory above what a target in scope can give one block",
    what: "Adds up the static `__shared__` arrays of each kernel (sizes from literals, `#define`s and `constexpr` \
constants of the same file) and compares them with the smallest static shared-memory limit among the targets in \
scope; compares `cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, N)` and launch-time \
dynamic sizes with the smallest opt-in limit.",
    why: "Shared memory per block differs by target (NVIDIA Hopper: 48 KiB static, 227 KiB opt-in; AMD CDNA3: \
64 KiB LDS). A kernel that asks for more fails to compile or to launch on the smaller target.",
    example: "__global__ void k() {\n    __shared__ float tile[128][129];  // 66 KB\n}",
    use_instead: "// size tiles per target from the kplan plan / header\n__global__ void k() {\n    __shared__ float tile[KPLAN_TILE][KPLAN_TILE + 1];\n}",
    severity: Severity::Error,
    scope: Scope::PerFinding,
    lang: Lang::Cuda,
    features: &["large-shared-memory"],
};

fn kib(b: u64) -> String {
    if b % 1024 == 0 {
        format!("{} KiB", b / 1024)
    } else {
        format!("{b} bytes")
    }
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("__shared__") || cx.has("SharedMemorySize") || cx.has("<<<")) {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    let mut consts: Option<Consts> = None;
    // per function (0 = file scope): total bytes and first declaration token
    let mut totals: Vec<(u32, u64, usize)> = Vec::new();
    for i in 0..n {
        if !src.is(i, "__shared__") || (i > 0 && src.is(i - 1, "extern")) || cx.nv_only(i) {
            continue;
        }
        let Some(semi) = (i + 1..n.min(i + 64)).find(|&k| src.is(k, ";")) else {
            continue;
        };
        if (i.saturating_sub(3)..i).any(|k| src.is(k, "extern")) {
            continue;
        }
        let Some(lb) = (i + 1..semi).find(|&k| src.is(k, "[")) else {
            continue;
        };
        if lb < 2 || src.kind(lb - 1) != Some(Tk::Ident) {
            continue;
        }
        let Some(elem) = (i + 1..lb - 1).rev().find_map(|k| type_size(src.s(k))) else {
            continue;
        };
        let c = consts.get_or_insert_with(|| Consts::collect(src));
        let mut bytes = elem;
        let mut k = lb;
        let mut ok = true;
        while src.is(k, "[") {
            let Some(m) = src.mate(k) else {
                ok = false;
                break;
            };
            match c.eval(src, k + 1, m.saturating_sub(1)) {
                Some(v) => bytes = bytes.saturating_mul(v),
                None => {
                    ok = false;
                    break;
                }
            }
            k = m + 1;
        }
        if !ok {
            continue;
        }
        let f = src.toks[i].func;
        match totals.iter_mut().find(|t| t.0 == f && f != 0) {
            Some(t) => t.1 = t.1.saturating_add(bytes),
            None => totals.push((f, bytes, i)),
        }
    }
    for (f, bytes, at) in totals {
        let over: Vec<(String, u64)> = cx
            .ctx
            .targets
            .iter()
            .filter_map(|t| {
                t.static_shared_limit()
                    .filter(|&l| l < bytes)
                    .map(|l| (t.id().to_string(), l))
            })
            .collect();
        if over.is_empty() {
            continue;
        }
        let min = over.iter().map(|o| o.1).min().unwrap_or(0);
        let whose = if f == 0 {
            String::new()
        } else {
            src.funcs
                .get(f as usize - 1)
                .and_then(|x| x.name)
                .map(|t| format!(" in `{}`", src.s(t as usize)))
                .unwrap_or_default()
        };
        let msg = format!(
            "{bytes} bytes of static shared memory{whose} exceed the {} limit of {}",
            kib(min),
            over.iter()
                .map(|o| o.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        let end = (at..n).find(|&k| src.is(k, ";")).unwrap_or(at);
        cx.report_with(&META, Severity::Error, over.into_iter().map(|o| o.0).collect(), at, end.saturating_sub(1), msg, "shrink the tile for these targets (per-target tile sizes from the plan) or move to dynamic shared memory with a per-target size");
    }
    // dynamic requests
    for i in 0..n {
        let w = src.s(i);
        let val = if (w == "cudaFuncSetAttribute" || w == "hipFuncSetAttribute")
            && src.is(i + 1, "(")
        {
            let args = cx.call_args(i + 1);
            if args.len() == 3
                && (args[1].0..=args[1].1).any(|k| src.s(k).ends_with("MaxDynamicSharedMemorySize"))
            {
                let c = consts.get_or_insert_with(|| Consts::collect(src));
                c.eval(src, args[2].0, args[2].1)
                    .map(|v| (v, args[2].0, args[2].1))
            } else {
                None
            }
        } else if w == "<<<" {
            let Some(end) = (i + 1..n.min(i + 200)).find(|&k| src.is(k, ">>>")) else {
                continue;
            };
            let mut parts = Vec::new();
            let mut st = i + 1;
            let mut k = i + 1;
            while k < end {
                if matches!(src.s(k), "(" | "[" | "{") {
                    if let Some(m) = src.mate(k) {
                        k = m + 1;
                        continue;
                    }
                }
                if src.is(k, ",") {
                    parts.push((st, k - 1));
                    st = k + 1;
                }
                k += 1;
            }
            parts.push((st, end.saturating_sub(1)));
            if parts.len() >= 3 {
                let c = consts.get_or_insert_with(|| Consts::collect(src));
                c.eval(src, parts[2].0, parts[2].1)
                    .map(|v| (v, parts[2].0, parts[2].1))
            } else {
                None
            }
        } else {
            None
        };
        let Some((bytes, a, b)) = val else { continue };
        if cx.nv_only(i) {
            continue;
        }
        let over: Vec<(String, u64)> = cx
            .ctx
            .targets
            .iter()
            .filter_map(|t| {
                t.shared_max()
                    .filter(|&l| l < bytes)
                    .map(|l| (t.id().to_string(), l))
            })
            .collect();
        if over.is_empty() {
            continue;
        }
        let min = over.iter().map(|o| o.1).min().unwrap_or(0);
        let msg = format!(
            "{bytes} bytes of dynamic shared memory exceed the {} limit of {}",
            kib(min),
            over.iter()
                .map(|o| o.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        cx.report_with(&META, Severity::Error, over.into_iter().map(|o| o.0).collect(), a, b, msg, "size dynamic shared memory per target (query the device limit at run time, or per-target tiles from the plan)");
    }
}
