//! Preprocessor conditions evaluated for one AMD target's device pass, shared by the rules that
//! ask "is this line compiled for gfx1100?" (`wave-size-arch-list`, `amd-isa-generation`).
//!
//! What clang-19 in HIP mode defines in a device pass for `--offload-arch=gfxNNNN`:
//! `__HIP__`, `__HIPCC__`, `__AMDGCN__`, `__AMDGPU__`, `__HIP_DEVICE_COMPILE__`, `__gfxNNNN__`,
//! the family macro `__GFXn__` (`__GFX9__` for gfx900 to gfx950, `__GFX11__` for gfx11xx) and
//! `__AMDGCN_WAVEFRONT_SIZE` (the target's default width); `__HIP_PLATFORM_AMD__` comes from
//! the HIP headers. Never `__CUDACC__`, `__CUDA_ARCH__`, `__NVCC__`. Any other macro is unknown,
//! and a condition that depends on one is unknown (`None`).

use crate::cuda::Cx;
use crate::lex::{classify_macro, parse_int, Platform};

/// The facts of one AMD target's device pass.
#[derive(Debug, Clone)]
pub struct AmdPass {
    /// `gfx942`, `gfx1100`, `gfx90a`.
    pub arch: String,
    /// Default wavefront width.
    pub wave: u32,
}

impl AmdPass {
    /// Family number (`9` for gfx942, `11` for gfx1100); `None` for an id that is not `gfxN...`.
    pub fn family(&self) -> Option<u32> {
        let rest = self.arch.strip_prefix("gfx")?;
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        // gfx9xx and older have one family digit, gfx10xx and later two
        if digits.len() >= 4 {
            digits.get(..2)?.parse().ok()
        } else {
            digits.get(..1)?.parse().ok()
        }
    }
    /// Value of `name` in this pass: `Some(Some(v))` defined as `v`, `Some(None)` not defined,
    /// `None` unknown.
    fn value(&self, name: &str, cx: &Cx) -> Option<Option<i64>> {
        let own = format!("__{}__", self.arch);
        match name {
            "__HIP__"
            | "__HIPCC__"
            | "__AMDGCN__"
            | "__AMDGPU__"
            | "__HIP_DEVICE_COMPILE__"
            | "__HIP_PLATFORM_AMD__"
            | "__HIP_PLATFORM_HCC__"
            | "__clang__" => return Some(Some(1)),
            "__AMDGCN_WAVEFRONT_SIZE" | "__AMDGCN_WAVEFRONT_SIZE__" => {
                return Some(Some(self.wave as i64))
            }
            _ => {}
        }
        let lower = name.to_ascii_lowercase();
        if lower.starts_with("__gfx") && name.ends_with("__") && name.len() > 7 {
            if name.eq_ignore_ascii_case(&own) {
                return Some(Some(1));
            }
            // the family macro `__GFX9__` / `__GFX11__`
            if let Some(num) = lower
                .strip_prefix("__gfx")
                .and_then(|r| r.strip_suffix("__"))
                .filter(|_| name.starts_with("__GFX"))
                .and_then(|r| r.parse::<u32>().ok())
            {
                return Some(if Some(num) == self.family() {
                    Some(1)
                } else {
                    None
                });
            }
            // a processor macro the compiler defines for another target (`__gfx90a__`,
            // `__gfx1151__`: three or more hex digits) is undefined here; a shorter lower-case
            // name (`__gfx11__`, `__gfx94__`) is a project's own family macro (composable_kernel
            // defines them from the processor macros): unknown unless this file defines it
            let digits = lower
                .strip_prefix("__gfx")
                .and_then(|r| r.strip_suffix("__"))
                .unwrap_or("");
            if name.starts_with("__gfx") && digits.len() < 3 {
                return None;
            }
            return Some(None);
        }
        match classify_macro(name) {
            Platform::Nvidia => Some(None),
            // an AMD platform switch (`USE_ROCM`, `__HIP_PLATFORM_AMD__`): defined, value unknown
            Platform::Amd if !name.contains("VERSION") => Some(Some(1)),
            _ => match cx.index.env.macros.get(name) {
                Some(Platform::Nvidia) => Some(None),
                _ => None,
            },
        }
    }
}

/// The AMD targets in scope as device passes.
pub fn amd_passes(cx: &Cx) -> Vec<AmdPass> {
    cx.ctx
        .targets
        .iter()
        .filter(|t| t.vendor() == kplan_kb::Vendor::Amd && t.id().starts_with("gfx"))
        .map(|t| AmdPass {
            arch: t.id().to_string(),
            wave: t.warp_size.unwrap_or(64),
        })
        .collect()
}

struct P<'t, 'c, 's, 'a, 'kb> {
    toks: &'t [&'t str],
    pos: usize,
    pass: &'t AmdPass,
    cx: &'c Cx<'s, 'a, 'kb>,
}

type V = Option<i64>;

impl P<'_, '_, '_, '_, '_> {
    fn peek(&self) -> &str {
        self.toks.get(self.pos).copied().unwrap_or("")
    }
    fn bump(&mut self) -> String {
        let t = self.peek().to_string();
        self.pos += 1;
        t
    }
    fn or(&mut self, depth: u32) -> V {
        let mut l = self.and(depth);
        while self.peek() == "||" {
            self.pos += 1;
            let r = self.and(depth);
            l = match (l, r) {
                (Some(a), _) if a != 0 => Some(1),
                (_, Some(b)) if b != 0 => Some(1),
                (Some(_), Some(_)) => Some(0),
                _ => None,
            };
        }
        l
    }
    fn and(&mut self, depth: u32) -> V {
        let mut l = self.cmp(depth);
        while self.peek() == "&&" {
            self.pos += 1;
            let r = self.cmp(depth);
            l = match (l, r) {
                (Some(0), _) | (_, Some(0)) => Some(0),
                (Some(_), Some(_)) => Some(1),
                _ => None,
            };
        }
        l
    }
    fn cmp(&mut self, depth: u32) -> V {
        let l = self.add(depth);
        let op = self.peek().to_string();
        if matches!(op.as_str(), "==" | "!=" | "<" | ">" | "<=" | ">=") {
            self.pos += 1;
            let r = self.add(depth);
            return match (l, r) {
                (Some(a), Some(b)) => Some(i64::from(match op.as_str() {
                    "==" => a == b,
                    "!=" => a != b,
                    "<" => a < b,
                    ">" => a > b,
                    "<=" => a <= b,
                    _ => a >= b,
                })),
                _ => None,
            };
        }
        l
    }
    fn add(&mut self, depth: u32) -> V {
        let mut l = self.unary(depth);
        while matches!(self.peek(), "+" | "-" | "*" | "/" | "&" | "|") {
            let op = self.bump();
            let r = self.unary(depth);
            l = match (l, r) {
                (Some(a), Some(b)) => match op.as_str() {
                    "+" => a.checked_add(b),
                    "-" => a.checked_sub(b),
                    "*" => a.checked_mul(b),
                    "/" => a.checked_div(b),
                    "&" => Some(a & b),
                    _ => Some(a | b),
                },
                _ => None,
            };
        }
        l
    }
    fn unary(&mut self, depth: u32) -> V {
        if depth > 64 {
            return None;
        }
        match self.peek() {
            "!" => {
                self.pos += 1;
                self.unary(depth + 1).map(|v| i64::from(v == 0))
            }
            "-" => {
                self.pos += 1;
                self.unary(depth + 1).map(|v| -v)
            }
            "(" => {
                self.pos += 1;
                let v = self.or(depth + 1);
                if self.peek() == ")" {
                    self.pos += 1;
                }
                v
            }
            "defined" => {
                self.pos += 1;
                let paren = self.peek() == "(";
                if paren {
                    self.pos += 1;
                }
                let name = self.bump();
                if paren && self.peek() == ")" {
                    self.pos += 1;
                }
                self.pass
                    .value(&name, self.cx)
                    .map(|v| i64::from(v.is_some()))
            }
            "" => None,
            t => {
                let t = t.to_string();
                self.pos += 1;
                if let Some(n) = parse_int(&t) {
                    return i64::try_from(n).ok();
                }
                if t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                    // an undefined macro is 0 in `#if`
                    return match self.pass.value(&t, self.cx) {
                        Some(Some(v)) => Some(v),
                        Some(None) => Some(0),
                        None => None,
                    };
                }
                None
            }
        }
    }
}

/// Value of the directive at `dir` (`#if X`, `#ifdef X`, `#elif ...`, `#else`) in `pass`.
/// For `#else` the answer is `true` (its siblings decide).
pub fn directive_holds(cx: &Cx, dir: &str, pass: &AmdPass) -> Option<bool> {
    let toks = crate::lex::cond_tokens_pub(dir);
    let mut k = 0;
    if toks.first() == Some(&"#") {
        k = 1;
    }
    let word = toks.get(k).copied().unwrap_or("");
    let rest = &toks[(k + 1).min(toks.len())..];
    let defined = |neg: bool| -> Option<bool> {
        let name = rest.first()?;
        pass.value(name, cx).map(|v| v.is_some() != neg)
    };
    match word {
        "else" => Some(true),
        "ifdef" | "elifdef" => defined(false),
        "ifndef" | "elifndef" => defined(true),
        "if" | "elif" => {
            let mut p = P {
                toks: rest,
                pos: 0,
                pass,
                cx,
            };
            let v = p.or(0);
            if p.pos < rest.len() {
                return None;
            }
            v.map(|v| v != 0)
        }
        _ => None,
    }
}

/// Whether branch `b` (an index into `src.branches`, 0 = the file level) is compiled in
/// `pass`: every enclosing branch taken, each after its earlier siblings were not. Include
/// guards hold; `None` when some condition on the way depends on an unknown macro.
pub fn branch_taken(cx: &Cx, mut b: u32, pass: &AmdPass) -> Option<bool> {
    let src = cx.src;
    let mut unknown = false;
    let mut guard = 0;
    while b != 0 && guard < 10_000 {
        guard += 1;
        let br = src.branches.get(b as usize)?;
        let group = src.groups.get(br.group as usize);
        if group.is_some_and(|g| g.include_guard) && !br.is_alternative {
            b = br.parent;
            continue;
        }
        if br.dead {
            return Some(false);
        }
        // earlier siblings in the same group, walking back to the group's `#if`
        let mut earlier_unknown = false;
        if br.is_alternative {
            let mut j = b as usize;
            while j > 1 {
                j -= 1;
                let Some(sib) = src.branches.get(j) else {
                    break;
                };
                if sib.group != br.group {
                    continue;
                }
                let text = src
                    .text
                    .get(sib.cond.0 as usize..sib.cond.1 as usize)
                    .unwrap_or("");
                match directive_holds(cx, text, pass) {
                    Some(true) => return Some(false),
                    Some(false) => {}
                    None => earlier_unknown = true,
                }
                if !sib.is_alternative {
                    break;
                }
            }
        }
        let text = src
            .text
            .get(br.cond.0 as usize..br.cond.1 as usize)
            .unwrap_or("");
        match directive_holds(cx, text, pass) {
            Some(false) => return Some(false),
            Some(true) => {}
            None => unknown = true,
        }
        unknown |= earlier_unknown;
        b = br.parent;
    }
    if unknown {
        None
    } else {
        Some(true)
    }
}

/// Whether the directive text names an AMD architecture (`__gfx1030__`, `__GFX9__`).
pub fn names_amd_arch(dir: &str) -> bool {
    crate::lex::cond_tokens_pub(dir)
        .iter()
        .any(|w| crate::lex::arch_macro_wave(w) != 0)
}
