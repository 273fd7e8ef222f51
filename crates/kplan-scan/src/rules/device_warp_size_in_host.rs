//! `device-warp-size-in-host`: the device-only warp width (`warpSize`, or a project constant
//! defined as it or chosen by device-only macros in another header) read by host code.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Tk, IN_DEFINE};
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::wavefront_size_macro::in_host_function;

pub static META: RuleMeta = RuleMeta {
    id: "device-warp-size-in-host",
    summary: "device-only warp width (`warpSize` or a constant chosen in device passes) used in host code",
    what: "Finds `warpSize`, and names the project defines as it or selects with device-only macros \
(`__HIP_DEVICE_COMPILE__`, `__GFX9__`, `__gfx942__`, `__AMDGCN_WAVEFRONT_SIZE`) in another header, read by \
host code: a kernel launch's `<<<...>>>` configuration, a `dim3`, or the body of a host function. Names defined \
in the same file are left to `wavefront-size-macro`. A warp-width name that no scanned file declares \
(`kWarpSize`, `lib::warp_size()`, or a local constant defined as one) is a compile-time width from a header \
outside the scan: its reads in host code are warnings. Names that say they query the running device \
(`host_warp_size()`, `getWarpSizeCurrentDevice()`) are left alone.",
    why: "The warp width is a property of the device compilation pass. The host pass of clang/hipcc defines \
`__AMDGCN_WAVEFRONT_SIZE` as 64 whatever the target (also for wave32 RDNA), defines no `__gfxNNNN__` or \
`__HIP_DEVICE_COMPILE__`, and on ROCm 7 `warpSize` is a device-only variable. A launch sized from it on the \
host uses another width than the kernel: blocks of the wrong size, reductions over missing lanes, or code \
that does not compile. A compile-time width fixed for all targets is wrong on the host for AMD targets of the \
other wavefront size (RDNA runs 32 lanes, CDNA 64).",
    example: "dim3 block(WARP_SIZE, 4);  // WARP_SIZE chosen by __GFX9__ in a shared header\nkernel<<<grid, warpSize * 4>>>(x);",
    use_instead: "int ws = prop.warpSize;  // hipGetDeviceProperties / cudaGetDeviceProperties\ndim3 block(ws, 4);\nkernel<<<grid, ws * 4>>>(x);",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// The tokens before `i`, nearest first, as far back as a statement's start is looked for
/// (64 tokens).
fn statement_back(i: usize) -> impl Iterator<Item = usize> {
    (i.saturating_sub(64)..i).rev()
}

/// Whether token `i` is an argument of a launch configuration `<<<...>>>` or of `dim3(...)`
/// outside device code.
fn in_launch_config(cx: &Cx, i: usize) -> bool {
    let src = cx.src;
    if src.in_device(i) {
        return false;
    }
    for k in statement_back(i) {
        match src.s(k) {
            "<<<" => return true,
            ">>>" | ";" | "{" | "}" => return false,
            "(" if k > 0 && src.is(k - 1, "dim3") => {
                return src.mate(k).is_some_and(|m| m > i);
            }
            // `dim3 block(ws, 4)`: a declaration of a dim3 variable
            "(" if k >= 2
                && src.is_ident(k - 1)
                && src.is(k - 2, "dim3")
                && src.mate(k).is_some_and(|m| m > i) =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

/// The file declares its own variable or constant named `warpSize` (`constexpr index_t
/// warpSize = get_warp_size();`): its uses are that name, not the built-in. A declaration in
/// a branch that only NVIDIA compiles (`#if defined(__HIP_PLATFORM_NVCC__)` / `constexpr
/// unsigned warpSize = 32;`) stands in for the built-in there and shadows nothing on AMD.
pub fn declares_warp_size(cx: &Cx) -> bool {
    let src = cx.src;
    cx.has("warpSize")
        && (1..src.toks.len()).any(|i| {
            src.is(i, "warpSize")
                && (src.is_ident(i - 1) && !matches!(src.s(i - 1), "return" | "case"))
                && matches!(src.s(i + 1), "=" | "{")
                && !cx.nv_only(i)
        })
}

/// Whether token `i` is in a statement the host pass evaluates whatever function it is in:
/// a `static_assert` or a `constexpr` declaration outside device code.
fn host_evaluated(cx: &Cx, i: usize) -> bool {
    let src = cx.src;
    if src.in_device(i) {
        return false;
    }
    for k in statement_back(i) {
        match src.s(k) {
            "static_assert" | "constexpr" => return true,
            ";" | "{" | "}" => return false,
            _ => {}
        }
    }
    false
}

/// `#if __GFX9__` / `#define W 64` / `#else` / `#define W 32`: the fallback is what every host
/// pass sees, also when it compiles for CDNA. Reported at the fallback's definition.
fn check_host_fallback(cx: &mut Cx) {
    if !(cx.has("__GFX") || cx.has("__gfx") || cx.has("__AMDGCN_WAVEFRONT_SIZE")) {
        return;
    }
    let src = cx.src;
    let mut hits: Vec<(usize, usize, String)> = Vec::new();
    for d in &src.defines {
        if d.function_like {
            continue;
        }
        let name = src
            .text
            .get(d.name_start as usize..d.name_end as usize)
            .unwrap_or("");
        let l = name.to_ascii_lowercase();
        if !(l.contains("warp") || l.contains("wave")) || l.contains("max") {
            continue;
        }
        let Some(br) = src.branches.get(d.branch as usize) else {
            continue;
        };
        // the fallback: an `#else`, or an `#elif` that names no architecture itself
        let own = src.cond_text(br);
        let own_arch = crate::lex::cond_tokens_pub(own).iter().any(|w| {
            crate::lex::arch_macro_wave(w) != 0 || w.starts_with("__AMDGCN_WAVEFRONT_SIZE")
        });
        if !br.is_alternative || own_arch {
            continue;
        }
        // the first branch of the group decides by a device-pass-only architecture macro
        let Some(first) = src
            .branches
            .iter()
            .find(|b| b.group == br.group && !b.is_alternative)
        else {
            continue;
        };
        let cond = src.cond_text(first);
        let arch = crate::lex::cond_tokens_pub(cond).iter().any(|w| {
            crate::lex::arch_macro_wave(w) != 0 || w.starts_with("__AMDGCN_WAVEFRONT_SIZE")
        });
        // under a device-pass test further out, the fallback never reaches a host pass
        let device_outer = src.ancestors(br.parent).any(|(_, ob)| {
            let oc = src.cond_text(ob);
            oc.contains("__HIP_DEVICE_COMPILE__") || oc.contains("__CUDA_ARCH__")
        });
        if !arch || cond.contains("__HIP_DEVICE_COMPILE__") || device_outer {
            continue;
        }
        let body = src.text.get(d.name_end as usize..).unwrap_or("");
        let v = body
            .split('\n')
            .next()
            .and_then(|b| b.split_whitespace().next())
            .and_then(crate::lex::parse_int);
        if !matches!(v, Some(32) | Some(64)) {
            continue;
        }
        let msg = format!("`{name}` falls back to this value wherever the architecture macros are undefined, which includes every host pass (also for wave64 CDNA): host code using it sees the wrong width");
        hits.push((d.name_start as usize, d.name_end as usize, msg));
    }
    let targets = cx.ctx.vendor_targets(kplan_kb::Vendor::Amd);
    if targets.is_empty() {
        return;
    }
    cx.report_spans(
        &META,
        Severity::Warning,
        &targets,
        hits,
        "choose the host-side width from the device properties; test `__HIP_DEVICE_COMPILE__` before the architecture macros",
    );
}

/// Whether the name at token `i` is declared earlier in its enclosing function: a parameter
/// (`unsigned int& warp_size`) or a local (`int warp_size = ...`).
fn declared_locally(cx: &Cx, i: usize) -> bool {
    let src = cx.src;
    let w = src.s(i);
    let mut k = i;
    let mut steps = 0;
    // back to the enclosing function body's `{`, then through its parameter list
    while k > 0 && steps < 200_000 {
        k -= 1;
        steps += 1;
        if src.is(k, w) && src.toks[k].depth <= src.toks[i].depth {
            let before = src.s(k.saturating_sub(1));
            let decl = k > 0
                && (src.is_ident(k - 1) || matches!(before, "&" | "*" | ">"))
                && !matches!(before, "return" | "case" | "sizeof")
                && matches!(src.s(k + 1), "=" | ";" | "," | ")" | "{" | "(" | "[");
            if decl {
                return true;
            }
        }
        if src.is(k, "{") && src.mate(k).is_some_and(|m| m > i) && k > 0 && src.is(k - 1, ")") {
            // the parameter list of the function (or a control statement's condition)
            let open = src.mate(k - 1).unwrap_or(k - 1);
            if open > 0 && !matches!(src.s(open - 1), "if" | "for" | "while" | "switch" | "catch") {
                return (open + 1..k - 1).any(|j| {
                    src.is(j, w)
                        && j > open + 1
                        && (src.is_ident(j - 1) || matches!(src.s(j - 1), "&" | "*" | ">"))
                        && matches!(src.s(j + 1), "," | ")" | "=" | "[")
                });
            }
        }
    }
    false
}

/// Token `i` names the warp width through a constant, macro or argument-less function that
/// no scanned file declares (`kWarpSize`, `lib::warp_size()`, or a local `kLanes` defined as
/// one): a compile-time width from a header outside the scan. Names that say they query the
/// running device (`host_warp_size()`, `getWarpSizeCurrentDevice()`) are left out.
fn unseen_width(cx: &Cx, i: usize) -> bool {
    let src = cx.src;
    let w = src.s(i);
    if w == "warpSize" || w.starts_with("KPLAN_") {
        return false;
    }
    let idx = cx.index;
    let root = idx.alias_root(w);
    if root == w && !crate::index::warp_word(w) {
        return false;
    }
    if !crate::rules::warp_size_constant::warp_width_name(root) {
        return false;
    }
    let l = root.to_ascii_lowercase();
    if [
        "host", "current", "prop", "runtime", "query", "dynamic", "max", "min",
    ]
    .iter()
    .any(|h| l.contains(h))
    {
        return false;
    }
    let call = root == w && src.is(i + 1, "(");
    if idx.declares(root, call) || idx.is_device_warp(root) {
        return false;
    }
    // the name itself: a call must take no arguments (`warp_size(dev)` queries a device)
    if root == w && src.is(i + 1, "(") && !src.is(i + 2, ")") {
        return false;
    }
    // a function-like use of an alias, or a template (`kWarpSize<T>`), is something else
    root == w || !src.is(i + 1, "(")
}

pub fn check(cx: &mut Cx) {
    // the project's portability header is where the per-pass widths are chosen
    if cx.is_header {
        return;
    }
    check_host_fallback(cx);
    let index_names = !cx.index.device_warp.is_empty();
    let warp_words = cx.has("arp") || cx.has("ARP") || cx.has("ave") || cx.has("AVE");
    if !cx.has("warpSize") && !index_names && !warp_words {
        return;
    }
    let src = cx.src;
    let shadowed = declares_warp_size(cx);
    let mut reported_line = u32::MAX;
    for i in 0..src.toks.len() {
        if src.kind(i) != Some(Tk::Ident) {
            continue;
        }
        let w = src.s(i);
        let builtin = w == "warpSize";
        // a macro chosen by device-only conditions in this same file is wavefront-size-macro's
        let same_file_macro = cx.index.consts.get(w).is_some_and(|v| {
            v.iter()
                .any(|d| d.device_only && d.file.as_path() == cx.path)
        });
        // the kplan portability header's names are chosen per pass on purpose
        let project =
            !builtin && !same_file_macro && !w.starts_with("KPLAN_") && cx.index.is_device_warp(w);
        let unseen = !builtin && !project && warp_words && unseen_width(cx, i);
        if !builtin && !project && !unseen {
            continue;
        }
        // a member access (`prop.warpSize`) is the device property: the fix, not the bug; a
        // namespace-qualified call (`::lib::warp_size()`) is the library's compile-time width
        if i > 0
            && matches!(src.s(i - 1), "." | "->" | "::")
            && !(unseen && src.is(i - 1, "::") && src.is(i + 1, "("))
        {
            continue;
        }
        if src.toks[i].flags & IN_DEFINE != 0 || cx.nv_only(i) || src.in_device(i) {
            continue;
        }
        let launch = in_launch_config(cx, i);
        // the name being declared (`constexpr int device_warp_size()`, `index_t warpSize =`)
        if i > 0
            && (src.is_ident(i - 1) || src.is(i - 1, ">"))
            && !matches!(src.s(i - 1), "return" | "case")
            && matches!(src.s(i + 1), "(" | "=" | "{" | ";")
        {
            continue;
        }
        if builtin && shadowed {
            continue;
        }
        // a parameter or local of the same name (`unsigned int& warp_size`) is not the
        // project's device width
        if project && declared_locally(cx, i) {
            continue;
        }
        // `constexpr x = warpSize` is warp-size-constexpr's finding
        let evaluated = !builtin && host_evaluated(cx, i);
        if unseen {
            let host_fn = in_host_function(cx, i);
            if !launch && !host_fn && !evaluated {
                continue;
            }
            // a namespace-scope name for the width (`constexpr int kLanes = kWarpSize;`): its
            // reads are what matter, and they are reported where they are
            if evaluated && src.toks[i].depth == 0 && src.is(i - 1, "=") && src.is(i + 1, ";") {
                continue;
            }
            if src.line(i) == reported_line {
                continue;
            }
            reported_line = src.line(i);
            let end = if src.is(i + 1, "(") { i + 2 } else { i };
            let root = cx.index.alias_root(w);
            let via = if root != w {
                format!("`{w}` (= `{root}`)")
            } else {
                format!("`{}`", cx.snippet(i, end))
            };
            let place = if launch {
                "sizes a launch configuration"
            } else if host_fn {
                "is read in host code"
            } else {
                "is evaluated in a constant or assertion the host pass also compiles"
            };
            let msg = format!("{via} is a compile-time warp width defined outside the scanned files and {place}: the host pass has one value for every target, so a width chosen per device pass differs there, and a fixed one is wrong on AMD targets of the other wavefront size");
            if let Some((_, targets)) = cx.ctx.scope_severity(&META) {
                cx.report_with(&META, Severity::Warning, targets, i, end, msg, "on the host, take the width from the device properties (`hipDeviceProp_t::warpSize`); keep the compile-time width for device code");
            }
            continue;
        }
        let host_fn = in_host_function(cx, i);
        if !launch && !host_fn && !evaluated {
            continue;
        }
        if src.line(i) == reported_line {
            continue;
        }
        reported_line = src.line(i);
        let what = if builtin {
            "`warpSize` is a device-side value".to_string()
        } else {
            format!("`{w}` is the device-pass warp width (defined in another header)")
        };
        let place = if launch {
            "in a launch configuration"
        } else {
            "in host code"
        };
        let msg = format!("{what}, read {place}: the host pass sees another width");
        let help = "on the host, take the width from the device properties (`hipDeviceProp_t::warpSize`); keep the compile-time width for device code";
        if launch || host_fn {
            cx.report(&META, i, i, msg, help);
        } else if let Some((_, targets)) = cx.ctx.scope_severity(&META) {
            // a class-scope constant or assertion: only wrong where host code reads it
            let msg = format!("{what}, in a constant or assertion the host pass also evaluates");
            cx.report_with(&META, Severity::Warning, targets, i, i, msg, help);
        }
    }
}
