//! `arch-list-partial-family`: a preprocessor allow-list of AMD architectures that names some
//! members of a generation but not an in-scope target of the same generation.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Vendor;

pub static META: RuleMeta = RuleMeta {
    id: "arch-list-partial-family",
    summary: "architecture allow-list names part of an AMD generation and leaves out an in-scope member",
    what: "Reads the conditions of each `#if`/`#elif` chain for the architecture macros the compiler defines \
per target (`__gfx940__`, `__gfx1100__`, ...), tested without `!`. When the chain names a member of an AMD \
generation (CDNA3: gfx940, gfx941, gfx942; RDNA3: gfx1100, gfx1101, gfx1102; RDNA4: gfx1200, gfx1201) but \
not a target in scope of that same generation, it reports the first condition that names the generation.",
    why: "Members of one generation share the instructions, the matrix cores and the number formats such \
a branch is written for. A list written when one member was current (`#if defined(__gfx940__)` for early \
MI300) silently sends the others (gfx942, the MI300X and MI300A production target) to the fallback: a \
slower path, a host-only emulation, a missing builtin, or a different wavefront size.",
    example: "#if defined(__gfx940__)\n    return __builtin_amdgcn_cvt_pk_fp8_f32(a, b, 0, false);\n#else\n    return convert_in_software(a, b);\n#endif",
    use_instead: "#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)\n    return __builtin_amdgcn_cvt_pk_fp8_f32(a, b, 0, false);\n#else\n    return convert_in_software(a, b);\n#endif",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// The lexer's reading of a condition's identifiers, where the rules import it from.
pub use crate::lex::cond_idents;

/// `__gfx942__` -> `gfx942`.
pub fn arch_of_macro(w: &str) -> Option<&str> {
    let inner = w.strip_prefix("__")?.strip_suffix("__")?;
    let rest = inner.strip_prefix("gfx")?;
    (!rest.is_empty() && rest.bytes().all(|c| c.is_ascii_hexdigit())).then_some(inner)
}

/// One `#if`/`#elif` chain: its group id, the architectures it names, and per generation the
/// first mention (generation, byte span, macro).
type Mention = (String, usize, usize, String);
type Chain = (u32, Vec<String>, Vec<Mention>);

pub fn check(cx: &mut Cx) {
    if !cx.has("__gfx") {
        return;
    }
    let src = cx.src;
    let kb = cx.ctx.kb;
    let family = |arch: &str| -> Option<String> {
        kb.archs_by_vendor(Vendor::Amd)
            .find(|a| a.id == arch)
            .map(|a| a.family.clone())
    };
    let in_scope: Vec<(String, String)> = cx
        .ctx
        .targets
        .iter()
        .filter(|t| t.vendor() == Vendor::Amd)
        .filter_map(|t| family(t.id()).map(|f| (t.id().to_string(), f)))
        .collect();
    if in_scope.is_empty() {
        return;
    }
    // per group: the positively named architectures, and the first mention (byte span) per family
    let mut groups: Vec<Chain> = Vec::new();
    for br in src.branches.iter().skip(1) {
        let (s, e) = (br.cond.0 as usize, br.cond.1 as usize);
        let Some(text) = src.text.get(s..e) else {
            continue;
        };
        let at = match groups.iter().position(|g| g.0 == br.group) {
            Some(p) => p,
            None => {
                groups.push((br.group, Vec::new(), Vec::new()));
                groups.len() - 1
            }
        };
        for (off, w, negated) in cond_idents(text) {
            let Some(arch) = arch_of_macro(w) else {
                continue;
            };
            if negated {
                continue;
            }
            let g = &mut groups[at];
            if !g.1.iter().any(|a| a == arch) {
                g.1.push(arch.to_string());
            }
            if let Some(f) = family(arch) {
                if !g.2.iter().any(|m| m.0 == f) {
                    g.2.push((f, s + off, s + off + w.len(), w.to_string()));
                }
            }
        }
    }
    for (_, named, mentions) in groups {
        for (fam, s, e, w) in mentions {
            let missing: Vec<&str> = in_scope
                .iter()
                .filter(|(a, f)| *f == fam && !named.iter().any(|n| n == a))
                .map(|(a, _)| a.as_str())
                .collect();
            if missing.is_empty() {
                continue;
            }
            let list = missing.join(", ");
            let msg = format!(
                "`{w}` names a {fam} target, but {list} (in scope, also {fam}) is not in this condition chain: it takes the fallback branch"
            );
            let help = format!("list every {fam} target (`defined(__{}__)`) or test a feature macro instead of one architecture", missing[0]);
            if let Some((sev, _)) = cx.ctx.scope_severity(&META) {
                cx.report_span(
                    &META,
                    sev,
                    missing.iter().map(|s| s.to_string()).collect(),
                    s,
                    e,
                    msg,
                    &help,
                );
            }
        }
    }
}
