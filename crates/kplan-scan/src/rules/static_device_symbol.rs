//! `static-device-symbol`: a `static __device__` / `static __constant__` variable named in a
//! host symbol copy (`cudaMemcpyToSymbol` and friends): a note, since only older HIP compilers
//! and lookups by name fail on it.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::Tk;
use crate::rule::{Lang, RuleMeta, Scope};

pub static META: RuleMeta = RuleMeta {
    id: "static-device-symbol",
    summary: "`static __device__` variable used as a symbol in `cudaMemcpyToSymbol` and friends",
    what: "Finds variables declared `static __device__` or `static __constant__` (at file or namespace scope) \
whose name is passed as the symbol of a host API call: `cudaMemcpyToSymbol`, `cudaMemcpyFromSymbol`, their \
`Async` forms, `cudaGetSymbolAddress`, `cudaGetSymbolSize`, and the `hip` spellings.",
    why: "CUDA registers every device variable of a translation unit with its runtime, whatever its linkage. \
HIP finds the symbol in the code object: clang 12 and later (every ROCm 4.1+ hipcc) externalize a \
`static __device__` variable that host code references and register it under its mangled name, so the copy \
works there; HCC-based and older hipcc builds did not, and the copy failed with `hipErrorInvalidSymbol`. A \
lookup by a string name (`hipModuleGetGlobal`, `hipGetSymbolAddress` on a name) still sees the mangled \
internal name (`_ZL4flag`, with a `.static.<id>` suffix under `-fgpu-rdc`). External linkage is the portable \
spelling; the finding is a note.",
    example: "static __device__ int flag = 0;\n\nvoid reset(int* info) {\n    cudaMemcpyToSymbol(flag, info, sizeof(flag));\n}",
    use_instead: "__device__ int flag = 0;  // external linkage: HIP finds the symbol by name\n\nvoid reset(int* info) {\n    cudaMemcpyToSymbol(flag, info, sizeof(flag));\n}",
    severity: Severity::Note,
    scope: Scope::Amd,
    lang: Lang::Cuda,
    features: &[],
};

fn symbol_api(s: &str) -> bool {
    let t = s
        .strip_prefix("cuda")
        .or_else(|| s.strip_prefix("hip"))
        .unwrap_or("");
    matches!(
        t,
        "MemcpyToSymbol"
            | "MemcpyFromSymbol"
            | "MemcpyToSymbolAsync"
            | "MemcpyFromSymbolAsync"
            | "GetSymbolAddress"
            | "GetSymbolSize"
    )
}

pub fn check(cx: &mut Cx) {
    if !(cx.has("Symbol") && cx.has("static")) {
        return;
    }
    let src = cx.src;
    let n = src.toks.len();
    // static device variables at file or namespace scope: name -> declaration token
    let mut statics: Vec<(&str, usize)> = Vec::new();
    for i in 0..n {
        if !src.is(i, "static") || src.in_device(i) {
            continue;
        }
        let qual = (i + 1..n.min(i + 4)).any(|k| matches!(src.s(k), "__device__" | "__constant__"));
        if !qual {
            continue;
        }
        // the declared name: the identifier before `=`, `[`, `;` or `{`
        let Some(end) =
            (i + 1..n.min(i + 40)).find(|&k| matches!(src.s(k), "=" | "[" | ";" | "{" | "("))
        else {
            continue;
        };
        if src.is(end, "(") || end == 0 || src.kind(end - 1) != Some(Tk::Ident) {
            continue;
        }
        statics.push((src.s(end - 1), end - 1));
    }
    if statics.is_empty() {
        return;
    }
    let mut reported: Vec<usize> = Vec::new();
    for i in 0..n {
        if src.kind(i) != Some(Tk::Ident) || !symbol_api(src.s(i)) || !src.is(i + 1, "(") {
            continue;
        }
        let args = cx.call_args(i + 1);
        // the symbol: first argument of the copies to it, second of the copies from it and the
        // address and size queries
        let t = src.s(i);
        let at = if t.ends_with("MemcpyToSymbol") || t.ends_with("MemcpyToSymbolAsync") {
            0
        } else {
            1
        };
        let Some(&(a, b)) = args.get(at) else {
            continue;
        };
        // `flag`, `HIP_SYMBOL(flag)`, `&flag`
        let Some(name) = (a..=b)
            .rev()
            .find(|&k| src.kind(k) == Some(Tk::Ident))
            .map(|k| src.s(k))
        else {
            continue;
        };
        let Some(&(_, decl)) = statics.iter().find(|(s, _)| *s == name) else {
            continue;
        };
        if reported.contains(&decl) {
            continue;
        }
        reported.push(decl);
        let msg = format!(
            "`{name}` is declared `static` (internal linkage) and used as the symbol of `{t}`: hipcc before clang 12 (HCC, ROCm < 4.1) does not register it, so the copy fails there, and a lookup by name sees the mangled internal name; give it external linkage"
        );
        cx.report(&META, decl, decl, msg, "drop `static` from the device variable (or copy through a pointer from `cudaGetSymbolAddress` of a non-static one)");
    }
}
