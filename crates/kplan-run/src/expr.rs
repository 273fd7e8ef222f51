//! Size expressions of harness files: integers, names (params and configs), `+ - * / %`,
//! parentheses and `ceil`, `floor`, `min`, `max`. Arithmetic is exact (rationals), so
//! `ceil(n / BLOCK)` rounds up and `n / BLOCK` alone must come out whole.

use std::collections::BTreeMap;

/// A parse or evaluation error at a byte offset of the expression text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError {
    pub offset: usize,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Num(i128),
    Name(String, usize),
    Neg(Box<Node>),
    Bin(char, Box<Node>, Box<Node>, usize),
    Call(String, Vec<Node>, usize),
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    text: String,
    root: Node,
}

/// An exact rational; `d > 0`, reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Q {
    n: i128,
    d: i128,
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

const LIMIT: i128 = 1 << 100;

impl Q {
    fn int(n: i128) -> Q {
        Q { n, d: 1 }
    }
    fn new(n: i128, d: i128) -> Option<Q> {
        if d == 0 {
            return None;
        }
        let g = gcd(n, d);
        let (n, d) = if d < 0 {
            (-n / g, -d / g)
        } else {
            (n / g, d / g)
        };
        (n.abs() < LIMIT && d < LIMIT).then_some(Q { n, d })
    }
    fn floor(self) -> i128 {
        self.n.div_euclid(self.d)
    }
    fn ceil(self) -> i128 {
        -(-self.n).div_euclid(self.d)
    }
    fn lt(self, o: Q) -> bool {
        self.n * o.d < o.n * self.d
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn err<T>(&self, at: usize, m: impl Into<String>) -> Result<T, ExprError> {
        Err(ExprError {
            offset: at,
            message: m.into(),
        })
    }
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }
    fn expr(&mut self, depth: usize) -> Result<Node, ExprError> {
        if depth > 64 {
            return self.err(self.i, "expression nested too deeply");
        }
        let mut l = self.term(depth)?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            let at = self.i;
            self.i += 1;
            let r = self.term(depth)?;
            l = Node::Bin(c as char, Box::new(l), Box::new(r), at);
        }
        Ok(l)
    }
    fn term(&mut self, depth: usize) -> Result<Node, ExprError> {
        let mut l = self.unary(depth)?;
        while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
            let at = self.i;
            self.i += 1;
            let r = self.unary(depth)?;
            l = Node::Bin(c as char, Box::new(l), Box::new(r), at);
        }
        Ok(l)
    }
    fn unary(&mut self, depth: usize) -> Result<Node, ExprError> {
        match self.peek() {
            Some(b'-') => {
                self.i += 1;
                Ok(Node::Neg(Box::new(self.unary(depth + 1)?)))
            }
            Some(b'+') => {
                self.i += 1;
                self.unary(depth + 1)
            }
            _ => self.atom(depth),
        }
    }
    fn atom(&mut self, depth: usize) -> Result<Node, ExprError> {
        let start = self.i;
        match self.peek() {
            None => self.err(self.i, "expected a number, a name or `(`, found the end"),
            Some(b'(') => {
                self.i += 1;
                let e = self.expr(depth + 1)?;
                if self.peek() != Some(b')') {
                    return self.err(self.i, "expected `)`");
                }
                self.i += 1;
                Ok(e)
            }
            Some(c) if c.is_ascii_digit() => {
                let s = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_digit() || self.s[self.i] == b'_')
                {
                    self.i += 1;
                }
                let t: String = String::from_utf8_lossy(&self.s[s..self.i]).replace('_', "");
                match t.parse::<i128>() {
                    Ok(v) if v < LIMIT => Ok(Node::Num(v)),
                    _ => self.err(s, "number too large"),
                }
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let s = self.i;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
                {
                    self.i += 1;
                }
                let name = String::from_utf8_lossy(&self.s[s..self.i]).into_owned();
                if self.peek() == Some(b'(') {
                    if !matches!(name.as_str(), "ceil" | "floor" | "min" | "max") {
                        return self.err(
                            s,
                            format!("unknown function `{name}` (expected ceil, floor, min or max)"),
                        );
                    }
                    self.i += 1;
                    let mut args = vec![self.expr(depth + 1)?];
                    while self.peek() == Some(b',') {
                        self.i += 1;
                        args.push(self.expr(depth + 1)?);
                    }
                    if self.peek() != Some(b')') {
                        return self.err(self.i, "expected `,` or `)`");
                    }
                    self.i += 1;
                    let want_one = matches!(name.as_str(), "ceil" | "floor");
                    if want_one && args.len() != 1 {
                        return self.err(s, format!("{name} takes one argument"));
                    }
                    if !want_one && args.len() < 2 {
                        return self.err(s, format!("{name} takes two or more arguments"));
                    }
                    Ok(Node::Call(name, args, s))
                } else {
                    Ok(Node::Name(name, s))
                }
            }
            Some(c) => self.err(
                start,
                format!(
                    "unexpected `{}` (expected a number, a name, `(`, or one of + - * / %)",
                    c as char
                ),
            ),
        }
    }
}

impl Expr {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        let root = p.expr(0)?;
        if let Some(c) = p.peek() {
            return p.err(
                p.i,
                format!("unexpected `{}` after the expression", c as char),
            );
        }
        Ok(Expr {
            text: text.to_string(),
            root,
        })
    }

    /// An integer constant.
    pub fn int(v: i64) -> Expr {
        Expr {
            text: v.to_string(),
            root: Node::Num(v as i128),
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Names the expression uses, with their offsets.
    pub fn names(&self) -> Vec<(String, usize)> {
        fn walk(n: &Node, out: &mut Vec<(String, usize)>) {
            match n {
                Node::Num(_) => {}
                Node::Name(s, at) => out.push((s.clone(), *at)),
                Node::Neg(a) => walk(a, out),
                Node::Bin(_, a, b, _) => {
                    walk(a, out);
                    walk(b, out);
                }
                Node::Call(_, args, _) => args.iter().for_each(|a| walk(a, out)),
            }
        }
        let mut v = Vec::new();
        walk(&self.root, &mut v);
        v
    }

    /// Evaluates to a whole number with `vars` bound.
    pub fn eval(&self, vars: &BTreeMap<String, i64>) -> Result<i64, ExprError> {
        let q = eval(&self.root, vars)?;
        if q.d != 1 {
            return Err(ExprError {
                offset: 0,
                message: format!(
                    "`{}` is {}/{} here, not a whole number (use ceil or floor)",
                    self.text, q.n, q.d
                ),
            });
        }
        i64::try_from(q.n).map_err(|_| ExprError {
            offset: 0,
            message: format!("`{}` is too large", self.text),
        })
    }
}

fn eval(n: &Node, vars: &BTreeMap<String, i64>) -> Result<Q, ExprError> {
    let over = |at: usize| ExprError {
        offset: at,
        message: "value too large".into(),
    };
    Ok(match n {
        Node::Num(v) => Q::int(*v),
        Node::Name(s, at) => match vars.get(s) {
            Some(v) => Q::int(*v as i128),
            None => {
                let mut known: Vec<&str> = vars.keys().map(String::as_str).collect();
                known.sort();
                return Err(ExprError {
                    offset: *at,
                    message: format!(
                        "unknown name `{s}` (expected a param or config: {})",
                        if known.is_empty() {
                            "none defined".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                });
            }
        },
        Node::Neg(a) => {
            let a = eval(a, vars)?;
            Q { n: -a.n, d: a.d }
        }
        Node::Bin(op, a, b, at) => {
            let (a, b) = (eval(a, vars)?, eval(b, vars)?);
            let r = match op {
                '+' => {
                    a.n.checked_mul(b.d)
                        .zip(b.n.checked_mul(a.d))
                        .and_then(|(x, y)| x.checked_add(y))
                        .zip(a.d.checked_mul(b.d))
                        .and_then(|(n, d)| Q::new(n, d))
                }
                '-' => {
                    a.n.checked_mul(b.d)
                        .zip(b.n.checked_mul(a.d))
                        .and_then(|(x, y)| x.checked_sub(y))
                        .zip(a.d.checked_mul(b.d))
                        .and_then(|(n, d)| Q::new(n, d))
                }
                '*' => {
                    a.n.checked_mul(b.n)
                        .zip(a.d.checked_mul(b.d))
                        .and_then(|(n, d)| Q::new(n, d))
                }
                '/' => {
                    if b.n == 0 {
                        return Err(ExprError {
                            offset: *at,
                            message: "division by zero".into(),
                        });
                    }
                    a.n.checked_mul(b.d)
                        .zip(a.d.checked_mul(b.n))
                        .and_then(|(n, d)| Q::new(n, d))
                }
                _ => {
                    if a.d != 1 || b.d != 1 {
                        return Err(ExprError {
                            offset: *at,
                            message: "% needs whole numbers on both sides".into(),
                        });
                    }
                    if b.n == 0 {
                        return Err(ExprError {
                            offset: *at,
                            message: "remainder by zero".into(),
                        });
                    }
                    Some(Q::int(a.n.rem_euclid(b.n)))
                }
            };
            r.ok_or_else(|| over(*at))?
        }
        Node::Call(f, args, _) => {
            let vals: Vec<Q> = args
                .iter()
                .map(|a| eval(a, vars))
                .collect::<Result<_, _>>()?;
            match f.as_str() {
                "ceil" => Q::int(vals[0].ceil()),
                "floor" => Q::int(vals[0].floor()),
                "min" => vals
                    .into_iter()
                    .reduce(|a, b| if b.lt(a) { b } else { a })
                    .unwrap_or(Q::int(0)),
                _ => vals
                    .into_iter()
                    .reduce(|a, b| if a.lt(b) { b } else { a })
                    .unwrap_or(Q::int(0)),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t: &str, vars: &[(&str, i64)]) -> Result<i64, ExprError> {
        let m = vars.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        Expr::parse(t)?.eval(&m)
    }

    #[test]
    fn arithmetic_is_exact() {
        assert_eq!(ev("ceil(n / BLOCK)", &[("n", 1000), ("BLOCK", 256)]), Ok(4));
        assert_eq!(ev("ceil(n / BLOCK)", &[("n", 1024), ("BLOCK", 256)]), Ok(4));
        assert_eq!(ev("floor(n / 3) + n % 3", &[("n", 10)]), Ok(4));
        assert_eq!(ev("min(n, 64) * max(2, 3, 1)", &[("n", 100)]), Ok(192));
        assert_eq!(ev("-(2 - 5) * 2", &[]), Ok(6));
        assert_eq!(ev("2 + 3 * 4", &[]), Ok(14));
        assert_eq!(ev("1_048_576 / 4", &[]), Ok(262144));
    }

    #[test]
    fn errors_name_the_place() {
        let e = ev("n / 3", &[("n", 10)]).unwrap_err();
        assert!(e.message.contains("not a whole number"), "{e:?}");
        let e = ev("n + m", &[("n", 1)]).unwrap_err();
        assert_eq!(e.offset, 4);
        assert!(e.message.contains("unknown name `m`"));
        let e = Expr::parse("ceil(n").unwrap_err();
        assert!(e.message.contains("`)`"));
        let e = Expr::parse("sqrt(n)").unwrap_err();
        assert!(e.message.contains("unknown function"));
        let e = Expr::parse("n $ 2").unwrap_err();
        assert_eq!(e.offset, 2);
        assert!(ev("1 / 0", &[]).is_err());
        assert!(ev("1 % 0", &[]).is_err());
        assert!(Expr::parse("").is_err());
        let deep = "(".repeat(200) + "1" + &")".repeat(200);
        assert!(Expr::parse(&deep).is_err());
    }
}
