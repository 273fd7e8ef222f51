//! `lane-partials-size`: shared arrays of 32 entries indexed by a lane index.

use crate::cuda::{is_lane_ident, Cx};
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "lane-partials-size",
    summary: "shared array of 32 entries indexed by lane",
    what: "Finds `__shared__` arrays whose (last) dimension is the literal 32 and that are indexed by a lane \
index (`lane`, `lane_id`, `threadIdx.x % warpSize`, ...).",
    why: "A per-lane buffer sized for 32 lanes overflows on a 64-lane wavefront: lanes 32-63 write past the end \
of the array into whatever shared memory follows it.",
    example: "__shared__ float partial[32];\npartial[lane] = v;",
    use_instead: "__shared__ float partial[KPLAN_MAX_WARP_SIZE];  // 64, the widest warp in scope\npartial[lane] = v;",
    severity: Severity::Error,
    scope: Scope::Wave64,
    lang: Lang::Cuda,
    features: &[],
};

/// The lane variable `name` is defined (before `at`, from `lo`) as `x % 32`, `x & 31` or modulo
/// a named constant other than `warpSize`: it stays below 32 and cannot overflow the array.
fn bounded_by_32(cx: &Cx, name: &str, lo: usize, at: usize) -> bool {
    let src = cx.src;
    let Some(eq) = (lo..at)
        .rev()
        .find(|&k| src.is(k, "=") && k > 0 && src.is(k - 1, name))
    else {
        return false;
    };
    let end = (eq..at).find(|&k| src.is(k, ";")).unwrap_or(at);
    for k in eq + 1..end {
        match src.s(k) {
            "%" if src.int(k + 1) == Some(32)
                || (src.kind(k + 1) == Some(Tk::Ident) && src.s(k + 1) != "warpSize") =>
            {
                return true;
            }
            "&" if src.int(k + 1) == Some(31) => return true,
            _ => {}
        }
    }
    false
}

pub fn check(cx: &mut Cx) {
    if !cx.has("__shared__") {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    for i in 0..n {
        if !src.is(i, "__shared__") || cx.guarded(i) {
            continue;
        }
        let Some(semi) =
            (i + 1..n.min(i + 64)).find(|&k| src.is(k, ";") || src.is(k, "{") || src.is(k, "="))
        else {
            continue;
        };
        // name [ d0 ] [ d1 ] ... with the last dimension 32
        let Some(lb) = (i + 1..semi).find(|&k| src.is(k, "[")) else {
            continue;
        };
        if lb == 0 || src.kind(lb - 1) != Some(Tk::Ident) {
            continue;
        }
        let name_tok = lb - 1;
        let name = src.s(name_tok);
        let mut dims: Vec<(usize, usize)> = Vec::new();
        let mut k = lb;
        while src.is(k, "[") {
            let Some(m) = src.mate(k) else { break };
            dims.push((k + 1, m));
            k = m + 1;
        }
        let Some(&(d0, d1)) = dims.last() else {
            continue;
        };
        if d1 != d0 + 1 || src.int(d0) != Some(32) {
            continue;
        }
        // uses: name [..]...[ idx ] in the same function (or file when declared outside one)
        let (lo, hi) = match src.func_of(i) {
            Some(f) => (f.open as usize, (f.close as usize).min(n)),
            None => (0, n),
        };
        let ndims = dims.len();
        let mut use_at = None;
        let mut j = lo;
        while j < hi {
            if j != name_tok && src.is(j, name) && src.is(j + 1, "[") {
                let mut k = j + 1;
                let mut last = None;
                let mut cnt = 0;
                while src.is(k, "[") {
                    let Some(m) = src.mate(k) else { break };
                    last = Some((k + 1, m));
                    cnt += 1;
                    k = m + 1;
                }
                if let (Some((a, b)), true) = (last, cnt == ndims) {
                    let lane_idx = (a..b).any(|t| {
                        src.kind(t) == Some(Tk::Ident)
                            && is_lane_ident(src.s(t))
                            && !bounded_by_32(cx, src.s(t), lo, t)
                    }) || ((a..b).any(|t| src.is(t, "warpSize"))
                        && (a..b).any(|t| src.is(t, "%") || src.is(t, "&")));
                    if lane_idx {
                        use_at = Some((j, b));
                        break;
                    }
                }
                j = k;
                continue;
            }
            j += 1;
        }
        if let Some((u, ub)) = use_at {
            let msg = format!(
                "`{name}` has 32 entries but is indexed by lane (`{}`), which reaches 63 on wave64",
                cx.snippet(u, ub)
            );
            if let Some((sev, targets)) = cx.ctx.scope_severity(&META) {
                let (s, _) = src.span(name_tok);
                let (_, e) = src.span(d1);
                let f = crate::diag::Finding::new(META.id, sev, cx.path, &src.lines, s, e, msg)
                    .with_help("size per-lane buffers by the widest warp in scope (64), e.g. the kplan header's `KPLAN_MAX_WARP_SIZE`")
                    .with_targets(targets)
                    .with_label(&src.lines, src.span(u).0, src.span(ub).1, "indexed by lane here");
                cx.out.push(f);
            }
        }
    }
}
