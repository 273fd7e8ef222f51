//! Small constant evaluation over tokens: integer literals, `#define NAME <int>`, `constexpr`/
//! `const` integer variables of the same file, `sizeof(<scalar type>)`, `* + - / << ( )`.

use crate::lex::{Src, Tk, IN_DEFINE};

pub struct Consts<'a> {
    names: Vec<(&'a str, u64)>,
}

/// Byte size of a scalar or vector type name.
pub fn type_size(t: &str) -> Option<u64> {
    Some(match t {
        "char" | "int8_t" | "uint8_t" | "bool" | "__nv_fp8_e4m3" | "__nv_fp8_e5m2" | "fp8"
        | "int8" | "uint8" => 1,
        "short" | "int16_t" | "uint16_t" | "half" | "__half" | "__nv_bfloat16" | "nv_bfloat16"
        | "bfloat16" | "__hip_bfloat16" | "hip_bfloat16" | "bf16" | "fp16" | "_Float16" => 2,
        "float" | "int" | "unsigned" | "uint32_t" | "int32_t" | "uint" | "half2" | "__half2"
        | "__nv_bfloat162" | "nv_bfloat162" | "char4" | "uchar4" => 4,
        "double" | "int64_t" | "uint64_t" | "long" | "size_t" | "float2" | "int2" | "uint2"
        | "longlong" => 8,
        "float4" | "int4" | "uint4" | "double2" | "longlong2" => 16,
        "double4" => 32,
        _ => return None,
    })
}

impl<'a> Consts<'a> {
    pub fn collect(src: &Src<'a>) -> Consts<'a> {
        let mut names = Vec::new();
        for d in &src.defines {
            if !d.function_like {
                let name = src
                    .text
                    .get(d.name_start as usize..d.name_end as usize)
                    .unwrap_or("");
                let (a, b) = (d.body.0 as usize, d.body.1 as usize);
                if b > a {
                    if let Some(v) = eval_with(&names, src, a, b - 1) {
                        names.push((name, v));
                    }
                }
            }
        }
        let n = src.toks.len();
        for k in 1..n.saturating_sub(2) {
            if src.is(k, "=")
                && src.toks[k].flags & IN_DEFINE == 0
                && src.kind(k - 1) == Some(Tk::Ident)
            {
                // const/constexpr declarations only
                let decl =
                    (k.saturating_sub(5)..k - 1).any(|j| matches!(src.s(j), "constexpr" | "const"));
                if !decl {
                    continue;
                }
                let Some(end) = (k + 1..n.min(k + 24)).find(|&j| matches!(src.s(j), ";" | ","))
                else {
                    continue;
                };
                if let Some(v) = eval_with(&names, src, k + 1, end - 1) {
                    names.push((src.s(k - 1), v));
                }
            }
        }
        Consts { names }
    }

    pub fn get(&self, name: &str) -> Option<u64> {
        get(&self.names, name)
    }

    /// Value of tokens `a..=b` as an integer expression.
    pub fn eval(&self, src: &Src, a: usize, b: usize) -> Option<u64> {
        eval_with(&self.names, src, a, b)
    }
}

fn get(names: &[(&str, u64)], name: &str) -> Option<u64> {
    names
        .iter()
        .rev()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
}

fn eval_with(names: &[(&str, u64)], src: &Src, a: usize, b: usize) -> Option<u64> {
    if b < a || b - a > 40 {
        return None;
    }
    let mut p = P {
        c: names,
        src,
        i: a,
        end: b + 1,
        depth: 0,
    };
    let v = p.sum()?;
    if p.i == p.end {
        Some(v)
    } else {
        None
    }
}

struct P<'x, 'a> {
    c: &'x [(&'a str, u64)],
    src: &'x Src<'x>,
    i: usize,
    end: usize,
    depth: u32,
}

impl P<'_, '_> {
    fn peek(&self) -> &str {
        if self.i < self.end {
            self.src.s(self.i)
        } else {
            ""
        }
    }
    fn sum(&mut self) -> Option<u64> {
        let mut v = self.prod()?;
        loop {
            match self.peek() {
                "+" => {
                    self.i += 1;
                    v = v.checked_add(self.prod()?)?;
                }
                "-" => {
                    self.i += 1;
                    v = v.checked_sub(self.prod()?)?;
                }
                "<<" => {
                    self.i += 1;
                    let r = self.prod()?;
                    v = v.checked_shl(u32::try_from(r).ok()?)?;
                }
                _ => return Some(v),
            }
        }
    }
    fn prod(&mut self) -> Option<u64> {
        let mut v = self.atom()?;
        loop {
            match self.peek() {
                "*" => {
                    self.i += 1;
                    v = v.checked_mul(self.atom()?)?;
                }
                "/" => {
                    self.i += 1;
                    let r = self.atom()?;
                    v = v.checked_div(r)?;
                }
                _ => return Some(v),
            }
        }
    }
    fn atom(&mut self) -> Option<u64> {
        self.depth += 1;
        if self.depth > 50 || self.i >= self.end {
            return None;
        }
        let t = self.src.s(self.i);
        let r = if t == "(" {
            self.i += 1;
            let v = self.sum()?;
            if self.peek() != ")" {
                return None;
            }
            self.i += 1;
            Some(v)
        } else if t == "sizeof" && self.src.is(self.i + 1, "(") && self.src.is(self.i + 3, ")") {
            let s = type_size(self.src.s(self.i + 2))?;
            self.i += 4;
            Some(s)
        } else if self.src.kind(self.i) == Some(Tk::Number) {
            self.i += 1;
            self.src.int(self.i - 1)
        } else if self.src.kind(self.i) == Some(Tk::Ident) {
            self.i += 1;
            get(self.c, t)
        } else {
            None
        };
        self.depth -= 1;
        r
    }
}
