//! A light Python tokenizer and structure pass: names, numbers, strings, operators, comments,
//! logical lines with their indentation, and `def`s with their decorators and bodies.
//!
//! It does not parse expressions; rules read token sequences. It never fails: unterminated
//! strings run to the end of the file, stray bytes become one-byte operator tokens.

/// Token kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Name,
    Number,
    Str,
    Op,
}

/// One token: kind and byte span.
#[derive(Debug, Clone, Copy)]
pub struct Tok {
    pub kind: Kind,
    pub start: u32,
    pub end: u32,
    /// Bracket depth before this token.
    pub depth: u16,
}

/// A logical line: tokens `first..end` (brackets joined), indentation of its first physical line.
#[derive(Debug, Clone, Copy)]
pub struct Line {
    pub first: usize,
    pub end: usize,
    pub indent: u32,
}

/// A `def` (or `async def`): name token, decorator lines, and its body's token range.
#[derive(Debug, Clone)]
pub struct Def {
    pub name: usize,
    /// Token index of the first decorator's `@` (or of `def`).
    pub start: usize,
    /// Tokens after the signature's `:` up to the end of the body.
    pub body: (usize, usize),
    /// Token ranges of each decorator expression (after `@`).
    pub decorators: Vec<(usize, usize)>,
    pub indent: u32,
    /// Token range of the parameter list, inside the parentheses.
    pub params: (usize, usize),
}

/// A tokenized file.
pub struct PySrc<'a> {
    pub text: &'a str,
    pub toks: Vec<Tok>,
    pub lines: Vec<Line>,
    pub defs: Vec<Def>,
    /// For each opening bracket token, the index of its closing token (else usize::MAX).
    pub close: Vec<usize>,
}

impl<'a> PySrc<'a> {
    pub fn s(&self, i: usize) -> &'a str {
        match self.toks.get(i) {
            Some(t) => self
                .text
                .get(t.start as usize..t.end as usize)
                .unwrap_or(""),
            None => "",
        }
    }
    pub fn kind(&self, i: usize) -> Option<Kind> {
        self.toks.get(i).map(|t| t.kind)
    }
    pub fn is_name(&self, i: usize, s: &str) -> bool {
        self.kind(i) == Some(Kind::Name) && self.s(i) == s
    }
    pub fn span(&self, a: usize, b: usize) -> (usize, usize) {
        let s = self
            .toks
            .get(a)
            .map(|t| t.start as usize)
            .unwrap_or(self.text.len());
        let e = self
            .toks
            .get(b)
            .map(|t| t.end as usize)
            .unwrap_or(self.text.len());
        (s, e.max(s))
    }
    /// Source text of tokens `a..=b`.
    pub fn snippet(&self, a: usize, b: usize) -> &'a str {
        let (s, e) = self.span(a, b);
        self.text.get(s..e).unwrap_or("")
    }
    /// Numeric value of a number token (ints, floats, `1e3`, `0x20`, `1_024`).
    pub fn number(&self, i: usize) -> Option<f64> {
        if self.kind(i) != Some(Kind::Number) {
            return None;
        }
        let t = self.s(i).replace('_', "");
        let t = t.trim_end_matches(['j', 'J', 'l', 'L']);
        if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
            return i64::from_str_radix(h, 16).ok().map(|v| v as f64);
        }
        t.parse::<f64>().ok()
    }
    /// Value of an integer literal (not `32.0`).
    pub fn int(&self, i: usize) -> Option<i64> {
        let t = self.s(i);
        if !t.starts_with("0x") && !t.starts_with("0X") && t.contains(['.', 'e', 'E']) {
            return None;
        }
        self.number(i)
            .filter(|v| v.fract() == 0.0)
            .map(|v| v as i64)
    }
    /// Matches a dotted name `a.b.c` starting at token `i`; returns the last token's index.
    pub fn dotted(&self, i: usize, path: &str) -> Option<usize> {
        let mut k = i;
        for (n, part) in path.split('.').enumerate() {
            if n > 0 {
                if self.s(k) != "." {
                    return None;
                }
                k += 1;
            }
            if !self.is_name(k, part) {
                return None;
            }
            k += 1;
        }
        // not the middle of a longer dotted name on the left
        if i > 0 && self.s(i - 1) == "." {
            return None;
        }
        Some(k - 1)
    }
    /// Start of the dotted name ending at token `i` (`a.b.c` -> index of `a`).
    pub fn dotted_start(&self, i: usize) -> usize {
        let mut k = i;
        while k >= 2 && self.s(k - 1) == "." && self.kind(k - 2) == Some(Kind::Name) {
            k -= 2;
        }
        k
    }
    /// The closing bracket of the opening bracket at `i`.
    pub fn closing(&self, i: usize) -> Option<usize> {
        self.close.get(i).copied().filter(|&c| c != usize::MAX)
    }
    /// Keyword arguments of the call whose `(` is at `open`: (name token, value start, value end inclusive).
    pub fn kwargs(&self, open: usize) -> Vec<(usize, usize, usize)> {
        let Some(close) = self.closing(open) else {
            return Vec::new();
        };
        let d = self.toks[open].depth + 1;
        let mut out = Vec::new();
        let mut k = open + 1;
        while k < close {
            if self.toks[k].depth == d
                && self.kind(k) == Some(Kind::Name)
                && self.s(k + 1) == "="
                && self.s(k - 1) != "."
            {
                let vs = k + 2;
                let mut ve = vs;
                while ve + 1 < close && !(self.toks[ve + 1].depth == d && self.s(ve + 1) == ",") {
                    ve += 1;
                }
                out.push((k, vs, ve));
                k = ve + 1;
            } else {
                k += 1;
            }
        }
        out
    }
    /// Positional arguments of the call whose `(` is at `open`: (start, end inclusive).
    pub fn args(&self, open: usize) -> Vec<(usize, usize)> {
        let Some(close) = self.closing(open) else {
            return Vec::new();
        };
        let d = self.toks[open].depth + 1;
        let mut out = Vec::new();
        let mut s = open + 1;
        for k in open + 1..=close {
            if k == close || (self.toks[k].depth == d && self.s(k) == ",") {
                if k > s {
                    out.push((s, k - 1));
                }
                s = k + 1;
            }
        }
        out
    }
    /// The innermost def whose body holds token `i`.
    pub fn def_at(&self, i: usize) -> Option<&Def> {
        self.defs
            .iter()
            .filter(|d| d.body.0 <= i && i < d.body.1)
            .max_by_key(|d| d.body.0)
    }
    /// The logical line holding token `i`.
    pub fn line_of(&self, i: usize) -> Option<&Line> {
        let k = self.lines.partition_point(|l| l.end <= i);
        self.lines.get(k).filter(|l| l.first <= i)
    }
}

fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Tokenizes `text` and recovers lines and defs.
pub fn lex(text: &str) -> PySrc<'_> {
    let b = text.as_bytes();
    let n = b.len();
    let mut toks: Vec<Tok> = Vec::with_capacity(n / 4);
    let mut lines: Vec<Line> = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    let mut close: Vec<usize> = Vec::new();
    let mut i = 0;
    let mut line_first = 0usize;
    let mut at_line_start = true;
    let mut indent = 0u32;
    let mut cur_indent = 0u32;
    while i < n {
        let c = b[i];
        if at_line_start {
            // measure indentation of a physical line that starts a logical line
            let mut k = i;
            let mut w = 0u32;
            while k < n && (b[k] == b' ' || b[k] == b'\t') {
                w += if b[k] == b'\t' { 8 - (w % 8) } else { 1 };
                k += 1;
            }
            indent = w;
            i = k;
            at_line_start = false;
            continue;
        }
        match c {
            b'\n' => {
                if stack.is_empty() && toks.len() > line_first {
                    lines.push(Line {
                        first: line_first,
                        end: toks.len(),
                        indent: cur_indent,
                    });
                    line_first = toks.len();
                }
                i += 1;
                if stack.is_empty() {
                    at_line_start = true;
                }
            }
            b' ' | b'\t' | b'\r' | b'\x0c' => i += 1,
            b'\\' if i + 1 < n && (b[i + 1] == b'\n' || b[i + 1] == b'\r') => {
                i += 1;
                while i < n && b[i] != b'\n' {
                    i += 1;
                }
                i += 1; // continuation: same logical line
            }
            b'#' => {
                while i < n && b[i] != b'\n' {
                    i += 1;
                }
            }
            _ => {
                if toks.len() == line_first {
                    cur_indent = indent;
                }
                let depth = stack.len().min(u16::MAX as usize) as u16;
                let start = i;
                let kind;
                if c == b'"' || c == b'\'' {
                    i = skip_string(b, i);
                    kind = Kind::Str;
                } else if is_name_start(c) {
                    while i < n && is_name_char(b[i]) {
                        i += 1;
                    }
                    // string prefixes: r"", b'', f"", rb"", ...
                    let word = &text[start..i];
                    if i < n
                        && (b[i] == b'"' || b[i] == b'\'')
                        && word.len() <= 3
                        && word.chars().all(|ch| "rRbBuUfF".contains(ch))
                    {
                        i = skip_string(b, i);
                        kind = Kind::Str;
                    } else {
                        kind = Kind::Name;
                    }
                } else if c.is_ascii_digit()
                    || (c == b'.' && i + 1 < n && b[i + 1].is_ascii_digit())
                {
                    while i < n
                        && (b[i].is_ascii_alphanumeric()
                            || b[i] == b'_'
                            || b[i] == b'.'
                            || ((b[i] == b'+' || b[i] == b'-')
                                && matches!(b[i - 1], b'e' | b'E')
                                && !text[start..i].starts_with("0x")))
                    {
                        i += 1;
                    }
                    kind = Kind::Number;
                } else {
                    let three = text.get(i..i + 3).unwrap_or("");
                    let two = text.get(i..i + 2).unwrap_or("");
                    let len = if ["**=", "//=", ">>=", "<<=", "..."].contains(&three) {
                        3
                    } else if [
                        "**", "//", "==", "!=", "<=", ">=", "->", "+=", "-=", "*=", "/=", "%=",
                        "&=", "|=", "^=", ">>", "<<", ":=", "@=",
                    ]
                    .contains(&two)
                    {
                        2
                    } else {
                        // one char (a whole UTF-8 scalar for non-ASCII bytes)
                        text[i..]
                            .chars()
                            .next()
                            .map(|ch| ch.len_utf8())
                            .unwrap_or(1)
                    };
                    i += len;
                    kind = Kind::Op;
                }
                let idx = toks.len();
                toks.push(Tok {
                    kind,
                    start: start as u32,
                    end: i as u32,
                    depth,
                });
                close.push(usize::MAX);
                if kind == Kind::Op {
                    match &text[start..i] {
                        "(" | "[" | "{" => stack.push(idx),
                        ")" | "]" | "}" => {
                            if let Some(o) = stack.pop() {
                                close[o] = idx;
                                toks[idx].depth = stack.len() as u16;
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    if toks.len() > line_first {
        lines.push(Line {
            first: line_first,
            end: toks.len(),
            indent: cur_indent,
        });
    }
    let mut src = PySrc {
        text,
        toks,
        lines,
        defs: Vec::new(),
        close,
    };
    src.defs = find_defs(&src);
    src
}

fn skip_string(b: &[u8], mut i: usize) -> usize {
    let n = b.len();
    let q = b[i];
    let triple = i + 2 < n && b[i + 1] == q && b[i + 2] == q;
    if triple {
        i += 3;
        while i < n {
            if b[i] == b'\\' {
                i += 2;
            } else if i + 2 < n && b[i] == q && b[i + 1] == q && b[i + 2] == q {
                return i + 3;
            } else {
                i += 1;
            }
        }
        n
    } else {
        i += 1;
        while i < n && b[i] != b'\n' {
            if b[i] == b'\\' {
                i += 2;
            } else if b[i] == q {
                return i + 1;
            } else {
                i += 1;
            }
        }
        i.min(n)
    }
}

fn find_defs(src: &PySrc) -> Vec<Def> {
    let mut defs = Vec::new();
    for (li, line) in src.lines.iter().enumerate() {
        let mut k = line.first;
        if src.is_name(k, "async") {
            k += 1;
        }
        if !src.is_name(k, "def") || src.kind(k + 1) != Some(Kind::Name) || src.s(k + 2) != "(" {
            continue;
        }
        let name = k + 1;
        let open = k + 2;
        let Some(close) = src.closing(open) else {
            continue;
        };
        // body: tokens after the first `:` at depth 0 following the parameters
        let mut colon = close + 1;
        while colon < line.end
            && !(src.s(colon) == ":" && src.toks[colon].depth == src.toks[line.first].depth)
        {
            colon += 1;
        }
        let body_start = (colon + 1).min(line.end);
        let mut body_end = line.end;
        for l in &src.lines[li + 1..] {
            if l.indent <= line.indent {
                break;
            }
            body_end = l.end;
        }
        let mut decorators = Vec::new();
        let mut start = line.first;
        let mut j = li;
        while j > 0 {
            let p = src.lines[j - 1];
            if src.s(p.first) == "@" && p.indent == line.indent {
                decorators.push((p.first + 1, p.end - 1));
                start = p.first;
                j -= 1;
            } else {
                break;
            }
        }
        decorators.reverse();
        defs.push(Def {
            name,
            start,
            body: (body_start, body_end),
            decorators,
            indent: line.indent,
            params: (open + 1, close),
        });
    }
    defs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_strings_comments_and_defs() {
        let text = "import triton\n# a comment with def x(\n@triton.autotune(configs=[\n    triton.Config({'B': 32}, num_warps=8),\n], key=['n'])\n@triton.jit\ndef k(x_ptr, n, B: tl.constexpr):\n    s = \"\"\"doc\n  def no(\"\"\"\n    y = x_ptr + 1e-3\n\ndef wrapper(x):\n    return k[(1,)](x, 3, B=64)\n";
        let s = lex(text);
        assert_eq!(s.defs.len(), 2);
        let k = &s.defs[0];
        assert_eq!(s.s(k.name), "k");
        assert_eq!(k.decorators.len(), 2);
        assert_eq!(
            s.snippet(k.decorators[1].0, k.decorators[1].1),
            "triton.jit"
        );
        let body = s.snippet(k.body.0, k.body.1 - 1);
        assert!(body.contains("1e-3") && !body.contains("wrapper"), "{body}");
        assert!(s
            .toks
            .iter()
            .any(|t| t.kind == Kind::Number && &text[t.start as usize..t.end as usize] == "1e-3"));
        // kwargs of triton.Config(...)
        let cfg = (0..s.toks.len())
            .find(|&i| s.dotted(i, "triton.Config").is_some())
            .unwrap();
        let kw = s.kwargs(cfg + 3);
        assert_eq!(kw.len(), 1);
        assert_eq!(s.s(kw[0].0), "num_warps");
        assert_eq!(s.int(kw[0].1), Some(8));
        assert_eq!(s.s(s.defs[1].name), "wrapper");
    }

    #[test]
    fn never_panics_on_odd_input() {
        for t in [
            "",
            "'unterminated",
            "\"\"\"x",
            "def (",
            "@\n",
            "x = (\n",
            "\\\n",
            "é = 1\n",
            "def f(:\n  ]",
            "0x",
            "1e",
            "f'{x}'",
        ] {
            let s = lex(t);
            for i in 0..s.toks.len() {
                let _ = s.s(i);
                let _ = s.number(i);
                let _ = s.kwargs(i);
            }
        }
    }
}
