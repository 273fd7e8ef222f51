//! Vendor-scoped text in the knowledge base: a KB sentence that names one vendor's
//! instructions or libraries marks those words with the vendor (or AMD family) they belong to,
//! and a plan prints only the parts for the vendors in its scope, so an AMD-only plan carries
//! no NVIDIA wording and an NVIDIA-only plan no AMD wording.
//!
//! A group is `{tag: text | tag: text | ...}`; `tag` is `nvidia`, `amd`, `cdna`, `rdna`, `cpu`,
//! `intel` or `apple`. The parts whose tag is in scope are kept and joined as `a, b and c`;
//! a group with none in scope disappears (with the space before it). Text outside groups is
//! always printed. `kplan ops show` prints every part (every tag in scope).

/// The tags a group may use.
pub const TAGS: [&str; 7] = ["nvidia", "amd", "cdna", "rdna", "cpu", "intel", "apple"];

/// One parsed part: the tag and its text, or text outside any group.
enum Piece<'a> {
    Plain(&'a str),
    Group(Vec<(&'a str, &'a str)>),
}

fn parse(s: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        let Some(len) = rest[open..].find('}') else {
            return Err(format!("unclosed `{{` in `{s}`"));
        };
        let body = &rest[open + 1..open + len];
        if body.contains('{') {
            return Err(format!("nested `{{` in `{s}`"));
        }
        out.push(Piece::Plain(&rest[..open]));
        let mut parts = Vec::new();
        for part in body.split('|') {
            let Some((tag, text)) = part.split_once(':') else {
                return Err(format!("group part `{part}` has no `tag:` in `{s}`"));
            };
            let tag = tag.trim();
            if !TAGS.contains(&tag) {
                return Err(format!(
                    "unknown scope tag `{tag}` in `{s}` (expected one of {})",
                    TAGS.join(", ")
                ));
            }
            parts.push((tag, text.trim()));
        }
        out.push(Piece::Group(parts));
        rest = &rest[open + len + 1..];
    }
    if rest.contains('}') {
        return Err(format!("`}}` without `{{` in `{s}`"));
    }
    out.push(Piece::Plain(rest));
    Ok(out)
}

/// Checks a KB text's groups (unknown tags, unbalanced braces).
pub fn check(s: &str) -> Result<(), String> {
    parse(s).map(|_| ())
}

/// `s` with each group reduced to its parts whose tag is in `scope`. Text that does not parse
/// (the KB loader rejects it, so only a hand-built KB has it) is returned as it is.
pub fn scoped(s: &str, scope: &[&str]) -> String {
    let Ok(pieces) = parse(s) else {
        return s.to_string();
    };
    let mut out = String::with_capacity(s.len());
    for p in pieces {
        match p {
            Piece::Plain(t) => out.push_str(t),
            Piece::Group(parts) => {
                let kept: Vec<&str> = parts
                    .iter()
                    .filter(|(tag, _)| scope.contains(tag))
                    .map(|(_, t)| *t)
                    .collect();
                match kept.len() {
                    0 => {
                        while out.ends_with(' ') {
                            out.pop();
                        }
                    }
                    1 => out.push_str(kept[0]),
                    n => {
                        out.push_str(&kept[..n - 1].join(", "));
                        out.push_str(" and ");
                        out.push_str(kept[n - 1]);
                    }
                }
            }
        }
    }
    // A dropped group can leave an empty bracket or a doubled separator behind.
    let mut t = out.replace(" ()", "").replace("()", "");
    for (from, to) in [
        ("  ", " "),
        (" ,", ","),
        (" ;", ";"),
        (",,", ","),
        (";;", ";"),
        ("( ", "("),
    ] {
        while t.contains(from) {
            t = t.replace(from, to);
        }
    }
    t.trim().trim_start_matches([';', ',']).trim().to_string()
}

/// Every tag: the text as `kplan ops show` prints it.
pub fn unscoped(s: &str) -> String {
    scoped(s, &TAGS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = "tiled MMA pipeline ({nvidia: TMA/wgmma on Hopper | cdna: MFMA on CDNA | rdna: WMMA on RDNA})";

    #[test]
    fn keeps_the_parts_in_scope() {
        assert_eq!(
            scoped(T, &["amd", "cdna"]),
            "tiled MMA pipeline (MFMA on CDNA)"
        );
        assert_eq!(
            scoped(T, &["nvidia", "amd", "cdna"]),
            "tiled MMA pipeline (TMA/wgmma on Hopper and MFMA on CDNA)"
        );
        assert_eq!(
            unscoped(T),
            "tiled MMA pipeline (TMA/wgmma on Hopper, MFMA on CDNA and WMMA on RDNA)"
        );
    }

    #[test]
    fn a_group_out_of_scope_disappears_cleanly() {
        assert_eq!(scoped(T, &["cpu"]), "tiled MMA pipeline");
        assert_eq!(
            scoped(
                "use a packed kernel {nvidia: (Marlin-style on NVIDIA)}; test it",
                &["amd"]
            ),
            "use a packed kernel; test it"
        );
        assert_eq!(scoped("no groups here", &[]), "no groups here");
    }

    #[test]
    fn bad_groups_are_reported() {
        assert!(check("a {nvidia: b").is_err());
        assert!(check("a {cuda: b}").is_err());
        assert!(check("a {b} c").is_err());
        assert!(check("a } c").is_err());
        assert!(check(T).is_ok());
    }
}
