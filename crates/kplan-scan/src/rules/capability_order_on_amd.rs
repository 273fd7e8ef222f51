//! `capability-order-on-amd`: an ordered comparison with an NVIDIA generation's compute
//! capability, with no vendor test first, in code that also runs on AMD.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "capability-order-on-amd",
    summary: "`cc >= <NVIDIA generation>` test that AMD devices pass, with no vendor test first",
    what: "Finds ordered comparisons (`>=`, `>`, `<`, `<=`) of a value with a constant named after an NVIDIA \
generation (`..._VOLTA`, `..._TURING`, `..._AMPERE`, `..._ADA_LOVELACE`, `..._HOPPER`, `..._BLACKWELL`, \
`..._PASCAL`), outside NVIDIA-only branches, when neither the condition nor an earlier statement of the same \
function tests the vendor (a name with `NVIDIA`, `AMD`, `HIP` or `ROCM`), in a function that tests the vendor \
only later (so AMD devices reach the comparison) or in code compiled for AMD only.",
    why: "On AMD the compute capability is not an NVIDIA generation: HIP reports gfx942 as 9.4 and gfx1100 as \
11.0, so `100 * major + 10 * minor` is 940 or 1100, above every Volta/Turing/Ampere threshold, and projects \
that offset AMD values into their own range (`0x1000000 + arch`) are above them too. Every AMD device then \
takes the branch written for recent NVIDIA GPUs: tensor-core paths, NVIDIA tile sizes or batch limits.",
    example: "// host launch code\nint batch = 4;\nif (cc >= CC_TURING) {\n    batch = 8;\n} else if (CC_IS_NVIDIA(cc)) {\n    batch = 6;\n}\nkernel<<<grid, 256>>>(x, batch);",
    use_instead: "// host launch code\nint batch = 4;  // AMD: its own choice\nif (CC_IS_NVIDIA(cc) && cc >= CC_TURING) {\n    batch = 8;\n} else if (CC_IS_NVIDIA(cc)) {\n    batch = 6;\n}\nkernel<<<grid, 256>>>(x, batch);",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

const GENERATIONS: &[&str] = &[
    "KEPLER",
    "MAXWELL",
    "PASCAL",
    "VOLTA",
    "TURING",
    "AMPERE",
    "ADA",
    "LOVELACE",
    "HOPPER",
    "BLACKWELL",
];

/// A constant named after an NVIDIA generation (`GGML_CUDA_CC_TURING`, `kAmpere`, `SM_HOPPER`).
fn generation_name(s: &str) -> bool {
    // constant-style names only: `CC_TURING`, `GGML_CUDA_CC_ADA_LOVELACE`, `kTuring`
    s.split(['_', ':']).any(|w| {
        GENERATIONS.contains(&w)
            || w.strip_prefix('k').is_some_and(|r| {
                let u = r.to_ascii_uppercase();
                r.starts_with(|c: char| c.is_ascii_uppercase()) && GENERATIONS.contains(&u.as_str())
            })
    })
}

/// A name that tests the vendor (`GGML_CUDA_CC_IS_NVIDIA`, `is_amd`, `USE_ROCM`, `is_hip`).
fn vendor_name(s: &str) -> bool {
    let u = s.to_ascii_uppercase();
    u.contains("NVIDIA")
        || u.contains("ROCM")
        || u.split('_')
            .any(|w| matches!(w, "AMD" | "HIP" | "NV" | "CDNA" | "RDNA"))
        || u.starts_with("ISAMD")
        || u.starts_with("ISNVIDIA")
        || u.starts_with("ISHIP")
}

/// HIP's compute capability of an AMD architecture id: `gfx942` 9.4, `gfx90a` 9.0, `gfx1100`
/// 11.0 (major, minor).
pub fn amd_capability(arch: &str) -> Option<(u32, u32)> {
    let rest = arch.strip_prefix("gfx")?;
    let digits: Vec<u32> = rest.chars().map_while(|c| c.to_digit(16)).collect();
    match digits.len() {
        3 => Some((digits[0], digits[1])),
        4 => Some((digits[0] * 10 + digits[1], digits[2])),
        _ => None,
    }
}

/// The rest of the message: which AMD targets in scope pass the threshold `v`, when its
/// value is known (scaled as `100 * major + 10 * minor` or `10 * major + minor`).
fn amd_passes_text(cx: &Cx, v: Option<u64>) -> String {
    let amd: Vec<(String, u32, u32)> = cx
        .ctx
        .targets
        .iter()
        .filter(|t| t.vendor() == kplan_kb::Vendor::Amd)
        .filter_map(|t| amd_capability(t.id()).map(|(a, b)| (t.id().to_string(), a, b)))
        .collect();
    let scale = match v {
        Some(v) if v >= 300 => Some((100, 10)),
        Some(v) if (30..300).contains(&v) => Some((10, 1)),
        _ => None,
    };
    let (Some(v), Some((ma, mi))) = (v, scale) else {
        let list: Vec<String> = amd
            .iter()
            .map(|(a, x, y)| format!("{a} is {x}.{y}"))
            .collect();
        return format!(
            ", and AMD compute capabilities ({}, or a project's AMD offset) pass it: AMD devices take this NVIDIA branch",
            if list.is_empty() { "HIP reports the gfx version".to_string() } else { list.join(", ") }
        );
    };
    let mut pass = Vec::new();
    let mut fail = Vec::new();
    for (a, x, y) in &amd {
        let c = u64::from(x * ma + y * mi);
        if c >= v {
            pass.push(format!("{a} ({c})"));
        } else {
            fail.push(format!("{a} ({c})"));
        }
    }
    let mut out = format!(" ({v}); HIP reports the gfx version as the capability");
    if !pass.is_empty() {
        out.push_str(&format!(
            ": {} pass{} it and take{} this NVIDIA branch",
            pass.join(", "),
            if pass.len() == 1 { "es" } else { "" },
            if pass.len() == 1 { "s" } else { "" }
        ));
    }
    if !fail.is_empty() {
        out.push_str(&format!(
            "{} {} {} not",
            if pass.is_empty() { ":" } else { ", while" },
            fail.join(", "),
            if fail.len() == 1 { "does" } else { "do" }
        ));
    }
    out.push_str("; a project offset for AMD values passes it on every AMD device");
    out
}

pub fn check(cx: &mut Cx) {
    if !GENERATIONS
        .iter()
        .any(|g| cx.has(g) || cx.has(&g.to_ascii_lowercase()))
    {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    let mut last_line = 0;
    let mut local_consts: Option<crate::rules::consts::Consts> = None;
    for k in 0..n {
        if !matches!(src.s(k), ">=" | ">" | "<" | "<=") || src.kind(k) != Some(Tk::Punct) {
            continue;
        }
        let Some(r) = cx.right_operand(k) else {
            continue;
        };
        let Some(l) = cx.left_operand(k) else {
            continue;
        };
        let gen_right = (k + 1..=r).any(|j| src.is_ident(j) && generation_name(src.s(j)));
        let gen_left = (l..k).any(|j| src.is_ident(j) && generation_name(src.s(j)));
        if gen_right == gen_left {
            continue;
        }
        // "at least this generation": `cc >= GEN`, `cc > GEN`, `GEN <= cc`, `GEN < cc`
        let at_least = if gen_right {
            matches!(src.s(k), ">=" | ">")
        } else {
            matches!(src.s(k), "<=" | "<")
        };
        // the other side is the raw capability, not a normalizing call
        let (oa, ob) = if gen_right { (l, k - 1) } else { (k + 1, r) };
        if !at_least || (oa..=ob).any(|j| src.is(j, "(")) {
            continue;
        }
        // a template argument list `f<VOLTA>` is not a comparison
        if src.s(k) == "<" && src.is_ident(k.saturating_sub(1)) && src.is(r + 1, ">") {
            continue;
        }
        if cx.nv_only(k) || src.in_device(k) {
            continue;
        }
        // the statement around the comparison, back to the previous `;` `{` `}`
        let mut a = k;
        let mut steps = 0;
        while a > 0 && steps < 200 && !matches!(src.s(a - 1), ";" | "{" | "}") {
            a -= 1;
            steps += 1;
        }
        let mut b = k;
        let mut steps = 0;
        while b + 1 < n && steps < 200 && !matches!(src.s(b + 1), ";" | "{" | "}") {
            b += 1;
            steps += 1;
        }
        if (a..=b).any(|j| src.is_ident(j) && vendor_name(src.s(j))) {
            continue;
        }
        // the capability variable compared (`cc` in `cc >= GEN`)
        let var = (oa..=ob)
            .rev()
            .find(|&j| src.is_ident(j))
            .map(|j| src.s(j))
            .unwrap_or("");
        // an earlier vendor test in the same function body, or an enclosing `if` that already
        // passed the capability through a helper (`if (turing_mma_available(cc)) {`)
        let mut helper_guard = false;
        let mut from = a;
        let mut j = a;
        let mut steps = 0;
        while j > 0 && steps < 100_000 {
            j -= 1;
            steps += 1;
            if !src.is(j, "{") || !src.mate(j).is_some_and(|m| m > k) {
                continue;
            }
            from = j;
            if j > 0 && src.is(j - 1, ")") {
                if let Some(open) = src.mate(j - 1).filter(|&o| o > 0 && src.is(o - 1, "if")) {
                    helper_guard |= (open + 1..j - 1).any(|q| {
                        src.is_ident(q)
                            && src.is(q + 1, "(")
                            && src.mate(q + 1).is_some_and(|c| {
                                (q + 2..c).any(|z| !var.is_empty() && src.is(z, var))
                            })
                    });
                }
            }
            let mut p = j;
            while p > 0 && matches!(src.s(p - 1), "const" | "noexcept" | "override" | "final") {
                p -= 1;
            }
            if p > 0 && src.is(p - 1, ")") {
                let open = src.mate(p - 1).unwrap_or(0);
                if open == 0 || !matches!(src.s(open - 1), "if" | "for" | "while" | "switch") {
                    break;
                }
            }
        }
        if helper_guard || (from..a).any(|j| src.is_ident(j) && vendor_name(src.s(j))) {
            continue;
        }
        // the code serves AMD: a vendor test later in the same function (it tests the vendor,
        // but only after this comparison), or code compiled for AMD only
        let end = src.mate(from).filter(|&m| m > b).unwrap_or(b);
        let later = (b + 1..end).any(|j| src.is_ident(j) && vendor_name(src.s(j)));
        if !later && !cx.amd_code(k) {
            continue;
        }
        let line = src.line(k);
        if line == last_line {
            continue;
        }
        last_line = line;
        let gen_tok = (if gen_right { k + 1..=r } else { l..=k - 1 })
            .find(|&j| src.is_ident(j) && generation_name(src.s(j)));
        let threshold = match gen_tok {
            Some(j) => cx.index.const_value(src.s(j)).or_else(|| {
                local_consts
                    .get_or_insert_with(|| crate::rules::consts::Consts::collect(src))
                    .get(src.s(j))
            }),
            None => None,
        };
        let msg = format!(
            "`{}` compares with an NVIDIA generation{}",
            cx.snippet(l, r),
            amd_passes_text(cx, threshold)
        );
        cx.report(&META, l, r, msg, "test the vendor first (`is_nvidia(cc) && cc >= ...`), and give AMD its own branch by architecture");
    }
}
