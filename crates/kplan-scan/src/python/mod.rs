//! Triton/Python scanning: the `.py` side of `kplan scan`.
//!
//! One pass per file: [`lex`] tokenizes and recovers logical lines and `def`s; [`Cx`] adds what
//! the rules share (which defs are Triton kernels, where the code branches on the backend), and
//! each rule in [`rules`] reads the same tokens. Rules look at the kernels and at the Python
//! around them: launch wrappers, autotune configs, dtype maps and capability checks.

pub mod embedded;
pub mod lex;
pub mod rules;

use crate::ctx::ScanCtx;
use crate::diag::{Finding, Severity};
use crate::rule::RuleMeta;
use lex::{Kind, PySrc};
use std::path::Path;

/// Rules that read Triton kernels; chained into [`crate::all_rules`].
pub static RULES: &[RuleMeta] = &[
    rules::num_warps_wave64::META,
    rules::warp_size_literal::META,
    rules::fp8_encoding::META,
    rules::fp8_max_constant::META,
    rules::hip_implies_fnuz::META,
    rules::capability_check::META,
    rules::tensor_descriptor_amd::META,
    rules::inline_asm::META,
    rules::cuda_libdevice::META,
    rules::lds_limit::META,
    rules::fixed_block_size::META,
    rules::dot_tf32::META,
    rules::wave64_for_every_amd::META,
    rules::low_precision_for_other_amd::META,
    rules::torch_version_cuda::META,
    rules::arch_literal_always_true::META,
    rules::arch_name_exact_match::META,
    rules::arch_list_partial_family::META,
    rules::predicate_not_called::META,
];

/// Words whose absence means the file has nothing the rules read.
const TRIGGERS: &[&str] = &[
    "triton",
    "num_warps",
    "float8",
    "fp8",
    "capability",
    "warp",
    "tl.",
    "is_hip",
    "version.hip",
    "gfx",
    "version.cuda",
    "gcnArchName",
];

/// Scans one `.py` file. `text` is the file's contents (lossy UTF-8).
pub fn scan_file(ctx: &ScanCtx, path: &Path, text: &str) -> Vec<Finding> {
    let mut found = scan_triton(ctx, path, text);
    if text.contains("__global__") || text.contains("__device__") || text.contains("__shfl") {
        let src = lex::lex(text);
        found.extend(embedded::scan(ctx, path, &src));
        found.sort_by(|a, b| a.start.cmp(&b.start).then(a.rule.cmp(b.rule)));
    }
    found
}

fn scan_triton(ctx: &ScanCtx, path: &Path, text: &str) -> Vec<Finding> {
    if !TRIGGERS.iter().any(|t| text.contains(t)) {
        return Vec::new();
    }
    if other_backend_path(path) {
        return Vec::new();
    }
    let src = lex::lex(text);
    if nvidia_only(&src) {
        return Vec::new();
    }
    let mut cx = Cx::new(ctx, path, &src);
    let checks: [(&RuleMeta, Check); 19] = [
        (
            &rules::num_warps_wave64::META,
            rules::num_warps_wave64::check,
        ),
        (
            &rules::warp_size_literal::META,
            rules::warp_size_literal::check,
        ),
        (&rules::fp8_encoding::META, rules::fp8_encoding::check),
        (
            &rules::fp8_max_constant::META,
            rules::fp8_max_constant::check,
        ),
        (
            &rules::hip_implies_fnuz::META,
            rules::hip_implies_fnuz::check,
        ),
        (
            &rules::capability_check::META,
            rules::capability_check::check,
        ),
        (
            &rules::tensor_descriptor_amd::META,
            rules::tensor_descriptor_amd::check,
        ),
        (&rules::inline_asm::META, rules::inline_asm::check),
        (&rules::cuda_libdevice::META, rules::cuda_libdevice::check),
        (&rules::lds_limit::META, rules::lds_limit::check),
        (
            &rules::fixed_block_size::META,
            rules::fixed_block_size::check,
        ),
        (&rules::dot_tf32::META, rules::dot_tf32::check),
        (
            &rules::wave64_for_every_amd::META,
            rules::wave64_for_every_amd::check,
        ),
        (
            &rules::low_precision_for_other_amd::META,
            rules::low_precision_for_other_amd::check,
        ),
        (
            &rules::torch_version_cuda::META,
            rules::torch_version_cuda::check,
        ),
        (
            &rules::arch_literal_always_true::META,
            rules::arch_literal_always_true::check,
        ),
        (
            &rules::arch_name_exact_match::META,
            rules::arch_name_exact_match::check,
        ),
        (
            &rules::arch_list_partial_family::META,
            rules::arch_list_partial_family::check,
        ),
        (
            &rules::predicate_not_called::META,
            rules::predicate_not_called::check,
        ),
    ];
    for (meta, check) in checks {
        if ctx.rule_enabled(meta.id, path) {
            check(&mut cx);
        }
    }
    let mut out = cx.out;
    out.sort_by(|a, b| a.start.cmp(&b.start).then(a.rule.cmp(b.rule)));
    out.dedup_by(|a, b| a.start == b.start && a.rule == b.rule);
    out
}

/// A rule's check function.
type Check = fn(&mut Cx);

/// What every Python rule gets.
pub struct Cx<'s, 'a, 'kb> {
    pub ctx: &'s ScanCtx<'kb>,
    pub path: &'s Path,
    pub src: &'s PySrc<'a>,
    /// Indices into `src.defs` of `@triton.jit` kernels.
    pub kernels: Vec<usize>,
    /// Indices into `src.defs` of kernels under `@triton.autotune`.
    pub autotuned: Vec<usize>,
    /// The file mentions fp8 (dtype names, `fp8`, `float8`, `e4m3`).
    pub fp8_context: bool,
    pub out: Vec<Finding>,
    lines: crate::diag::LineIndex<'a>,
}

impl<'s, 'a, 'kb> Cx<'s, 'a, 'kb> {
    pub fn new(ctx: &'s ScanCtx<'kb>, path: &'s Path, src: &'s PySrc<'a>) -> Cx<'s, 'a, 'kb> {
        let mut kernels = Vec::new();
        let mut autotuned = Vec::new();
        for (i, d) in src.defs.iter().enumerate() {
            let decs: Vec<&str> = d
                .decorators
                .iter()
                .map(|&(a, b)| src.snippet(a, b))
                .collect();
            if decs.iter().any(|t| t.contains("jit")) {
                kernels.push(i);
                if decs.iter().any(|t| t.contains("autotune")) {
                    autotuned.push(i);
                }
            }
        }
        let lower = src.text.to_ascii_lowercase();
        let fp8_context = ["fp8", "float8", "e4m3", "e5m2"]
            .iter()
            .any(|w| lower.contains(w));
        Cx {
            ctx,
            path,
            src,
            kernels,
            autotuned,
            fp8_context,
            out: Vec::new(),
            lines: crate::diag::LineIndex::new(src.text),
        }
    }

    /// Whether token `i` lies in the body of a `@triton.jit` kernel.
    pub fn in_kernel(&self, i: usize) -> bool {
        self.kernels.iter().any(|&k| {
            let d = &self.src.defs[k];
            d.body.0 <= i && i < d.body.1
        })
    }

    /// Whether tokens `a..b` test which backend or AMD architecture runs: `is_hip()`,
    /// `torch.version.hip`, `.backend == "hip"`, `is_cuda`, `"gfx942" in arch`, ...
    /// Checks that only select another vendor (`== "xpu"`, `"npu"`, `"mps"`) do not count: their
    /// fallback branch still runs on AMD.
    pub fn has_backend_check(&self, a: usize, b: usize) -> bool {
        (a..b.min(self.src.toks.len())).any(|i| is_backend_check_tok(self.src, i, false))
    }

    /// Same, also counting checks for a vendor that is neither NVIDIA nor AMD (`"xpu"`): true of
    /// the body of `if device == "xpu":`, which never runs on AMD.
    pub fn has_vendor_check(&self, a: usize, b: usize) -> bool {
        (a..b.min(self.src.toks.len())).any(|i| is_backend_check_tok(self.src, i, true))
    }

    /// Same, over the logical line holding token `i`.
    pub fn line_has_backend_check(&self, i: usize) -> bool {
        match self.src.line_of(i) {
            Some(l) => self.has_backend_check(l.first, l.end),
            None => false,
        }
    }

    /// Same, over the innermost function holding token `i` (the whole file at top level).
    pub fn scope_has_backend_check(&self, i: usize) -> bool {
        match self.src.def_at(i) {
            Some(d) => self.has_backend_check(d.start, d.body.1),
            None => self.line_has_backend_check(i),
        }
    }

    /// Whether an `if`/`elif`/conditional expression above or on token `i`'s line, within the
    /// enclosing function, checks the backend (the code is on one backend's branch).
    pub fn guarded(&self, i: usize) -> bool {
        if self.line_has_backend_check(i) {
            return true;
        }
        let src = self.src;
        let Some(line) = src.line_of(i) else {
            return false;
        };
        // `32 if device == "xpu" else 16`: the value before a conditional that picks another
        // vendor is that vendor's
        let depth = src.toks[i].depth;
        for k in i + 1..line.end {
            if src.toks[k].depth < depth {
                break;
            }
            if src.toks[k].depth == depth && src.is_name(k, "if") {
                let e = (k + 1..line.end)
                    .find(|&e| src.toks[e].depth == depth && src.is_name(e, "else"))
                    .unwrap_or(line.end);
                if self.has_vendor_check(k + 1, e) {
                    return true;
                }
                break;
            }
        }
        let mut indent = line.indent;
        // after an `else:`/`elif`, the headers of the same chain sit at the same indentation above
        let mut chain: Option<u32> = None;
        let li = src.lines.partition_point(|l| l.end <= i);
        for l in src.lines[..li].iter().rev() {
            let head = src.s(l.first);
            let header = l.indent < indent
                || (chain == Some(l.indent)
                    && matches!(head, "if" | "elif" | "else" | "try" | "except"));
            if !header {
                if chain == Some(l.indent) && l.indent <= indent {
                    chain = None; // a statement between: the chain is over
                }
                continue;
            }
            // reached from a later `elif`/`else` of the same chain: this condition was false, so
            // only a check that also decides between NVIDIA and AMD says anything about AMD
            let from_later_branch = chain == Some(l.indent);
            indent = l.indent;
            let checks = if from_later_branch || !matches!(head, "if" | "elif") {
                self.has_backend_check(l.first, l.end)
            } else {
                self.has_vendor_check(l.first, l.end)
            };
            if matches!(
                head,
                "if" | "elif" | "else" | "try" | "except" | "with" | "for" | "while"
            ) && checks
            {
                return true;
            }
            chain = if matches!(head, "else" | "elif" | "except") {
                Some(l.indent)
            } else {
                None
            };
            if matches!(head, "def" | "class") || (indent == 0 && chain.is_none()) {
                break;
            }
        }
        false
    }

    /// Tokens `a..=b` as code for a message: whitespace collapsed, long code shortened.
    pub fn code(&self, a: usize, b: usize) -> String {
        let flat: Vec<&str> = self.src.snippet(a, b).split_whitespace().collect();
        let mut s = flat
            .join(" ")
            .replace("( ", "(")
            .replace(" )", ")")
            .replace("[ ", "[")
            .replace(" ]", "]");
        if s.chars().count() > 80 {
            s = s.chars().take(77).collect::<String>() + "...";
        }
        s
    }

    /// Reports each `(a, b)` token range of `sites`, the message made by `msg` from the range's
    /// code ([`Cx::code`]), with the rule's scope-derived severity and one help text.
    pub fn report_each(
        &mut self,
        meta: &'static RuleMeta,
        sites: Vec<(usize, usize)>,
        msg: impl Fn(&str) -> String,
        help: &str,
    ) {
        for (a, b) in sites {
            let m = msg(&self.code(a, b));
            self.report(meta, a, b, m, help);
        }
    }

    /// Reports tokens `a..=b` with the rule's scope-derived severity.
    pub fn report(
        &mut self,
        meta: &'static RuleMeta,
        a: usize,
        b: usize,
        message: String,
        help: &str,
    ) {
        if let Some((sev, targets)) = self.ctx.scope_severity(meta) {
            self.report_with(meta, sev, targets, a, b, message, help);
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn report_with(
        &mut self,
        meta: &'static RuleMeta,
        sev: Severity,
        targets: Vec<String>,
        a: usize,
        b: usize,
        message: String,
        help: &str,
    ) {
        let (s, e) = self.src.span(a, b.max(a));
        let f = Finding::new(meta.id, sev, self.path, &self.lines, s, e, message)
            .with_help(help)
            .with_targets(targets);
        self.out.push(f);
    }
}

/// Names and strings that show code choosing per backend or per AMD architecture.
fn is_backend_check_tok(src: &PySrc, i: usize, other_vendors: bool) -> bool {
    let t = src.s(i);
    match src.kind(i) {
        Some(Kind::Name) => {
            let l = t.to_ascii_lowercase();
            l.split('_')
                .any(|part| part.starts_with("hip") || part == "iship")
                || l.contains("rocm")
                || l.contains("cdna")
                || l.contains("rdna")
                || l.split('_').any(|part| part.starts_with("gfx"))
                || l == "is_cuda"
                || l == "is_amd"
                || l == "is_nvidia"
                || l == "get_current_target"
                || (l == "backend" && i > 0 && src.s(i - 1) == ".")
                // `torch.version.cuda` is None on ROCm builds
                // (tested, not read: `torch.version.cuda.split(".")` parses a version)
                || (l == "cuda"
                    && i > 1
                    && src.s(i - 1) == "."
                    && src.is_name(i - 2, "version")
                    && !rules::torch_version_cuda::read_as_string(src, i))
                // `is_MI300()`, `on_mi250x`: AMD Instinct product names
                || l.split('_').any(|part| {
                    part.strip_prefix("mi")
                        .is_some_and(|r| r.bytes().take(3).filter(u8::is_ascii_digit).count() == 3)
                })
                || l == "warp_size" && i > 0 && src.s(i - 1) == "."
        }
        Some(Kind::Str) => {
            // "xpu", "npu", "mps": a branch for a vendor that is neither NVIDIA nor AMD
            let l = t.to_ascii_lowercase();
            let word = l.trim_matches(|c| c == '"' || c == '\'' || c == 'f' || c == 'r');
            l.contains("hip")
                || l.contains("gfx")
                || l.contains("rocm")
                || l.contains("amd")
                || (other_vendors && matches!(word, "xpu" | "npu" | "mps"))
        }
        _ => false,
    }
}

/// Files (or their folder) named for a backend that is not a GPU kplan targets (`x86.py`,
/// `fusion_cpu.py`, `cpp_template.py`, `xpu/kernels.py`): their code never runs on AMD or NVIDIA
/// GPUs. Files kept per architecture (`gfx950/attention.py`, `mla_gfx1250.py`, `sm100/gemm.py`)
/// are written for that one GPU on purpose. Only the file name and its parent folder are read,
/// not the folders above them.
fn other_backend_path(path: &Path) -> bool {
    // file name and parent for backends; up to two folders up for architectures
    // (`gluon/gfx1250/attention/mla.py`)
    path.components()
        .rev()
        .take(3)
        .enumerate()
        .any(|(depth, c)| {
            let name = c.as_os_str().to_string_lossy().to_ascii_lowercase();
            let stem = name.strip_suffix(".py").unwrap_or(&name);
            stem.split(['_', '-', '.']).any(|w| {
                (depth < 2
                    && matches!(
                        w,
                        "cpu" | "x86" | "aarch64" | "cpp" | "xpu" | "npu" | "mps" | "tpu"
                    ))
                    || names_one_arch(w)
            })
        })
}

/// Files written against NVIDIA-only Python DSLs (CUTLASS CuTe DSL) never run on AMD: the
/// Triton rules have nothing to say about them.
fn nvidia_only(src: &PySrc) -> bool {
    src.lines.iter().any(|l| {
        matches!(src.s(l.first), "import" | "from")
            && (src.is_name(l.first + 1, "cutlass")
                || src.is_name(l.first + 1, "cuda")
                    && src.s(l.first + 2) == "."
                    && src.is_name(l.first + 3, "bindings"))
    })
}

/// `num_warps`-like names.
pub fn is_num_warps_name(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l == "num_warps" || l == "nwarps" || l == "n_warps" || l.ends_with("_num_warps") || l == "warps"
}

/// `gfx950`, `gfx1250`, `sm90`, `sm100a`: a word that is one GPU architecture's id.
fn names_one_arch(w: &str) -> bool {
    let digits = |r: &str| {
        let r = r.strip_suffix(['a', 'f']).unwrap_or(r);
        r.len() >= 2 && r.chars().all(|c| c.is_ascii_digit())
    };
    w.strip_prefix("gfx").is_some_and(|r| {
        r.len() >= 3
            && r.chars().all(|c| c.is_ascii_hexdigit())
            && r.starts_with(|c: char| c.is_ascii_digit())
    }) || w.strip_prefix("sm").is_some_and(digits)
}
