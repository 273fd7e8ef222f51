//! One pass per file: tokens (comments skipped; string/char literals kept as single tokens that
//! rules treat as data), preprocessor conditions as a tree of branches that know which platform
//! they are guarded for, brace depth, and the `__global__`/`__device__` function bodies each
//! token sits in. No allocation per token; never panics on any input.

use crate::diag::LineIndex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tk {
    Ident,
    Number,
    Punct,
    Str,
    Char,
}

/// Token flags.
pub const IN_DEFINE: u8 = 1;

#[derive(Debug, Clone, Copy)]
pub struct Token {
    pub kind: Tk,
    pub flags: u8,
    pub start: u32,
    pub end: u32,
    /// 0-based line.
    pub line: u32,
    /// Innermost preprocessor branch (index into `Src::branches`; 0 is the file itself).
    pub branch: u32,
    /// Function body the token sits in: 0 none, else index + 1 into `Src::funcs`.
    pub func: u32,
    /// Brace depth before the token.
    pub depth: u32,
}

/// Which platform a preprocessor branch is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// Not a platform test.
    Any,
    /// Only compiled for AMD (HIP on AMD, ROCm).
    Amd,
    /// Only compiled for NVIDIA (`__CUDA_ARCH__`, `!defined(USE_ROCM)`, ...).
    Nvidia,
}

#[derive(Debug, Clone, Copy)]
pub struct Branch {
    pub parent: u32,
    pub platform: Platform,
    /// `#if 0` and friends.
    pub dead: bool,
    pub group: u32,
    /// Whether this branch is an `#elif`/`#else` (not the first of its group).
    pub is_alternative: bool,
    /// Byte span of the directive that opens the branch (`#if ...`, `#elif ...`, `#else`).
    pub cond: (u32, u32),
    /// Warp width every device pass reaching the branch has: 64 when only wave64 AMD device
    /// passes reach it (`__gfx942__`, `__GFX9__`, `__AMDGCN_WAVEFRONT_SIZE == 64` in device
    /// code), 32 when only 32-lane ones do (`__GFX11__`, the `#else` of a wave64 test, shared
    /// with NVIDIA); 0 when the branch does not fix it.
    pub wave: u8,
    /// The condition selects matrix-core (MFMA) hardware: a CDNA architecture or a macro
    /// naming MFMA. Fragment layouts there are fixed by the instruction, not by the warp.
    pub mfma: bool,
    /// The compilation passes ([`pass`]) that reach the branch: its condition and every
    /// enclosing one may hold, and no earlier branch of its group certainly did.
    pub reach: u8,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Group {
    /// Whether the group has an `#elif`/`#else` (a fallback for the first branch).
    pub has_alternative: bool,
    /// Whether the first branch's condition was a platform test.
    pub platform_test: bool,
    /// Function body the `#if` sits in (0 none, else index + 1).
    pub func: u32,
    /// `#ifndef X` immediately followed by `#define X`.
    pub include_guard: bool,
    /// A condition of the group names AMD architectures (`__gfx942__`, `__GFX11__`) or the
    /// wavefront size: the group chooses per AMD architecture.
    pub names_amd_arch: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FnKind {
    Global,
    Device,
}

#[derive(Debug, Clone, Copy)]
pub struct Func {
    pub kind: FnKind,
    /// Token index of the function's name, when found.
    pub name: Option<u32>,
    /// Token index of the marker (`__global__`, `__device__`, a device macro).
    pub marker: u32,
    /// Token indices of the body's `{` and `}` (`close` = tokens.len() when unterminated).
    pub open: u32,
    pub close: u32,
}

/// A `#if`-family directive, recorded for rules about where platform tests sit.
#[derive(Debug, Clone, Copy)]
pub struct Directive {
    pub start: u32,
    pub end: u32,
    pub line: u32,
    pub platform: Platform,
    /// Whether the condition names a vendor platform macro (not only `__CUDA_ARCH__` levels).
    pub vendor_test: bool,
    /// Function body the directive sits in (0 none, else index + 1).
    pub func: u32,
}

/// An `#include` that is not in dead code: the byte span of the header's name (inside the
/// quotes or angle brackets) and the branch the directive sits in.
#[derive(Debug, Clone, Copy)]
pub struct Include {
    pub start: u32,
    pub end: u32,
    /// `<...>` rather than `"..."`.
    pub angled: bool,
    pub branch: u32,
}

/// A `#define`: name span and the token range of its body.
#[derive(Debug, Clone, Copy)]
pub struct Define {
    pub name_start: u32,
    pub name_end: u32,
    pub body: (u32, u32),
    pub branch: u32,
    pub function_like: bool,
}

/// The structure of one file.
pub struct Src<'a> {
    pub text: &'a str,
    pub toks: Vec<Token>,
    /// For `( [ {` and `) ] }` tokens: index of the matching token (u32::MAX when none).
    pub matching: Vec<u32>,
    pub branches: Vec<Branch>,
    pub groups: Vec<Group>,
    pub funcs: Vec<Func>,
    pub directives: Vec<Directive>,
    pub defines: Vec<Define>,
    /// The file includes HIP headers unconditionally and no CUDA header: it is compiled by
    /// HIP (hipcc) only.
    pub hip_only: bool,
    /// The live `#include`s, in file order.
    pub includes: Vec<Include>,
    /// Conditional directives without their partner (`#endif`/`#else`/`#elif` without `#if`,
    /// `#if` without `#endif`), in file order.
    pub unbalanced: Vec<Unbalanced>,
    pub lines: LineIndex<'a>,
}

/// What an unmatched conditional directive lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmatched {
    /// `#if`/`#ifdef`/`#ifndef` never closed by `#endif`.
    If,
    /// `#endif` with no open `#if`.
    Endif,
    /// `#else`/`#elif...` with no open `#if`.
    Else,
}

/// An unmatched conditional directive: its byte span and 0-based line.
#[derive(Debug, Clone, Copy)]
pub struct Unbalanced {
    pub kind: Unmatched,
    pub start: u32,
    pub end: u32,
    pub line: u32,
}

const NONE: u32 = u32::MAX;

impl<'a> Src<'a> {
    #[inline]
    pub fn s(&self, i: usize) -> &'a str {
        match self.toks.get(i) {
            Some(t) => self
                .text
                .get(t.start as usize..t.end as usize)
                .unwrap_or(""),
            None => "",
        }
    }
    #[inline]
    pub fn is(&self, i: usize, s: &str) -> bool {
        self.toks
            .get(i)
            .is_some_and(|t| (t.end - t.start) as usize == s.len())
            && self.s(i) == s
    }
    #[inline]
    pub fn kind(&self, i: usize) -> Option<Tk> {
        self.toks.get(i).map(|t| t.kind)
    }
    pub fn is_ident(&self, i: usize) -> bool {
        self.kind(i) == Some(Tk::Ident)
    }
    /// Matching bracket of token `i`.
    pub fn mate(&self, i: usize) -> Option<usize> {
        self.matching
            .get(i)
            .copied()
            .filter(|&m| m != NONE)
            .map(|m| m as usize)
    }
    /// Value of an integer literal token (suffixes and digit separators allowed).
    pub fn int(&self, i: usize) -> Option<u64> {
        if self.kind(i) != Some(Tk::Number) {
            return None;
        }
        parse_int(self.s(i))
    }
    pub fn func_of(&self, i: usize) -> Option<&Func> {
        let f = self.toks.get(i)?.func;
        if f == 0 {
            None
        } else {
            self.funcs.get(f as usize - 1)
        }
    }
    /// Whether token `i` is inside a `__global__`/`__device__` body (or a device macro body).
    pub fn in_device(&self, i: usize) -> bool {
        self.toks.get(i).is_some_and(|t| t.func != 0)
    }
    /// Innermost platform guard around token `i`.
    pub fn platform(&self, i: usize) -> Platform {
        match self.toks.get(i) {
            Some(t) => {
                let p = self.branch_platform(t.branch);
                // device function bodies generate code in the device passes only: a branch
                // both vendors' host passes reach may still be one vendor's device code
                // (`#ifndef __CUDA_ARCH__` around a device function is HIP's)
                if p == Platform::Any && t.func != 0 && t.branch != 0 {
                    if let Some(br) = self.branches.get(t.branch as usize) {
                        let d = br.reach & pass::DEV;
                        if d != 0 {
                            return reach_platform(d);
                        }
                    }
                }
                p
            }
            None => Platform::Any,
        }
    }
    pub fn branch_platform(&self, b: u32) -> Platform {
        branch_platform_in(&self.branches, b)
    }
    /// Branch `b` and the branches it is nested in, innermost first, each with its index (the
    /// file's root, branch 0, is not one of them).
    pub fn ancestors(&self, b: u32) -> impl Iterator<Item = (u32, &Branch)> + '_ {
        branch_chain(&self.branches, b)
    }
    /// Whether branch `b` is `anc` or lies inside it.
    pub fn within(&self, b: u32, anc: u32) -> bool {
        self.ancestors(b).any(|(k, _)| k == anc)
    }
    /// The text of branch `br`'s directive (`#if ...`, comments included).
    pub fn cond_text(&self, br: &Branch) -> &'a str {
        self.text
            .get(br.cond.0 as usize..br.cond.1 as usize)
            .unwrap_or("")
    }
    /// The code of branch `br`'s directive: its text before any comment, trimmed.
    pub fn cond_code(&self, br: &Branch) -> &'a str {
        let c = self.cond_text(br);
        let c = c.split("//").next().unwrap_or("");
        c.split("/*").next().unwrap_or("").trim()
    }
    /// Whether the file `#define`s `name` itself.
    pub fn defines_macro(&self, name: &str) -> bool {
        self.defines
            .iter()
            .any(|d| self.text.get(d.name_start as usize..d.name_end as usize) == Some(name))
    }
    /// Every identifier in the conditions of the file's `#if`-family directives, in file
    /// order, except the names the file `#define`s itself (its own switches, whatever they
    /// are called).
    pub fn cond_macros(&self) -> Vec<CondMacro<'a>> {
        let defined: std::collections::HashSet<&str> = self
            .defines
            .iter()
            .filter_map(|d| self.text.get(d.name_start as usize..d.name_end as usize))
            .collect();
        let mut out = Vec::new();
        for (bi, br) in self.branches.iter().enumerate().skip(1) {
            let s = br.cond.0 as usize;
            for (off, name, negated) in cond_idents(self.cond_text(br)) {
                if !defined.contains(name) {
                    out.push(CondMacro {
                        branch: bi,
                        start: s + off,
                        name,
                        negated,
                    });
                }
            }
        }
        out
    }
    /// Innermost platform-guarded branch around token `i`, with its group.
    pub fn platform_branch(&self, i: usize) -> Option<(&Branch, &Group)> {
        let (_, br) = self
            .ancestors(self.toks.get(i)?.branch)
            .find(|(_, br)| br.platform != Platform::Any)?;
        Some((br, self.groups.get(br.group as usize)?))
    }
    /// Whether token `i` sits inside a conditional branch other than an include guard.
    /// `with_fallback`: only count groups that have an `#elif`/`#else`.
    pub fn in_conditional(&self, i: usize, with_fallback: bool) -> bool {
        let Some(t) = self.toks.get(i) else {
            return false;
        };
        self.ancestors(t.branch).any(|(_, br)| {
            self.groups
                .get(br.group as usize)
                .is_some_and(|g| !g.include_guard && (!with_fallback || g.has_alternative))
        })
    }
    /// 0-based line of token `i`.
    pub fn line(&self, i: usize) -> u32 {
        self.toks.get(i).map(|t| t.line).unwrap_or(0)
    }
    pub fn span(&self, i: usize) -> (usize, usize) {
        self.toks
            .get(i)
            .map(|t| (t.start as usize, t.end as usize))
            .unwrap_or((0, 0))
    }
    /// Contents of a string literal token without quotes/prefix (raw strings too).
    pub fn str_body(&self, i: usize) -> &'a str {
        let s = self.s(i);
        if let Some(q) = s.find('"') {
            let inner = &s[q + 1..];
            let inner = inner.strip_suffix('"').unwrap_or(inner);
            if q > 0 && s[..q].ends_with('R') {
                // raw: delim( ... )delim
                if let (Some(o), Some(c)) = (inner.find('('), inner.rfind(')')) {
                    if o < c {
                        return &inner[o + 1..c];
                    }
                }
            }
            return inner;
        }
        s
    }
}

/// An identifier in a conditional directive's condition.
#[derive(Debug, Clone, Copy)]
pub struct CondMacro<'a> {
    /// The branch whose directive it is in.
    pub branch: usize,
    /// Byte offset in the file.
    pub start: usize,
    pub name: &'a str,
    /// A `!` precedes it (directly or as `!defined(...)`).
    pub negated: bool,
}

/// Branch `b` of `branches` and the branches it is nested in, innermost first, each with its
/// index; ends at the file's root (branch 0), an index out of range, or after 100,000 steps.
pub fn branch_chain(branches: &[Branch], mut b: u32) -> impl Iterator<Item = (u32, &Branch)> {
    let mut guard = 0;
    std::iter::from_fn(move || {
        if b == 0 || guard >= 100_000 {
            return None;
        }
        let br = branches.get(b as usize)?;
        let at = b;
        b = br.parent;
        guard += 1;
        Some((at, br))
    })
}

/// The platform of the innermost platform-guarded branch of `b`'s chain.
fn branch_platform_in(branches: &[Branch], b: u32) -> Platform {
    branch_chain(branches, b)
        .map(|(_, br)| br.platform)
        .find(|p| *p != Platform::Any)
        .unwrap_or(Platform::Any)
}

/// Identifiers of a directive's text with their byte offset and whether a `!` precedes them
/// (directly or as `!defined(...)`).
pub fn cond_idents(text: &str) -> Vec<(usize, &str, bool)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut bang = false;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            break;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let w = &text[s..i];
            if w == "defined" {
                continue;
            }
            out.push((s, w, bang));
            bang = false;
            continue;
        }
        if c == b'!' && b.get(i + 1) != Some(&b'=') {
            bang = true;
        } else if !matches!(c, b'(' | b' ' | b'\t' | b'\\' | b'\n' | b'\r') {
            bang = false;
        }
        i += 1;
    }
    out
}

/// Parses a C integer literal: decimal, hex, octal, binary; `'` separators; u/l suffixes.
pub fn parse_int(s: &str) -> Option<u64> {
    let s: String = s.chars().filter(|&c| c != '\'').collect();
    let lower = s.to_ascii_lowercase();
    let t = lower.trim_end_matches(['u', 'l', 'z']);
    if t.is_empty() {
        return None;
    }
    let (digits, radix) = if let Some(h) = t.strip_prefix("0x") {
        (h, 16)
    } else if let Some(b) = t.strip_prefix("0b") {
        (b, 2)
    } else if t.len() > 1 && t.starts_with('0') {
        (&t[1..], 8)
    } else {
        (t, 10)
    };
    if digits.is_empty() {
        return if radix == 8 { Some(0) } else { None };
    }
    u64::from_str_radix(digits, radix).ok()
}

#[inline]
fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$' || b >= 0x80
}
#[inline]
fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Identifiers that mark a device function, besides `__device__`/`__global__`: macros from
/// common CUDA libraries (`CUTLASS_DEVICE`, `CUTE_HOST_DEVICE`, `C10_HOST_DEVICE`, ...) are
/// recognised by shape: all caps, ending in `DEVICE`, `DEVICE_INLINE`, `DEVICE_FUNC` or
/// `DEVICE_FORCEINLINE`.
fn device_macro_shape(s: &str) -> bool {
    if s.len() < 7
        || !s
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        return false;
    }
    let t = s.trim_end_matches('_');
    t.ends_with("DEVICE")
        || t.ends_with("DEVICE_INLINE")
        || t.ends_with("DEVICE_FUNC")
        || t.ends_with("DEVICE_FORCEINLINE")
}

fn kernel_macro_shape(s: &str) -> bool {
    matches!(s, "CUTLASS_GLOBAL" | "__global__" | "KERNEL_GLOBAL")
}

/// Classifies a macro name appearing in an `#if` condition.
///
/// Which compiler defines what (checked with `-E -dM` on an empty file; the
/// `compiler_macros` test re-checks clang when it is installed):
/// - nvcc 13: `__CUDACC__`, `__NVCC__` in every pass, `__CUDA_ARCH__` in device passes only;
/// - clang CUDA (`-x cuda`): `__CUDA__`, `__NVPTX__` and `__CUDA_ARCH__` on the device,
///   `__CUDACC__` from its CUDA runtime wrapper header;
/// - clang-19 HIP (`-x hip`, what hipcc runs): `__HIP__`, `__HIPCC__`, `__AMDGCN__` and
///   `__AMDGCN_WAVEFRONT_SIZE` (64 in the host pass whatever the target) in both passes;
///   `__HIP_DEVICE_COMPILE__`, `__gfxNNNN__`, `__GFXN__` in device passes only; never
///   `__CUDACC__`, `__CUDA_ARCH__` or `__NVCC__`. `__HIP_PLATFORM_AMD__` comes from the HIP
///   headers.
///
/// So a `__CUDACC__` branch never compiles for AMD: it is an NVIDIA branch.
pub fn classify_macro(name: &str) -> Platform {
    match name {
        "__CUDACC__" | "__CUDA__" | "__NVPTX__" | "__CUDACC_DEBUG__" | "__CUDACC_EWP__"
        | "__CUDACC_RDC__" => return Platform::Nvidia,
        "__HIP_PLATFORM_NVIDIA__" | "__HIP_PLATFORM_NVCC__" | "__CUDA_ARCH__" | "__NVCC__" | "__NVCOMPILER" | "CUDA_VERSION"
        | "CUDART_VERSION" | "__CUDACC_VER_MAJOR__" | "__CUDACC_VER_MINOR__" | "__CUDA_ARCH_LIST__" | "__CUDA_ARCH_SPECIFIC__"
        | "__CUDA_ARCH_FAMILY_SPECIFIC__" | "__CUDACC_RTC__"
        // the kplan portability header's own backend switches (always defined, 0 or 1)
        | "KPLAN_BACKEND_CUDA" => return Platform::Nvidia,
        "__HIP_PLATFORM_AMD__" | "__HIP_PLATFORM_HCC__" | "__HIPCC__" | "__HIP__" | "__HIP_DEVICE_COMPILE__" | "__AMDGCN__"
        | "__AMDGPU__" | "__AMDGCN_WAVEFRONT_SIZE" | "__AMDGCN_WAVEFRONT_SIZE__" | "USE_ROCM" | "USE_HIP" | "__HIPCC_RTC__"
        | "HIP_VERSION" | "ROCM_VERSION" | "KPLAN_BACKEND_HIP" => return Platform::Amd,
        _ => {}
    }
    if name.starts_with("__CUDA_ARCH_FEAT_")
        || name.starts_with("CUTLASS_ARCH_")
        || name.starts_with("CUTE_ARCH_")
    {
        return Platform::Nvidia;
    }
    let lower = name.to_ascii_lowercase();
    if lower.starts_with("__gfx") && name.ends_with("__") {
        return Platform::Amd;
    }
    let upper = name.to_ascii_uppercase();
    // switches of the HIP headers (`HIP_DISABLE_WARP_SYNC_BUILTINS`, `HIP_ENABLE_...`) are
    // options, not a platform test: both platforms can see them defined or not
    if upper.starts_with("HIP_DISABLE_")
        || upper.starts_with("HIP_ENABLE_")
        || upper.starts_with("__HIP_DISABLE_")
        || upper.starts_with("__HIP_ENABLE_")
    {
        return Platform::Any;
    }
    if upper.contains("ROCM")
        || upper
            .split('_')
            .any(|c| c == "HIP" || c == "AMDGPU" || c == "AMDGCN" || c == "AMD")
    {
        if upper.contains("NVIDIA") || upper.contains("NVCC") {
            return Platform::Nvidia;
        }
        return Platform::Amd;
    }
    // a project switch that names NVIDIA (`KOKKOS_IMPL_ARCH_NVIDIA_GPU`, `USE_NVCC`)
    let words: Vec<&str> = upper.split('_').collect();
    if words
        .iter()
        .any(|c| matches!(*c, "NVIDIA" | "NVCC" | "NVPTX"))
        && !words.iter().any(|c| {
            matches!(
                *c,
                "NO" | "NOT" | "DISABLE" | "DISABLED" | "WITHOUT" | "SKIP"
            )
        })
    {
        return Platform::Nvidia;
    }
    Platform::Any
}

fn function_like_at(b: &[u8], k: usize) -> bool {
    b.get(k) == Some(&b'(')
}

/// [`classify_macro`], then feature macros this file defines under a platform test.
pub fn classify_local(name: &str, local: &Locals) -> Platform {
    match classify_macro(name) {
        Platform::Any => local
            .list
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, p)| *p)
            .or_else(|| local.env.and_then(|e| e.macros.get(name).copied()))
            .unwrap_or(Platform::Any),
        p => p,
    }
}

/// Platform facts from outside the file: macros the project defines under a platform test
/// in other headers, and `<P>_CUDA_*` switches that have a `<P>_HIP_*` sibling.
#[derive(Debug, Clone, Default)]
pub struct LexEnv {
    pub macros: std::collections::HashMap<String, Platform>,
}

/// Platform feature macros known while lexing one file: those it defines, then the project's.
#[derive(Debug, Default)]
pub struct Locals<'e> {
    pub list: Vec<(String, Platform)>,
    /// Object-like macros this file defines only inside branches of groups that choose by
    /// AMD architecture (`#if defined(__gfx1100__)` / `#define ARCH_RDNA3`), with the passes
    /// those branches reach: the macro is undefined in every other pass, whatever its name
    /// says (`None`: also defined elsewhere, so nothing is known).
    pub arch: std::collections::HashMap<String, Option<u8>>,
    pub env: Option<&'e LexEnv>,
}

/// `name` with its `CUDA` component replaced by `HIP` (`GGML_USE_CUDA` -> `GGML_USE_HIP`),
/// when it has one and some prefix: the name a project gives the other side of its switch.
pub fn hip_sibling(name: &str) -> Option<String> {
    let parts: Vec<&str> = name.split('_').collect();
    if parts.len() < 2 || parts.iter().filter(|p| !p.is_empty()).count() < 2 {
        return None;
    }
    let k = parts.iter().position(|p| *p == "CUDA")?;
    let mut v: Vec<&str> = parts.clone();
    v[k] = "HIP";
    Some(v.join("_"))
}

/// In-file `<P>_CUDA_*` switches with a `<P>_HIP_*` sibling among the identifiers of the
/// file's directives: NVIDIA branches.
fn sibling_switches(text: &str, out: &mut Vec<(String, Platform)>) {
    if memchr::memmem::find(text.as_bytes(), b"HIP").is_none()
        || memchr::memmem::find(text.as_bytes(), b"CUDA").is_none()
    {
        return;
    }
    let mut words: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for line in text.lines() {
        let t = line.trim_start();
        if !t.starts_with('#') {
            continue;
        }
        for w in t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if w.contains("CUDA") || w.contains("HIP") {
                words.insert(w);
            }
        }
    }
    for w in &words {
        if classify_macro(w) != Platform::Any {
            continue;
        }
        if let Some(sib) = hip_sibling(w) {
            if words.contains(sib.as_str()) && out.len() < 4096 {
                out.push((w.to_string(), Platform::Nvidia));
            }
        }
    }
}

/// The compilation passes a preprocessor condition is evaluated in, one bit each. A CUDA/HIP
/// source is compiled in a host pass and one device pass per target; what each defines follows
/// the real compilers (see [`classify_macro`]): nvcc and clang-CUDA (host, device with
/// `__CUDA_ARCH__`), clang-HIP / hipcc (host, a wave64 device pass such as gfx942, a wave32 one
/// such as gfx1100).
pub mod pass {
    /// nvcc / clang-CUDA host pass.
    pub const NV_HOST: u8 = 1;
    /// nvcc / clang-CUDA device pass (`__CUDA_ARCH__` defined).
    pub const NV_DEV: u8 = 2;
    /// clang-HIP host pass (`__AMDGCN_WAVEFRONT_SIZE` is 64 here whatever the target).
    pub const AMD_HOST: u8 = 4;
    /// clang-HIP device pass of a wave64 target (CDNA, GCN: `__GFX9__`).
    pub const AMD_DEV64: u8 = 8;
    /// clang-HIP device pass of a wave32 target (RDNA: `__GFX10__`, `__GFX11__`, `__GFX12__`).
    pub const AMD_DEV32: u8 = 16;
    pub const NV: u8 = NV_HOST | NV_DEV;
    pub const AMD: u8 = AMD_HOST | AMD_DEV64 | AMD_DEV32;
    pub const DEV: u8 = NV_DEV | AMD_DEV64 | AMD_DEV32;
    pub const ALL: u8 = NV | AMD;
    pub const LIST: [u8; 5] = [NV_HOST, NV_DEV, AMD_HOST, AMD_DEV64, AMD_DEV32];
}

/// A macro's state in one pass: not defined, defined (value known or not), or unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MacroState {
    Undef,
    Def(Option<i64>),
    Unknown,
}

/// What `name` is in pass `p` (one of [`pass::LIST`]).
fn macro_state(name: &str, p: u8, local: &Locals) -> MacroState {
    use pass::*;
    use MacroState::*;
    let nv = p & NV != 0;
    let amd = p & AMD != 0;
    let on = |cond: bool, v: MacroState| if cond { v } else { Undef };
    match name {
        // nvcc defines both in every pass; clang-CUDA `__CUDACC__` (runtime wrapper header)
        "__CUDACC__" | "__NVCC__" => return on(nv, Def(Some(1))),
        "__CUDA__"
        | "__NVPTX__"
        | "__CUDACC_DEBUG__"
        | "__CUDACC_EWP__"
        | "__CUDACC_RDC__"
        | "__CUDACC_RTC__"
        | "__NVCOMPILER"
        | "__HIP_PLATFORM_NVIDIA__"
        | "__HIP_PLATFORM_NVCC__" => return on(nv, Unknown),
        "__CUDA_ARCH__" | "__CUDA_ARCH_LIST__" => return on(p == NV_DEV, Def(None)),
        "__CUDA_ARCH_SPECIFIC__" | "__CUDA_ARCH_FAMILY_SPECIFIC__" => {
            return on(p == NV_DEV, Unknown)
        }
        "CUDA_VERSION"
        | "CUDART_VERSION"
        | "__CUDACC_VER_MAJOR__"
        | "__CUDACC_VER_MINOR__"
        | "__CUDACC_VER_BUILD__" => return on(nv, Def(None)),
        // clang-19 -x hip: both passes (`__AMDGCN__`/`__AMDGPU__` come from the aux target in
        // the host pass); `__HIP_PLATFORM_AMD__` from the HIP headers
        "__HIP__"
        | "__HIPCC__"
        | "__AMDGCN__"
        | "__AMDGPU__"
        | "__HIP_PLATFORM_AMD__"
        | "__HIP_PLATFORM_HCC__" => return on(amd, Def(Some(1))),
        "__HIPCC_RTC__" => return on(amd, Unknown),
        "__HIP_DEVICE_COMPILE__" => return on(p & (AMD_DEV64 | AMD_DEV32) != 0, Def(Some(1))),
        "__AMDGCN_WAVEFRONT_SIZE" | "__AMDGCN_WAVEFRONT_SIZE__" => {
            return match p {
                AMD_HOST | AMD_DEV64 => Def(Some(64)),
                AMD_DEV32 => Def(Some(32)),
                _ => Undef,
            }
        }
        "__clang__" => return if amd { Def(Some(1)) } else { Unknown },
        _ => {}
    }
    if name.starts_with("__CUDA_ARCH_FEAT_") {
        return on(p == NV_DEV, Unknown);
    }
    let w = arch_macro_wave(name);
    if w != 0 {
        // `__GFX9__` (every wave64 target HIP supports), `__GFX11__`, `__gfx942__`, ...
        let family9 = name == "__GFX9__";
        return match (w, p) {
            (64, AMD_DEV64) if family9 => Def(Some(1)),
            (64, AMD_DEV64) | (32, AMD_DEV32) => Unknown,
            _ => Undef,
        };
    }
    if let Some(Some(r)) = local.arch.get(name) {
        return if p & r == 0 { Undef } else { Unknown };
    }
    match classify_local(name, local) {
        Platform::Amd => on(amd, Def(None)),
        Platform::Nvidia => on(nv, Unknown),
        Platform::Any => Unknown,
    }
}

/// A condition evaluated in every pass: where it may hold and where it certainly holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CondEval {
    /// Passes where the condition may be true.
    pub possible: u8,
    /// Passes where it is certainly true.
    pub certain: u8,
    /// The condition names a vendor platform macro (not only `__CUDA_ARCH__` levels).
    pub vendor_test: bool,
    /// The condition is a constant (no macro in it): its value.
    pub constant: Option<bool>,
}

struct PassEval<'c> {
    toks: &'c [&'c str],
    pos: usize,
    p: u8,
    local: &'c Locals<'c>,
    names: bool,
    vendor: bool,
}

type PV = Option<i64>;

impl PassEval<'_> {
    fn peek(&self) -> &str {
        self.toks.get(self.pos).copied().unwrap_or("")
    }
    fn ternary(&mut self, d: u32) -> PV {
        let c = self.binary(0, d);
        if self.peek() != "?" {
            return c;
        }
        self.pos += 1;
        let a = self.ternary(d + 1);
        if self.peek() == ":" {
            self.pos += 1;
        }
        let b = self.ternary(d + 1);
        match c {
            Some(0) => b,
            Some(_) => a,
            None if a == b => a,
            None => None,
        }
    }
    fn prec(op: &str) -> Option<u8> {
        Some(match op {
            "||" => 1,
            "&&" => 2,
            "|" => 3,
            "^" => 4,
            "&" => 5,
            "==" | "!=" => 6,
            "<" | ">" | "<=" | ">=" => 7,
            "<<" | ">>" => 8,
            "+" | "-" => 9,
            "*" | "/" | "%" => 10,
            _ => return None,
        })
    }
    fn binary(&mut self, min: u8, d: u32) -> PV {
        let mut l = self.unary(d);
        loop {
            let op = self.peek().to_string();
            let Some(pr) = Self::prec(&op) else { break };
            if pr <= min {
                break;
            }
            self.pos += 1;
            let r = self.binary(pr, d + 1);
            l = match op.as_str() {
                "||" => match (l, r) {
                    (Some(a), _) if a != 0 => Some(1),
                    (_, Some(b)) if b != 0 => Some(1),
                    (Some(_), Some(_)) => Some(0),
                    _ => None,
                },
                "&&" => match (l, r) {
                    (Some(0), _) | (_, Some(0)) => Some(0),
                    (Some(_), Some(_)) => Some(1),
                    _ => None,
                },
                _ => match (l, r) {
                    (Some(a), Some(b)) => match op.as_str() {
                        "|" => Some(a | b),
                        "^" => Some(a ^ b),
                        "&" => Some(a & b),
                        "==" => Some(i64::from(a == b)),
                        "!=" => Some(i64::from(a != b)),
                        "<" => Some(i64::from(a < b)),
                        ">" => Some(i64::from(a > b)),
                        "<=" => Some(i64::from(a <= b)),
                        ">=" => Some(i64::from(a >= b)),
                        "<<" => u32::try_from(b).ok().and_then(|b| a.checked_shl(b)),
                        ">>" => u32::try_from(b).ok().and_then(|b| a.checked_shr(b)),
                        "+" => a.checked_add(b),
                        "-" => a.checked_sub(b),
                        "*" => a.checked_mul(b),
                        "/" => a.checked_div(b),
                        _ => a.checked_rem(b),
                    },
                    _ => None,
                },
            };
        }
        l
    }
    fn unary(&mut self, d: u32) -> PV {
        if d > 200 {
            self.pos = self.toks.len();
            return None;
        }
        let t = self.peek().to_string();
        self.pos += 1;
        match t.as_str() {
            "!" => self.unary(d + 1).map(|v| i64::from(v == 0)),
            "-" => self.unary(d + 1).map(|v| v.wrapping_neg()),
            "+" => self.unary(d + 1),
            "~" => self.unary(d + 1).map(|v| !v),
            "(" => {
                let v = self.ternary(d + 1);
                if self.peek() == ")" {
                    self.pos += 1;
                }
                v
            }
            "defined" => {
                let paren = self.peek() == "(";
                if paren {
                    self.pos += 1;
                }
                let name = self.peek().to_string();
                self.pos += 1;
                if paren && self.peek() == ")" {
                    self.pos += 1;
                }
                match self.name(&name) {
                    MacroState::Undef => Some(0),
                    MacroState::Def(_) => Some(1),
                    MacroState::Unknown => None,
                }
            }
            "" => None,
            _ => {
                let b = t.as_bytes()[0];
                if b.is_ascii_digit() {
                    return parse_int(&t).and_then(|v| i64::try_from(v).ok());
                }
                if !is_ident_start(b) {
                    return None;
                }
                if self.peek() == "(" {
                    // a function-like macro (`__has_builtin(x)`): its value is unknown
                    let mut depth = 0i32;
                    while self.pos < self.toks.len() {
                        let x = self.peek().to_string();
                        self.pos += 1;
                        if x == "(" {
                            depth += 1;
                        } else if x == ")" {
                            depth -= 1;
                            if depth <= 0 {
                                break;
                            }
                        }
                    }
                    self.names = true;
                    return None;
                }
                // `__CUDA_ARCH__` tested for truth alone (`#if !__CUDA_ARCH__`): wherever it is
                // defined it is an architecture number, never 0
                let truth_only = t == "__CUDA_ARCH__"
                    && (self.pos < 2
                        || matches!(
                            self.toks.get(self.pos - 2).copied(),
                            Some("!" | "(" | "&&" | "||" | "?" | ":" | "if" | "elif")
                        ))
                    && matches!(self.peek(), "" | ")" | "&&" | "||" | "?" | ":");
                match self.name(&t) {
                    MacroState::Undef => Some(0),
                    MacroState::Def(None) if truth_only => Some(1),
                    MacroState::Def(v) => v,
                    MacroState::Unknown => None,
                }
            }
        }
    }
    fn name(&mut self, n: &str) -> MacroState {
        self.names = true;
        let st = macro_state(n, self.p, self.local);
        if !self.vendor {
            let plat = classify_local(n, self.local);
            self.vendor = match plat {
                Platform::Amd => true,
                Platform::Nvidia => {
                    !n.starts_with("__CUDA_ARCH")
                        && !n.starts_with("CUTLASS_ARCH_")
                        && !n.starts_with("CUTE_ARCH_")
                }
                Platform::Any => false,
            };
        }
        st
    }
}

/// Evaluates an `#if`/`#elif` condition in every compilation pass.
pub fn eval_condition(cond: &str, local: &Locals) -> CondEval {
    let toks = cond_tokens(cond);
    let mut out = CondEval {
        possible: 0,
        certain: 0,
        vendor_test: false,
        constant: None,
    };
    let mut values: Vec<PV> = Vec::with_capacity(5);
    let mut names = false;
    for p in pass::LIST {
        let mut e = PassEval {
            toks: &toks,
            pos: 0,
            p,
            local,
            names: false,
            vendor: false,
        };
        let mut v = e.ternary(0);
        if e.pos < toks.len() {
            // trailing tokens the grammar does not know: unknown
            v = None;
        }
        names |= e.names;
        out.vendor_test |= e.vendor;
        match v {
            Some(0) => {}
            Some(_) => {
                out.possible |= p;
                out.certain |= p;
            }
            None => out.possible |= p,
        }
        values.push(v);
    }
    if !names && !toks.is_empty() {
        out.constant = match values.first().copied().flatten() {
            Some(0) => Some(false),
            Some(_) => Some(true),
            None => None,
        };
    }
    out
}

/// `#ifdef NAME` (`negate`: `#ifndef NAME`) evaluated in every pass.
pub fn eval_ifdef(name: &str, negate: bool, local: &Locals) -> CondEval {
    let mut out = CondEval {
        possible: 0,
        certain: 0,
        vendor_test: false,
        constant: None,
    };
    for p in pass::LIST {
        let def = match macro_state(name, p, local) {
            MacroState::Undef => Some(false),
            MacroState::Def(_) => Some(true),
            MacroState::Unknown => None,
        };
        match def.map(|d| d != negate) {
            Some(false) => {}
            Some(true) => {
                out.possible |= p;
                out.certain |= p;
            }
            None => out.possible |= p,
        }
    }
    out.vendor_test = match classify_local(name, local) {
        Platform::Amd => true,
        Platform::Nvidia => !name.starts_with("__CUDA_ARCH") && !name.starts_with("CUTLASS_ARCH_"),
        Platform::Any => false,
    };
    out
}

/// Whether a condition names an AMD architecture macro or the wavefront size.
fn names_arch_or_wave(cond: &str) -> bool {
    cond_tokens(cond)
        .iter()
        .any(|w| arch_macro_wave(w) != 0 || w.starts_with("__AMDGCN_WAVEFRONT_SIZE"))
}

/// Platform of a branch reached in `reach` (its own condition alone reaches `own`): in a
/// device function body only the device passes generate code.
fn own_platform(reach: u8, own: u8, in_func: bool) -> Platform {
    let r = if reach != 0 { reach } else { own };
    let r = if in_func && r & pass::DEV != 0 {
        r & pass::DEV
    } else {
        r
    };
    reach_platform(r)
}

/// The platform of code reached in the passes `reach`: AMD-only, NVIDIA-only or both.
pub fn reach_platform(reach: u8) -> Platform {
    let nv = reach & pass::NV != 0;
    let amd = reach & pass::AMD != 0;
    match (nv, amd) {
        (false, true) => Platform::Amd,
        (true, false) => Platform::Nvidia,
        _ => Platform::Any,
    }
}

/// The warp width fixed in every device pass of `reach` (0: not fixed, or no AMD pass): 64
/// when only wave64 AMD device passes reach it, 32 when only 32-lane ones do (wave32 AMD,
/// possibly with NVIDIA).
pub fn reach_wave(reach: u8) -> u8 {
    let dev = reach & pass::DEV;
    if dev == pass::AMD_DEV64 {
        64
    } else if dev & pass::AMD_DEV32 != 0 && dev & pass::AMD_DEV64 == 0 {
        32
    } else {
        0
    }
}

/// [`cond_tokens`] for the rules.
pub fn cond_tokens_pub(s: &str) -> Vec<&str> {
    cond_tokens(s)
}

/// Splits a directive condition into tokens (comments removed).
fn cond_tokens(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() || c == b'\\' {
            i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            break;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            match memchr::memmem::find(&b[i + 2..], b"*/") {
                Some(e) => i += e + 4,
                None => break,
            }
        } else if is_ident_byte(c) {
            let st = i;
            while i < b.len()
                && (is_ident_byte(b[i]) || (b[i] == b'\'' && st < i && b[st].is_ascii_digit()))
            {
                i += 1;
            }
            // the alternative tokens of C++ (`and`, `or`, `not`) are operators in `#if` too
            out.push(match &s[st..i] {
                "and" => "&&",
                "or" => "||",
                "not" => "!",
                "not_eq" => "!=",
                "bitand" => "&",
                "bitor" => "|",
                "xor" => "^",
                "compl" => "~",
                w => w,
            });
        } else {
            // compared as bytes: the next byte may start a multibyte character
            let two = b.get(i..i + 2).unwrap_or(b"");
            if matches!(
                two,
                b"&&" | b"||" | b"==" | b"!=" | b"<=" | b">=" | b"<<" | b">>"
            ) {
                out.push(&s[i..i + 2]);
                i += 2;
            } else {
                // `c` is ASCII here (bytes >= 0x80 are identifier bytes above)
                out.push(s.get(i..i + 1).unwrap_or(""));
                i += 1;
            }
        }
    }
    out
}

/// Platform of an `#if`/`#elif` condition, and whether it names a vendor macro.
pub fn classify_condition(cond: &str) -> (Platform, bool, Option<bool>) {
    classify_condition_with(cond, &Locals::default())
}

/// [`classify_condition`] knowing this file's platform feature macros.
pub fn classify_condition_with(cond: &str, local: &Locals) -> (Platform, bool, Option<bool>) {
    let e = eval_condition(cond, local);
    (reach_platform(e.possible), e.vendor_test, e.constant)
}

/// Wavefront width an AMD architecture macro fixes (`__gfx942__` 64, `__gfx1100__` and
/// `__GFX11__` 32: HIP compiles RDNA in wave32 unless told otherwise), 0 when it names none.
pub fn arch_macro_wave(name: &str) -> u8 {
    let l = name.to_ascii_lowercase();
    let Some(rest) = l.strip_prefix("__gfx") else {
        return 0;
    };
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    if digits.starts_with("10") || digits.starts_with("11") || digits.starts_with("12") {
        32
    } else if digits.starts_with('9') || digits.starts_with('8') || digits.starts_with('7') {
        64
    } else {
        0
    }
}

/// CDNA architectures with matrix cores (MFMA): gfx908, gfx90a, gfx94x, gfx950.
fn arch_macro_mfma(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    ["__gfx908", "__gfx90a", "__gfx94", "__gfx95"]
        .iter()
        .any(|p| l.starts_with(p))
        || l.contains("mfma")
}

/// Top-level `||` disjuncts of a condition's tokens.
fn disjuncts(cond: &str) -> Vec<Vec<&str>> {
    let mut depth = 0i32;
    let mut parts: Vec<Vec<&str>> = vec![Vec::new()];
    for t in cond_tokens(cond) {
        match t {
            "(" => depth += 1,
            ")" => depth -= 1,
            "||" if depth == 0 => {
                parts.push(Vec::new());
                continue;
            }
            _ => {}
        }
        if let Some(p) = parts.last_mut() {
            p.push(t);
        }
    }
    parts
}

/// Wavefront width an `#if`/`#elif` condition (already known to be AMD-only) fixes: every
/// disjunct names architectures of one width or compares `__AMDGCN_WAVEFRONT_SIZE` with it.
/// A negation anywhere makes the answer unknown (0).
pub fn cond_wave(cond: &str) -> u8 {
    let parts = disjuncts(cond);
    let mut out = 0u8;
    for p in &parts {
        if p.contains(&"!") || p.contains(&"!=") {
            return 0;
        }
        let mut w = 0u8;
        for (k, t) in p.iter().enumerate() {
            let tw = if t.starts_with("__AMDGCN_WAVEFRONT_SIZE") || *t == "warpSize" {
                match (p.get(k + 1), p.get(k + 2).and_then(|v| parse_int(v))) {
                    (Some(&"=="), Some(64)) => 64,
                    (Some(&"=="), Some(32)) => 32,
                    (Some(&">"), Some(32)) => 64,
                    _ => 0,
                }
            } else {
                arch_macro_wave(t)
            };
            if tw != 0 {
                if w != 0 && w != tw {
                    return 0;
                }
                w = tw;
            }
        }
        if w == 0 || (out != 0 && out != w) {
            return 0;
        }
        out = w;
    }
    out
}

/// Whether an AMD-only condition selects matrix-core hardware in every disjunct.
pub fn cond_mfma(cond: &str) -> bool {
    let parts = disjuncts(cond);
    !parts.is_empty()
        && parts
            .iter()
            .all(|p| !p.contains(&"!") && p.iter().any(|t| arch_macro_mfma(t)))
}

struct CondFrame {
    /// Span and line of the opening `#if`.
    open: (u32, u32, u32),
    group: u32,
    depth_at_if: u32,
    first_end_depth: Option<u32>,
    any_taken_const: bool,
    parent_branch: u32,
    /// Passes that reach the group (the enclosing branch's reach).
    parent_reach: u8,
    /// Passes where an earlier branch of the group is certainly taken: later ones never run
    /// there.
    taken: u8,
    /// Passes where the earlier branches' own conditions may hold.
    earlier: u8,
}

/// `cond` (the text after `#if`) is a disjunction one of whose top-level terms is a plain AMD
/// platform test: the branch is where AMD goes, together with some other case.
pub fn amd_disjunct(cond: &str) -> bool {
    amd_disjunct_with(cond, &Locals::default())
}

fn amd_disjunct_with(cond: &str, local: &Locals) -> bool {
    let toks = cond_tokens(cond);
    let mut depth = 0i32;
    let mut parts: Vec<Vec<&str>> = vec![Vec::new()];
    for t in toks {
        match t {
            "(" => depth += 1,
            ")" => depth -= 1,
            "||" if depth == 0 => {
                parts.push(Vec::new());
                continue;
            }
            _ => {}
        }
        if let Some(p) = parts.last_mut() {
            p.push(t);
        }
    }
    // a plain test: `defined(X)`, `defined X` or `X` with X an AMD platform macro, nothing else
    parts.len() > 1
        && parts.iter().any(|p| {
            let words: Vec<&&str> = p
                .iter()
                .filter(|t| !matches!(**t, "(" | ")" | "defined"))
                .collect();
            words.len() == 1 && classify_local(words[0], local) == Platform::Amd
        })
}

struct FnState {
    kind: Option<FnKind>,
    marker: u32,
    paren_base: u32,
    paren_seen: bool,
    eq_seen: bool,
    name: Option<u32>,
}

/// Lexes `text` into its structure. When an `#if` is never closed, the file is read again as if
/// that `#if` were not there (the most likely structure: the code after it is still scanned);
/// [`Src::unbalanced`] keeps the unmatched directives either way.
pub fn lex(text: &str) -> Src<'_> {
    lex_with(text, None)
}

/// [`lex`] knowing the project's platform macros ([`LexEnv`]).
pub fn lex_with<'a>(text: &'a str, env: Option<&LexEnv>) -> Src<'a> {
    let first = lex_ignoring(text, &[], env);
    let unclosed: Vec<u32> = first
        .unbalanced
        .iter()
        .filter(|u| u.kind == Unmatched::If)
        .map(|u| u.start)
        .collect();
    if unclosed.is_empty() {
        return first;
    }
    let mut second = lex_ignoring(text, &unclosed, env);
    second.unbalanced = first.unbalanced;
    second
}

/// [`lex`], reading the `#if`-family directives that start at the byte offsets in `ignore` as
/// if they were not there.
fn lex_ignoring<'t>(text: &'t str, ignore: &[u32], env: Option<&LexEnv>) -> Src<'t> {
    let b = text.as_bytes();
    let n = b.len();
    let mut toks: Vec<Token> = Vec::with_capacity(n / 5 + 16);
    let mut matching: Vec<u32> = Vec::with_capacity(n / 5 + 16);
    let mut branches = vec![Branch {
        parent: 0,
        platform: Platform::Any,
        dead: false,
        group: 0,
        is_alternative: false,
        cond: (0, 0),
        wave: 0,
        mfma: false,
        reach: pass::ALL,
    }];
    let mut groups = vec![Group::default()];
    let mut funcs: Vec<Func> = Vec::new();
    let mut directives: Vec<Directive> = Vec::new();
    let mut defines: Vec<Define> = Vec::new();
    let mut device_macros: Vec<(String, FnKind)> = Vec::new();
    let mut local_macros = Locals {
        list: Vec::new(),
        arch: std::collections::HashMap::new(),
        env,
    };
    sibling_switches(text, &mut local_macros.list);
    let mut last_ifndef: Option<(String, u32, usize)> = None;
    let mut includes: Vec<Include> = Vec::new();
    let mut hip_include = false;
    let mut cuda_include = false;

    let mut cond_stack: Vec<CondFrame> = Vec::new();
    let mut unbalanced: Vec<Unbalanced> = Vec::new();
    let mut branch: u32 = 0;
    let mut dead = false;
    let mut depth: u32 = 0;
    let mut bracket_stack: Vec<u32> = Vec::new();
    let mut paren_depth: u32 = 0;
    let mut cur_func: u32 = 0;
    let mut func_open_depth: u32 = 0;
    let mut fs = FnState {
        kind: None,
        marker: 0,
        paren_base: 0,
        paren_seen: false,
        eq_seen: false,
        name: None,
    };

    // define-body lexing state
    let mut directive_end: usize = 0; // when in a #define body: end byte of the directive
    let mut in_define = false;
    let mut define_brackets: Vec<u32> = Vec::new();
    let mut cur_define: Option<usize> = None;

    let mut line: u32 = 0;
    let mut line_start_only_ws = true;
    let mut i = 0usize;

    macro_rules! newline_at {
        ($pos:expr) => {{
            let _ = $pos;
            line += 1;
        }};
    }
    macro_rules! count_newlines {
        ($from:expr, $to:expr) => {{
            for p in memchr::memchr_iter(b'\n', &b[$from..$to]) {
                newline_at!($from + p);
            }
        }};
    }

    while i < n {
        // end of a #define body
        if in_define && i >= directive_end {
            in_define = false;
            if let Some(d) = cur_define.take() {
                if let Some(def) = defines.get_mut(d) {
                    def.body.1 = toks.len() as u32;
                }
            }
            for o in define_brackets.drain(..) {
                let _ = o;
            }
        }
        let c = b[i];
        if c == b'\n' {
            newline_at!(i);
            line_start_only_ws = true;
            i += 1;
            continue;
        }
        if c == b' ' || c == b'\t' || c == b'\r' || c == 0x0c || c == 0x0b {
            i += 1;
            continue;
        }
        if c == b'\\'
            && (b.get(i + 1) == Some(&b'\n')
                || (b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n')))
        {
            let nl = if b[i + 1] == b'\n' { i + 1 } else { i + 2 };
            newline_at!(nl);
            i = nl + 1;
            continue;
        }
        // comments
        if c == b'/' && i + 1 < n {
            if b[i + 1] == b'/' {
                let e = memchr::memchr(b'\n', &b[i..]).map(|p| i + p).unwrap_or(n);
                i = e;
                continue;
            }
            if b[i + 1] == b'*' {
                let e = memchr::memmem::find(&b[i + 2..], b"*/")
                    .map(|p| i + 2 + p + 2)
                    .unwrap_or(n);
                count_newlines!(i, e);
                i = e;
                continue;
            }
        }
        // preprocessor directive
        if c == b'#' && line_start_only_ws && !in_define {
            let dstart = i;
            // find the directive end: newline not preceded by a backslash
            let mut e = i;
            loop {
                match memchr::memchr(b'\n', &b[e..]) {
                    Some(p) => {
                        let nl = e + p;
                        let mut k = nl;
                        if k > 0 && b[k - 1] == b'\r' {
                            k -= 1;
                        }
                        if k > 0 && b[k - 1] == b'\\' {
                            e = nl + 1;
                            continue;
                        }
                        // a block comment opened on this line and closed later extends it
                        e = nl;
                        break;
                    }
                    None => {
                        e = n;
                        break;
                    }
                }
            }
            let dtext = &text[dstart + 1..e];
            let dtrim = dtext.trim_start_matches([' ', '\t']);
            let name_len = dtrim
                .bytes()
                .take_while(|&x| x.is_ascii_alphabetic())
                .count();
            let name = &dtrim[..name_len];
            let rest = &dtrim[name_len..];
            let ignored = !ignore.is_empty()
                && matches!(name, "if" | "ifdef" | "ifndef")
                && ignore.contains(&(dstart as u32));
            match name {
                _ if ignored => {}
                "if" | "ifdef" | "ifndef" => {
                    let ev = if name == "if" {
                        eval_condition(rest, &local_macros)
                    } else {
                        let m = cond_tokens(rest).first().copied().unwrap_or("");
                        eval_ifdef(m, name == "ifndef", &local_macros)
                    };
                    let constant = ev.constant;
                    let parent_reach = branches.get(branch as usize).map_or(pass::ALL, |b| b.reach);
                    let reach = parent_reach & ev.possible;
                    let in_func = cur_func != 0;
                    let plat = own_platform(reach, ev.possible, in_func);
                    let g = groups.len() as u32;
                    groups.push(Group {
                        has_alternative: false,
                        platform_test: reach_platform(ev.possible) != Platform::Any,
                        func: cur_func,
                        include_guard: false,
                        names_amd_arch: names_arch_or_wave(rest),
                    });
                    last_ifndef = if name == "ifndef" {
                        Some((
                            cond_tokens(rest).first().copied().unwrap_or("").to_string(),
                            g,
                            toks.len(),
                        ))
                    } else {
                        // `#if !defined(X)` followed by `#define X` is a guard too
                        match cond_tokens(rest).as_slice() {
                            ["!", "defined", "(", m, ")"] | ["!", "defined", m] => {
                                Some((m.to_string(), g, toks.len()))
                            }
                            _ => None,
                        }
                    };
                    let is_dead = constant == Some(false);
                    let nb = branches.len() as u32;
                    branches.push(Branch {
                        parent: branch,
                        platform: plat,
                        dead: is_dead,
                        group: g,
                        is_alternative: false,
                        cond: (dstart as u32, e as u32),
                        wave: reach_wave(reach),
                        mfma: plat == Platform::Amd && cond_mfma(rest),
                        reach,
                    });
                    directives.push(Directive {
                        start: dstart as u32,
                        end: e as u32,
                        line,
                        platform: reach_platform(ev.possible),
                        vendor_test: ev.vendor_test,
                        func: cur_func,
                    });
                    cond_stack.push(CondFrame {
                        open: (dstart as u32, e as u32, line),
                        group: g,
                        depth_at_if: depth,
                        first_end_depth: None,
                        any_taken_const: constant == Some(true),
                        parent_branch: branch,
                        parent_reach,
                        taken: ev.certain,
                        earlier: ev.possible,
                    });
                    branch = nb;
                }
                "elif" | "else" | "elifdef" | "elifndef" => {
                    if let Some(fr) = cond_stack.last_mut() {
                        if fr.first_end_depth.is_none() {
                            fr.first_end_depth = Some(depth);
                        }
                        depth = fr.depth_at_if;
                        if let Some(g) = groups.get_mut(fr.group as usize) {
                            g.has_alternative = true;
                            g.names_amd_arch |= name != "else" && names_arch_or_wave(rest);
                        }
                        let ev = match name {
                            "else" => CondEval {
                                possible: pass::ALL,
                                certain: pass::ALL,
                                vendor_test: false,
                                constant: Some(true),
                            },
                            "elif" => eval_condition(rest, &local_macros),
                            _ => {
                                let m = cond_tokens(rest).first().copied().unwrap_or("");
                                eval_ifdef(m, name == "elifndef", &local_macros)
                            }
                        };
                        let constant = ev.constant;
                        // the branch runs where no earlier branch of the group certainly did
                        let own = ev.possible & !fr.taken;
                        let reach = fr.parent_reach & own;
                        fr.taken |= ev.certain;
                        let mut plat = own_platform(reach, own, cur_func != 0);
                        // the other side of a vendor test (one the host pass evaluates, not a
                        // device-pass or architecture test): where both vendors may reach it
                        // (`#if defined(USE_ROCM) && ROCM_VERSION >= N` / `#else`), it is
                        // read as the other vendor's branch, as its author meant it
                        if plat == Platform::Any
                            && fr.earlier & (pass::AMD_HOST | pass::NV_HOST) != 0
                        {
                            if fr.earlier & !pass::AMD == 0 {
                                plat = Platform::Nvidia;
                            } else if fr.earlier & !pass::NV == 0 {
                                plat = Platform::Amd;
                            }
                        }
                        fr.earlier |= ev.possible;
                        let is_dead =
                            fr.any_taken_const || (constant == Some(false) && name != "else");
                        if constant == Some(true) && name != "else" {
                            fr.any_taken_const = true;
                        }
                        let nb = branches.len() as u32;
                        branches.push(Branch {
                            parent: fr.parent_branch,
                            platform: plat,
                            dead: is_dead,
                            group: fr.group,
                            is_alternative: true,
                            cond: (dstart as u32, e as u32),
                            wave: reach_wave(reach),
                            mfma: plat == Platform::Amd && name != "else" && cond_mfma(rest),
                            reach,
                        });
                        if name != "else" {
                            directives.push(Directive {
                                start: dstart as u32,
                                end: e as u32,
                                line,
                                platform: reach_platform(own),
                                vendor_test: ev.vendor_test,
                                func: cur_func,
                            });
                        }
                        branch = nb;
                    } else {
                        unbalanced.push(Unbalanced {
                            kind: Unmatched::Else,
                            start: dstart as u32,
                            end: e as u32,
                            line,
                        });
                    }
                }
                "endif" => {
                    if let Some(fr) = cond_stack.pop() {
                        if let Some(d) = fr.first_end_depth {
                            depth = d;
                        }
                        branch = fr.parent_branch;
                    } else {
                        unbalanced.push(Unbalanced {
                            kind: Unmatched::Endif,
                            start: dstart as u32,
                            end: e as u32,
                            line,
                        });
                    }
                }
                "define" if !dead => {
                    // record name and lex the body as tokens flagged IN_DEFINE
                    let after = dstart + 1 + (dtext.len() - rest.len());
                    let mut k = after;
                    while k < e && (b[k] == b' ' || b[k] == b'\t') {
                        k += 1;
                    }
                    let ns = k;
                    while k < e && is_ident_byte(b[k]) {
                        k += 1;
                    }
                    if k > ns {
                        let function_like = b.get(k) == Some(&b'(');
                        let mname = &text[ns..k];
                        let body = &text[k..e];
                        if let Some((g_name, g, ntok)) = last_ifndef.take() {
                            if g_name == mname && ntok == toks.len() {
                                if let Some(gr) = groups.get_mut(g as usize) {
                                    gr.include_guard = true;
                                    // a guard named like a platform (`FOO_HIP_H`) tests
                                    // nothing about the platform
                                    gr.platform_test = false;
                                }
                                let outer = cond_stack
                                    .last()
                                    .filter(|fr| fr.group == g)
                                    .map(|fr| fr.parent_reach);
                                if let (Some(br), Some(pr)) =
                                    (branches.get_mut(branch as usize), outer)
                                {
                                    if br.group == g {
                                        br.reach = pr;
                                        br.platform = reach_platform(pr);
                                        br.wave = 0;
                                        br.mfma = false;
                                    }
                                }
                                if let Some(fr) = cond_stack.last_mut() {
                                    if fr.group == g {
                                        fr.taken = 0;
                                        fr.earlier = 0;
                                    }
                                }
                                if let Some(d) = directives.last_mut() {
                                    d.platform = Platform::Any;
                                    d.vendor_test = false;
                                }
                            }
                        }
                        if !function_like {
                            // macros defined per AMD architecture (`#define ARCH_RDNA3` under
                            // `#if defined(__gfx1100__)`): defined in those passes only
                            let br = branches.get(branch as usize);
                            let by_arch = branch != 0
                                && br.is_some_and(|br| {
                                    groups
                                        .get(br.group as usize)
                                        .is_some_and(|g| g.names_amd_arch)
                                });
                            let reach = br.map(|br| br.reach).unwrap_or(pass::ALL);
                            match local_macros.arch.get_mut(mname) {
                                Some(ex) => {
                                    *ex = match (*ex, by_arch) {
                                        (Some(r), true) => Some(r | reach),
                                        _ => None,
                                    }
                                }
                                None => {
                                    local_macros
                                        .arch
                                        .insert(mname.to_string(), by_arch.then_some(reach));
                                }
                            }
                        }
                        {
                            // feature macros defined under a platform test (`#define MMA_AVAILABLE`)
                            let p = branch_platform_in(&branches, branch);
                            if let Some(ex) = local_macros.list.iter_mut().find(|(n, _)| n == mname)
                            {
                                // defined under more than one platform: not a platform test
                                if ex.1 != p {
                                    ex.1 = Platform::Any;
                                }
                            } else if p != Platform::Any
                                && !function_like_at(b, k)
                                && local_macros.list.len() < 4096
                            {
                                local_macros.list.push((mname.to_string(), p));
                            }
                        }
                        if body.contains("__global__") {
                            device_macros.push((mname.to_string(), FnKind::Global));
                        } else if body.contains("__device__") {
                            device_macros.push((mname.to_string(), FnKind::Device));
                        }
                        let body_start_tok = toks.len() as u32;
                        defines.push(Define {
                            name_start: ns as u32,
                            name_end: k as u32,
                            body: (body_start_tok, body_start_tok),
                            branch,
                            function_like,
                        });
                        cur_define = Some(defines.len() - 1);
                        in_define = true;
                        directive_end = e;
                        count_newlines!(dstart, k);
                        i = k;
                        line_start_only_ws = false;
                        continue;
                    }
                }
                "include" if !dead => {
                    // every live include, with the branch it sits in
                    let name_at = rest.len() - rest.trim_start().len();
                    let inc_text = rest.trim();
                    let open_at = dstart + 1 + (dtext.len() - dtrim.len()) + name_len + name_at;
                    if let Some(close) = inc_text
                        .get(1..)
                        .and_then(|t| t.find(['>', '"']))
                        .filter(|_| inc_text.starts_with(['<', '"']))
                    {
                        includes.push(Include {
                            start: (open_at + 1) as u32,
                            end: (open_at + 1 + close) as u32,
                            angled: inc_text.starts_with('<'),
                            branch,
                        });
                    }
                    // unconditional includes (outside any branch but the include guard)
                    let unconditional = branch_chain(&branches, branch).all(|(_, br)| {
                        groups
                            .get(br.group as usize)
                            .is_some_and(|g| g.include_guard)
                    });
                    if unconditional {
                        let inc = rest.trim().trim_start_matches(['<', '"']);
                        if inc.starts_with("hip/") || inc.starts_with("hipcub/") {
                            hip_include = true;
                        } else if inc.starts_with("cuda") || inc.starts_with("cub/") {
                            cuda_include = true;
                        }
                    }
                }
                _ => {}
            }
            dead = branches.get(branch as usize).is_some_and(|br| br.dead)
                || branch_chain(&branches, branch).any(|(_, br)| br.dead);
            count_newlines!(dstart, e);
            i = e;
            continue;
        }
        line_start_only_ws = false;

        // token
        let start = i;
        let kind;
        if is_ident_start(c) {
            let mut k = i + 1;
            while k < n && is_ident_byte(b[k]) {
                k += 1;
            }
            let word = &b[i..k];
            // string prefixes and raw strings
            if k < n && b[k] == b'"' && matches!(word, b"R" | b"u8R" | b"LR" | b"uR" | b"UR") {
                let q = k + 1;
                let open = memchr::memchr(b'(', &b[q..n.min(q + 20)]).map(|p| q + p);
                match open {
                    Some(o) => {
                        let delim = &b[q..o];
                        let mut pat = Vec::with_capacity(delim.len() + 2);
                        pat.push(b')');
                        pat.extend_from_slice(delim);
                        pat.push(b'"');
                        let e = memchr::memmem::find(&b[o + 1..], &pat)
                            .map(|p| o + 1 + p + pat.len())
                            .unwrap_or(n);
                        count_newlines!(i, e);
                        i = e;
                    }
                    None => {
                        i = skip_string(b, k);
                    }
                }
                kind = Tk::Str;
            } else if k < n && b[k] == b'"' && matches!(word, b"u8" | b"L" | b"u" | b"U") {
                i = skip_string(b, k);
                kind = Tk::Str;
            } else if k < n && b[k] == b'\'' && matches!(word, b"u8" | b"L" | b"u" | b"U") {
                i = skip_char(b, k);
                kind = Tk::Char;
            } else {
                i = k;
                kind = Tk::Ident;
            }
        } else if c.is_ascii_digit()
            || (c == b'.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let mut k = i + 1;
            while k < n {
                let x = b[k];
                let exponent_sign =
                    (x == b'+' || x == b'-') && matches!(b[k - 1], b'e' | b'E' | b'p' | b'P');
                let separator = x == b'\'' && k + 1 < n && b[k + 1].is_ascii_alphanumeric();
                if is_ident_byte(x) || x == b'.' || exponent_sign || separator {
                    k += 1;
                } else {
                    break;
                }
            }
            i = k;
            kind = Tk::Number;
        } else if c == b'"' {
            i = skip_string(b, i);
            kind = Tk::Str;
        } else if c == b'\'' {
            i = skip_char(b, i);
            kind = Tk::Char;
        } else {
            let rest = &b[i..n.min(i + 3)];
            let len = if rest.starts_with(b"<<<")
                || rest.starts_with(b">>>")
                || rest.starts_with(b">>=")
                || rest.starts_with(b"<<=")
                || rest.starts_with(b"...")
            {
                3
            } else if rest.len() >= 2
                && matches!(
                    &rest[..2],
                    b"::"
                        | b"->"
                        | b"<<"
                        | b">>"
                        | b"=="
                        | b"!="
                        | b"<="
                        | b">="
                        | b"&&"
                        | b"||"
                        | b"+="
                        | b"-="
                        | b"*="
                        | b"/="
                        | b"%="
                        | b"&="
                        | b"|="
                        | b"^="
                        | b"++"
                        | b"--"
                        | b"##"
                )
            {
                2
            } else if c >= 0x80 {
                text[i..].chars().next().map(char::len_utf8).unwrap_or(1)
            } else {
                1
            };
            i += len;
            kind = Tk::Punct;
        }
        if kind == Tk::Str || kind == Tk::Char {
            // escaped newlines and raw strings span lines
            if memchr::memchr(b'\n', &b[start..i]).is_some()
                && !(kind == Tk::Str && text[start..i].contains("R\""))
            {
                count_newlines!(start, i);
            }
        }
        if dead {
            continue;
        }
        let idx = toks.len() as u32;
        let flags = if in_define { IN_DEFINE } else { 0 };
        toks.push(Token {
            kind,
            flags,
            start: start as u32,
            end: i as u32,
            line,
            branch,
            func: if in_define { 0 } else { cur_func },
            depth,
        });
        matching.push(NONE);

        if kind != Tk::Punct && kind != Tk::Ident {
            continue;
        }
        let tb = &b[start..i];
        if in_define {
            match tb {
                b"(" | b"[" | b"{" => define_brackets.push(idx),
                b")" | b"]" | b"}" => {
                    if let Some(o) = define_brackets.pop() {
                        matching[o as usize] = idx;
                        matching[idx as usize] = o;
                    }
                }
                _ => {}
            }
            continue;
        }
        if kind == Tk::Ident {
            if cur_func == 0 {
                let w = &text[start..i];
                let k = if w == "__global__" || kernel_macro_shape(w) {
                    Some(FnKind::Global)
                } else if w == "__device__" || device_macro_shape(w) {
                    Some(FnKind::Device)
                } else {
                    device_macros.iter().find(|(m, _)| m == w).map(|(_, k)| *k)
                };
                if let Some(k) = k {
                    let kind = match (fs.kind, k) {
                        (Some(FnKind::Global), _) | (_, FnKind::Global) => FnKind::Global,
                        _ => FnKind::Device,
                    };
                    if fs.kind.is_none() {
                        fs = FnState {
                            kind: Some(kind),
                            marker: idx,
                            paren_base: paren_depth,
                            paren_seen: false,
                            eq_seen: false,
                            name: None,
                        };
                    } else {
                        fs.kind = Some(kind);
                    }
                } else if fs.kind.is_some()
                    && !fs.paren_seen
                    && paren_depth == fs.paren_base
                    && w != "__launch_bounds__"
                    && !w.starts_with("__")
                {
                    fs.name = Some(idx);
                }
            }
            continue;
        }
        match tb {
            b"(" | b"[" => {
                bracket_stack.push(idx);
                if tb == b"(" {
                    paren_depth += 1;
                }
            }
            b")" | b"]" => {
                let mut attr = false;
                if let Some(&o) = bracket_stack.last() {
                    let ob = b[toks[o as usize].start as usize];
                    if (ob == b'(' && tb == b")") || (ob == b'[' && tb == b"]") {
                        bracket_stack.pop();
                        matching[o as usize] = idx;
                        matching[idx as usize] = o;
                        if o > 0 {
                            let p = toks[o as usize - 1];
                            attr = p.kind == Tk::Ident
                                && matches!(
                                    &b[p.start as usize..p.end as usize],
                                    b"__launch_bounds__"
                                        | b"__attribute__"
                                        | b"__align__"
                                        | b"alignas"
                                        | b"__declspec"
                                        | b"__cluster_dims__"
                                        | b"__maxnreg__"
                                        | b"__grid_constant__"
                                        | b"decltype"
                                );
                        }
                    }
                }
                if tb == b")" {
                    paren_depth = paren_depth.saturating_sub(1);
                    if fs.kind.is_some() && paren_depth == fs.paren_base && !attr {
                        fs.paren_seen = true;
                    }
                }
            }
            b"{" => {
                // unmatched ( or [ before a brace: drop them (macro soup, broken code)
                while let Some(&o) = bracket_stack.last() {
                    if b[toks[o as usize].start as usize] == b'{' {
                        break;
                    }
                    bracket_stack.pop();
                    if b[toks[o as usize].start as usize] == b'(' {
                        paren_depth = paren_depth.saturating_sub(1);
                    }
                }
                bracket_stack.push(idx);
                if cur_func == 0 && fs.kind.is_some() {
                    if fs.paren_seen && !fs.eq_seen && paren_depth == fs.paren_base {
                        funcs.push(Func {
                            kind: fs.kind.unwrap_or(FnKind::Device),
                            name: fs.name,
                            marker: fs.marker,
                            open: idx,
                            close: NONE,
                        });
                        cur_func = funcs.len() as u32;
                        func_open_depth = depth;
                        if let Some(t) = toks.last_mut() {
                            t.func = cur_func;
                        }
                    }
                    fs.kind = None;
                }
                depth = depth.saturating_add(1);
            }
            b"}" => {
                while let Some(&o) = bracket_stack.last() {
                    let ob = b[toks[o as usize].start as usize];
                    bracket_stack.pop();
                    if ob == b'{' {
                        matching[o as usize] = idx;
                        matching[idx as usize] = o;
                        break;
                    }
                    if ob == b'(' {
                        paren_depth = paren_depth.saturating_sub(1);
                    }
                }
                depth = depth.saturating_sub(1);
                if cur_func != 0 && depth <= func_open_depth {
                    if let Some(f) = funcs.get_mut(cur_func as usize - 1) {
                        f.close = idx;
                    }
                    cur_func = 0;
                }
            }
            b";" if fs.kind.is_some() && paren_depth <= fs.paren_base => {
                fs.kind = None;
            }
            b"=" if fs.kind.is_some()
                && paren_depth == fs.paren_base
                && !(idx > 0
                    && toks[idx as usize - 1].kind == Tk::Ident
                    && &b[toks[idx as usize - 1].start as usize
                        ..toks[idx as usize - 1].end as usize]
                        == b"operator") =>
            {
                fs.eq_seen = true;
            }
            _ => {}
        }
    }
    if let Some(d) = cur_define.take() {
        if let Some(def) = defines.get_mut(d) {
            def.body.1 = toks.len() as u32;
        }
    }
    for fr in &cond_stack {
        unbalanced.push(Unbalanced {
            kind: Unmatched::If,
            start: fr.open.0,
            end: fr.open.1,
            line: fr.open.2,
        });
    }
    unbalanced.sort_by_key(|u| u.start);
    let ntok = toks.len() as u32;
    for f in funcs.iter_mut() {
        if f.close == NONE {
            f.close = ntok;
        }
    }
    Src {
        text,
        toks,
        matching,
        branches,
        groups,
        funcs,
        directives,
        defines,
        hip_only: hip_include && !cuda_include,
        includes,
        unbalanced,
        lines: LineIndex::new(text),
    }
}

fn skip_string(b: &[u8], q: usize) -> usize {
    let n = b.len();
    let mut k = q + 1;
    while k < n {
        match memchr::memchr3(b'"', b'\\', b'\n', &b[k..]) {
            Some(p) => {
                let j = k + p;
                match b[j] {
                    b'"' => return j + 1,
                    b'\\' => k = j + 2,
                    _ => return j, // unterminated at end of line
                }
            }
            None => return n,
        }
    }
    n.min(k)
}

fn skip_char(b: &[u8], q: usize) -> usize {
    let n = b.len();
    let mut k = q + 1;
    let lim = n.min(q + 12);
    while k < lim {
        match b[k] {
            b'\'' => return k + 1,
            b'\\' if b.get(k + 1) == Some(&b'\n') => return k + 1,
            b'\\' => k += 2,
            b'\n' => return k,
            _ => k += 1,
        }
    }
    // not a char literal after all (a stray quote): take the quote alone
    q + 1
}
