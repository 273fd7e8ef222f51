//! The project index: one cheap line-level pass over every C++/CUDA/HIP file of a scan,
//! before the rules, collecting what rules need to know across files: macros and integer
//! constants (with the preprocessor branch they are defined in), names that stand for the
//! device-only warp width, feature macros defined under a platform test, `<P>_CUDA_*`
//! switches with a `<P>_HIP_*` sibling, wrappers around ballot/active-mask intrinsics (with
//! their return width) and the includes of each file.
//!
//! A file scanned alone builds the index of that file only ([`ProjectIndex::of_text`]).
//! Building is linear in the input and runs in parallel over files.

use crate::lex::{
    eval_condition, eval_ifdef, hip_sibling, pass, reach_platform, CondEval, LexEnv, Locals,
    Platform,
};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// An integer constant (`#define N 32`, `constexpr int N = 32;`, `enum { N = 32 }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstDef {
    pub value: u64,
    /// Platform of the branch the definition sits in.
    pub platform: Platform,
    /// The definition is chosen by a macro only the device pass defines
    /// (`__HIP_DEVICE_COMPILE__`, `__GFX9__`, `__gfx942__`, `__AMDGCN_WAVEFRONT_SIZE`,
    /// `__CUDA_ARCH__`): the host pass sees another value.
    pub device_only: bool,
    /// File the definition is in.
    pub file: PathBuf,
}

/// What the whole project defines.
#[derive(Debug, Default)]
pub struct ProjectIndex {
    /// Platform feature macros and platform switches, for the structure pass.
    pub env: LexEnv,
    /// Integer constants by name (every definition seen).
    pub consts: HashMap<String, Vec<ConstDef>>,
    /// Names defined as the device-only warp width (`#define WS warpSize`,
    /// `constexpr int W = __AMDGCN_WAVEFRONT_SIZE;`) or chosen by a device-only macro.
    pub device_warp: HashMap<String, PathBuf>,
    /// Functions or macros whose body returns a ballot / active mask, with the width of
    /// the declared return type (32 or 64; 0 unknown).
    pub ballot_wrappers: HashMap<String, u8>,
    /// Files compiled by HIP only, by their includes or by the files that include them
    /// ([`hip_only_files`]).
    pub hip_only: HashSet<PathBuf>,
    /// Macros that stand for a warp intrinsic (`SHFL` -> `__shfl`, `BALLOT` -> `__ballot`),
    /// from any file of the scan; the first definition met wins.
    pub intrinsic_aliases: HashMap<String, String>,
    /// Names given as a shuffle's logical width somewhere in the project (`int width =
    /// WARP_SIZE`, `width = kLanes`): a 32 there is a logical 32-lane warp on purpose.
    pub logical_widths: HashSet<String>,
    /// Names that mention the warp or wavefront (`kWarpSize`, `warp_size`) declared anywhere in
    /// the scan: a macro, constant, variable, member, parameter or function of that name. A
    /// warp-width name outside this set is defined in files the scan does not see.
    pub warp_decls: HashSet<String>,
    /// `name = other` definitions whose value is one warp-named identifier (`constexpr int
    /// kLanes = kWarpSize;`), name -> other; the first definition met wins.
    pub alias_of: HashMap<String, String>,
    /// CUDA intrinsics and API names HIP does not have, and removed ROCm names, that a file of
    /// the scan defines or declares itself (a shim, or the library's own source)
    /// (`#define __trap() abort()`): calls of them compile on AMD.
    pub intrinsic_shims: HashSet<String>,
    /// A file of the scan maps CUDA runtime names to HIP ones (`#define cudaMalloc hipMalloc`):
    /// the project compiles its CUDA spellings with HIP as written, not through hipify.
    pub cuda_to_hip_shim: bool,
    /// The last one, two and three components of every indexed file's path (`nvtx3/nvtx3.hpp`):
    /// an `#include <...>` of one of them is the project's own header.
    pub header_tails: HashSet<String>,
    /// Number of files indexed.
    pub files: usize,
    /// Predicate functions the scan's Python files define at module level (`def is_hip():`,
    /// `def check_shared_mem(...)`): a bare use of the name in a condition is always true.
    pub py_predicates: HashSet<String>,
}

/// Whether a Python function name reads as a yes/no question (`is_hip`, `has_fp8`,
/// `check_shared_mem`, `supports_tma`).
pub fn predicate_name(name: &str) -> bool {
    [
        "is_",
        "has_",
        "check_",
        "supports_",
        "can_",
        "use_",
        "should_",
        "_is_",
        "_has_",
    ]
    .iter()
    .any(|p| name.starts_with(p) && name.len() > p.len())
}

/// Module-level predicate `def`s of a Python file.
fn py_predicates(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let rest = line
            .strip_prefix("def ")
            .or_else(|| line.strip_prefix("async def "));
        let Some(rest) = rest else { continue };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if predicate_name(&name) && out.len() < 1024 {
            out.push(name);
        }
    }
    out
}

/// Macros only a device compilation pass defines.
pub fn device_only_macro(w: &str) -> bool {
    w == "__HIP_DEVICE_COMPILE__"
        || w.starts_with("__AMDGCN_WAVEFRONT_SIZE")
        || w == "__CUDA_ARCH__"
        || crate::lex::arch_macro_wave(w) != 0
}

#[derive(Default)]
struct FileIndex {
    platform_macros: Vec<(String, Platform)>,
    switch_words: Vec<String>,
    consts: Vec<(String, ConstDef)>,
    device_warp: Vec<(String, PathBuf)>,
    /// `name = other` definitions (a macro, constant or function returning another name).
    aliases: Vec<(String, String, PathBuf)>,
    ballot_wrappers: Vec<(String, u8)>,
    /// `#include "..."` names outside every branch but the include guard.
    includes: Vec<String>,
    /// Function-like macros whose body calls a warp intrinsic (`#define SHFL(v, l) __shfl(v,
    /// l)`), with the intrinsic.
    intrinsic_aliases: Vec<(String, String)>,
    /// The file includes HIP headers unconditionally and no CUDA header, or is a `.hip` file.
    hip_only: bool,
    /// Names this file gives as a logical width (`width = NAME`).
    logical_widths: Vec<String>,
    /// CUDA intrinsics HIP lacks that this file defines as macros (a project's shim).
    intrinsic_shims: Vec<String>,
    /// The file maps a CUDA runtime name to a HIP one (`#define cudaMalloc hipMalloc`).
    cuda_to_hip_shim: bool,
    /// Warp-named identifiers this file declares ([`ProjectIndex::warp_decls`]).
    warp_decls: Vec<String>,
}

impl FileIndex {
    /// `name` holds the integer `value`.
    fn constant(&mut self, name: &str, value: u64, platform: Platform, dev: bool, path: &Path) {
        self.consts.push((
            name.to_string(),
            ConstDef {
                value,
                platform,
                device_only: dev,
                file: path.to_path_buf(),
            },
        ));
    }

    /// `name` is defined as `value` (a macro body or a constant's initializer): an integer
    /// constant (a device-only 32 or 64 is also a device warp width), the device warp width
    /// itself, or an alias of another name.
    fn define(&mut self, name: &str, value: &str, platform: Platform, dev: bool, path: &Path) {
        if warp_word(name) && self.warp_decls.len() < 4096 {
            self.warp_decls.push(name.to_string());
        }
        if let Some(v) = int_value(value) {
            self.constant(name, v, platform, dev, path);
            if dev && (v == 32 || v == 64) {
                self.device_warp
                    .push((name.to_string(), path.to_path_buf()));
            }
        } else if is_warp_source(value) {
            self.device_warp
                .push((name.to_string(), path.to_path_buf()));
        } else if let Some(a) = single_ident(value) {
            self.aliases
                .push((name.to_string(), a.to_string(), path.to_path_buf()));
        }
    }
}

/// The identifier mentions the warp or the wavefront (any case).
pub fn warp_word(w: &str) -> bool {
    let l = w.to_ascii_lowercase();
    l.contains("warp") || l.contains("wave")
}

/// Warp-named identifiers that line `t` (C++, not a directive) declares: an identifier after a
/// type-like word (`int warp_size`, `unsigned int& warp_size`, `Lanes<T> kWarpSize`) and
/// before the end of a declarator (`; = { ( , ) [ :`). A use (`dim3(kWarpSize)`,
/// `return warp_size();`, `ns::warp_size()`) is not a declaration.
fn declared_warp_words(t: &str, out: &mut Vec<String>) {
    let b = t.as_bytes();
    let mut i = 0;
    let mut prev_word: Option<&str> = None;
    let mut prev_punct: u8 = 0;
    // the word before the last punctuation (`int` in `int& w`, `warpId` in `warpId * w`)
    let mut word_before_punct: Option<&str> = None;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let s0 = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let w = &t[s0..i];
            let next = t[i..].trim_start().bytes().next().unwrap_or(b';');
            let after_type = match prev_word {
                Some(p) => !matches!(
                    p,
                    "return"
                        | "case"
                        | "sizeof"
                        | "else"
                        | "throw"
                        | "co_return"
                        | "new"
                        | "delete"
                        | "goto"
                        | "alignof"
                        | "decltype"
                ),
                // `T* w` / `T& w` after a built-in type or a template (`a * w` is a product)
                None => {
                    prev_punct == b'>' && matches!(next, b';' | b'=' | b'{')
                        || matches!(prev_punct, b'*' | b'&')
                            && word_before_punct.is_some_and(|p| {
                                matches!(
                                    p,
                                    "int"
                                        | "unsigned"
                                        | "char"
                                        | "short"
                                        | "long"
                                        | "float"
                                        | "double"
                                        | "auto"
                                        | "const"
                                        | "size_t"
                                        | "uint32_t"
                                        | "int32_t"
                                        | "uint64_t"
                                        | "int64_t"
                                        | "bool"
                                )
                            })
                }
            };
            if after_type
                && matches!(next, b';' | b'=' | b'{' | b'(' | b',' | b')' | b'[' | b':')
                && warp_word(w)
                && out.len() < 4096
            {
                // a function is recorded as `name()`: a call resolves only to a function
                out.push(if next == b'(' {
                    format!("{w}()")
                } else {
                    w.to_string()
                });
            }
            prev_word = Some(w);
            prev_punct = 0;
            continue;
        }
        if !c.is_ascii_whitespace() {
            word_before_punct = prev_word.or(if prev_punct == 0 {
                None
            } else {
                word_before_punct
            });
            prev_word = None;
            // `::` before a name makes it a qualified use, not a declarator
            prev_punct = if c == b':' { 0 } else { c };
        }
        i += 1;
    }
}

fn ident_words(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// `s` without surrounding blanks, a trailing `;` and outer parentheses (`(64);` -> `64`).
fn unwrapped(s: &str) -> &str {
    s.trim()
        .trim_end_matches(';')
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
}

fn int_value(s: &str) -> Option<u64> {
    crate::lex::parse_int(unwrapped(s).trim())
}

/// The single identifier (or call with no arguments) `s` consists of, when it names a warp or
/// wavefront quantity.
fn single_ident(s: &str) -> Option<&str> {
    // `other();` / `(other())` / `other`: drop the statement end, the empty call, the parentheses
    let t = s.trim().trim_end_matches(';').trim();
    let t = t.strip_suffix("()").unwrap_or(t);
    let t = unwrapped(t).trim_end_matches("()").trim();
    let t = t.rsplit("::").next().unwrap_or(t);
    let l = t.to_ascii_lowercase();
    // only names that can stand for the warp width are worth following
    (!t.is_empty()
        && t.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && !t.as_bytes()[0].is_ascii_digit()
        && (l.contains("warp") || l.contains("wave")))
    .then_some(t)
}

fn is_warp_source(s: &str) -> bool {
    let t = unwrapped(s).trim();
    // a library's device-side width macro (`*_DEVICE_WARP_THREADS`, `*_WAVEFRONT_SIZE`, an
    // uppercase macro named for the device's wavefront) is the device value too
    t == "warpSize"
        || t.starts_with("__AMDGCN_WAVEFRONT_SIZE")
        || (t
            .bytes()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
            && (t.ends_with("_WAVEFRONT_SIZE") || t.contains("_DEVICE_WARP_")))
}

/// Width of a return/variable type spelled in `ty` (32 for `unsigned`, `int`, `uint32_t`; 64
/// for 64-bit spellings), 0 when unknown (`auto`, a project type).
fn type_width(ty: &str) -> u8 {
    let words: Vec<&str> = ident_words(ty).collect();
    if words.iter().any(|w| {
        matches!(
            *w,
            "uint64_t" | "int64_t" | "size_t" | "lane_mask_t" | "long" | "u64" | "uint64"
        )
    }) {
        64
    } else if words.iter().any(|w| {
        matches!(
            *w,
            "unsigned" | "int" | "uint32_t" | "int32_t" | "uint" | "u32" | "uint32"
        )
    }) {
        32
    } else {
        0
    }
}

/// CUDA intrinsics HIP lacks ([`crate::rules::cuda_intrinsic_missing_in_hip`]) that the text
/// defines as functions: the name follows a type or a specifier (`static __device__ int
/// __vsubss4(const int a, const int b) {`), not a keyword, an operator or a bracket as a call
/// does. At most 256 names.
fn defined_intrinsics(text: &str) -> Vec<String> {
    use crate::rules::cuda_intrinsic_missing_in_hip::missing_in_hip;
    let b = text.as_bytes();
    let mut out: Vec<String> = Vec::new();
    for at in memchr::memmem::find_iter(b, b"__") {
        if out.len() >= 256 {
            break;
        }
        // the start of an identifier
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let end = at
            + b[at..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .count();
        let name = &text[at..end];
        if !missing_in_hip(name) {
            continue;
        }
        let after = text[end..].trim_start();
        if !after.starts_with('(') {
            continue;
        }
        // what precedes the name, with `//` comments of the lines above cut off
        let mut before = text[..at].trim_end();
        for _ in 0..4 {
            let line_start = before.rfind('\n').map_or(0, |p| p + 1);
            match before[line_start..].find("//") {
                Some(c) => before = before[..line_start + c].trim_end(),
                None => break,
            }
        }
        let prev_word: &str = {
            let e = before.len();
            let s = before
                .bytes()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
                .count();
            &before[e - s..]
        };
        let keyword = matches!(
            prev_word,
            "return" | "case" | "else" | "do" | "throw" | "co_return" | "co_yield" | "define"
        );
        // the word before is no preprocessor line's (`#endif`, `#pragma unroll`, `#ifdef X`)
        let line_start = before.rfind('\n').map_or(0, |p| p + 1);
        let directive = before[line_start..].trim_start().starts_with('#');
        // a definition or declaration: `(...)` then `{`, `;` or a trailing specifier
        let defines = after.strip_prefix('(').is_some_and(|rest| {
            let mut depth = 1usize;
            let close = rest.char_indices().find(|&(_, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                depth == 0
            });
            close.is_some_and(|(i, _)| {
                let tail = rest[i + 1..].trim_start();
                ["{", ";", "noexcept", "const", "->", "__attribute__"]
                    .iter()
                    .any(|p| tail.starts_with(p))
            })
        });
        let typed =
            (!prev_word.is_empty() && !keyword || before.ends_with('*') || before.ends_with('&'))
                && !directive
                && defines;
        if typed && !out.iter().any(|n| n == name) {
            out.push(name.to_string());
        }
    }
    out
}

fn index_text(path: &Path, text: &str) -> FileIndex {
    let mut fi = FileIndex {
        hip_only: path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("hip")),
        ..Default::default()
    };
    let b = text.as_bytes();
    fi.intrinsic_shims.extend(defined_intrinsics(text));
    fi.intrinsic_shims
        .extend(crate::rules::hip_api_removed::declared_removed(text));
    let interesting = memchr::memmem::find(b, b"#").is_some()
        || memchr::memmem::find(b, b"const").is_some()
        || memchr::memmem::find(b, b"ballot").is_some()
        // functions returning the warp width (`return warpSize;`, `return wave_width();`)
        || memchr::memmem::find(b, b"arp").is_some()
        || memchr::memmem::find(b, b"ave").is_some()
        // declarations of CUDA API names a project gives itself
        || memchr::memmem::find(b, b"enum").is_some()
        || memchr::memmem::find(b, b"typedef").is_some();
    if !interesting {
        return fi;
    }
    // the open branches: (passes reaching it, passes reaching its group, passes where an
    // earlier branch of the group certainly ran, chosen by a device-only macro)
    let mut stack: Vec<(u8, u8, u8, bool)> = Vec::new();
    // per open branch: it is the include guard
    let mut guards: Vec<bool> = Vec::new();
    let (mut hip_inc, mut cuda_inc) = (false, false);
    let locals = Locals::default();
    let mut last_sig: Option<(String, u8)> = None;
    let mut in_enum = false;
    let mut last_ifndef: Option<String> = None;
    let mut lines = text.lines().peekable();
    while let Some(raw) = lines.next() {
        let mut line = raw.to_string();
        // join continued directive lines
        while line.ends_with('\\') {
            line.pop();
            match lines.next() {
                Some(n) => line.push_str(n),
                None => break,
            }
        }
        let t = line.trim_start();
        let plat = stack.last().map_or(Platform::Any, |t| reach_platform(t.0));
        let dev = stack.iter().any(|t| t.3);
        if let Some(d) = t.strip_prefix('#') {
            let d = d.trim_start();
            let name_len = d.bytes().take_while(|c| c.is_ascii_alphabetic()).count();
            let (name, rest) = d.split_at(name_len);
            let rest = rest.split("//").next().unwrap_or("");
            let guard = last_ifndef.take();
            match name {
                "if" | "ifdef" | "ifndef" | "elif" | "else" | "elifdef" | "elifndef" => {
                    for w in ident_words(rest) {
                        if (w.contains("CUDA") || w.contains("HIP")) && fi.switch_words.len() < 256
                        {
                            fi.switch_words.push(w.to_string());
                        }
                    }
                    let dev_cond = ident_words(rest).any(device_only_macro);
                    let first = ident_words(rest).next().unwrap_or("");
                    let ev = match name {
                        "if" | "elif" => eval_condition(rest, &locals),
                        "ifdef" | "elifdef" => eval_ifdef(first, false, &locals),
                        "ifndef" | "elifndef" => eval_ifdef(first, true, &locals),
                        _ => CondEval {
                            possible: pass::ALL,
                            certain: pass::ALL,
                            vendor_test: false,
                            constant: Some(true),
                        },
                    };
                    if name == "ifndef" {
                        last_ifndef = Some(first.to_string());
                    }
                    if matches!(name, "if" | "ifdef" | "ifndef") {
                        let outer = stack.last().map_or(pass::ALL, |t| t.0);
                        stack.push((outer & ev.possible, outer, ev.certain, dev_cond));
                        guards.push(false);
                    } else if let Some(top) = stack.last_mut() {
                        let own = ev.possible & !top.2;
                        *top = (top.1 & own, top.1, top.2 | ev.certain, top.3 || dev_cond);
                    }
                }
                "endif" => {
                    stack.pop();
                    guards.pop();
                }
                "include" if guards.iter().all(|g| *g) => {
                    let r = rest.trim();
                    if let Some(q) = r.strip_prefix('"') {
                        if let Some(e) = q.find('"') {
                            if fi.includes.len() < 1024 {
                                fi.includes.push(q[..e].to_string());
                            }
                        }
                    }
                    let inc = r.trim_start_matches(['<', '"']);
                    if inc.starts_with("hip/") || inc.starts_with("hipcub/") {
                        hip_inc = true;
                    } else if inc.starts_with("cuda") || inc.starts_with("cub/") {
                        cuda_inc = true;
                    }
                }
                "define" => {
                    let r = rest.trim_start();
                    let nl = r
                        .bytes()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
                        .count();
                    let (mname, body) = r.split_at(nl);
                    if mname.is_empty() {
                        continue;
                    }
                    // `#define cudaMalloc hipMalloc`: the project compiles CUDA spellings with HIP
                    if mname.starts_with("cuda")
                        && mname[4..].starts_with(|c: char| c.is_ascii_uppercase())
                        && ident_words(body).any(|w| {
                            w.starts_with("hip")
                                && w[3..].starts_with(|c: char| c.is_ascii_uppercase())
                        })
                    {
                        fi.cuda_to_hip_shim = true;
                    }
                    if warp_word(mname) && fi.warp_decls.len() < 4096 {
                        fi.warp_decls.push(if body.starts_with('(') {
                            format!("{mname}()")
                        } else {
                            mname.to_string()
                        });
                    }
                    if guard.as_deref() == Some(mname) {
                        // an include guard: not a platform test
                        if let Some(top) = stack.last_mut() {
                            *top = (top.1, top.1, 0, false);
                        }
                        if let Some(g) = guards.last_mut() {
                            *g = true;
                        }
                        continue;
                    }
                    if (crate::rules::cuda_intrinsic_missing_in_hip::missing_in_hip(mname)
                        || crate::rules::cuda_api_missing_in_hip::missing_in_hip(mname))
                        && fi.intrinsic_shims.len() < 4096
                    {
                        fi.intrinsic_shims.push(mname.to_string());
                    }
                    if body.starts_with('(') {
                        // function-like: a ballot wrapper macro, an alias of a warp intrinsic
                        if let Some(close) = body.find(')') {
                            let b2 = &body[close + 1..];
                            if b2.contains("__ballot") || b2.contains("__activemask") {
                                fi.ballot_wrappers.push((mname.to_string(), 0));
                            }
                            if let Some(w) = ident_words(b2).find(|w| is_warp_intrinsic(w)) {
                                // a shim named like the intrinsic itself (`#define
                                // __shfl_xor_sync(m, v, o, w) __shfl_xor(v, o, w)`) is not an alias
                                if fi.intrinsic_aliases.len() < 1024
                                    && mname != w
                                    && !is_warp_intrinsic(mname)
                                {
                                    fi.intrinsic_aliases
                                        .push((mname.to_string(), w.to_string()));
                                }
                            }
                        }
                        continue;
                    }
                    // the include guard of a header is a define at the top with no body;
                    // platform macros need a platform branch
                    if plat != Platform::Any && fi.platform_macros.len() < 4096 {
                        fi.platform_macros.push((mname.to_string(), plat));
                    }
                    fi.define(mname, body, plat, dev, path);
                }
                _ => {}
            }
            continue;
        }
        // `width = NAME` (a default template argument or parameter of a shuffle helper)
        if t.contains("width") && fi.logical_widths.len() < 256 {
            for (p, _) in t.match_indices("width") {
                let r = t[p + 5..].trim_start();
                let Some(r) = r.strip_prefix('=').filter(|r| !r.starts_with('=')) else {
                    continue;
                };
                let r = r.trim_start();
                let n = r
                    .bytes()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
                    .count();
                if n > 0 && !r.as_bytes()[0].is_ascii_digit() {
                    fi.logical_widths.push(r[..n].to_string());
                }
            }
        }
        // C++ lines: constants, enum entries, ballot-returning functions (a trailing line
        // comment, `static const int N = 32;  // lanes`, is not part of the statement)
        let t = match t.find("//") {
            Some(c) if !t[..c].contains('"') => t[..c].trim_end(),
            _ => t,
        };
        if t.contains("arp") || t.contains("ave") || t.contains("ARP") || t.contains("AVE") {
            declared_warp_words(t, &mut fi.warp_decls);
        }
        // a CUDA API name HIP lacks that the project declares itself (`typedef struct
        // CUmemFabricHandle_st {...} CUmemFabricHandle;`, `enum cudaError_t { cudaErrorStubLibrary
        // = 34 };`): the project's own declaration, a compatibility shim
        if (in_enum
            || t.starts_with('}')
            || t.contains("typedef")
            || t.contains("struct ")
            || t.contains("enum ")
            || t.contains("using "))
            && (t.contains("cu") || t.contains("CU"))
            && fi.intrinsic_shims.len() < 4096
        {
            for w in ident_words(t) {
                if crate::rules::cuda_api_missing_in_hip::missing_in_hip(w) {
                    fi.intrinsic_shims.push(w.to_string());
                }
            }
        }
        if t.contains("enum") {
            in_enum = true;
        }
        if in_enum {
            for part in t.split(',') {
                if let Some((n, v)) = part.split_once('=') {
                    let n = ident_words(n).last().unwrap_or("");
                    let v = v.trim().trim_end_matches(';').trim().trim_end_matches('}');
                    if !n.is_empty() && !n.as_bytes()[0].is_ascii_digit() {
                        if let Some(v) = int_value(v) {
                            fi.constant(n, v, plat, dev, path);
                        }
                    }
                }
            }
            if t.contains('}') {
                in_enum = false;
            }
        }
        if (t.contains("const") || t.contains("static")) && t.contains('=') && t.ends_with(';') {
            // `[static] constexpr int NAME = VALUE;`
            if let Some((lhs, rhs)) = t.split_once('=') {
                if !lhs.contains('(') && !rhs.contains('=') {
                    if let Some(n) = ident_words(lhs).last() {
                        fi.define(n, rhs, plat, dev, path);
                    }
                }
            }
        }
        // a function signature: `TYPE name(args)` ending the line or followed by `{`
        if let Some(p) = t.find('(') {
            let head = &t[..p];
            let words: Vec<&str> = ident_words(head).collect();
            if words.len() >= 2
                && !t.starts_with("return")
                && !head.contains('=')
                && !matches!(words[words.len() - 1], "if" | "for" | "while" | "switch")
            {
                let name = words[words.len() - 1].to_string();
                let ty = head[..head.rfind(name.as_str()).unwrap_or(0)].to_string();
                last_sig = Some((name, type_width(&ty)));
            }
        }
        if let Some(r) = t.strip_prefix("return ") {
            // a function returning the warp width (`return warpSize;`) or another name
            if let Some((n, _)) = &last_sig {
                if is_warp_source(r) {
                    fi.device_warp.push((n.clone(), path.to_path_buf()));
                } else if let Some(a) = single_ident(r).filter(|_| r.contains("()")) {
                    // `return other();` (a local variable of the same name is not followed)
                    fi.aliases
                        .push((n.clone(), a.to_string(), path.to_path_buf()));
                }
            }
        }
        if t.contains("return") && (t.contains("__ballot") || t.contains("__activemask")) {
            if let Some((n, w)) = last_sig.take() {
                fi.ballot_wrappers.push((n, w));
            }
        }
    }
    fi.hip_only |= hip_inc && !cuda_inc;
    fi
}

/// A warp-level intrinsic a project macro may stand for: shuffles, votes, the active mask.
fn is_warp_intrinsic(w: &str) -> bool {
    w.starts_with("__shfl")
        || w.starts_with("__ballot")
        || w.starts_with("__any")
        || w.starts_with("__all")
        || w == "__activemask"
        || w.starts_with("__reduce_")
        || w.starts_with("__match_")
}

/// Whether `p` names a header (a file other translation units include).
fn is_header_path(p: &Path) -> bool {
    p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        matches!(
            e.to_ascii_lowercase().as_str(),
            "h" | "hpp" | "cuh" | "inl" | "hh" | "hxx" | "cuinc"
        )
    })
}

/// Files compiled by HIP only, following the include graph: a file that includes a HIP-only
/// project header unconditionally needs a HIP compiler, and a header that only HIP-only files
/// include is compiled by HIP only. Quoted includes are resolved next to the including file,
/// else to the one indexed file whose path ends with the included name.
fn hip_only_files(paths: &[PathBuf], includes: &[Vec<String>], seeds: &[bool]) -> HashSet<PathBuf> {
    let n = paths.len();
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut by_path: HashMap<&Path, usize> = HashMap::new();
    for (i, p) in paths.iter().enumerate() {
        by_path.insert(p.as_path(), i);
        if let Some(f) = p.file_name().and_then(|f| f.to_str()) {
            by_name.entry(f).or_default().push(i);
        }
    }
    // edges: includer -> included
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut includers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, incs) in includes.iter().enumerate() {
        let dir = paths[i].parent().unwrap_or(Path::new(""));
        for inc in incs {
            let local = dir.join(inc);
            let target = by_path.get(local.as_path()).copied().or_else(|| {
                let base = Path::new(inc).file_name()?.to_str()?;
                let cands: Vec<usize> = by_name
                    .get(base)?
                    .iter()
                    .copied()
                    .filter(|&c| paths[c].ends_with(inc))
                    .collect();
                (cands.len() == 1).then(|| cands[0])
            });
            if let Some(t) = target.filter(|&t| t != i) {
                edges[i].push(t);
                includers[t].push(i);
            }
        }
    }
    let mut hip: Vec<bool> = seeds.to_vec();
    for _ in 0..16 {
        let mut changed = false;
        for i in 0..n {
            if hip[i] {
                continue;
            }
            let up = edges[i].iter().any(|&t| hip[t]);
            let down = is_header_path(&paths[i])
                && !includers[i].is_empty()
                && includers[i].iter().all(|&f| hip[f]);
            if up || down {
                hip[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    (0..n)
        .filter(|&i| hip[i])
        .map(|i| paths[i].clone())
        .collect()
}

impl ProjectIndex {
    fn merge(parts: Vec<(PathBuf, FileIndex)>) -> ProjectIndex {
        let mut idx = ProjectIndex {
            files: parts.len(),
            ..Default::default()
        };
        let mut paths: Vec<PathBuf> = Vec::with_capacity(parts.len());
        let mut includes: Vec<Vec<String>> = Vec::with_capacity(parts.len());
        let mut seeds: Vec<bool> = Vec::with_capacity(parts.len());
        let mut words: HashSet<String> = HashSet::new();
        let mut aliases: Vec<(String, String, PathBuf)> = Vec::new();
        for (path, mut fi) in parts {
            let comps: Vec<String> = path
                .components()
                .rev()
                .take(3)
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            for n in 1..=comps.len() {
                let tail: Vec<&str> = comps[..n].iter().rev().map(String::as_str).collect();
                idx.header_tails.insert(tail.join("/"));
            }
            paths.push(path);
            includes.push(std::mem::take(&mut fi.includes));
            seeds.push(fi.hip_only);
            for (n, p) in fi.platform_macros {
                match idx.env.macros.get(&n) {
                    // defined under more than one platform: not a platform test
                    Some(q) if *q != p => {
                        idx.env.macros.insert(n, Platform::Any);
                    }
                    Some(_) => {}
                    None => {
                        idx.env.macros.insert(n, p);
                    }
                }
            }
            words.extend(fi.switch_words);
            for (n, c) in fi.consts {
                let v = idx.consts.entry(n).or_default();
                if v.len() < 16 {
                    v.push(c);
                }
            }
            idx.device_warp.extend(fi.device_warp);
            aliases.extend(fi.aliases);
            for (n, w) in fi.ballot_wrappers {
                idx.ballot_wrappers.insert(n, w);
            }
            idx.logical_widths.extend(fi.logical_widths);
            idx.warp_decls.extend(fi.warp_decls);
            for (n, w) in fi.intrinsic_aliases {
                idx.intrinsic_aliases.entry(n).or_insert(w);
            }
            idx.intrinsic_shims.extend(fi.intrinsic_shims);
            idx.cuda_to_hip_shim |= fi.cuda_to_hip_shim;
        }
        for (n, a, _) in &aliases {
            idx.alias_of.entry(n.clone()).or_insert_with(|| a.clone());
        }
        // names defined as a device-only warp width through other names
        for _ in 0..3 {
            let mut added = false;
            for (n, a, f) in &aliases {
                if !idx.device_warp.contains_key(n) && idx.device_warp.contains_key(a) {
                    idx.device_warp.insert(n.clone(), f.clone());
                    added = true;
                }
            }
            if !added {
                break;
            }
        }
        idx.hip_only = hip_only_files(&paths, &includes, &seeds);
        idx.env.macros.retain(|_, p| *p != Platform::Any);
        for w in &words {
            if crate::lex::classify_macro(w) != Platform::Any {
                continue;
            }
            if let Some(s) = hip_sibling(w) {
                if words.contains(&s) {
                    idx.env.macros.insert(w.clone(), Platform::Nvidia);
                }
            }
        }
        idx
    }

    /// The index of one buffer (a file scanned alone).
    pub fn of_text(path: &Path, text: &str) -> ProjectIndex {
        ProjectIndex::merge(vec![(path.to_path_buf(), index_text(path, text))])
    }

    /// Indexes the C++/CUDA/HIP files among `files`, in parallel. Unreadable files are left
    /// out (the scan reports them).
    pub fn build(files: &[(PathBuf, crate::walk::FileKind)]) -> ProjectIndex {
        let py: HashSet<String> = files
            .par_iter()
            .filter(|(_, k)| *k == crate::walk::FileKind::Python)
            .filter_map(|(p, _)| std::fs::read_to_string(p).ok())
            .flat_map_iter(|t| py_predicates(&t))
            .collect();
        let parts: Vec<(PathBuf, FileIndex)> = files
            .par_iter()
            .filter(|(_, k)| *k == crate::walk::FileKind::Cuda)
            .filter_map(|(p, _)| {
                let bytes = std::fs::read(p).ok()?;
                if crate::walk::is_binary(&bytes) {
                    return None;
                }
                let text = String::from_utf8_lossy(&bytes);
                Some((p.clone(), index_text(p, &text)))
            })
            .collect();
        let mut idx = ProjectIndex::merge(parts);
        idx.py_predicates = py;
        idx
    }

    /// The single value `name` has everywhere it is defined as an integer, if it has one.
    pub fn const_value(&self, name: &str) -> Option<u64> {
        let defs = self.consts.get(name)?;
        let v = defs.first()?.value;
        defs.iter().all(|d| d.value == v).then_some(v)
    }

    /// `name` is an integer constant of 32 on every platform it is defined for (no AMD-only
    /// or device-only alternative).
    pub fn fixed_32(&self, name: &str) -> bool {
        self.consts.get(name).is_some_and(|defs| {
            defs.iter().all(|d| d.value == 32 && !d.device_only)
                && defs.iter().all(|d| d.platform != Platform::Nvidia)
        })
    }

    /// Whether the file at `path` is compiled by HIP only (by the include graph).
    pub fn is_hip_only(&self, path: &Path) -> bool {
        self.hip_only.contains(path)
    }

    /// The warp intrinsic the macro `name` stands for, when it is one's alias.
    pub fn intrinsic_alias(&self, name: &str) -> Option<&str> {
        self.intrinsic_aliases.get(name).map(String::as_str)
    }

    /// Whether `name` stands for the device-only warp width.
    pub fn is_device_warp(&self, name: &str) -> bool {
        self.device_warp.contains_key(name)
    }

    /// File that defines `name` as the device-only warp width.
    pub fn device_warp_file(&self, name: &str) -> Option<&Path> {
        self.device_warp.get(name).map(PathBuf::as_path)
    }

    /// Whether `name` is declared anywhere in the scan (as a macro, constant, variable, member
    /// or parameter), for names that mention the warp or wavefront; `call` asks for a function
    /// or function-like macro of that name instead (a variable `warp_size` in one file does not
    /// define the `warp_size()` another file calls).
    pub fn declares(&self, name: &str, call: bool) -> bool {
        if call {
            self.warp_decls.contains(&format!("{name}()"))
        } else {
            self.warp_decls.contains(name) || self.consts.contains_key(name)
        }
    }

    /// The warp-named identifier `name` stands for through `name = other` definitions (up to
    /// three steps), `name` itself when it is no alias.
    pub fn alias_root<'a>(&'a self, name: &'a str) -> &'a str {
        let mut n = name;
        for _ in 0..3 {
            match self.alias_of.get(n) {
                Some(a) if a != n => n = a,
                _ => break,
            }
        }
        n
    }

    /// Width the ballot wrapper `name` returns (0 unknown), when `name` is one.
    pub fn ballot_wrapper(&self, name: &str) -> Option<u8> {
        self.ballot_wrappers.get(name).copied()
    }
}
