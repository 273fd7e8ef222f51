//! `shuffle-offset-literal`: shuffle reductions whose offsets start at 16 (or stop below 32).

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};
use crate::rules::consts::Consts;

pub static META: RuleMeta = RuleMeta {
    id: "shuffle-offset-literal",
    summary: "shuffle reduction whose offsets are fixed for a 32-lane warp",
    what: "Finds warp reductions whose shuffle offsets are written for 32 lanes: a loop `for (int o = 16; o > 0; \
o /= 2)` (or `o = 1; o < 32; o *= 2`; the start may be a constant expression such as `32 / 2`) around `__shfl_xor_sync`/`__shfl_down_sync`, and unrolled shuffles with a \
literal offset of 16, when the shuffle has no explicit `width` argument. In code only AMD compiles (an AMD-only \
branch or a HIP-only file) a loop of that shape with an explicit width of 32 is a warning for the wave64 targets: \
the width makes each half of the wavefront reduce on its own.",
    why: "On a 64-lane wavefront the reduction never crosses lanes 0-31 and 32-63: lane 0 ends up with the sum of \
half the wavefront and the other half is silently dropped.",
    example: "for (int offset = 16; offset > 0; offset /= 2)\n    v += __shfl_down_sync(0xffffffff, v, offset);",
    use_instead: "for (int offset = warpSize / 2; offset > 0; offset /= 2)\n    v += __shfl_down(v, offset);  // or pass an explicit width for a 32-lane sub-group",
    severity: Severity::Error,
    scope: Scope::Wave64,
    lang: Lang::Cuda,
    features: &[],
};

/// Number of arguments of each shuffle builtin without its optional `width`.
pub fn shuffle_arity(name: &str) -> Option<usize> {
    match name {
        "__shfl_sync" | "__shfl_up_sync" | "__shfl_down_sync" | "__shfl_xor_sync" => Some(3),
        "__shfl" | "__shfl_up" | "__shfl_down" | "__shfl_xor" => Some(2),
        _ => None,
    }
}

fn is_shuffle_name(s: &str) -> bool {
    s.to_ascii_lowercase().contains("shfl") || s.to_ascii_lowercase().contains("shuffle")
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("shfl") || cx.has("SHFL") || cx.has("huffle") || cx.has("HUFFLE")) {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    let mut consts: Option<Consts> = None;
    let help = "start at `warpSize / 2` (stop at `warpSize`), or pass an explicit `width` when a 32-lane sub-group is intended";
    for i in 0..n {
        if src.kind(i) != Some(Tk::Ident) {
            continue;
        }
        let w = src.s(i);
        if w == "for" && src.is(i + 1, "(") {
            let Some(close) = src.mate(i + 1) else {
                continue;
            };
            // init ; cond ; step
            let semis: Vec<usize> = (i + 2..close).filter(|&k| src.is(k, ";")).collect();
            if semis.len() != 2 {
                continue;
            }
            let (s1, s2) = (semis[0], semis[1]);
            let Some(eq) = (i + 2..s1).find(|&k| src.is(k, "=")) else {
                continue;
            };
            if eq == 0 || src.kind(eq - 1) != Some(Tk::Ident) {
                continue;
            }
            let var = src.s(eq - 1);
            // `o = 16`, or a constant expression (`32 / 2`, `HALF_WARP`) of names that have one
            // value in every branch of the project
            let start = if eq + 2 == s1 && src.kind(eq + 1) == Some(Tk::Number) {
                src.int(eq + 1)
            } else if eq + 1 < s1
                && (eq + 1..s1).all(|k| {
                    src.kind(k) != Some(Tk::Ident) || cx.index.const_value(src.s(k)).is_some()
                })
            {
                consts
                    .get_or_insert_with(|| Consts::collect(src))
                    .eval(src, eq + 1, s1 - 1)
            } else {
                None
            };
            let cond_limit = (s1 + 1..s2).find_map(|k| {
                if src.is(k, var) && matches!(src.s(k + 1), "<" | "<=") && k + 3 == s2 {
                    src.int(k + 2).map(|v| (v, k + 2, src.s(k + 1) == "<="))
                } else {
                    None
                }
            });
            let descending_from_16 = start == Some(16);
            let ascending_to_32 = start == Some(1)
                && matches!(cond_limit, Some((32, _, false)) | Some((16, _, true)));
            if !descending_from_16 && !ascending_to_32 {
                continue;
            }
            // body: a shuffle using the loop variable, without an explicit width
            let body_start = close + 1;
            let body_end = if src.is(body_start, "{") {
                src.mate(body_start).unwrap_or(body_start)
            } else {
                (body_start..n)
                    .find(|&k| src.is(k, ";"))
                    .unwrap_or(n.saturating_sub(1))
            };
            let mut hit = false;
            // `__shfl_xor_sync(m, v, o, 32)` in code only AMD compiles: the width is explicit,
            // but a wave64 wavefront then reduces as two halves
            let mut amd_width32 = false;
            let mut k = body_start;
            while k <= body_end && k < n {
                // `tile.shfl_down(v, o)`: a cooperative-groups tile's shuffle; its width is the tile's
                let member = k > 0 && matches!(src.s(k - 1), "." | "->");
                if src.kind(k) == Some(Tk::Ident)
                    && is_shuffle_name(src.s(k))
                    && src.is(k + 1, "(")
                    && !member
                {
                    let args = cx.call_args(k + 1);
                    let uses_var = args.iter().any(|&(a, b)| (a..=b).any(|t| src.is(t, var)));
                    let explicit_width = shuffle_arity(src.s(k)).is_some_and(|ar| args.len() > ar);
                    if uses_var && !explicit_width {
                        hit = true;
                        break;
                    }
                    if uses_var
                        && explicit_width
                        && args
                            .last()
                            .is_some_and(|&(a, b)| a == b && src.int(a) == Some(32))
                        && cx.amd_code(k)
                        && reaches_wave64(cx, k)
                    {
                        amd_width32 = true;
                        break;
                    }
                }
                k += 1;
            }
            // (the `#else` of an architecture list is still reached by wave64 passes here)
            // a function that also splits threads into 32-lane groups (`tid / 32`, `lane % 32`,
            // `& 31`, `>> 5`) uses 32-lane sub-groups on purpose
            if amd_width32 && groups_of_32(cx, i) {
                continue;
            }
            if amd_width32 && cx.amd_wave(i) != 32 && cx.runtime_wave(i) != 32 {
                let targets = cx.ctx.wave64_targets();
                if !targets.is_empty() {
                    let msg = format!("shuffle reduction in code only AMD compiles passes width 32 (`{var}` from {}): on a wave64 target it reduces each 32-lane half of the wavefront on its own", if descending_from_16 { "16 down" } else { "1 up to 32" });
                    cx.report_with(&META, Severity::Warning, targets, eq + 1, eq + 1, msg, "pass `warpSize` as the width (or start at `warpSize / 2`), unless a 32-lane sub-group is meant");
                }
                continue;
            }
            if !hit || cx.guarded(i) {
                continue;
            }
            let (lit, msg) = if descending_from_16 {
                (eq + 1, format!("shuffle reduction starts at offset 16, so it covers 32 lanes (`{var} = 16`)"))
            } else {
                let (_, at, _) = cond_limit.unwrap_or((32, eq + 1, false));
                (
                    at,
                    format!(
                        "shuffle reduction stops below offset 32, so it covers 32 lanes (`{}`)",
                        cx.snippet(s1 + 1, s2 - 1)
                    ),
                )
            };
            cx.report(&META, lit, lit, msg, help);
        } else if let Some(arity) = shuffle_arity(w) {
            // unrolled: __shfl_xor_sync(mask, v, 16) without width
            if !src.is(i + 1, "(") || w == "__shfl_sync" || w == "__shfl" {
                continue;
            }
            let args = cx.call_args(i + 1);
            if args.len() != arity {
                continue;
            }
            let (a, b) = args[arity - 1];
            if a == b && src.int(a) == Some(16) && !cx.guarded(i) {
                let msg = format!("`{w}` with offset 16 and no width covers 32 lanes");
                cx.report(&META, a, a, msg, help);
            }
        }
    }
}

/// Whether token `k` is reached by a wave64 AMD device pass (a branch that only wave32
/// targets compile is not).
fn reaches_wave64(cx: &Cx, k: usize) -> bool {
    let src = cx.src;
    let b = src.toks.get(k).map(|t| t.branch).unwrap_or(0);
    let reach = src.branches.get(b as usize).map(|br| br.reach).unwrap_or(0);
    reach == 0 || reach & crate::lex::pass::AMD_DEV64 != 0
}

/// Whether the function around token `i` computes 32-lane group or lane ids.
fn groups_of_32(cx: &Cx, i: usize) -> bool {
    let src = cx.src;
    let Some(t) = src.toks.get(i) else {
        return false;
    };
    let Some(f) = (t.func as usize)
        .checked_sub(1)
        .and_then(|k| src.funcs.get(k))
    else {
        return false;
    };
    let (open, close) = (f.open as usize, (f.close as usize).min(src.toks.len()));
    (open..close.saturating_sub(1)).any(|k| {
        matches!(
            (src.s(k), src.int(k + 1)),
            ("/" | "%", Some(32)) | ("&", Some(31)) | (">>", Some(5))
        )
    })
}
