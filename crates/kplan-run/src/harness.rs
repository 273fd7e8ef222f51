//! Harness files: how to run any kernel against a CPU reference (`kplan verify HARNESS.toml`).
//!
//! ```toml
//! [kernel]                      # or [[kernel]] entries, run in order
//! source = "block_sum.cu"       # relative to the harness file
//! entry = "block_sum"
//! include = ["."]
//! [params]                      # swept as a cartesian product
//! n = [1, 33, 1000]
//! [configs]                     # -D, every combination must pass
//! BLOCK = [128, 256]
//! [[args]]                      # kernel parameter order
//! name = "x"
//! kind = "in"                   # in | out | inout | scalar | scratch
//! dtype = "fp32"
//! len = "n"
//! data = "random"
//! [launch]
//! grid = "ceil(n / BLOCK)"
//! block = "BLOCK"
//! shared = "0"
//! [reference]
//! source = "block_sum_ref.cpp"
//! function = "block_sum_ref"
//! [tolerance]
//! fp32 = { rel = 1e-5, abs = 1e-6 }
//! ```
//!
//! Every error names the harness file, line and column, and what was expected.

use crate::expr::{Expr, ExprError};
use serde::de::{self, IntoDeserializer};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// A harness input error: file, 1-based line and column, message.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}:{line}:{col}: {message}", path.display())]
pub struct HarnessError {
    pub path: PathBuf,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// Element types of harness buffers and scalars.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "lowercase")]
pub enum Dtype {
    Fp64,
    Fp32,
    Fp16,
    Bf16,
    Int64,
    Int32,
    Uint32,
    Int8,
    Uint8,
}

impl Dtype {
    pub const ALL: [Dtype; 9] = kplan_kb::all_variants();
    pub fn as_str(self) -> &'static str {
        self.into()
    }
    pub fn parse(s: &str) -> Option<Dtype> {
        s.parse().ok()
    }
    pub fn bytes(self) -> usize {
        match self {
            Dtype::Fp64 | Dtype::Int64 => 8,
            Dtype::Fp32 | Dtype::Int32 | Dtype::Uint32 => 4,
            Dtype::Fp16 | Dtype::Bf16 => 2,
            Dtype::Int8 | Dtype::Uint8 => 1,
        }
    }
    pub fn is_float(self) -> bool {
        matches!(self, Dtype::Fp64 | Dtype::Fp32 | Dtype::Fp16 | Dtype::Bf16)
    }
    /// The C type a scalar of this dtype is passed as (16-bit floats as their bits).
    pub fn c_type(self) -> &'static str {
        match self {
            Dtype::Fp64 => "double",
            Dtype::Fp32 => "float",
            Dtype::Fp16 | Dtype::Bf16 => "unsigned short",
            Dtype::Int64 => "long long",
            Dtype::Int32 => "int",
            Dtype::Uint32 => "unsigned int",
            Dtype::Int8 => "signed char",
            Dtype::Uint8 => "unsigned char",
        }
    }
}

/// What an argument is to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ArgKind {
    /// Read by the kernel; generated, passed to the reference too.
    In,
    /// Written by the kernel; poisoned before each run and compared.
    Out,
    /// Read and written; generated, compared after the run.
    Inout,
    /// A value, passed by value (`value` expression).
    Scalar,
    /// Kernel-only workspace (partials between kernels): poisoned, not compared, not passed to
    /// the reference.
    Scratch,
}

impl ArgKind {
    pub fn is_buffer(self) -> bool {
        self != ArgKind::Scalar
    }
    pub fn compared(self) -> bool {
        matches!(self, ArgKind::Out | ArgKind::Inout)
    }
    pub fn generated(self) -> bool {
        matches!(self, ArgKind::In | ArgKind::Inout)
    }
}

/// Input data kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum DataKind {
    /// Seeded random values (floats: about unit normal; integers: small signed/unsigned).
    Random,
    Ones,
    Zeros,
    /// 0, 1, 2, ... (wrapping in narrow integer types).
    Ramp,
    /// Magnitudes near the top of the type's range (floats: 1e30 in fp32/bf16/fp64, 3e4 in fp16).
    Large,
    /// Random values with about one in eight replaced by +inf or -inf (floats only).
    MixedInf,
}

impl DataKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Tolerance for one output dtype: `|got - want| <= abs + rel * |want|`.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Tol {
    #[serde(default)]
    pub rel: f64,
    #[serde(default)]
    pub abs: f64,
}

impl Tol {
    /// The default per dtype: a few units in the last place relative, a small absolute floor;
    /// integers exact.
    pub fn default_for(d: Dtype) -> Tol {
        match d {
            Dtype::Fp64 => Tol {
                rel: 1e-12,
                abs: 1e-300,
            },
            Dtype::Fp32 => Tol {
                rel: 1e-5,
                abs: 1e-6,
            },
            Dtype::Fp16 => Tol {
                rel: 2e-3,
                abs: 1e-4,
            },
            Dtype::Bf16 => Tol {
                rel: 1.6e-2,
                abs: 1e-4,
            },
            _ => Tol { rel: 0.0, abs: 0.0 },
        }
    }
}

/// One argument of the kernel(s).
#[derive(Debug, Clone)]
pub struct Arg {
    pub name: String,
    pub kind: ArgKind,
    pub dtype: Dtype,
    /// Buffers: element count.
    pub len: Option<Expr>,
    /// Scalars: value.
    pub value: Option<Expr>,
    /// Floating-point scalars given as a number (`value = 1e-6`).
    pub fvalue: Option<f64>,
    /// Generated buffers: one data kind per case (one entry: every case).
    pub data: Vec<DataKind>,
}

/// Grid, block and dynamic shared bytes of one launch.
#[derive(Debug, Clone)]
pub struct Launch {
    pub grid: [Expr; 3],
    pub block: [Expr; 3],
    pub shared: Expr,
}

/// One kernel launch of the harness.
#[derive(Debug, Clone)]
pub struct KernelEntry {
    /// Absolute path of the kernel source.
    pub source: PathBuf,
    pub entry: String,
    pub include: Vec<PathBuf>,
    /// Indices into [`Harness::args`], in the kernel's parameter order.
    pub args: Vec<usize>,
    pub launch: Launch,
}

/// Language of the reference source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    C,
    Cpp,
}

#[derive(Debug, Clone)]
pub struct Reference {
    pub source: PathBuf,
    pub function: String,
    pub lang: Lang,
}

/// A parsed, checked harness.
#[derive(Debug, Clone)]
pub struct Harness {
    pub path: PathBuf,
    pub kernels: Vec<KernelEntry>,
    pub params: Vec<(String, Vec<i64>)>,
    pub configs: Vec<(String, Vec<String>)>,
    pub args: Vec<Arg>,
    pub reference: Reference,
    pub tolerance: BTreeMap<Dtype, Tol>,
    pub seed: u64,
}

// ---------------------------------------------------------------- raw (serde) form

/// One value or a list of them.
#[derive(Debug, Clone)]
struct OneOrMany<T>(Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> de::Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a value or a list of values")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                Vec::<T>::deserialize(de::value::SeqAccessDeserializer::new(a)).map(OneOrMany)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, a: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(a)).map(|t| OneOrMany(vec![t]))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                T::deserialize(s.into_deserializer()).map(|t| OneOrMany(vec![t]))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(|t| OneOrMany(vec![t]))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(|t| OneOrMany(vec![t]))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(|t| OneOrMany(vec![t]))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                T::deserialize(v.into_deserializer()).map(|t| OneOrMany(vec![t]))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An expression written as a string or an integer.
#[derive(Debug, Clone)]
struct ExprText(String);

impl<'de> Deserialize<'de> for ExprText {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = ExprText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an expression string (e.g. \"ceil(n / BLOCK)\") or an integer")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ExprText, E> {
                Ok(ExprText(s.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ExprText, E> {
                Ok(ExprText(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ExprText, E> {
                Ok(ExprText(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ExprText, E> {
                Ok(ExprText(format!("{v:e}")))
            }
        }
        d.deserialize_any(V)
    }
}

/// A config value: integer or string (passed to -D as written).
#[derive(Debug, Clone)]
struct ConfigValue(String);

impl<'de> Deserialize<'de> for ConfigValue {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = ConfigValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer, a boolean or a string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ConfigValue, E> {
                Ok(ConfigValue(s.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ConfigValue, E> {
                Ok(ConfigValue(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ConfigValue, E> {
                Ok(ConfigValue(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ConfigValue, E> {
                Ok(ConfigValue(if v { "1" } else { "0" }.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKernel {
    source: Option<Spanned<String>>,
    entry: Spanned<String>,
    include: Option<Vec<Spanned<String>>>,
    args: Option<Vec<Spanned<String>>>,
    launch: Option<Spanned<RawLaunch>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLaunch {
    grid: Spanned<OneOrMany<ExprText>>,
    block: Spanned<OneOrMany<ExprText>>,
    shared: Option<Spanned<ExprText>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArg {
    name: Spanned<String>,
    kind: ArgKind,
    dtype: Dtype,
    len: Option<Spanned<ExprText>>,
    value: Option<Spanned<ExprText>>,
    data: Option<Spanned<OneOrMany<DataKind>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReference {
    source: Spanned<String>,
    function: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHarness {
    kernel: Spanned<OneOrMany<RawKernel>>,
    #[serde(default)]
    params: BTreeMap<Spanned<String>, Spanned<OneOrMany<i64>>>,
    #[serde(default)]
    configs: BTreeMap<Spanned<String>, Spanned<OneOrMany<ConfigValue>>>,
    args: Spanned<Vec<RawArg>>,
    launch: Option<Spanned<RawLaunch>>,
    reference: Spanned<RawReference>,
    #[serde(default)]
    tolerance: BTreeMap<Spanned<String>, Tol>,
    seed: Option<u64>,
}

// ---------------------------------------------------------------- checking

struct Ctx<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, offset: usize, message: impl Into<String>) -> HarnessError {
        let (line, col) = kplan_kb::line_col(self.text, offset);
        HarnessError {
            path: self.path.to_path_buf(),
            line,
            col,
            message: message.into(),
        }
    }
    /// Parses an expression whose text starts at `span_start` (a quoted string: +1).
    fn expr(
        &self,
        s: &Spanned<ExprText>,
        names: &BTreeSet<String>,
        what: &str,
    ) -> Result<Expr, HarnessError> {
        let quoted = self.text.as_bytes().get(s.span().start) == Some(&b'"')
            || self.text.as_bytes().get(s.span().start) == Some(&b'\'');
        let base = s.span().start + quoted as usize;
        self.expr_at(&s.get_ref().0, base, names, what)
    }
    fn expr_at(
        &self,
        text: &str,
        base: usize,
        names: &BTreeSet<String>,
        what: &str,
    ) -> Result<Expr, HarnessError> {
        let e = Expr::parse(text).map_err(|ExprError { offset, message }| {
            self.err(base + offset, format!("{what}: {message}"))
        })?;
        for (n, at) in e.names() {
            if !names.contains(&n) {
                let known: Vec<&str> = names.iter().map(String::as_str).collect();
                return Err(self.err(
                    base + at,
                    format!(
                        "{what}: unknown name `{n}` (expected a [params] or [configs] name: {})",
                        if known.is_empty() {
                            "none defined".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                ));
            }
        }
        Ok(e)
    }
    fn dims(
        &self,
        s: &Spanned<OneOrMany<ExprText>>,
        names: &BTreeSet<String>,
        what: &str,
    ) -> Result<[Expr; 3], HarnessError> {
        let v = &s.get_ref().0;
        if v.is_empty() || v.len() > 3 {
            return Err(self.err(
                s.span().start,
                format!("{what}: expected one expression or a list of 1 to 3 ([x, y, z])"),
            ));
        }
        let mut out = [Expr::int(1), Expr::int(1), Expr::int(1)];
        for (i, e) in v.iter().enumerate() {
            let base = if v.len() == 1 {
                s.span().start + (self.text.as_bytes().get(s.span().start) == Some(&b'"')) as usize
            } else {
                s.span().start
            };
            out[i] = self.expr_at(&e.0, base, names, what)?;
        }
        Ok(out)
    }
}

fn valid_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

impl Harness {
    /// Reads and checks a harness file.
    pub fn load(path: &Path) -> Result<Harness, HarnessError> {
        let bytes = std::fs::read(path).map_err(|e| HarnessError {
            path: path.to_path_buf(),
            line: 1,
            col: 1,
            message: format!("cannot read the harness file: {e}"),
        })?;
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                let ok = e.utf8_error().valid_up_to();
                let t = String::from_utf8_lossy(&e.into_bytes()[..ok]).into_owned();
                let (line, col) = kplan_kb::line_col(&t, ok);
                return Err(HarnessError {
                    path: path.to_path_buf(),
                    line,
                    col,
                    message: "expected UTF-8 text (TOML)".into(),
                });
            }
        };
        Harness::parse(&text, path)
    }

    /// Parses harness text; `path` locates relative files and names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Harness, HarnessError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let cx = Ctx { path, text };
        let raw: RawHarness = toml::from_str(text).map_err(|e| {
            let at = e.span().map(|s| s.start).unwrap_or(0);
            cx.err(at, e.message().trim().to_string())
        })?;
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);

        // Names: params then configs, unique, identifiers.
        let mut names = BTreeSet::new();
        let mut params = Vec::new();
        for (k, v) in &raw.params {
            if !valid_ident(k.get_ref()) {
                return Err(cx.err(
                    k.span().start,
                    format!(
                        "param name `{}`: expected an identifier (letters, digits, _)",
                        k.get_ref()
                    ),
                ));
            }
            let vals = v.get_ref().0.clone();
            if vals.is_empty() {
                return Err(cx.err(
                    v.span().start,
                    format!("param `{}`: expected at least one value", k.get_ref()),
                ));
            }
            if let Some(bad) = vals.iter().find(|&&x| !(0..=(1i64 << 40)).contains(&x)) {
                return Err(cx.err(
                    v.span().start,
                    format!(
                        "param `{}`: {bad} is out of range (expected 0 to 2^40)",
                        k.get_ref()
                    ),
                ));
            }
            names.insert(k.get_ref().clone());
            params.push((k.get_ref().clone(), vals));
        }
        let mut configs = Vec::new();
        for (k, v) in &raw.configs {
            if !valid_ident(k.get_ref()) {
                return Err(cx.err(
                    k.span().start,
                    format!(
                        "config name `{}`: expected an identifier usable with -D",
                        k.get_ref()
                    ),
                ));
            }
            if names.contains(k.get_ref()) {
                return Err(cx.err(
                    k.span().start,
                    format!("`{}` is both a param and a config", k.get_ref()),
                ));
            }
            let vals: Vec<String> = v.get_ref().0.iter().map(|c| c.0.clone()).collect();
            if vals.is_empty() {
                return Err(cx.err(
                    v.span().start,
                    format!("config `{}`: expected at least one value", k.get_ref()),
                ));
            }
            if let Some(bad) = vals.iter().find(|s| s.contains(['\n', '\0'])) {
                return Err(cx.err(
                    v.span().start,
                    format!(
                        "config `{}`: value {bad:?} cannot be passed with -D",
                        k.get_ref()
                    ),
                ));
            }
            // Configs usable in expressions only when every value is an integer.
            if vals.iter().all(|s| s.parse::<i64>().is_ok()) {
                names.insert(k.get_ref().clone());
            }
            configs.push((k.get_ref().clone(), vals));
        }

        // Args.
        let mut args = Vec::new();
        for a in raw.args.get_ref() {
            let name = a.name.get_ref().clone();
            if !valid_ident(&name) {
                return Err(cx.err(
                    a.name.span().start,
                    format!("arg name `{name}`: expected an identifier"),
                ));
            }
            if args.iter().any(|x: &Arg| x.name == name) {
                return Err(cx.err(a.name.span().start, format!("arg `{name}` is listed twice")));
            }
            let what = |f: &str| format!("arg `{name}` {f}");
            let mut fvalue = None;
            let (len, value) = if a.kind == ArgKind::Scalar {
                if let Some(l) = &a.len {
                    return Err(cx.err(
                        l.span().start,
                        format!("arg `{name}`: a scalar takes `value`, not `len`"),
                    ));
                }
                let Some(v) = &a.value else {
                    return Err(cx.err(
                        a.name.span().start,
                        format!("arg `{name}`: a scalar needs `value = \"...\"`"),
                    ));
                };
                let text = &v.get_ref().0;
                match text.trim().parse::<f64>() {
                    Ok(x) if a.dtype.is_float() && text.trim().parse::<i64>().is_err() => {
                        fvalue = Some(x);
                        (None, Some(Expr::int(0)))
                    }
                    Ok(_) if text.trim().parse::<i64>().is_err() => {
                        return Err(cx.err(
                            v.span().start,
                            format!(
                                "arg `{name}`: {text} is not an integer (dtype {})",
                                a.dtype.as_str()
                            ),
                        ));
                    }
                    _ => (None, Some(cx.expr(v, &names, &what("value"))?)),
                }
            } else {
                if let Some(v) = &a.value {
                    return Err(cx.err(
                        v.span().start,
                        format!("arg `{name}`: a buffer takes `len`, not `value`"),
                    ));
                }
                let Some(l) = &a.len else {
                    return Err(cx.err(
                        a.name.span().start,
                        format!("arg `{name}`: a buffer needs `len = \"...\"` (element count)"),
                    ));
                };
                (Some(cx.expr(l, &names, &what("len"))?), None)
            };
            let data = match &a.data {
                Some(d) => {
                    if !a.kind.generated() {
                        return Err(cx.err(
                            d.span().start,
                            format!("arg `{name}`: `data` applies to in and inout buffers only"),
                        ));
                    }
                    let v = d.get_ref().0.clone();
                    if v.is_empty() {
                        return Err(cx.err(
                            d.span().start,
                            format!("arg `{name}`: expected at least one data kind"),
                        ));
                    }
                    if !a.dtype.is_float() {
                        if let Some(k) = v.iter().find(|k| **k == DataKind::MixedInf) {
                            return Err(cx.err(
                                d.span().start,
                                format!(
                                    "arg `{name}`: data `{}` needs a floating-point dtype",
                                    k.as_str()
                                ),
                            ));
                        }
                    }
                    v
                }
                None => vec![DataKind::Random],
            };
            args.push(Arg {
                name,
                kind: a.kind,
                dtype: a.dtype,
                len,
                value,
                fvalue,
                data,
            });
        }
        if args.is_empty() {
            return Err(cx.err(
                raw.args.span().start,
                "expected at least one [[args]] entry",
            ));
        }
        if !args.iter().any(|a| a.kind.compared()) {
            return Err(cx.err(
                raw.args.span().start,
                "no arg of kind `out` or `inout`: nothing to compare",
            ));
        }

        let launch_of = |l: &Spanned<RawLaunch>| -> Result<Launch, HarnessError> {
            let l = l.get_ref();
            Ok(Launch {
                grid: cx.dims(&l.grid, &names, "launch grid")?,
                block: cx.dims(&l.block, &names, "launch block")?,
                shared: match &l.shared {
                    Some(s) => cx.expr(s, &names, "launch shared")?,
                    None => Expr::int(0),
                },
            })
        };
        let top_launch = raw.launch.as_ref().map(launch_of).transpose()?;

        let rel = |s: &Spanned<String>, what: &str| -> Result<PathBuf, HarnessError> {
            let p = dir.join(s.get_ref());
            if !p.is_file() {
                return Err(cx.err(
                    s.span().start,
                    format!(
                        "{what} `{}`: no such file (relative to {})",
                        s.get_ref(),
                        dir.display()
                    ),
                ));
            }
            Ok(std::fs::canonicalize(&p).unwrap_or(p))
        };

        let mut kernels = Vec::new();
        let mut last_source: Option<PathBuf> = None;
        for k in &raw.kernel.get_ref().0 {
            let source = match &k.source {
                Some(s) => rel(s, "kernel source")?,
                None => match &last_source {
                    Some(p) => p.clone(),
                    None => {
                        return Err(cx.err(
                            k.entry.span().start,
                            "kernel: expected `source = \"...\"` (the first kernel needs one)",
                        ))
                    }
                },
            };
            last_source = Some(source.clone());
            if !valid_ident(k.entry.get_ref().split('<').next().unwrap_or("")) {
                return Err(cx.err(
                    k.entry.span().start,
                    format!(
                        "kernel entry `{}`: expected a function name",
                        k.entry.get_ref()
                    ),
                ));
            }
            let mut include = Vec::new();
            for i in k.include.iter().flatten() {
                let p = dir.join(i.get_ref());
                if !p.is_dir() {
                    return Err(cx.err(
                        i.span().start,
                        format!("include `{}`: no such directory", i.get_ref()),
                    ));
                }
                include.push(std::fs::canonicalize(&p).unwrap_or(p));
            }
            let kargs = match &k.args {
                None => (0..args.len())
                    .filter(|&i| {
                        args[i].kind != ArgKind::Scratch || raw.kernel.get_ref().0.len() == 1
                    })
                    .collect(),
                Some(list) => {
                    let mut v = Vec::new();
                    for n in list {
                        match args.iter().position(|a| &a.name == n.get_ref()) {
                            Some(i) => v.push(i),
                            None => {
                                return Err(cx.err(
                                    n.span().start,
                                    format!(
                                        "kernel args: no [[args]] entry named `{}`",
                                        n.get_ref()
                                    ),
                                ))
                            }
                        }
                    }
                    v
                }
            };
            let launch = match (&k.launch, &top_launch) {
                (Some(l), _) => launch_of(l)?,
                (None, Some(l)) => l.clone(),
                (None, None) => {
                    return Err(cx.err(
                        k.entry.span().start,
                        "kernel: expected a [launch] table (grid, block, shared)",
                    ))
                }
            };
            kernels.push(KernelEntry {
                source,
                entry: k.entry.get_ref().clone(),
                include,
                args: kargs,
                launch,
            });
        }
        if kernels.is_empty() {
            return Err(cx.err(raw.kernel.span().start, "expected at least one kernel"));
        }

        let r = raw.reference.get_ref();
        let source = rel(&r.source, "reference source")?;
        let lang = match source.extension().and_then(|e| e.to_str()) {
            Some("c") => Lang::C,
            Some("cpp" | "cc" | "cxx" | "C") => Lang::Cpp,
            _ => {
                return Err(cx.err(
                    r.source.span().start,
                    "reference source: expected a .c, .cpp, .cc or .cxx file",
                ))
            }
        };
        if !valid_ident(r.function.get_ref()) {
            return Err(cx.err(
                r.function.span().start,
                format!(
                    "reference function `{}`: expected a function name",
                    r.function.get_ref()
                ),
            ));
        }
        let mut tolerance = BTreeMap::new();
        for (k, t) in &raw.tolerance {
            let Some(d) = Dtype::parse(k.get_ref()) else {
                return Err(cx.err(k.span().start, format!("tolerance `{}`: expected a dtype (fp64 fp32 fp16 bf16 int64 int32 uint32 int8 uint8)", k.get_ref())));
            };
            if !(t.rel >= 0.0 && t.abs >= 0.0 && t.rel.is_finite() && t.abs.is_finite()) {
                return Err(cx.err(
                    k.span().start,
                    format!(
                        "tolerance `{}`: rel and abs must be finite and >= 0",
                        k.get_ref()
                    ),
                ));
            }
            tolerance.insert(d, *t);
        }
        Ok(Harness {
            path: path.to_path_buf(),
            kernels,
            params,
            configs,
            args,
            reference: Reference {
                source,
                function: r.function.get_ref().clone(),
                lang,
            },
            tolerance,
            seed: raw.seed.unwrap_or(1),
        })
    }

    pub fn tol(&self, d: Dtype) -> Tol {
        self.tolerance
            .get(&d)
            .copied()
            .unwrap_or_else(|| Tol::default_for(d))
    }

    /// Every combination of param values (cartesian product, in file order).
    pub fn param_points(&self) -> Vec<Vec<(String, i64)>> {
        cartesian(&self.params)
    }

    /// Every combination of config values.
    pub fn config_points(&self) -> Vec<Vec<(String, String)>> {
        cartesian(&self.configs)
    }

    /// The number of data cases: the longest `data` list.
    pub fn data_cases(&self) -> usize {
        self.args
            .iter()
            .filter(|a| a.kind.generated())
            .map(|a| a.data.len())
            .max()
            .unwrap_or(1)
    }
}

/// Cartesian product of named value lists.
pub fn cartesian<T: Clone>(lists: &[(String, Vec<T>)]) -> Vec<Vec<(String, T)>> {
    let mut out: Vec<Vec<(String, T)>> = vec![vec![]];
    for (k, vals) in lists {
        let mut next = Vec::with_capacity(out.len() * vals.len());
        for base in &out {
            for v in vals {
                let mut b = base.clone();
                b.push((k.clone(), v.clone()));
                next.push(b);
            }
        }
        out = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("kplan-harness-unit-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("k.cu"), "").unwrap();
        std::fs::write(d.join("r.cpp"), "").unwrap();
        d
    }

    const GOOD: &str = r#"
[kernel]
source = "k.cu"
entry = "block_sum"
include = ["."]
[params]
n = [1, 31, 1000]
[configs]
BLOCK = [128, 256]
[[args]]
name = "x"
kind = "in"
dtype = "fp32"
len = "n"
data = ["random", "large"]
[[args]]
name = "out"
kind = "out"
dtype = "fp32"
len = "ceil(n / BLOCK)"
[[args]]
name = "n"
kind = "scalar"
dtype = "int32"
value = "n"
[launch]
grid = "ceil(n / BLOCK)"
block = "BLOCK"
shared = "0"
[reference]
source = "r.cpp"
function = "block_sum_ref"
[tolerance]
fp32 = { rel = 1e-5, abs = 1e-6 }
"#;

    #[test]
    fn the_documented_example_parses() {
        let d = dir();
        let h = Harness::parse(GOOD, &d.join("h.toml")).unwrap();
        assert_eq!(h.kernels.len(), 1);
        assert_eq!(h.kernels[0].args, vec![0, 1, 2]);
        assert_eq!(h.param_points().len(), 3);
        assert_eq!(h.config_points().len(), 2);
        assert_eq!(h.data_cases(), 2);
        assert_eq!(h.tol(Dtype::Fp32).rel, 1e-5);
        let vars: BTreeMap<String, i64> =
            [("n".to_string(), 1000), ("BLOCK".to_string(), 256)].into();
        assert_eq!(h.args[1].len.as_ref().unwrap().eval(&vars), Ok(4));
        assert_eq!(h.kernels[0].launch.grid[0].eval(&vars), Ok(4));
        assert_eq!(h.kernels[0].launch.grid[1].eval(&vars), Ok(1));
    }

    fn err(text: &str) -> HarnessError {
        Harness::parse(text, &dir().join("h.toml")).unwrap_err()
    }

    fn line_of(text: &str, needle: &str) -> usize {
        text.lines().position(|l| l.contains(needle)).unwrap() + 1
    }

    #[test]
    fn bad_input_names_line_column_and_expectation() {
        let t = GOOD.replace("dtype = \"int32\"", "dtype = \"int31\"");
        let e = err(&t);
        assert_eq!(e.line, line_of(&t, "int31"), "{e}");
        assert!(
            e.message.contains("fp32") && e.message.contains("int31"),
            "{e}"
        );

        let t = GOOD.replace("len = \"ceil(n / BLOCK)\"", "len = \"ceil(n / BLOKC)\"");
        let e = err(&t);
        assert_eq!(e.line, line_of(&t, "BLOKC"));
        assert_eq!(
            e.col,
            t.lines().nth(e.line - 1).unwrap().find("BLOKC").unwrap() + 1,
            "{e}"
        );
        assert!(e.message.contains("unknown name `BLOKC`"), "{e}");

        let t = GOOD.replace("kind = \"in\"", "kind = \"input\"");
        let e = err(&t);
        assert!(e.message.contains("inout"), "{e}");
        assert_eq!(e.line, line_of(&t, "\"input\""));

        let t = GOOD.replace("source = \"r.cpp\"", "source = \"missing.cpp\"");
        let e = err(&t);
        assert!(e.message.contains("no such file"), "{e}");
        assert_eq!(e.line, line_of(&t, "missing.cpp"));

        let t = GOOD.replace("value = \"n\"", "len = \"n\"");
        assert!(err(&t).message.contains("scalar"));
        let t = GOOD.replace(
            "data = [\"random\", \"large\"]",
            "data = [\"random\", \"huge\"]",
        );
        assert!(err(&t).message.contains("mixed-inf"), "{}", err(&t));
        let t = GOOD.replace("grid = \"ceil(n / BLOCK)\"", "grid = \"ceil(n / BLOCK\"");
        assert!(err(&t).message.contains("`)`"));
        let t = GOOD.replace("[tolerance]", "[tolerance]\nfp33 = { rel = 1 }");
        assert!(err(&t).message.contains("expected a dtype"));
        let t = GOOD.replace("entry = \"block_sum\"", "entry = \"block_sum\"\nextra = 1");
        assert!(err(&t).message.contains("unknown field"), "{}", err(&t));
        let e = err("[kernel\n");
        assert_eq!(e.line, 1);
        let t = format!(
            "{GOOD}\n[[args]]\nname = \"x\"\nkind = \"in\"\ndtype = \"fp32\"\nlen = \"n\"\n"
        );
        assert!(err(&t).message.contains("twice"));
    }

    #[test]
    fn kernel_arrays_take_their_own_args_and_launch() {
        let t = GOOD
            .replace("[kernel]\nsource = \"k.cu\"\nentry = \"block_sum\"\ninclude = [\".\"]\n", "")
            .replace("[launch]", "[[kernel]]\nsource = \"k.cu\"\nentry = \"a\"\nargs = [\"x\", \"n\"]\n[[kernel]]\nentry = \"b\"\nargs = [\"out\"]\n[kernel.launch]\ngrid = [1, 2]\nblock = 32\n[launch]");
        let h = Harness::parse(&t, &dir().join("h.toml")).unwrap();
        assert_eq!(h.kernels.len(), 2);
        assert_eq!(h.kernels[0].args, vec![0, 2]);
        assert_eq!(h.kernels[1].args, vec![1]);
        assert_eq!(h.kernels[1].launch.grid[1].text(), "2");
        assert_eq!(h.kernels[1].source, h.kernels[0].source);
    }
}
