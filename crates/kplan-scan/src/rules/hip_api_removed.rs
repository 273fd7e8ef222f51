//! `hip-api-removed`: a HIP runtime name that HIP 6.0 removed or renamed (`hipDeviceProp_t`'s
//! `gcnArch`, the `hipDeviceAttributeGcnArch` family): the code no longer compiles against a
//! current ROCm, and the integer architecture it read could not name most targets.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "hip-api-removed",
    summary: "a HIP runtime name removed in HIP 6.0 (`hipDeviceProp_t::gcnArch`, `hipDeviceAttributeGcnArch`, ...)",
    what: "Finds the `gcnArch` member read from a device-properties struct (`prop.gcnArch`, `prop->gcnArch`) and the \
device-attribute enumerators HIP 6.0 renamed to `hipDeviceAttributeUnused*` (`hipDeviceAttributeGcnArch`, \
`hipDeviceAttributeGcnArchName`, `hipDeviceAttributeArch`, `hipDeviceAttributeName`, `hipDeviceAttributeUuid`).",
    why: "The HIP 6.0 changelog (ROCm/clr `CHANGELOG.md`, \"Deprecated And Removed\" and \"Changes Impacting \
Backward Compatibility\") removed the deprecated `gcnArch` from `hipDeviceProp_t` (only the legacy \
`hipDeviceProp_tR0000` keeps it) and renamed those attribute enumerators to `hipDeviceAttributeUnused1` to `5`: \
code that uses them fails to compile with ROCm 6.0 and later. The integer `gcnArch` could never spell a target \
with a letter or a feature in its name (`gfx90a`, `gfx942:sramecc+:xnack-`), so a name built as `\"gfx\" + gcnArch` \
is wrong on those GPUs even where it compiles. `gcnArchName` holds the full target name.",
    example: "std::string arch_of(int dev) {\n    hipDeviceProp_t p;\n    hipGetDeviceProperties(&p, dev);\n    return \"gfx\" + std::to_string(p.gcnArch);\n}",
    use_instead: "std::string arch_of(int dev) {\n    hipDeviceProp_t p;\n    hipGetDeviceProperties(&p, dev);\n    std::string name = p.gcnArchName;        // \"gfx90a:sramecc+:xnack-\"\n    return name.substr(0, name.find(':'));   // \"gfx90a\"\n}",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// The enumerators HIP 6.0 renamed to `hipDeviceAttributeUnused*`, with what to use instead.
fn renamed_attribute(w: &str) -> Option<&'static str> {
    Some(match w {
        "hipDeviceAttributeGcnArch" | "hipDeviceAttributeArch" => {
            "read `gcnArchName` from `hipGetDeviceProperties`"
        }
        "hipDeviceAttributeGcnArchName" => "read `gcnArchName` from `hipGetDeviceProperties`",
        "hipDeviceAttributeName" => "read `name` from `hipGetDeviceProperties`",
        "hipDeviceAttributeUuid" => "call `hipDeviceGetUuid`",
        _ => return None,
    })
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("gcnArch") || cx.has("hipDeviceAttribute")) {
        return;
    }
    // only code that uses HIP's runtime API
    if !(cx.has("hipDeviceProp")
        || cx.has("hipGetDevice")
        || cx.has("hip_runtime")
        || cx.has("hipDeviceAttribute"))
    {
        return;
    }
    let src = cx.src;
    // names declared as the legacy `hipDeviceProp_tR0000`, which keeps `gcnArch`
    let legacy: Vec<&str> = (0..src.toks.len().saturating_sub(1))
        .filter(|&i| src.s(i) == "hipDeviceProp_tR0000")
        .filter_map(|i| {
            let mut k = i + 1;
            while matches!(src.s(k), "*" | "&" | "const") {
                k += 1;
            }
            (src.kind(k) == Some(Tk::Ident)).then(|| src.s(k))
        })
        .collect();
    // a `.gcnArch` read is HIP's only where the file uses HIP's properties struct
    let has_props = cx.has("hipDeviceProp_t") || cx.has("cudaDeviceProp");
    // a struct of the project's own with a `gcnArch` field (`int gcnArch;`) is not HIP's
    let own_field = (1..src.toks.len().saturating_sub(1)).any(|i| {
        src.s(i) == "gcnArch"
            && src.kind(i - 1) == Some(Tk::Ident)
            && matches!(src.s(i + 1), ";" | "=" | "{")
    });
    let first = first_branches(src);
    let mut hits: Vec<(usize, String, &'static str)> = Vec::new();
    for i in 1..src.toks.len() {
        if src.kind(i) != Some(Tk::Ident) {
            continue;
        }
        let w = src.s(i);
        // code for older ROCm only (`#if HIP_VERSION_MAJOR < 6`) is the migration idiom
        if version_branch(src, &first, i) {
            continue;
        }
        if w == "gcnArch"
            && matches!(src.s(i - 1), "." | "->")
            && has_props
            && !own_field
            && !(i >= 2 && legacy.contains(&src.s(i - 2)))
        {
            let obj = if i >= 2 { src.s(i - 2) } else { "" };
            hits.push((
                i,
                format!("`{obj}{}gcnArch` was removed from `hipDeviceProp_t` in HIP 6.0, and the integer cannot name targets such as gfx90a", src.s(i - 1)),
                "read `gcnArchName` (\"gfx90a:sramecc+:xnack-\") and take the part before the first `:`",
            ));
        } else if let Some(instead) = renamed_attribute(w) {
            hits.push((
                i,
                format!("`{w}` was renamed to a `hipDeviceAttributeUnused*` enumerator in HIP 6.0: the code no longer compiles against current ROCm"),
                instead,
            ));
        }
    }
    for (i, msg, help) in hits {
        cx.report(&META, i, i, msg, help);
    }
}

/// Whether token `i` sits under a preprocessor condition on the HIP or ROCm version: its own
/// branch's or the first condition of its group, for each branch it is nested in (`first`: the
/// first branch of each group, from [`first_branches`]).
fn version_branch(src: &crate::lex::Src, first: &[u32], i: usize) -> bool {
    let Some(t) = src.toks.get(i) else {
        return false;
    };
    let names_version = |c: &str| {
        c.contains("HIP_VERSION") || c.contains("ROCM_VERSION") || c.contains("HIP_RUNTIME_VERSION")
    };
    src.ancestors(t.branch).any(|(_, br)| {
        let head = first
            .get(br.group as usize)
            .and_then(|&f| src.branches.get(f as usize))
            .unwrap_or(br);
        names_version(src.cond_text(br)) || names_version(src.cond_text(head))
    })
}

/// The first branch (`#if`) of every group, in one pass.
fn first_branches(src: &crate::lex::Src) -> Vec<u32> {
    let mut first = vec![0u32; src.groups.len()];
    for (bi, br) in src.branches.iter().enumerate().skip(1) {
        if !br.is_alternative {
            if let Some(slot) = first.get_mut(br.group as usize) {
                *slot = bi as u32;
            }
        }
    }
    first
}
