//! `amd-wave-width-64`: a value that plays the role of the wavefront width fixed at 64 for
//! every AMD target: the AMD branch of a per-platform choice that reads 64 where the other
//! platform's reads 32 (with evidence that it is the width), a warp primitive instantiated with
//! 64 lanes in AMD code, a loop over 64 shuffle source lanes, a shuffle reduction from offset
//! 32, or a lock-step tail of 64 threads.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Platform, Tk};
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Vendor;

pub static META: RuleMeta = RuleMeta {
    id: "amd-wave-width-64",
    summary: "a value that plays the role of the wavefront width fixed at 64 for every AMD target",
    what: "Finds five shapes of a 64-lane assumption that RDNA breaks. (1) A per-platform choice whose AMD \
branch (`#ifdef __HIP_PLATFORM_AMD__`, `#if USE_ROCM`, ...) is the same code as the other platform's branch \
except that it reads 64 where the other reads 32, when something shows that the value is the warp width: the \
line names a lane or a wavefront (`kLanes`, `WAVE`), instantiates a warp primitive (`tiled_partition<64>`), or \
defines a name the file uses in the width's role (a shuffle's width or offset, `threadIdx.x % N`, `tid / N`, \
`blockDim.x / N` for per-warp partials, a lane mask `tid & (N - 1)`, `tiled_partition<N>`, a field named like \
the width read from it, `N.WARP_SIZE`) or the project passes as a shuffle width. A tile edge or a block height chosen per platform (`kRowsPerBlock = 64` against 32) is \
tuning and is left alone, and so is a branch that tests for a wave64 architecture. (2) A warp-level \
primitive instantiated with 64 lanes in code compiled for every AMD target: a template argument 64 of a warp, \
wave, tile or partition template (`thread_block_tile<64>`, `warp_reduce<float, 64>`) or a shuffle width 64. \
(3) A loop over 64 shuffle source lanes (`for (i = 0; i < 64; ++i) __shfl(v, i)`) outside NVIDIA-only code. \
(4) A shuffle reduction that starts at offset 32 with no `width` (`for (o = 32; o > 0; o /= 2) v += \
__shfl_down(v, o)`) outside NVIDIA-only code: it spans 64 lanes. On 32 lanes the first step reads the lane's \
own value, so a sum, product or xor counts it twice (an error), while a maximum, minimum, `&` or `|` only wastes \
the step (a note). (5) A lock-step reduction tail of 64 threads: `if (tid < 64) { ... s[tid + 32] ... }` with no \
barrier inside, outside NVIDIA-only code. Code under a wave64 test is left alone: a preprocessor one \
(`__GFX9__`, a branch the structure pass knows only wave64 parts reach) or a run-time one (`if (warpSize == 64) \
{ ... }`, the `else` of `if (warpSize == 32)`).",
    why: "Only CDNA/GCN GPUs run 64-lane wavefronts. RDNA GPUs (gfx10, gfx11, gfx12) run 32-lane wavefronts \
under HIP by default, so a width fixed at 64 for every AMD build describes lanes that do not exist there: a \
64-lane tile or reduction does not cover itself (the partition asserts or the result combines stale lanes), \
and a shuffle from lane 32..63 wraps to another lane. A 64 against 32 alone does not make a width (tiles and \
block shapes are tuned per platform too), so the rule asks for the value's role before it reports. With no \
32-lane target in scope the finding is a note: it bites as soon as RDNA is.",
    example: "#ifdef __HIP_PLATFORM_AMD__\nconstexpr int kLanes = 64;\n#else\nconstexpr int kLanes = 32;\n#endif",
    use_instead: "#if defined(__HIP_PLATFORM_AMD__) && defined(__GFX9__)\nconstexpr int kLanes = 64;\n#else\nconstexpr int kLanes = 32;\n#endif\n// or `warpSize` at run time",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// Wave32 AMD targets in scope, or (none) every AMD target, with the severity.
fn amd_scope(cx: &Cx) -> Option<(Severity, Vec<String>)> {
    let wave32: Vec<String> = cx.ctx.wave32_amd_targets();
    if !wave32.is_empty() {
        return Some((META.severity, wave32));
    }
    let amd = cx.ctx.vendor_targets(Vendor::Amd);
    (!amd.is_empty()).then_some((Severity::Note, amd))
}

/// Every 32-lane GPU target in scope (wave32 AMD and NVIDIA), or a note for the AMD ones.
fn lane32_scope(cx: &Cx) -> Option<(Severity, Vec<String>)> {
    let t32: Vec<String> = cx
        .ctx
        .targets
        .iter()
        .filter(|t| matches!(t.vendor(), Vendor::Amd | Vendor::Nvidia) && !t.is_wave64())
        .map(|t| t.id().to_string())
        .collect();
    if !t32.is_empty() {
        return Some((META.severity, t32));
    }
    amd_scope(cx)
}

/// Reports a shape found at tokens `a..=b`: AMD-only code (`amd_only`) to the wave32 AMD
/// targets, other code to every 32-lane target, as a note where only wave64 AMD targets are in
/// scope; nothing where no AMD target is.
fn report_shape(cx: &mut Cx, a: usize, b: usize, amd_only: bool, msg: String, instead: &str) {
    let scope = if amd_only {
        amd_scope(cx)
    } else {
        lane32_scope(cx)
    };
    if let Some((sev, targets)) = scope {
        cx.report_with(&META, sev, targets, a, b, msg, instead);
    }
}

/// Reports a shape at token `k` that spans 64 lanes: `what` is the shape, followed by where
/// its lanes are missing (RDNA in AMD-only code, every 32-lane target elsewhere).
fn report_lanes(cx: &mut Cx, k: usize, what: String, instead: &str) {
    let amd_only = cx.amd_code(k);
    let msg = if amd_only {
        format!("{what} in code compiled for every AMD target; RDNA (gfx10/gfx11/gfx12) has 32")
    } else {
        format!("{what}; only wave64 AMD targets have them (RDNA and NVIDIA warps have 32)")
    };
    report_shape(cx, k, k, amd_only, msg, instead);
}

/// Text of the condition of branch `b`.
fn cond_text<'a>(cx: &Cx<'_, 'a, '_>, b: u32) -> &'a str {
    let src = cx.src;
    src.branches
        .get(b as usize)
        .and_then(|br| src.text.get(br.cond.0 as usize..br.cond.1 as usize))
        .unwrap_or("")
}

/// Whether a branch around token `i` chose wave64 hardware (by the structure pass or by name:
/// `__GFX9__`, `== 64`, a wave64 macro), or sits where the width is not the code's choice.
fn wave64_chosen(cx: &Cx, i: usize) -> bool {
    if cx.amd_wave(i) == 64
        || cx.mfma_branch(i)
        || cx.in_arch_alternative(i)
        || cx.runtime_wave(i) == 64
    {
        return true;
    }
    let src = cx.src;
    let mut b = src.toks.get(i).map_or(0, |t| t.branch);
    let mut guard = 0;
    while b != 0 && guard < 10_000 {
        let c = cond_text(cx, b);
        let is_else = c.trim_start_matches(['#', ' ', '\t']).starts_with("else");
        if !is_else && crate::rules::warp_size_constant::wave64_condition(c) {
            return true;
        }
        let Some(br) = src.branches.get(b as usize) else {
            break;
        };
        b = br.parent;
        guard += 1;
    }
    false
}

/// Whether the token stands for a 64-wide thing in a line (`64`, `64u`).
fn is64(cx: &Cx, k: usize) -> bool {
    cx.src.int(k) == Some(64)
}

/// One token of a line for comparison: its text, or a number's value.
#[derive(PartialEq)]
enum Piece<'a> {
    Num(u64),
    Text(&'a str),
}

fn pieces<'a>(cx: &Cx<'_, 'a, '_>, toks: &[usize]) -> Vec<(Piece<'a>, usize)> {
    toks.iter()
        .map(|&k| match cx.src.int(k) {
            Some(v) if cx.src.kind(k) == Some(Tk::Number) => (Piece::Num(v), k),
            _ => (Piece::Text(cx.src.s(k)), k),
        })
        .collect()
}

/// (1) per-platform choices: the AMD branch reads 64 where the other platform's reads 32.
fn per_platform_choice(cx: &mut Cx) {
    let src = cx.src;
    let nb = src.branches.len();
    if nb <= 1 {
        return;
    }
    // tokens directly in each branch, with the define name of `#define` lines as text
    let mut direct: Vec<Vec<usize>> = vec![Vec::new(); nb];
    for (k, t) in src.toks.iter().enumerate() {
        if t.branch != 0 {
            if let Some(v) = direct.get_mut(t.branch as usize) {
                if v.len() < 512 {
                    v.push(k);
                }
            }
        }
    }
    let mut define_name: std::collections::HashMap<u32, &str> = Default::default();
    for d in &src.defines {
        if let Some(n) = src.text.get(d.name_start as usize..d.name_end as usize) {
            define_name.insert(d.body.0, n);
        }
    }
    let mut by_group: std::collections::HashMap<u32, Vec<usize>> = Default::default();
    for (b, br) in src.branches.iter().enumerate().skip(1) {
        if !br.dead {
            by_group.entry(br.group).or_default().push(b);
        }
    }
    if amd_scope(cx).is_none() {
        return;
    }
    let mut hits: Vec<(usize, String)> = Vec::new();
    let mut roles: Option<std::collections::HashSet<&str>> = None;
    let mut groups: Vec<_> = by_group.into_iter().collect();
    groups.sort_unstable_by_key(|(g, _)| *g);
    for (_, bs) in groups {
        let amd: Vec<usize> = bs
            .iter()
            .copied()
            .filter(|&b| src.branches[b].platform == Platform::Amd)
            .collect();
        let nv: Vec<usize> = bs
            .iter()
            .copied()
            .filter(|&b| src.branches[b].platform == Platform::Nvidia)
            .collect();
        for &a in &amd {
            let Some(&first) = direct[a].first() else {
                continue;
            };
            if wave64_chosen(cx, first) {
                continue;
            }
            for &o in &nv {
                if direct[a].len() != direct[o].len()
                    || direct[a].is_empty()
                    || direct[a].len() >= 512
                {
                    continue;
                }
                let pa = pieces(cx, &direct[a]);
                let po = pieces(cx, &direct[o]);
                let mut diff64 = Vec::new();
                let mut same = true;
                for ((x, kx), (y, ky)) in pa.iter().zip(po.iter()) {
                    // a define's name must match too
                    if define_name.get(&(*kx as u32)) != define_name.get(&(*ky as u32)) {
                        same = false;
                        break;
                    }
                    match (x, y) {
                        (Piece::Num(64), Piece::Num(32)) => diff64.push(*kx),
                        (Piece::Num(_), Piece::Num(_)) => {}
                        (Piece::Text(p), Piece::Text(q)) if p == q => {}
                        _ => {
                            same = false;
                            break;
                        }
                    }
                }
                if !same || diff64.is_empty() {
                    continue;
                }
                // a name of the warp width is warp-size-constant's finding
                let names_width = direct[a].iter().any(|&k| {
                    src.kind(k) == Some(Tk::Ident)
                        && crate::rules::warp_size_constant::warp_width_name(src.s(k))
                }) || define_name
                    .get(&(direct[a][0] as u32))
                    .is_some_and(|n| crate::rules::warp_size_constant::warp_width_name(n));
                if names_width {
                    continue;
                }
                for k in diff64 {
                    // a tile edge or a block height chosen per platform is tuning: report
                    // only a value with evidence that it is the width
                    if !width_evidence(cx, &direct[a], k, &define_name, &mut roles) {
                        continue;
                    }
                    let line = src.line(k) as usize;
                    let stmt = cx.snippet(
                        direct[a]
                            .iter()
                            .copied()
                            .find(|&t| src.line(t) as usize == line)
                            .unwrap_or(k),
                        direct[a]
                            .iter()
                            .copied()
                            .rev()
                            .find(|&t| src.line(t) as usize == line)
                            .unwrap_or(k),
                    );
                    hits.push((k, stmt));
                }
                break;
            }
        }
    }
    for (k, stmt) in hits {
        let msg = format!(
            "`{stmt}`: the AMD branch reads 64 where the other platform's reads 32, a wavefront width fixed for every AMD target; RDNA (gfx10/gfx11/gfx12) runs 32 lanes"
        );
        report_shape(cx, k, k, true, msg, "choose 64 only for the wave64 architectures (`__GFX9__` in device code) or use `warpSize`; size host code from the device property (`hipDeviceProp_t::warpSize`)");
    }
}

/// An identifier named like a lane count or a wavefront (`kLanes`, `WAVE`, `lanes_per_row`),
/// not a tile, a matrix-core shape or a count of warps.
fn width_like_ident(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    let named =
        l.contains("lane") || l.contains("warp") || l.contains("wave") || l.contains("simd");
    named
        && !l.contains("warps")
        && !l.contains("waves")
        && !l.contains("per_block")
        && !l.contains("perblock")
        && !l.contains("tile")
        && !l.contains("mma")
        && !l.contains("gemm")
}

/// The name a line of a branch defines: a `#define`'s name, or the declared name of
/// `T name = ...`, `T name(...)`, `T name{...}`, `using name = ...`.
fn defined_name<'a>(
    cx: &Cx<'_, 'a, '_>,
    line: &[usize],
    k: usize,
    define_name: &std::collections::HashMap<u32, &'a str>,
) -> Option<&'a str> {
    let src = cx.src;
    for d in &src.defines {
        if (d.body.0 as usize) <= k && k < d.body.1 as usize {
            return src.text.get(d.name_start as usize..d.name_end as usize);
        }
    }
    if let Some(n) = line.first().and_then(|f| define_name.get(&(*f as u32))) {
        return Some(n);
    }
    line.iter().copied().find_map(|t| {
        (src.kind(t) == Some(Tk::Ident)
            && t > 0
            && matches!(src.s(t + 1), "=" | "(" | "{")
            && (src.kind(t - 1) == Some(Tk::Ident) || matches!(src.s(t - 1), ">" | "*" | "&")))
        .then(|| src.s(t))
    })
}

/// Names this file uses in the role of the warp width: a shuffle's width or offset, the
/// divisor or modulus of a thread id (`threadIdx.x % N`, `tid / N`, `blockDim.x / N`), a lane
/// mask (`tid & (N - 1)`, `1ull << N`), a warp primitive's template argument
/// (`tiled_partition<N>`), a value whose width-named field is read (`N.WARP_SIZE`), and names
/// the project passes as a shuffle width.
fn width_roles<'a>(cx: &Cx<'_, 'a, '_>) -> std::collections::HashSet<&'a str> {
    let src = cx.src;
    let n = src.toks.len();
    let mut out = std::collections::HashSet::new();
    for k in 1..n {
        if src.kind(k) != Some(Tk::Ident) {
            continue;
        }
        let w = src.s(k);
        let p = src.s(k - 1);
        let role = match p {
            "%" | "/" => cx.left_operand(k - 1).is_some_and(|a| {
                cx.any_ident(a, k - 2, crate::cuda::is_thread_ident)
                    || p == "/"
                        && cx.any_ident(a, k - 2, crate::cuda::is_block_threads_ident)
                        && shared_extent(cx, a)
            }),
            "<<" => k >= 2 && matches!(src.s(k - 2), "1" | "1u" | "1ull" | "1ULL" | "1ul"),
            "(" if src.is(k + 1, "-") && src.int(k + 2) == Some(1) => k >= 2 && src.is(k - 2, "&"),
            "<" | "," if matches!(src.s(k + 1), ">" | ",") => {
                // the template's name
                let mut j = k - 1;
                let mut steps = 0;
                while j > 0 && steps < 16 && !src.is(j, "<") {
                    j -= 1;
                    steps += 1;
                }
                j > 0 && src.is(j, "<") && warp_template(src.s(j - 1))
            }
            _ => false,
        };
        if role {
            out.insert(w);
        }
        // `limits.WARP_SIZE`, `cfg->lanes`: a field named like the width read from the name
        if matches!(p, "." | "->" | "::")
            && k >= 2
            && src.kind(k - 2) == Some(Tk::Ident)
            && (width_like_ident(w) || crate::rules::warp_size_constant::warp_width_name(w))
        {
            out.insert(src.s(k - 2));
        }
    }
    // arguments of shuffles (offsets and widths, `N / 2` included)
    for k in 0..n.saturating_sub(1) {
        if src.kind(k) != Some(Tk::Ident) || !src.is(k + 1, "(") {
            continue;
        }
        if crate::rules::shuffle_offset_literal::shuffle_arity(cx.intrinsic_at(k)).is_none() {
            continue;
        }
        for (a, b) in cx.call_args(k + 1).into_iter().skip(1) {
            for t in a..=b.min(a + 8) {
                if src.kind(t) == Some(Tk::Ident) {
                    out.insert(src.s(t));
                }
            }
        }
    }
    out
}

/// Whether token `a` sits in the extent of a `__shared__` array (`__shared__ float p[kThreads /
/// N]`): partials per warp.
fn shared_extent(cx: &Cx, a: usize) -> bool {
    let src = cx.src;
    let open = (a.saturating_sub(16)..a)
        .rev()
        .take_while(|&j| !matches!(src.s(j), ";" | "{" | "}"))
        .find(|&j| src.is(j, "["));
    open.is_some_and(|o| {
        (o.saturating_sub(12)..o)
            .rev()
            .take_while(|&j| !matches!(src.s(j), ";" | "{" | "}"))
            .any(|j| src.is(j, "__shared__"))
    })
}

/// Whether the 64 at token `k` of a branch's line is the warp width: the line names a lane or
/// a wavefront, instantiates a warp primitive with it, or defines a name this file (or the
/// project, as a shuffle width) uses in the width's role.
fn width_evidence<'a>(
    cx: &Cx<'_, 'a, '_>,
    branch: &[usize],
    k: usize,
    define_name: &std::collections::HashMap<u32, &'a str>,
    roles: &mut Option<std::collections::HashSet<&'a str>>,
) -> bool {
    let src = cx.src;
    let line_no = src.line(k);
    let line: Vec<usize> = branch
        .iter()
        .copied()
        .filter(|&t| src.line(t) == line_no)
        .collect();
    if line.iter().any(|&t| {
        src.kind(t) == Some(Tk::Ident) && (width_like_ident(src.s(t)) || warp_template(src.s(t)))
    }) {
        return true;
    }
    let Some(name) = defined_name(cx, &line, k, define_name) else {
        return false;
    };
    if width_like_ident(name) || cx.index.logical_widths.contains(name) {
        return true;
    }
    roles.get_or_insert_with(|| width_roles(cx)).contains(name)
}

/// Whether a template name denotes a warp-level primitive.
fn warp_template(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    (l.contains("warp")
        || l.contains("wave")
        || l.contains("thread_block_tile")
        || l.contains("partition")
        || l.contains("shfl")
        || l.contains("shuffle"))
        && !l.contains("size")
        && !l.contains("gemm")
        && !l.contains("mfma")
        && !l.contains("wmma")
}

/// (2) warp primitives instantiated with 64 lanes in AMD code.
fn warp_primitive_64(cx: &mut Cx) {
    let src = cx.src;
    let n = src.toks.len();
    if amd_scope(cx).is_none() {
        return;
    }
    let mut hits: Vec<(usize, usize, String)> = Vec::new();
    for k in 1..n.saturating_sub(1) {
        if !is64(cx, k) || !cx.amd_code(k) || wave64_chosen(cx, k) {
            continue;
        }
        if matches!(src.s(k - 1), "<" | ",") && matches!(src.s(k + 1), ">" | ",") {
            // the template's `<` and name
            let mut j = k - 1;
            let mut depth = 0;
            let mut steps = 0;
            while j > 0 && steps < 24 {
                match src.s(j) {
                    ">" => depth += 1,
                    "<" if depth == 0 => break,
                    "<" => depth -= 1,
                    "(" | ")" | ";" | "{" | "}" => {
                        steps = 24;
                        break;
                    }
                    _ => {}
                }
                j -= 1;
                steps += 1;
            }
            if steps >= 24 || !src.is(j, "<") || j == 0 || src.kind(j - 1) != Some(Tk::Ident) {
                continue;
            }
            let name = src.s(j - 1);
            if warp_template(name) {
                hits.push((
                    j - 1,
                    k,
                    format!("`{name}<...64...>` instantiates a 64-lane warp primitive"),
                ));
            }
        } else if src.is(k + 1, ")") {
            // last argument of a shuffle with an explicit width
            let Some(open) = src.mate(k + 1) else {
                continue;
            };
            if open == 0 || src.is(k - 1, "(") {
                continue;
            }
            let callee = cx.intrinsic_at(open - 1);
            if let Some(ar) = crate::rules::shuffle_offset_literal::shuffle_arity(callee) {
                if cx.call_args(open).len() == ar + 1 {
                    hits.push((
                        open - 1,
                        k,
                        format!(
                            "`{}` with width 64 shuffles across a 64-lane wavefront",
                            src.s(open - 1)
                        ),
                    ));
                }
            }
        }
    }
    hits.dedup_by_key(|h| src.line(h.0));
    for (a, b, what) in hits {
        let msg = format!(
            "{what} in code compiled for every AMD target; RDNA (gfx10/gfx11/gfx12) runs 32-lane wavefronts"
        );
        report_shape(cx, a, b, true, msg, "use the hardware width (`warpSize`, or a constant chosen by the `__GFX9__` family test) for the tile");
    }
}

/// (3) loops over 64 shuffle source lanes.
fn lane_loop_64(cx: &mut Cx) {
    let src = cx.src;
    let n = src.toks.len();
    let mut hits: Vec<(usize, String)> = Vec::new();
    for f in 0..n.saturating_sub(8) {
        // for ( [int] i = 0 ; i < 64 ;
        if !src.is(f, "for") || !src.is(f + 1, "(") || !src.in_device(f) {
            continue;
        }
        let Some(close) = src.mate(f + 1) else {
            continue;
        };
        let Some(semi) = (f + 2..close).find(|&k| src.is(k, ";")) else {
            continue;
        };
        if semi < 2 || src.kind(semi - 1) != Some(Tk::Number) || !src.is(semi - 2, "=") {
            continue;
        }
        let var = src.s(semi - 3);
        if src.kind(semi - 3) != Some(Tk::Ident) {
            continue;
        }
        if !(src.is(semi + 1, var)
            && src.is(semi + 2, "<")
            && is64(cx, semi + 3)
            && src.is(semi + 4, ";"))
        {
            continue;
        }
        let k64 = semi + 3;
        if cx.nv_only(k64) || wave64_chosen(cx, k64) {
            continue;
        }
        // the body: `{ ... }` or one statement
        let bs = close + 1;
        let be = if src.is(bs, "{") {
            src.mate(bs).unwrap_or(bs)
        } else {
            (bs..n.min(bs + 200))
                .find(|&k| src.is(k, ";"))
                .unwrap_or(bs)
        };
        let mut lane_use = false;
        for k in bs..be.min(bs + 4000) {
            if src.kind(k) != Some(Tk::Ident) || !src.is(k + 1, "(") {
                continue;
            }
            let callee = cx.intrinsic_at(k);
            let Some(ar) = crate::rules::shuffle_offset_literal::shuffle_arity(callee) else {
                continue;
            };
            if !(callee.starts_with("__shfl_sync") || callee == "__shfl") {
                continue;
            }
            let args = cx.call_args(k + 1);
            if args.len() >= ar && args[ar - 1].0 == args[ar - 1].1 && src.is(args[ar - 1].0, var) {
                lane_use = true;
                break;
            }
        }
        if lane_use {
            hits.push((k64, cx.snippet(f, close)));
        }
    }
    if hits.is_empty() {
        return;
    }
    for (k, head) in hits {
        let what = format!("`{head}` shuffles from 64 source lanes");
        report_lanes(cx, k, what, "loop to `warpSize`");
    }
}

/// (4) shuffle reductions that start at offset 32 with no width: they span 64 lanes.
fn reduction_from_32(cx: &mut Cx) {
    let src = cx.src;
    let n = src.toks.len();
    let mut hits: Vec<(usize, String, Combine)> = Vec::new();
    for f in 0..n.saturating_sub(8) {
        if !src.is(f, "for") || !src.is(f + 1, "(") {
            continue;
        }
        let Some(close) = src.mate(f + 1) else {
            continue;
        };
        let Some(semi) = (f + 2..close).find(|&k| src.is(k, ";")) else {
            continue;
        };
        // `offset = 32 ;` descending (`/= 2`, `>>= 1`)
        if semi < 3
            || src.int(semi - 1) != Some(32)
            || !src.is(semi - 2, "=")
            || src.kind(semi - 3) != Some(Tk::Ident)
        {
            continue;
        }
        let var = src.s(semi - 3);
        let descending = (semi + 1..close).any(|k| {
            src.is(k, var) && matches!(src.s(k + 1), "/=" | ">>=")
                || src.is(k, "=") && src.is(k + 1, var) && matches!(src.s(k + 2), "/" | ">>")
        });
        if !descending || cx.nv_only(semi - 1) || wave64_chosen(cx, semi - 1) {
            continue;
        }
        let bs = close + 1;
        let be = if src.is(bs, "{") {
            src.mate(bs).unwrap_or(bs)
        } else {
            (bs..n.min(bs + 200))
                .find(|&k| src.is(k, ";"))
                .unwrap_or(bs)
        };
        let mut hit = None;
        for k in bs..be.min(bs + 4000) {
            let member = k > 0 && matches!(src.s(k - 1), "." | "->");
            if member || src.kind(k) != Some(Tk::Ident) || !src.is(k + 1, "(") {
                continue;
            }
            let callee = cx.intrinsic_at(k);
            let Some(ar) = crate::rules::shuffle_offset_literal::shuffle_arity(callee) else {
                continue;
            };
            if callee.starts_with("__shfl_sync") || callee == "__shfl" {
                continue;
            }
            let args = cx.call_args(k + 1);
            if args.len() == ar && args[ar - 1].0 == args[ar - 1].1 && src.is(args[ar - 1].0, var) {
                hit = Some(combine(cx, k));
                break;
            }
        }
        if let Some(c) = hit {
            hits.push((semi - 1, cx.snippet(semi - 3, semi - 1), c));
        }
    }
    for (k, init, comb) in hits {
        let amd_only = cx.amd_code(k);
        let scope = if amd_only {
            amd_scope(cx)
        } else {
            lane32_scope(cx)
        };
        let Some((sev, targets)) = scope else { return };
        let whose = if amd_only {
            "in code compiled for every AMD target; RDNA (gfx10/gfx11/gfx12) has 32"
        } else {
            "only wave64 AMD targets have them (RDNA and NVIDIA warps have 32)"
        };
        // on 32 lanes the offset-32 step reads the lane's own value: a sum counts it twice,
        // a maximum of a value with itself is the value
        let (sev, msg) = match comb {
            Combine::Sum => (sev, format!("shuffle reduction starts at offset 32 (`{init}`) with no width, so it spans 64 lanes; {whose}: on a 32-lane warp the first step reads each lane's own value and the sum counts it twice")),
            Combine::Idempotent(op) => (Severity::Note, format!("shuffle reduction starts at offset 32 (`{init}`) with no width; {whose}: on a 32-lane warp the first step reads each lane's own value, which `{op}` leaves unchanged, a wasted step")),
            Combine::Unknown => (sev.min(Severity::Warning), format!("shuffle reduction starts at offset 32 (`{init}`) with no width, so it spans 64 lanes; {whose}: on a 32-lane warp the first step combines each lane's value with itself (wrong unless the combination is idempotent, like max or min)")),
        };
        cx.report_with(&META, sev, targets, k, k, msg, "start at `warpSize / 2`");
    }
}

/// How a shuffle reduction combines a lane's value with its partner's.
#[derive(Clone, Copy)]
enum Combine {
    /// `+`, `*`, `^` (and `-`): combining a value with itself changes it.
    Sum,
    /// max, min, `&`, `|`: combining a value with itself leaves it (the operation's name).
    Idempotent(&'static str),
    Unknown,
}

/// The combination applied to the shuffle call at token `k` (its callee).
fn combine(cx: &Cx, k: usize) -> Combine {
    let src = cx.src;
    let Some(p) = k.checked_sub(1) else {
        return Combine::Unknown;
    };
    match src.s(p) {
        "+=" | "*=" | "^=" | "-=" | "+" | "*" | "^" | "-" => return Combine::Sum,
        "|=" | "|" => return Combine::Idempotent("|"),
        "&=" | "&" => return Combine::Idempotent("&"),
        "(" | "," => {}
        _ => return Combine::Unknown,
    }
    // an argument of a call: the callee's name decides (`fmaxf(v, __shfl_down(v, o))`)
    let mut j = p;
    let mut steps = 0;
    while j > 0 && steps < 64 {
        match src.s(j) {
            "(" => break,
            ")" | "]" => j = src.mate(j).unwrap_or(j),
            ";" | "{" | "}" => return Combine::Unknown,
            _ => {}
        }
        j -= 1;
        steps += 1;
    }
    if !src.is(j, "(") || j == 0 || src.kind(j - 1) != Some(Tk::Ident) {
        return Combine::Unknown;
    }
    let f = src.s(j - 1).to_ascii_lowercase();
    if f.contains("max") {
        Combine::Idempotent("max")
    } else if f.contains("min") {
        Combine::Idempotent("min")
    } else if f.contains("add") || f.contains("sum") || f.contains("plus") || f.contains("mul") {
        Combine::Sum
    } else {
        Combine::Unknown
    }
}

/// (5) a lock-step tail of 64 threads: `if (tid < 64) { ... s[tid + 32] ... }` with no barrier,
/// which counts on the 64 threads being one wavefront.
fn lockstep_tail_64(cx: &mut Cx) {
    let src = cx.src;
    let n = src.toks.len();
    let mut hits: Vec<(usize, usize)> = Vec::new();
    for f in 0..n.saturating_sub(8) {
        if !src.is(f, "if") || !src.is(f + 1, "(") || !src.in_device(f) {
            continue;
        }
        // `if ( tid < 64 ) {`
        let t = f + 2;
        if !(crate::cuda::is_thread_ident(src.s(t))
            && src.is(t + 1, "<")
            && is64(cx, t + 2)
            && src.is(t + 3, ")")
            && src.is(t + 4, "{"))
        {
            continue;
        }
        if cx.nv_only(t + 2) || wave64_chosen(cx, t + 2) {
            continue;
        }
        let var = src.s(t);
        let Some(end) = src.mate(t + 4) else { continue };
        let mut partner = false;
        let mut barrier = false;
        for k in t + 5..end.min(t + 5 + 20_000) {
            if src.kind(k) == Some(Tk::Ident) {
                let w = src.s(k).to_ascii_lowercase();
                if w.contains("sync") || w.contains("barrier") || w.contains("fence") {
                    barrier = true;
                    break;
                }
            }
            // `[tid + 32]`, a partner read of a slot another thread of the tail writes (an
            // offset of 64 or more reads slots outside the 64 threads: no race)
            if src.is(k, "[")
                && src.is(k + 1, var)
                && src.is(k + 2, "+")
                && src.int(k + 3).is_some_and(|v| (1..64).contains(&v))
                && src.is(k + 4, "]")
            {
                partner = true;
            }
        }
        if partner && !barrier {
            hits.push((f, t + 3));
        }
    }
    for (a, b) in hits {
        let amd_only = cx.amd_code(a);
        let msg = format!(
            "`{}` runs the last reduction steps without barriers, counting on 64 threads being one wavefront in lock-step; RDNA (and NVIDIA) run 32-lane warps, so the two halves race",
            cx.snippet(a, b)
        );
        report_shape(cx, a, b, amd_only, msg, "stop the lock-step tail at `warpSize` threads (keep the barrier steps down to it), or use shuffles");
    }
}

pub fn check(cx: &mut Cx) {
    if cx.ctx.vendor_targets(Vendor::Amd).is_empty() {
        return;
    }
    if cx.has("32") && cx.has("for") && (cx.has("shfl") || cx.has("SHFL")) {
        reduction_from_32(cx);
    }
    if !cx.has("64") {
        return;
    }
    per_platform_choice(cx);
    if cx.has("<") {
        warp_primitive_64(cx);
    }
    if cx.has("for") && cx.has("__shfl") {
        lane_loop_64(cx);
    }
    lockstep_tail_64(cx);
}
