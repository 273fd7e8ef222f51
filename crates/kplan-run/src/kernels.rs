//! The reference kernels (`kernels/*.cu`), their tile configurations (`kernels/tiles.toml`) and
//! the source tree a backend compiles.
//!
//! The kernel sources are compiled into kplan; a user may point at another copy of `kernels/`
//! (`--kernels DIR`) to check a modified kernel that keeps the entry points' signatures.

use crate::error::RunError;
use crate::reference::{DType, Op};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Built-in sources, by file name.
pub const SOURCES: [(&str, &str); 9] = [
    (
        "kplan_kernels.h",
        include_str!("../../../kernels/kplan_kernels.h"),
    ),
    (
        "reduce_sum.cu",
        include_str!("../../../kernels/reduce_sum.cu"),
    ),
    ("softmax.cu", include_str!("../../../kernels/softmax.cu")),
    ("rmsnorm.cu", include_str!("../../../kernels/rmsnorm.cu")),
    ("add.cu", include_str!("../../../kernels/add.cu")),
    (
        "quantize_fp8.cu",
        include_str!("../../../kernels/quantize_fp8.cu"),
    ),
    (
        "host_runner.cpp",
        include_str!("../../../kernels/host_runner.cpp"),
    ),
    (
        "host_kernel.cpp",
        include_str!("../../../kernels/host_kernel.cpp"),
    ),
    ("tiles.toml", include_str!("../../../kernels/tiles.toml")),
];

/// Name of the portability header the kernels include.
pub const HEADER_NAME: &str = "kplan_portability.h";

/// Source file of an operation's kernel.
pub fn source_file(op: Op) -> &'static str {
    match op {
        Op::ReduceSum => "reduce_sum.cu",
        Op::Softmax => "softmax.cu",
        Op::Rmsnorm => "rmsnorm.cu",
        Op::Add => "add.cu",
        Op::QuantizeFp8 => "quantize_fp8.cu",
    }
}

/// Whether an operation works on rows (softmax, rmsnorm, quantize_fp8) or on a flat array
/// (reduce_sum, add).
pub fn is_rows(op: Op) -> bool {
    matches!(op, Op::Softmax | Op::Rmsnorm | Op::QuantizeFp8)
}

/// Which backend's defaults apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[derive(
    strum::EnumIter, strum::AsRefStr, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "lowercase")]
pub enum Backend {
    Host,
    Cuda,
    Hip,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Rule for flat kernels (reduce_sum, add).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlatRule {
    pub block: u32,
    pub vec_bytes: u32,
    pub unroll: u32,
    pub blocks_per_sm: u32,
}

/// Rule for row kernels (softmax, rmsnorm).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowsRule {
    pub items: u32,
    pub max_items: u32,
    pub max_tpr: u32,
    pub short_row_block: u32,
    pub vec_bytes: u32,
    /// Threads per row for rows too long for the registers (streaming); default max_tpr.
    /// (The optional keys below are `None` when absent.)
    pub stream_tpr: Option<u32>,
    /// Threads per row allowed with `max_items` (default max_tpr).
    pub max_items_tpr: Option<u32>,
    /// Rows of at least this many columns run on a persistent grid (absent: never).
    pub persistent_min_cols: Option<usize>,
    /// Matrices of at most this many elements run on a persistent grid too (absent: never):
    /// a problem so small that one block per row group is about one wave, where dispatching
    /// the blocks costs more than holding the next row in flight.
    pub persistent_max_elements: Option<usize>,
    /// Persistent grid: resident threads per multiprocessor it is sized for (blocks per SM =
    /// this / block); default 2048.
    pub persistent_threads_per_sm: Option<u32>,
    /// Rows in flight per row group on the persistent grid (2: the next row's loads overlap
    /// this row's work); default 1.
    pub unroll: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    pub flat: FlatRule,
    pub rows: RowsRule,
    /// Per-kernel rules replacing `rows` for that kernel (`[defaults.cuda.ops.softmax]`).
    #[serde(default)]
    pub ops: BTreeMap<String, RowsRule>,
}

/// A configuration as written in tiles.toml (`vec = 0`: widest that fits).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlatEntry {
    pub block: u32,
    pub vec: u32,
    pub unroll: u32,
    pub blocks_per_sm: u32,
}

impl FlatEntry {
    /// The same configuration as a row entry (no rows: `tpr` and `items` 0).
    fn as_rows(&self) -> RowsEntry {
        RowsEntry {
            block: self.block,
            tpr: 0,
            items: 0,
            vec: self.vec,
            unroll: self.unroll,
            blocks_per_sm: self.blocks_per_sm,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowsEntry {
    pub block: u32,
    pub tpr: u32,
    pub items: u32,
    pub vec: u32,
    /// Rows in flight per row group (0 or 1: one).
    #[serde(default)]
    pub unroll: u32,
    /// Persistent grid: blocks per multiprocessor (0: one block per row group).
    #[serde(default)]
    pub blocks_per_sm: u32,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VerifyList {
    pub flat: Vec<FlatEntry>,
    pub rows: Vec<RowsEntry>,
}

impl VerifyList {
    /// The entries for `shape` (flat entries for a flat shape, row entries for rows) as
    /// configurations, in order (`vec = 0`: the widest that fits).
    pub fn configs(&self, dtype: DType, shape: Shape) -> Vec<Config> {
        // flat entries as row entries (a flat entry has no rows: tpr and items 0)
        let (entries, vec_limit) = match shape {
            Shape::Flat(_) => (self.flat.iter().map(FlatEntry::as_rows).collect(), 1 << 10),
            Shape::Rows { cols, .. } => (self.rows.clone(), cols.max(1)),
        };
        entries
            .into_iter()
            .map(|e: RowsEntry| Config {
                block: e.block,
                vec: if e.vec == 0 {
                    widest_vec(dtype, 16, vec_limit)
                } else {
                    e.vec
                },
                unroll: e.unroll,
                blocks_per_sm: e.blocks_per_sm,
                tpr: e.tpr,
                items: e.items,
                fp8: 0,
            })
            .collect()
    }
}

/// The parsed `tiles.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tiles {
    pub defaults: BTreeMap<String, Defaults>,
    #[serde(default)]
    pub verify: VerifyList,
    /// Alternatives `kplan bench --alternatives` times beside the chosen configuration.
    #[serde(default)]
    pub bench: VerifyList,
}

impl Tiles {
    pub fn parse(text: &str, origin: &Path) -> Result<Tiles, RunError> {
        let t: Tiles = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(0, |s| kplan_kb::line_col(text, s.start).0);
            RunError::Config {
                path: origin.to_path_buf(),
                line,
                message: e.message().to_string(),
            }
        })?;
        for b in ["host", "cuda"] {
            if !t.defaults.contains_key(b) {
                return Err(RunError::Config {
                    path: origin.to_path_buf(),
                    line: 0,
                    message: format!(
                        "missing [defaults.{b}] (expected flat and rows rules for the {b} backend)"
                    ),
                });
            }
        }
        Ok(t)
    }

    pub fn builtin() -> Tiles {
        Tiles::parse(
            builtin_source("tiles.toml").unwrap_or(""),
            Path::new("kernels/tiles.toml"),
        )
        .expect("the built-in kernels/tiles.toml parses (checked by a test)")
    }

    /// `[[bench.*]]` entries resolved for a shape (`vec = 0`: widest that fits).
    pub fn bench_alternatives(&self, op: Op, dtype: DType, shape: Shape) -> Vec<Config> {
        if matches!(shape, Shape::Rows { .. }) == is_rows(op) {
            self.bench.configs(dtype, shape)
        } else {
            Vec::new()
        }
    }

    pub fn defaults(&self, backend: Backend) -> &Defaults {
        self.defaults
            .get(backend.as_str())
            .or_else(|| self.defaults.get("cuda"))
            .expect("tiles.toml has [defaults.cuda] (checked at parse)")
    }
}

/// Contents of a built-in source file.
pub fn builtin_source(name: &str) -> Option<&'static str> {
    SOURCES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// One launch configuration with every parameter resolved (the -D macros).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Config {
    pub block: u32,
    pub vec: u32,
    /// Flat kernels: loads in flight per thread; row kernels: rows in flight per row group.
    pub unroll: u32,
    /// Flat kernels: grid = SMs * blocks_per_sm; row kernels: persistent grid of that many
    /// blocks per SM (0: one block per row group).
    pub blocks_per_sm: u32,
    /// Row kernels only (0 for flat kernels).
    pub tpr: u32,
    pub items: u32,
    /// quantize_fp8's encoding: 0 the compile target's (the kernels' header selects it),
    /// 1 e4m3fn, 2 e4m3fnuz (forced with -DKPLAN_FP8_FNUZ, how the CPU backend emulates both).
    pub fp8: u32,
}

impl Config {
    /// Short label, e.g. `b256-v8-t32-i4` or `b512-v4-u4`.
    pub fn label(&self) -> String {
        if self.tpr > 0 {
            let mut l = format!(
                "b{}-v{}-t{}-i{}",
                self.block, self.vec, self.tpr, self.items
            );
            if self.unroll > 1 {
                l.push_str(&format!("-u{}", self.unroll));
            }
            if self.blocks_per_sm > 0 {
                l.push_str(&format!("-g{}", self.blocks_per_sm));
            }
            match self.fp8 {
                1 => l.push_str("-e4m3fn"),
                2 => l.push_str("-e4m3fnuz"),
                _ => {}
            }
            l
        } else {
            format!(
                "b{}-v{}-u{}-g{}",
                self.block, self.vec, self.unroll, self.blocks_per_sm
            )
        }
    }

    /// The `-D` definitions for a compile of this configuration with storage type `dtype`.
    pub fn defines(&self, dtype: DType) -> Vec<(String, String)> {
        let mut d = vec![
            (
                "KPLAN_DTYPE_BF16".to_string(),
                ((dtype == DType::Bf16) as u32).to_string(),
            ),
            ("KPLAN_BLOCK".to_string(), self.block.to_string()),
            ("KPLAN_VEC".to_string(), self.vec.to_string()),
        ];
        if self.tpr > 0 {
            d.push(("KPLAN_TPR".to_string(), self.tpr.to_string()));
            d.push(("KPLAN_ITEMS".to_string(), self.items.to_string()));
            d.push(("KPLAN_UNROLL".to_string(), self.unroll.max(1).to_string()));
            if self.fp8 > 0 {
                d.push((
                    "KPLAN_FP8_FNUZ".to_string(),
                    ((self.fp8 == 2) as u32).to_string(),
                ));
            }
        } else {
            d.push(("KPLAN_UNROLL".to_string(), self.unroll.max(1).to_string()));
        }
        d
    }

    /// Grid size for a shape: flat kernels `min(needed, sms * blocks_per_sm)`, row kernels one
    /// block per `block / tpr` rows, at most `sms * blocks_per_sm` when that is set.
    pub fn grid(&self, shape: Shape, sms: u32) -> u32 {
        match shape {
            Shape::Flat(n) => {
                let per_block =
                    (self.block as u64) * (self.vec as u64) * (self.unroll.max(1) as u64);
                let needed = n.div_ceil(per_block).max(1);
                needed.min((sms.max(1) as u64) * (self.blocks_per_sm.max(1) as u64)) as u32
            }
            Shape::Rows { rows, .. } => {
                let rpb = (self.block / self.tpr.max(1)).max(1) as u64;
                let groups = (rows as u64).div_ceil(rpb).max(1);
                if self.blocks_per_sm > 0 {
                    groups.min(sms.max(1) as u64 * self.blocks_per_sm as u64) as u32
                } else {
                    groups as u32
                }
            }
        }
    }

    /// Why this configuration cannot run `shape` in `dtype` (None: it can).
    pub fn invalid_for(&self, op: Op, dtype: DType, shape: Shape) -> Option<String> {
        let pow2 = |v: u32| v != 0 && v & (v - 1) == 0;
        if self.block == 0 || self.block > 1024 {
            return Some(format!("block {} outside 1..=1024", self.block));
        }
        if !pow2(self.vec) || self.vec as usize * dtype.bytes() > 16 {
            return Some(format!(
                "vector of {} {} is not a power of two of at most 16 bytes",
                self.vec,
                dtype.as_str()
            ));
        }
        match shape {
            Shape::Flat(_) => {
                if is_rows(op) {
                    return Some("row kernel given a flat shape".into());
                }
                if self.unroll == 0 || self.unroll > 16 {
                    return Some(format!("unroll {} outside 1..=16", self.unroll));
                }
            }
            Shape::Rows { cols, .. } => {
                if !is_rows(op) {
                    return Some("flat kernel given a rows x cols shape".into());
                }
                if !pow2(self.tpr) || self.block % self.tpr != 0 {
                    return Some(format!(
                        "tpr {} is not a power of two dividing block {}",
                        self.tpr, self.block
                    ));
                }
                if cols % self.vec as usize != 0 {
                    return Some(format!(
                        "vector width {} does not divide {} columns",
                        self.vec, cols
                    ));
                }
                let cap = self.items as usize * self.tpr as usize * self.vec as usize;
                if self.items > 0 && cols > cap {
                    return Some(format!(
                        "row of {cols} longer than the {cap} elements the registers hold"
                    ));
                }
                if self.items > 16 {
                    return Some(format!("items {} above 16", self.items));
                }
                if self.unroll > 2 {
                    return Some(format!("{} rows in flight (at most 2)", self.unroll));
                }
            }
        }
        None
    }
}

/// Problem shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum Shape {
    Flat(u64),
    Rows { rows: usize, cols: usize },
}

impl Shape {
    pub fn elements(&self) -> u64 {
        match *self {
            Shape::Flat(n) => n,
            Shape::Rows { rows, cols } => (rows * cols) as u64,
        }
    }
    pub fn label(&self) -> String {
        match *self {
            Shape::Flat(n) => n.to_string(),
            Shape::Rows { rows, cols } => format!("{rows}x{cols}"),
        }
    }
}

/// Widest power-of-two vector of at most `vec_bytes` that divides `divisor` (1 at least).
fn widest_vec(dtype: DType, vec_bytes: u32, divisor: usize) -> u32 {
    let mut v = (vec_bytes as usize / dtype.bytes()).max(1);
    while v > 1 && divisor % v != 0 {
        v /= 2;
    }
    v as u32
}

/// The configuration the backend's defaults choose for `shape` (`warp`: the device's warp size,
/// 1 on the host).
pub fn choose(
    tiles: &Tiles,
    backend: Backend,
    op: Op,
    dtype: DType,
    shape: Shape,
    warp: u32,
) -> Config {
    let d = tiles.defaults(backend);
    match shape {
        Shape::Flat(_) => Config {
            block: d.flat.block,
            vec: widest_vec(dtype, d.flat.vec_bytes, 1 << 10),
            unroll: d.flat.unroll,
            blocks_per_sm: d.flat.blocks_per_sm,
            tpr: 0,
            items: 0,
            fp8: 0,
        },
        Shape::Rows { rows, cols } => {
            let r = d.ops.get(op.as_str()).unwrap_or(&d.rows);
            let vec = widest_vec(dtype, r.vec_bytes, cols.max(1));
            let nvec = (cols / vec as usize).max(1);
            let fit = |items: u32, max_tpr: u32| -> Option<u32> {
                let need = nvec.div_ceil(items as usize).next_power_of_two() as u32;
                (need <= max_tpr).then_some(need)
            };
            let (tpr, items) = match fit(r.items, r.max_tpr) {
                Some(t) => (t, r.items),
                None => match fit(r.max_items, r.max_items_tpr.unwrap_or(r.max_tpr)) {
                    Some(t) => (t, r.max_items),
                    None => (r.stream_tpr.unwrap_or(r.max_tpr), 0),
                },
            };
            // A row group narrower than a warp still reduces with shuffles; wider groups span
            // whole warps.
            let tpr = if tpr > warp {
                tpr.next_power_of_two().max(warp)
            } else {
                tpr
            };
            let block = tpr.max(r.short_row_block).min(1024);
            let persistent = r.persistent_min_cols.is_some_and(|m| cols >= m)
                || r.persistent_max_elements
                    .is_some_and(|m| rows.saturating_mul(cols) <= m);
            Config {
                block,
                vec,
                unroll: if persistent { r.unroll.unwrap_or(1) } else { 1 },
                blocks_per_sm: if persistent {
                    (r.persistent_threads_per_sm.unwrap_or(2048) / block).max(1)
                } else {
                    0
                },
                tpr,
                items,
                fp8: 0,
            }
        }
    }
}

/// Every configuration verify runs for `shape`: the chosen default first, then the tiles.toml
/// list (`vec = 0` resolved per shape), without duplicates. Returns (config, reason it was
/// skipped) pairs; the reason is None for configurations that run.
pub fn verify_configs(
    tiles: &Tiles,
    backend: Backend,
    op: Op,
    dtype: DType,
    shape: Shape,
    warp: u32,
) -> Vec<(Config, Option<String>)> {
    let mut out: Vec<(Config, Option<String>)> = Vec::new();
    let mut push = |c: Config| {
        if !out.iter().any(|(o, _)| *o == c) {
            out.push((c, c.invalid_for(op, dtype, shape)));
        }
    };
    push(choose(tiles, backend, op, dtype, shape, warp));
    for c in tiles.verify.configs(dtype, shape) {
        push(c);
    }
    if op == Op::QuantizeFp8 && backend == Backend::Host {
        // The CPU emulates both encodings: every configuration once as e4m3fn, once as e4m3fnuz.
        out = out
            .into_iter()
            .flat_map(|(c, why)| [1, 2].map(|fp8| (Config { fp8, ..c }, why.clone())))
            .collect();
    }
    out
}

/// The fp8 encoding a quantize_fp8 run with `cfg` on `backend` produces: the forced one, else
/// the target's (e4m3fn on NVIDIA and the host; the HIP backend here builds for the OCP targets).
pub fn fp8_encoding(cfg: &Config, backend: Backend) -> crate::reference::Fp8Encoding {
    use crate::reference::Fp8Encoding;
    match (cfg.fp8, backend) {
        (2, _) => Fp8Encoding::E4m3fnuz,
        _ => Fp8Encoding::E4m3fn,
    }
}

/// Where kernel sources come from: the built-in copies, or a directory holding the same files.
#[derive(Debug, Clone)]
pub struct KernelSources {
    files: BTreeMap<String, String>,
    pub origin: String,
}

impl KernelSources {
    /// The built-in kernels with `header` (the portability header's text).
    pub fn builtin(header: String) -> KernelSources {
        let mut files: BTreeMap<String, String> = SOURCES
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect();
        files.insert(HEADER_NAME.to_string(), header);
        KernelSources {
            files,
            origin: "built-in".into(),
        }
    }

    /// Kernels read from `dir` (missing files fall back to the built-in ones), with `header`.
    pub fn from_dir(dir: &Path, header: String) -> Result<KernelSources, RunError> {
        let mut k = KernelSources::builtin(header);
        for (name, _) in SOURCES {
            let p = dir.join(name);
            if p.is_file() {
                let text = std::fs::read_to_string(&p).map_err(|e| RunError::Io {
                    path: p.clone(),
                    source: e,
                })?;
                k.files.insert(name.to_string(), text);
            }
        }
        k.origin = dir.display().to_string();
        Ok(k)
    }

    /// Replaces one kernel's source (a user's modified `softmax.cu`, say).
    pub fn set(&mut self, name: &str, text: String) {
        self.files.insert(name.to_string(), text);
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.files.get(name).map(|s| s.as_str())
    }

    pub fn tiles(&self) -> Result<Tiles, RunError> {
        Tiles::parse(
            self.get("tiles.toml").unwrap_or(""),
            Path::new("tiles.toml"),
        )
    }

    /// Like [`KernelSources::materialize`], with the header adapted to NVRTC where it is not
    /// NVRTC-ready: host-only functions removed (NVRTC compiles device code only) and
    /// `__builtin_memcpy` spelled `memcpy` (NVRTC's device built-in).
    pub fn materialize_nvrtc(&self, dir: &Path) -> Result<(), RunError> {
        self.materialize(dir)?;
        if let Some(h) = self.get(HEADER_NAME) {
            if !h.contains("__CUDACC_RTC__") {
                let p = dir.join(HEADER_NAME);
                std::fs::write(&p, nvrtc_header(h))
                    .map_err(|e| RunError::Io { path: p, source: e })?;
            }
        }
        Ok(())
    }

    /// Writes every file into `dir` (created) so that compilers can include them.
    pub fn materialize(&self, dir: &Path) -> Result<(), RunError> {
        std::fs::create_dir_all(dir).map_err(|e| RunError::Io {
            path: dir.to_path_buf(),
            source: e,
        })?;
        for (name, text) in &self.files {
            let p = dir.join(name);
            std::fs::write(&p, text).map_err(|e| RunError::Io { path: p, source: e })?;
        }
        Ok(())
    }
}

/// The header with host-only function definitions (`static inline __host__ ...`) removed and
/// `__builtin_memcpy` spelled `memcpy`, for NVRTC.
pub fn nvrtc_header(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("static inline __host__ ") {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        // up to the end of the function: the first line that is a lone closing brace
        match tail.find("\n}\n") {
            Some(j) => rest = &tail[j + 3..],
            None => {
                rest = tail;
                break;
            }
        }
    }
    out.push_str(rest);
    out.replace("__builtin_memcpy(", "memcpy(")
}

/// Environment variable naming a portability header file to use instead of the generated one.
pub const HEADER_ENV: &str = "KPLAN_HEADER";

/// The portability header the kernels include: the file named by `KPLAN_HEADER` when the user
/// names one (with its path), else the header kplan-gen renders for every backend (the text of
/// `kplan header`; no path).
pub fn portability_header() -> Result<(String, Option<PathBuf>), RunError> {
    match std::env::var_os(HEADER_ENV).filter(|p| !p.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            let text = std::fs::read_to_string(&p).map_err(|e| RunError::Io {
                path: p.clone(),
                source: e,
            })?;
            Ok((text, Some(p)))
        }
        None => Ok((
            kplan_gen::render_header(&kplan_gen::HeaderConfig::all()),
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_tiles_parse_and_choose_fits() {
        let t = Tiles::builtin();
        for backend in [Backend::Host, Backend::Cuda, Backend::Hip] {
            let warp = if backend == Backend::Host { 1 } else { 32 };
            for op in [Op::Softmax, Op::Rmsnorm] {
                for dtype in DType::ALL {
                    for cols in [
                        1usize,
                        31,
                        32,
                        33,
                        64,
                        1000,
                        1024,
                        4096,
                        16384,
                        32768,
                        65536,
                        (1 << 20) + 7,
                    ] {
                        let s = Shape::Rows { rows: 8, cols };
                        let c = choose(&t, backend, op, dtype, s, warp);
                        assert_eq!(
                            c.invalid_for(op, dtype, s),
                            None,
                            "{backend:?} {op:?} {dtype:?} {cols}: {c:?}"
                        );
                    }
                }
            }
            for op in [Op::ReduceSum, Op::Add] {
                let s = Shape::Flat(1 << 20);
                let c = choose(&t, backend, op, DType::Bf16, s, warp);
                assert_eq!(c.invalid_for(op, DType::Bf16, s), None);
                assert_eq!(c.vec, 8);
            }
        }
        assert!(!t.verify.rows.is_empty() && !t.verify.flat.is_empty());
    }

    #[test]
    fn cuda_defaults_keep_bench_rows_in_registers() {
        let t = Tiles::builtin();
        let pick = |op: Op, rows: usize, cols: usize| {
            choose(
                &t,
                Backend::Cuda,
                op,
                DType::Bf16,
                Shape::Rows { rows, cols },
                32,
            )
        };
        for op in [Op::Softmax, Op::Rmsnorm, Op::QuantizeFp8] {
            for cols in [1024usize, 4096, 7168, 8192, 16384, 32768] {
                let c = pick(op, 8192, cols);
                assert!(c.items > 0, "{op:?} {cols}: {c:?}");
                assert_eq!(c.vec, 8);
                assert!(c.items * c.tpr * c.vec >= cols as u32);
            }
            // longer rows stream
            assert_eq!(pick(op, 8, 65536).items, 0);
        }
        // softmax's long rows: 512 threads of 8 vectors, one block per row
        let c = pick(Op::Softmax, 8192, 32768);
        assert_eq!(
            (c.tpr, c.items, c.unroll, c.blocks_per_sm),
            (512, 8, 1, 0),
            "{c:?}"
        );
        assert_eq!(
            c.grid(
                Shape::Rows {
                    rows: 8192,
                    cols: 32768
                },
                132
            ),
            8192
        );
        // small matrices (at most 2^23 elements) on a persistent grid of 1024 threads per SM
        // with the next row in flight; larger ones one block per row group
        let c = pick(Op::Softmax, 8192, 1024);
        assert_eq!(
            (c.block, c.tpr, c.unroll, c.blocks_per_sm),
            (64, 32, 2, 16),
            "{c:?}"
        );
        let c = pick(Op::Rmsnorm, 8192, 1024);
        assert_eq!(
            (c.block, c.tpr, c.items, c.unroll, c.blocks_per_sm),
            (128, 64, 2, 2, 8),
            "{c:?}"
        );
        for op in [Op::Softmax, Op::Rmsnorm] {
            for (rows, cols) in [(32768, 1024), (2048, 8192), (8192, 4096)] {
                let c = pick(op, rows, cols);
                assert_eq!(
                    (c.unroll, c.blocks_per_sm),
                    (1, 0),
                    "{op:?} {rows}x{cols}: {c:?}"
                );
            }
        }
        let c = pick(Op::Rmsnorm, 8192, 16384);
        assert_eq!((c.tpr, c.items, c.blocks_per_sm), (256, 8, 0), "{c:?}");
    }

    #[test]
    fn persistent_max_elements_bounds_the_persistent_grid() {
        let rules = "[defaults.cuda.flat]\nblock = 256\nvec_bytes = 16\nunroll = 4\nblocks_per_sm = 2\n\
            [defaults.cuda.rows]\nitems = 4\nmax_items = 8\nmax_tpr = 256\nshort_row_block = 32\n\
            vec_bytes = 16\npersistent_max_elements = 4096\npersistent_threads_per_sm = 64\nunroll = 2\n\
            [defaults.hip.flat]\nblock = 256\nvec_bytes = 16\nunroll = 4\nblocks_per_sm = 2\n\
            [defaults.hip.rows]\nitems = 4\nmax_items = 8\nmax_tpr = 256\nshort_row_block = 128\nvec_bytes = 16\n\
            [defaults.host.flat]\nblock = 8\nvec_bytes = 16\nunroll = 2\nblocks_per_sm = 1\n\
            [defaults.host.rows]\nitems = 4\nmax_items = 8\nmax_tpr = 16\nshort_row_block = 16\nvec_bytes = 16\n";
        let t = Tiles::parse(rules, Path::new("tiles.toml")).unwrap();
        let pick = |rows: usize, cols: usize| {
            choose(
                &t,
                Backend::Cuda,
                Op::Softmax,
                DType::F32,
                Shape::Rows { rows, cols },
                32,
            )
        };
        // 32 x 128 = 4096 elements: 8 threads a row, 4 rows a 32-thread block, 8 row groups;
        // persistent: 64 / 32 = 2 blocks per SM, 2 rows in flight, 4 blocks on 2 SMs
        let c = pick(32, 128);
        assert_eq!(
            (c.block, c.tpr, c.unroll, c.blocks_per_sm),
            (32, 8, 2, 2),
            "{c:?}"
        );
        assert_eq!(
            c.grid(
                Shape::Rows {
                    rows: 32,
                    cols: 128
                },
                2
            ),
            4
        );
        // one row more: one block per row group, no rows in flight
        let c = pick(33, 128);
        assert_eq!((c.unroll, c.blocks_per_sm), (1, 0), "{c:?}");
        assert_eq!(
            c.grid(
                Shape::Rows {
                    rows: 33,
                    cols: 128
                },
                2
            ),
            9
        );
        // absent on hip: never persistent
        let c = choose(
            &t,
            Backend::Hip,
            Op::Softmax,
            DType::F32,
            Shape::Rows { rows: 2, cols: 64 },
            64,
        );
        assert_eq!(c.blocks_per_sm, 0, "{c:?}");
    }

    #[test]
    fn invalid_configs_say_why() {
        let c = Config {
            block: 64,
            vec: 4,
            unroll: 0,
            blocks_per_sm: 0,
            tpr: 32,
            items: 1,
            fp8: 0,
        };
        let s = Shape::Rows { rows: 2, cols: 33 };
        assert!(c
            .invalid_for(Op::Softmax, DType::F32, s)
            .unwrap()
            .contains("does not divide"));
        let s = Shape::Rows { rows: 2, cols: 256 };
        assert!(c
            .invalid_for(Op::Softmax, DType::F32, s)
            .unwrap()
            .contains("registers"));
        let c = Config { vec: 8, ..c };
        assert!(c
            .invalid_for(Op::Softmax, DType::F32, s)
            .unwrap()
            .contains("16 bytes"));
    }

    #[test]
    fn bad_tiles_file_names_line() {
        let e =
            Tiles::parse("[defaults.cuda.flat]\nblock = \"x\"\n", Path::new("t.toml")).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("t.toml:2"), "{s}");
    }
}
