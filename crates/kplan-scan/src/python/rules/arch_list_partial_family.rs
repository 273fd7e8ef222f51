//! `python-arch-list-partial-family`: a literal list of AMD architectures that stands for a
//! family or a generation (`is_cdna()`, a CDNA3 list) and leaves out an in-scope member.

use crate::diag::Severity;
use crate::python::lex::{Kind, PySrc};
use crate::python::rules::arch_name_exact_match::bare_gfx;
use crate::python::Cx;
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Vendor;

pub const META: RuleMeta = RuleMeta {
    id: "python-arch-list-partial-family",
    summary: "literal list of AMD architectures leaves out an in-scope member of the family or generation it stands for",
    what: "Reads literal tuples, lists and sets of architecture names (`(\"gfx940\", \"gfx941\", \"gfx942\")`) \
that are tested with `in` or assigned to a name. (1) When the function, the assigned name or the tested name \
says which family the list stands for (`is_cdna`, `CDNA_ARCHS`, `rdna_archs`, `wave64`), it reports the \
in-scope targets of that family the list leaves out. (2) When the list names some members of a generation \
(per the knowledge base: CDNA3 is gfx940, gfx941, gfx942; RDNA3 gfx1100, gfx1101, gfx1102) but not an in-scope \
target of that generation, it reports that target.",
    why: "A family test written as an enumeration is right only for the architectures that existed when it \
was written: `is_cdna()` that lists the MI300 ids sends MI200 (gfx90a) and MI350 (gfx950) to the branch \
for the other family, where they get RDNA's launch settings (`num_warps` for 32-lane wavefronts), \
another matrix-core path or none. Members of one generation share instructions and formats, so a list \
that names one of them and not another is usually a list that was not kept up.",
    example: "def is_cdna():\n    return is_hip() and get_arch() in (\"gfx940\", \"gfx941\", \"gfx942\")",
    use_instead: "def is_cdna():\n    # every CDNA part is gfx9 (gfx908, gfx90a, gfx94x, gfx950)\n    return is_hip() and get_arch().startswith(\"gfx9\")",
    severity: Severity::Warning,
    scope: Scope::Amd,
    lang: Lang::Python,
    features: &[],
};

/// The family word a name carries when the name stands for the family itself: `is_cdna` ->
/// "cdna", `RDNA3_ARCHS` -> "rdna3", `wave64_archs` -> "wave64". A name that also names a
/// feature or a property (`CDNA_FP8_ARCHS`, `get_cdna_version`) stands for part of the family.
fn family_word(name: &str) -> Option<String> {
    let l = name.to_ascii_lowercase();
    const PLAIN: &[&str] = &[
        "is",
        "get",
        "archs",
        "arch",
        "arches",
        "list",
        "set",
        "gpus",
        "gpu",
        "targets",
        "target",
        "supported",
        "names",
        "name",
        "all",
        "amd",
        "rocm",
        "hip",
        "devices",
        "device",
        "on",
        "uses",
        "use",
        "family",
        "families",
        "",
    ];
    let extra = l.split(|c: char| !c.is_ascii_alphanumeric()).any(|part| {
        !PLAIN.contains(&part)
            && !part.starts_with("cdna")
            && !part.starts_with("rdna")
            && part != "wave64"
            && part != "wavefront64"
    });
    if extra {
        return None;
    }
    for part in l.split(|c: char| !c.is_ascii_alphanumeric()) {
        for fam in ["cdna", "rdna"] {
            if let Some(r) = part.strip_prefix(fam) {
                let digit: String = r.chars().take_while(char::is_ascii_digit).collect();
                return Some(format!("{fam}{digit}"));
            }
        }
        if part == "wave64" || part == "wavefront64" {
            return Some("wave64".into());
        }
    }
    None
}

/// The literal collection at `open` (`(`, `[` or `{`) when it holds only bare gfx names: the
/// names and its closing token.
fn gfx_collection<'a>(src: &PySrc<'a>, open: usize) -> Option<(Vec<&'a str>, usize)> {
    if !matches!(src.s(open), "(" | "[" | "{") {
        return None;
    }
    let close = src.closing(open)?;
    let mut names = Vec::new();
    for k in open + 1..close {
        match src.kind(k) {
            Some(Kind::Str) if bare_gfx(src.s(k)) => names.push(
                src.s(k)
                    .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                    .trim_matches(|c| c == '"' || c == '\''),
            ),
            Some(Kind::Op) if src.s(k) == "," => {}
            _ => return None,
        }
    }
    (!names.is_empty()).then_some((names, close))
}

pub fn check(cx: &mut Cx) {
    let src = cx.src;
    if !src.text.contains("\"gfx") && !src.text.contains("'gfx") {
        return;
    }
    let kb = cx.ctx.kb;
    let family_of = |arch: &str| -> Option<String> {
        kb.archs_by_vendor(Vendor::Amd)
            .find(|a| a.id == arch)
            .map(|a| a.family.clone())
    };
    let in_scope: Vec<(String, String, bool)> = cx
        .ctx
        .targets
        .iter()
        .filter(|t| t.vendor() == Vendor::Amd)
        .filter_map(|t| family_of(t.id()).map(|f| (t.id().to_string(), f, t.is_wave64())))
        .collect();
    if in_scope.is_empty() {
        return;
    }
    let mut sites: Vec<(usize, usize, Vec<String>, String)> = Vec::new();
    for open in 0..src.toks.len() {
        let Some((names, close)) = gfx_collection(src, open) else {
            continue;
        };
        // tested with `in` / `not in`, or assigned to a name
        let prev = if open > 0 { src.s(open - 1) } else { "" };
        let (tested, context_name) = if prev == "in" {
            let lhs = if open >= 2 && src.is_name(open - 2, "not") {
                open.checked_sub(3)
            } else {
                open.checked_sub(2)
            };
            (true, lhs.map(|k| src.s(k)).unwrap_or(""))
        } else if prev == "=" && open >= 2 && src.kind(open - 2) == Some(Kind::Name) {
            (false, src.s(open - 2))
        } else {
            continue;
        };
        let def_name = src.def_at(open).map(|d| src.s(d.name)).unwrap_or("");
        let fam = family_word(context_name).or_else(|| family_word(def_name));
        let listed_families: Vec<String> = names.iter().filter_map(|n| family_of(n)).collect();
        let mut missing: Vec<String> = Vec::new();
        let mut why = String::new();
        if let Some(f) = &fam {
            for (id, family, wave64) in &in_scope {
                let fl = family.to_ascii_lowercase();
                let member = if f == "wave64" {
                    *wave64
                } else {
                    fl.starts_with(f.as_str())
                };
                if member && !names.contains(&id.as_str()) {
                    missing.push(id.clone());
                }
            }
            why = format!("the list stands for {}", f.to_ascii_uppercase());
        }
        if missing.is_empty() && (tested || fam.is_some()) && names.len() >= 2 {
            for (id, family, _) in &in_scope {
                if listed_families.contains(family) && !names.contains(&id.as_str()) {
                    missing.push(id.clone());
                    why = format!("it names part of {family}");
                }
            }
        }
        if !missing.is_empty() {
            sites.push((open, close, missing, why));
        }
    }
    for (a, b, missing, why) in sites {
        let msg = format!(
            "`{}` leaves out {} ({why}): those GPUs take the other branch",
            cx.code(a, b),
            missing.join(", ")
        );
        cx.report(
            &META,
            a,
            b,
            msg,
            "test the family (`arch.startswith(\"gfx9\")` for CDNA, the warp size for wave64) or list every member",
        );
    }
}
