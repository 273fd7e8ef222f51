//! Applicability conditions of the operation knowledge base's risks (`when = "..."` in
//! `ops.toml`): a small boolean language over the spec's problem sizes, modifiers, dtypes and
//! targets, so that an op risk is raised for the shapes it concerns (split-K only when K is much
//! larger than M and N, long-row hazards only for long rows, backward hazards only backward).
//!
//! Grammar (whitespace-insensitive):
//!
//! ```text
//! cond   := conj ("||" conj)*
//! conj   := unary ("&&" unary)*
//! unary  := "!" unary | "(" cond ")" | cmp | flag
//! cmp    := expr ("<" | "<=" | ">" | ">=" | "==" | "!=") (expr | "\"text\"")
//! expr   := term (("+" | "-") term)*
//! term   := atom (("*" | "/" | "%") atom)*
//! atom   := number | name | "max(" expr "," expr ")" | "min(" expr "," expr ")" | "(" expr ")"
//! ```
//!
//! A number name is a problem key or a derived size (see [`Facts`]); a flag is a boolean fact.
//! A comparison that reads a size the spec does not give is false (so `!(cols <= 1024)` holds
//! when `cols` is unknown); a flag that is not set is false; a text the spec does not give
//! equals no value (`kind == "x"` false, `kind != "x"` true). Unknown names are errors, checked
//! for every condition of the compiled knowledge base by a test.

use std::collections::BTreeMap;

/// What a condition can read: numbers, flags and texts.
#[derive(Debug, Default, Clone)]
pub struct Facts {
    pub nums: BTreeMap<String, f64>,
    pub flags: BTreeMap<String, bool>,
    pub texts: BTreeMap<String, String>,
}

/// Every name a condition may use, whether or not a given spec sets it: the problem keys of
/// every op plus the derived names below. Used to reject typos in the KB.
pub const DERIVED_NUMS: &[&str] = &[
    "elements",
    "row_len",
    "weight_bytes",
    "out_bytes",
    "storage_bytes",
    "counter_bytes",
    "lds_bytes",
    "gpu_targets",
    "latency_us",
    "gemv_split_k",
];
pub const FLAGS: &[&str] = &[
    "backward",
    "forward",
    "decode",
    "prefill",
    "deterministic",
    "causal",
    "varlen",
    "ragged",
    "stable",
    "exclusive",
    "values",
    "fp8",
    "fp8_output",
    "sub_byte",
    "integer",
    "block_scaled",
    "amd",
    "nvidia",
    "cpu",
    "cdna",
    "rdna",
    "multi_die",
    "atomics",
    "library",
    "latency_budget",
    "paged",
    "gqa",
    "epilogue",
    "masked",
    "weight_quant",
    "block_quant",
    "unknown_work",
    "gemv",
    "gguf",
];
pub const TEXTS: &[&str] = &[
    "kind",
    "reduce",
    "granularity",
    "format",
    "layout",
    "mask",
    "epilogue",
    "storage",
    "output",
    "weight",
];

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Name(String),
    Str(String),
    Op(&'static str),
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i] as char;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || (c == '.' && i + 1 < b.len() && b[i + 1].is_ascii_digit()) {
            let st = i;
            while i < b.len()
                && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_')
            {
                // exponent sign: 1e-3
                if (b[i] == b'e' || b[i] == b'E')
                    && i + 1 < b.len()
                    && (b[i + 1] == b'-' || b[i + 1] == b'+')
                {
                    i += 1;
                }
                i += 1;
            }
            let t = s[st..i].replace('_', "");
            out.push(Tok::Num(
                t.parse::<f64>()
                    .map_err(|_| format!("bad number `{}`", &s[st..i]))?,
            ));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let st = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Name(s[st..i].to_string()));
        } else if c == '"' {
            let st = i + 1;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += 1;
            }
            if i >= b.len() {
                return Err("unterminated string".into());
            }
            out.push(Tok::Str(s[st..i].to_string()));
            i += 1;
        } else {
            let two = if i + 1 < b.len() { &s[i..i + 2] } else { "" };
            let op2 = ["&&", "||", "<=", ">=", "==", "!="]
                .into_iter()
                .find(|o| *o == two);
            if let Some(o) = op2 {
                out.push(Tok::Op(o));
                i += 2;
            } else {
                let o = ["<", ">", "!", "(", ")", ",", "+", "-", "*", "/", "%"]
                    .into_iter()
                    .find(|o| o.as_bytes()[0] == b[i])
                    .ok_or_else(|| format!("unexpected `{c}`"))?;
                out.push(Tok::Op(o));
                i += 1;
            }
        }
    }
    Ok(out)
}

/// A parsed condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    Or(Vec<Cond>),
    And(Vec<Cond>),
    Not(Box<Cond>),
    Flag(String),
    Cmp(Expr, &'static str, Expr),
    TextEq(String, bool, String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Name(String),
    Bin(Box<Expr>, char, Box<Expr>),
    Max(Box<Expr>, Box<Expr>),
    Min(Box<Expr>, Box<Expr>),
}

struct P {
    t: Vec<Tok>,
    i: usize,
}

impl P {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }
    fn eat(&mut self, o: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(x)) if *x == o) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, o: &str) -> Result<(), String> {
        if self.eat(o) {
            Ok(())
        } else {
            Err(format!("expected `{o}`"))
        }
    }
    fn cond(&mut self) -> Result<Cond, String> {
        let mut v = vec![self.conj()?];
        while self.eat("||") {
            v.push(self.conj()?);
        }
        Ok(if v.len() == 1 {
            v.remove(0)
        } else {
            Cond::Or(v)
        })
    }
    fn conj(&mut self) -> Result<Cond, String> {
        let mut v = vec![self.unary()?];
        while self.eat("&&") {
            v.push(self.unary()?);
        }
        Ok(if v.len() == 1 {
            v.remove(0)
        } else {
            Cond::And(v)
        })
    }
    fn unary(&mut self) -> Result<Cond, String> {
        if self.eat("!") {
            return Ok(Cond::Not(Box::new(self.unary()?)));
        }
        // `(` opens a condition unless it is an arithmetic group followed by a comparison:
        // try the condition first, backtrack to an expression.
        if matches!(self.peek(), Some(Tok::Op("("))) {
            let save = self.i;
            self.i += 1;
            if let Ok(c) = self.cond() {
                if self.eat(")") && !self.at_cmp() {
                    return Ok(c);
                }
            }
            self.i = save;
        }
        // A bare flag: a name followed by neither an operator of arithmetic nor a comparison.
        if let Some(Tok::Name(n)) = self.peek().cloned() {
            let next = self.t.get(self.i + 1);
            let is_call = matches!(next, Some(Tok::Op("(")));
            let continues = matches!(next, Some(Tok::Op(o)) if ["<", "<=", ">", ">=", "==", "!=", "+", "-", "*", "/", "%"].contains(o));
            if !is_call && !continues {
                self.i += 1;
                return Ok(Cond::Flag(n));
            }
            // name == "text"
            if let (Some(Tok::Op(o)), Some(Tok::Str(s))) =
                (self.t.get(self.i + 1), self.t.get(self.i + 2))
            {
                if *o == "==" || *o == "!=" {
                    let eq = *o == "==";
                    let s = s.clone();
                    self.i += 3;
                    return Ok(Cond::TextEq(n, eq, s));
                }
            }
        }
        let l = self.expr()?;
        let op = match self.peek() {
            Some(Tok::Op(o)) if ["<", "<=", ">", ">=", "==", "!="].contains(o) => *o,
            _ => return Err("expected a comparison".into()),
        };
        self.i += 1;
        let r = self.expr()?;
        Ok(Cond::Cmp(l, op, r))
    }
    fn at_cmp(&self) -> bool {
        matches!(self.peek(), Some(Tok::Op(o)) if ["<", "<=", ">", ">=", "==", "!=", "+", "-", "*", "/", "%"].contains(o))
    }
    fn expr(&mut self) -> Result<Expr, String> {
        let mut l = self.term()?;
        loop {
            if self.eat("+") {
                l = Expr::Bin(Box::new(l), '+', Box::new(self.term()?));
            } else if self.eat("-") {
                l = Expr::Bin(Box::new(l), '-', Box::new(self.term()?));
            } else {
                return Ok(l);
            }
        }
    }
    fn term(&mut self) -> Result<Expr, String> {
        let mut l = self.atom()?;
        loop {
            if self.eat("*") {
                l = Expr::Bin(Box::new(l), '*', Box::new(self.atom()?));
            } else if self.eat("/") {
                l = Expr::Bin(Box::new(l), '/', Box::new(self.atom()?));
            } else if self.eat("%") {
                l = Expr::Bin(Box::new(l), '%', Box::new(self.atom()?));
            } else {
                return Ok(l);
            }
        }
    }
    fn atom(&mut self) -> Result<Expr, String> {
        match self.peek().cloned() {
            Some(Tok::Num(x)) => {
                self.i += 1;
                Ok(Expr::Num(x))
            }
            Some(Tok::Name(n)) => {
                self.i += 1;
                if (n == "max" || n == "min") && self.eat("(") {
                    let a = self.expr()?;
                    self.expect(",")?;
                    let b = self.expr()?;
                    self.expect(")")?;
                    return Ok(if n == "max" {
                        Expr::Max(Box::new(a), Box::new(b))
                    } else {
                        Expr::Min(Box::new(a), Box::new(b))
                    });
                }
                Ok(Expr::Name(n))
            }
            Some(Tok::Op("(")) => {
                self.i += 1;
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            other => Err(format!("expected a number or a name, found {other:?}")),
        }
    }
}

/// Parses a condition.
pub fn parse(s: &str) -> Result<Cond, String> {
    let mut p = P { t: lex(s)?, i: 0 };
    let c = p.cond()?;
    if p.i != p.t.len() {
        return Err(format!("unexpected {:?}", p.t[p.i]));
    }
    Ok(c)
}

impl Cond {
    /// Every name the condition reads, with what it reads it as (`n` number, `f` flag, `t` text).
    pub fn names(&self, out: &mut Vec<(String, char)>) {
        match self {
            Cond::Or(v) | Cond::And(v) => v.iter().for_each(|c| c.names(out)),
            Cond::Not(c) => c.names(out),
            Cond::Flag(n) => out.push((n.clone(), 'f')),
            Cond::TextEq(n, _, _) => out.push((n.clone(), 't')),
            Cond::Cmp(a, _, b) => {
                a.names(out);
                b.names(out);
            }
        }
    }
    pub fn eval(&self, f: &Facts) -> bool {
        match self {
            Cond::Or(v) => v.iter().any(|c| c.eval(f)),
            Cond::And(v) => v.iter().all(|c| c.eval(f)),
            Cond::Not(c) => !c.eval(f),
            Cond::Flag(n) => f.flags.get(n).copied().unwrap_or(false),
            // A text the spec does not give equals nothing: `==` is false, `!=` true.
            Cond::TextEq(n, eq, s) => {
                f.texts.get(n).is_some_and(|t| t.eq_ignore_ascii_case(s)) == *eq
            }
            Cond::Cmp(a, op, b) => match (a.eval(f), b.eval(f)) {
                (Some(x), Some(y)) => match *op {
                    "<" => x < y,
                    "<=" => x <= y,
                    ">" => x > y,
                    ">=" => x >= y,
                    "==" => x == y,
                    _ => x != y,
                },
                _ => false,
            },
        }
    }
}

impl Expr {
    fn names(&self, out: &mut Vec<(String, char)>) {
        match self {
            Expr::Num(_) => {}
            Expr::Name(n) => out.push((n.clone(), 'n')),
            Expr::Bin(a, _, b) | Expr::Max(a, b) | Expr::Min(a, b) => {
                a.names(out);
                b.names(out);
            }
        }
    }
    fn eval(&self, f: &Facts) -> Option<f64> {
        Some(match self {
            Expr::Num(x) => *x,
            Expr::Name(n) => *f.nums.get(n)?,
            Expr::Bin(a, op, b) => {
                let (x, y) = (a.eval(f)?, b.eval(f)?);
                match op {
                    '+' => x + y,
                    '-' => x - y,
                    '*' => x * y,
                    '%' => {
                        if y == 0.0 {
                            return None;
                        }
                        x % y
                    }
                    _ => {
                        if y == 0.0 {
                            return None;
                        }
                        x / y
                    }
                }
            }
            Expr::Max(a, b) => a.eval(f)?.max(b.eval(f)?),
            Expr::Min(a, b) => a.eval(f)?.min(b.eval(f)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        let mut f = Facts::default();
        f.nums.insert("m".into(), 64.0);
        f.nums.insert("n".into(), 128.0);
        f.nums.insert("k".into(), 65536.0);
        f.flags.insert("backward".into(), true);
        f.texts.insert("kind".into(), "rmsnorm".into());
        f
    }

    #[test]
    fn comparisons_and_logic() {
        let f = facts();
        let t = |s: &str| parse(s).unwrap().eval(&f);
        assert!(t("k >= 8 * max(m, n)"));
        assert!(!t("k < 8 * max(m, n)"));
        assert!(t("backward && kind == \"rmsnorm\""));
        assert!(!t("forward || kind != \"rmsnorm\""));
        assert!(
            t("reduce != \"sum\"") && !t("reduce == \"sum\""),
            "an absent text"
        );
        assert!(
            t("!(cols <= 1024)"),
            "an unknown size makes the comparison false"
        );
        assert!(!t("cols > 1024"));
        assert!(t("(m + n) * 2 == 384"));
        assert!(t("(m < 100) && (n > 100)"));
        assert!(t("k % 256 == 0") && t("n % 96 == 32") && !t("m % 0 == 0"));
        assert!(t("elements_missing_flag || 1e3 < 1_001"));
    }

    #[test]
    fn bad_conditions_are_errors() {
        for s in ["k >", "k >= (m", "a && && b", "\"x", "k # 3", "m + n"] {
            assert!(parse(s).is_err(), "{s}");
        }
    }
}
