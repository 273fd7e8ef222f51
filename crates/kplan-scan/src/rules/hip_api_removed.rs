//! `hip-api-removed`: a HIP runtime or ROCm library name that ROCm 6.0 to 7.1 removed or renamed
//! (`hipDeviceProp_t`'s `gcnArch`, the `hipDeviceAttributeGcnArch` family, hipBLAS's
//! `hipblasComplex`, rocBLAS's int8x4 layout, rocSPARSE's `*_stage_auto`, ...): the code no
//! longer compiles against a current ROCm.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "hip-api-removed",
    summary: "a HIP or ROCm library name removed in ROCm 6.0 to 7.1 (`hipDeviceProp_t::gcnArch`, `hipblasComplex`, ...)",
    what: "Finds the `gcnArch` member read from a device-properties struct (`prop.gcnArch`, `prop->gcnArch`) and the \
device-attribute enumerators HIP 6.0 renamed to `hipDeviceAttributeUnused*` (`hipDeviceAttributeGcnArch`, \
`hipDeviceAttributeGcnArchName`, `hipDeviceAttributeArch`, `hipDeviceAttributeName`, `hipDeviceAttributeUuid`), \
and uses of 59 names that ROCm libraries removed between ROCm 6.0 and 7.1 (`crates/kplan-scan/data/rocm-removed-api.tsv`, \
each with its source): hipBLAS 3.0's `hipblasComplex`, `hipblasDoubleComplex` and `hipblasDatatype_t` (ROCm 7.0), \
hipBLASLt's `hipblasLtComputeType_t` and removed descriptor attributes, rocBLAS's int8x4 layout, `rocblas_gemm_ext2` \
and `rocblas_gemm_ex3`, rocSPARSE's `*_stage_auto`, `rocsparse_spmm_ex` and `rocsparse_*bsrmv_ex`, \
`hipsparseLtDatatype_t`, rocRAND's Sobol tables, `ROCPRIM_WAVEFRONT_SIZE`, hipCUB's `AsmThreadLoad`, \
MIOpen's `miopenInt8x4`, RPP's old handle calls, and AMD SMI / ROCm SMI names. Code under a condition on the \
HIP or ROCm version is left alone, and so is a declaration of the name.",
    why: "The HIP 6.0 changelog (ROCm/clr `CHANGELOG.md`, \"Deprecated And Removed\" and \"Changes Impacting \
Backward Compatibility\") removed the deprecated `gcnArch` from `hipDeviceProp_t` (only the legacy \
`hipDeviceProp_tR0000` keeps it) and renamed those attribute enumerators to `hipDeviceAttributeUnused1` to `5`: \
code that uses them fails to compile with ROCm 6.0 and later. The integer `gcnArch` could never spell a target \
with a letter or a feature in its name (`gfx90a`, `gfx942:sramecc+:xnack-`), so a name built as `\"gfx\" + gcnArch` \
is wrong on those GPUs even where it compiles. `gcnArchName` holds the full target name. The library names come \
from the ROCm consolidated CHANGELOG, the libraries' `CHANGELOG.md` files, AMD's HIP 7.0 API changes page and \
header diffs between release tags (collected 2026-12-03; the data file names the source of each).",
    example: "std::string arch_of(int dev) {\n    hipDeviceProp_t p;\n    hipGetDeviceProperties(&p, dev);\n    return \"gfx\" + std::to_string(p.gcnArch);\n}",
    use_instead: "std::string arch_of(int dev) {\n    hipDeviceProp_t p;\n    hipGetDeviceProperties(&p, dev);\n    std::string name = p.gcnArchName;        // \"gfx90a:sramecc+:xnack-\"\n    return name.substr(0, name.find(':'));   // \"gfx90a\"\n}",
    severity: Severity::Error,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

/// Words before a name that make it no declaration (`return f(`, `case X:`, `sizeof(T)`), where
/// an identifier before a name otherwise reads as its type.
pub(crate) const NON_TYPE_WORDS: &[&str] = &[
    "const", "return", "case", "volatile", "typename", "sizeof", "new", "throw", "else", "ifdef",
    "ifndef", "defined", "if", "elif",
];

const REMOVED: &str = include_str!("../../data/rocm-removed-api.tsv");

/// A ROCm library name removed between ROCm 6.0 and 7.1: (library and version, ROCm release,
/// what to use instead).
fn removed_name(w: &str) -> Option<(&'static str, &'static str, &'static str)> {
    static T: std::sync::OnceLock<
        std::collections::HashMap<&'static str, (&'static str, &'static str, &'static str)>,
    > = std::sync::OnceLock::new();
    T.get_or_init(|| {
        REMOVED
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter_map(|l| {
                let mut it = l.split('\t');
                Some((it.next()?, (it.next()?, it.next()?, it.next()?)))
            })
            .collect()
    })
    .get(w)
    .copied()
}

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
    check_library_names(cx);
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

/// Uses of the ROCm library names of [`removed_name`].
fn check_library_names(cx: &mut Cx) {
    let pre = [
        "hip",
        "roc",
        "HIP",
        "ROC",
        "h_scrambled",
        "Asm",
        "TexRef",
        "miopen",
        "rpp",
        "amdsmi",
        "rsmi",
    ];
    if !pre.iter().any(|p| cx.has(p)) {
        return;
    }
    let src = cx.src;
    let mut first: Option<Vec<u32>> = None;
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut hits: Vec<(usize, String, String)> = Vec::new();
    for i in 0..src.toks.len() {
        if src.kind(i) != Some(Tk::Ident) {
            continue;
        }
        let w = src.s(i);
        let Some((lib, rocm, instead)) = removed_name(w) else {
            continue;
        };
        // a declaration (`rocblas_status rocblas_gemm_ext2(`, `struct AsmThreadLoad {`) or a
        // member is the library's own code or a project's shim, not a use
        let prev = if i > 0 { src.s(i - 1) } else { "" };
        let declared =
            i > 0 && src.kind(i - 1) == Some(Tk::Ident) && !NON_TYPE_WORDS.contains(&prev);
        if declared
            || matches!(prev, "." | "->" | "define" | "ifdef" | "ifndef" | "defined")
            || src.toks[i].flags & crate::lex::IN_DEFINE != 0 && prev == "define"
            || seen.contains(w)
            || cx.index.intrinsic_shims.contains(w)
        {
            continue;
        }
        let first = first.get_or_insert_with(|| first_branches(src));
        if version_branch(src, first, i) || feature_branch(src, first, i, w) {
            continue;
        }
        seen.insert(w);
        hits.push((
            i,
            format!("`{w}` was removed in {lib} (ROCm {rocm}): the code no longer compiles against ROCm {rocm} and later"),
            format!("use {instead}, or keep the old name under a ROCm version test (`#if HIP_VERSION_MAJOR < ...`)"),
        ));
    }
    for (i, msg, help) in hits {
        cx.report(&META, i, i, msg, &help);
    }
}

/// The names of [`removed_name`] that `text` declares or defines itself (a library's own
/// source, or a project's compatibility shim): `#define NAME`, `struct NAME`, `class NAME`,
/// `enum NAME`, `using NAME =`, a destructor `~NAME`, or a declaration `Type NAME`.
pub fn declared_removed(text: &str) -> Vec<String> {
    // one pass over the text for every name (an automaton, not one search per name)
    static AC: std::sync::OnceLock<(Vec<&'static str>, aho_corasick::AhoCorasick)> =
        std::sync::OnceLock::new();
    let (names, ac) = AC.get_or_init(|| {
        let names: Vec<&'static str> = REMOVED
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .filter_map(|l| l.split('\t').next())
            .collect();
        let ac = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(&names)
            .expect("removed-name automaton");
        (names, ac)
    });
    let b = text.as_bytes();
    let mut out: Vec<String> = Vec::new();
    for m in ac.find_iter(b) {
        let name = names[m.pattern().as_usize()];
        if out.iter().any(|o| o == name) {
            continue;
        }
        {
            let at = m.start();
            let end = at + name.len();
            let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
            if at > 0 && ident(b[at - 1]) || end < b.len() && ident(b[end]) {
                continue;
            }
            let before = text[..at].trim_end_matches([' ', '\t']);
            let word_start = before
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(0, |p| p + 1);
            let prev = &before[word_start..];
            // a function or function template defined under the name (`T AsmThreadLoad(`,
            // `T AsmThreadLoad<M>(`); a variable of the type (`hipblasDatatype_t v`) is a use
            let after = text[end..].trim_start();
            let defines_fn = after.starts_with('(') || after.starts_with('<');
            let declared = before.ends_with('~')
                || matches!(
                    prev,
                    "define" | "struct" | "class" | "enum" | "using" | "typedef"
                )
                || (defines_fn
                    && !prev.is_empty()
                    && !prev.as_bytes()[0].is_ascii_digit()
                    && !NON_TYPE_WORDS.contains(&prev));
            if declared {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// Whether token `i` sits under a condition that tests for `name` itself or for the library's
/// version or headers: `#ifdef name`, `#if defined(USE_ROCBLAS_GEMM_EX3)` for
/// `rocblas_gemm_ex3`, `__has_include(...)`, `hipblasVersionMajor`, `ROCBLAS_VERSION_MAJOR`.
fn feature_branch(src: &crate::lex::Src, first: &[u32], i: usize, name: &str) -> bool {
    let Some(t) = src.toks.get(i) else {
        return false;
    };
    let upper = name.to_ascii_uppercase();
    let tests = |c: &str| {
        c.contains(name)
            || c.contains(&upper)
            || c.contains("__has_include")
            || c.contains("VERSION")
            || c.contains("Version")
    };
    src.ancestors(t.branch).any(|(_, br)| {
        let head = first
            .get(br.group as usize)
            .and_then(|&f| src.branches.get(f as usize))
            .unwrap_or(br);
        tests(src.cond_text(br)) || tests(src.cond_text(head))
    })
}
