//! Op knowledge text that a plan prints whatever its vendors (risks, algorithms, the latency
//! and tile hints, the CPU reference, libraries that run on every backend) names one vendor's
//! interconnects, instructions or APIs only inside a `{nvidia: … | amd: …}` group, so that an
//! AMD-only plan carries no NVLink or wgmma wording and an NVIDIA-only plan no xGMI or MFMA.
//! A risk whose `when` limits it to one vendor may use that vendor's words.

use kplan_kb::*;

/// Words that belong to one vendor, with that vendor.
const VENDOR_WORDS: &[(&str, &str)] = &[
    ("NVLink", "nvidia"),
    ("NVLS", "nvidia"),
    ("NVSwitch", "nvidia"),
    ("NVSHMEM", "nvidia"),
    ("cudaIpc", "nvidia"),
    ("multimem", "nvidia"),
    ("TMA", "nvidia"),
    ("wgmma", "nvidia"),
    ("mma.sp", "nvidia"),
    ("mma.sync", "nvidia"),
    ("tcgen05", "nvidia"),
    ("cp.async", "nvidia"),
    ("xGMI", "amd"),
    ("MFMA", "amd"),
    ("SWMMAC", "amd"),
    ("hipIpc", "amd"),
];

/// The text outside `{…}` groups.
fn outside_groups(s: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in s.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// Whether `word` stands in `text` as a word (not inside a longer one).
fn has_word(text: &str, word: &str) -> bool {
    let b = text.as_bytes();
    text.match_indices(word).any(|(i, _)| {
        let before = i == 0 || !(b[i - 1] as char).is_ascii_alphanumeric();
        let j = i + word.len();
        let after = j >= b.len() || !(b[j] as char).is_ascii_alphanumeric();
        before && after
    })
}

/// Whether a `when` condition limits the text to `vendor`'s targets.
fn limited_to(when: Option<&str>, vendor: &str) -> bool {
    let Some(w) = when else { return false };
    let words: &[&str] = match vendor {
        "nvidia" => &["nvidia"],
        _ => &["amd", "cdna", "rdna"],
    };
    words.iter().any(|v| has_word(w, v)) && !w.contains("||")
}

#[test]
fn vendor_words_in_op_knowledge_are_scoped() {
    let kb = Kb::builtin();
    let mut bad: Vec<String> = Vec::new();
    for op in &kb.ops {
        let mut texts: Vec<(String, &str, Option<&str>)> = vec![
            (
                format!("{}.latency_bound", op.id),
                op.latency_bound.as_str(),
                None,
            ),
            (format!("{}.tile_hint", op.id), op.tile_hint.as_str(), None),
        ];
        if let Some(c) = &op.cpu_reference {
            texts.push((format!("{}.cpu_reference", op.id), c, None));
        }
        for a in &op.algorithm {
            texts.push((
                format!("{} algorithm `{}`", op.id, a.name),
                a.name.as_str(),
                None,
            ));
            texts.push((
                format!("{} algorithm `{}` when", op.id, a.name),
                a.when.as_str(),
                None,
            ));
        }
        for r in &op.risk {
            for (f, t) in [
                ("title", &r.title),
                ("why", &r.why),
                ("mitigation", &r.mitigation),
            ] {
                texts.push((format!("risk {}.{f}", r.id), t.as_str(), r.when.as_deref()));
            }
        }
        for l in op.library.iter().filter(|l| l.vendor == "any") {
            texts.push((
                format!("{} library `{}` covers", op.id, l.name),
                l.covers.as_str(),
                None,
            ));
            if let Some(t) = &l.limit {
                texts.push((
                    format!("{} library `{}` limit", op.id, l.name),
                    t.as_str(),
                    None,
                ));
            }
        }
        for (place, text, when) in texts {
            let plain = outside_groups(text);
            for (w, vendor) in VENDOR_WORDS {
                if has_word(&plain, w) && !limited_to(when, vendor) {
                    bad.push(format!("{place}: `{w}` ({vendor}) outside a scope group"));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "vendor words outside `{{nvidia: … | amd: …}}` groups:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_lint_sees_a_vendor_word_and_skips_a_grouped_one() {
    assert!(has_word(
        &outside_groups("peer access over NVLink"),
        "NVLink"
    ));
    assert!(!has_word(
        &outside_groups("peer access over {nvidia: NVLink | amd: xGMI}"),
        "NVLink"
    ));
    assert!(!has_word("NVLinked", "NVLink"));
    assert!(limited_to(Some("amd && fp8"), "amd"));
    assert!(!limited_to(Some("amd || nvidia"), "amd"));
}
