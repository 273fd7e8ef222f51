//! CUDA/HIP C++ scanning: one structure pass per file ([`crate::lex`]), then every enabled rule
//! over the same tokens.

use crate::ctx::ScanCtx;
use crate::diag::{Finding, Severity};
use crate::inventory::FeatureUse;
use crate::lex::{lex, Platform, Src, Tk};
use crate::rule::RuleMeta;
use std::path::Path;

/// Identifiers whose presence makes a file worth the full pass. A file with none of them has
/// no device code, launches, shared memory, inline assembly, GPU runtime calls or
/// compute-capability tests for the rules to read (a host-only dispatch file names its GPU
/// runtime or the NVIDIA generations it compares with).
const TRIGGERS: &[&str] = &[
    "__global__",
    "__device__",
    "DEVICE",
    "<<<",
    "__shared__",
    "asm",
    "__launch_bounds__",
    "warpSize",
    "WARP",
    "arp",
    "wmma",
    "__nv_",
    "_sync",
    "__shfl",
    "__ballot",
    "__activemask",
    "cluster",
    "ooperative",
    "__AMDGCN",
    "SharedMemory",
    "__pipeline",
    "memcpy_async",
    "SM80",
    "SM90",
    "SM100",
    "ensorMap",
    "GMMA",
    "threadIdx",
    "blockDim",
    "kernel",
    "Kernel",
    // host-only dispatch and launch files: compute-capability tests, launch configuration,
    // anything that names a GPU runtime or architecture
    "TURING",
    "AMPERE",
    "VOLTA",
    "HOPPER",
    "BLACKWELL",
    "LOVELACE",
    "PASCAL",
    "Turing",
    "Ampere",
    "Volta",
    "Hopper",
    "Blackwell",
    "dim3",
    "cuda",
    "CUDA",
    "hip",
    "HIP",
    "gfx",
    "GFX",
    // conditionals: an unmatched one is a finding of its own
    "#if",
    "#endif",
    "#else",
    "#elif",
];

fn prefilter() -> &'static aho_corasick::AhoCorasick {
    static AC: std::sync::OnceLock<aho_corasick::AhoCorasick> = std::sync::OnceLock::new();
    AC.get_or_init(|| aho_corasick::AhoCorasick::new(TRIGGERS).expect("static patterns"))
}

/// What a rule's check function gets: the file's structure and a place to put findings.
pub struct Cx<'s, 'a, 'kb> {
    pub ctx: &'s ScanCtx<'kb>,
    pub path: &'s Path,
    pub src: &'s Src<'a>,
    /// What the project defines (the scan's index, or this file's own).
    pub index: &'s crate::index::ProjectIndex,
    /// The file is the project's portability header.
    pub is_header: bool,
    pub out: Vec<Finding>,
    /// Feature uses (the inventory), recorded whether or not a finding is emitted.
    pub uses: Vec<FeatureUse>,
    /// Whether feature uses are being collected (inventory runs only).
    pub collect_uses: bool,
    /// Run-time tests of the warp width ([`crate::rules::wave_guard`]), found on first use.
    pub wave_guards: std::cell::OnceCell<crate::rules::wave_guard::WaveGuards>,
    /// Names used as a logical shuffle or reduction width
    /// ([`crate::rules::warp_size_constant::width_uses`]), found on first use.
    pub width_uses: std::cell::OnceCell<std::collections::HashSet<&'a str>>,
}

impl<'s, 'a, 'kb> Cx<'s, 'a, 'kb> {
    /// Whether the file's text contains `needle` anywhere (a per-rule pre-filter).
    pub fn has(&self, needle: &str) -> bool {
        memchr::memmem::find(self.src.text.as_bytes(), needle.as_bytes()).is_some()
    }
    pub fn enabled(&self, meta: &RuleMeta) -> bool {
        self.ctx.rule_enabled(meta.id, self.path)
    }
    /// Reports at tokens `a..=b` with the rule's scope-derived severity (nothing when the
    /// scope does not apply).
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
        let (s, _) = self.src.span(a);
        let (_, e) = self.src.span(b.max(a));
        self.report_span(meta, sev, targets, s, e, message, help);
    }
    #[allow(clippy::too_many_arguments)]
    pub fn report_span(
        &mut self,
        meta: &'static RuleMeta,
        sev: Severity,
        targets: Vec<String>,
        s: usize,
        e: usize,
        message: String,
        help: &str,
    ) {
        let f = Finding::new(meta.id, sev, self.path, &self.src.lines, s, e, message)
            .with_help(help)
            .with_targets(targets);
        self.out.push(f);
    }
    /// Reports each `(a, b)` token range of `sites`, the message made by `msg` from the range's
    /// code ([`Cx::snippet`]), with the rule's scope-derived severity and one help text.
    pub fn report_each(
        &mut self,
        meta: &'static RuleMeta,
        sites: Vec<(usize, usize)>,
        msg: impl Fn(&str) -> String,
        help: &str,
    ) {
        for (a, b) in sites {
            let m = msg(&self.snippet(a, b));
            self.report(meta, a, b, m, help);
        }
    }
    /// Reports each `(start, end, message)` of `hits` with the same severity, targets and help.
    pub fn report_spans(
        &mut self,
        meta: &'static RuleMeta,
        sev: Severity,
        targets: &[String],
        hits: Vec<(usize, usize, String)>,
        help: &str,
    ) {
        for (s, e, message) in hits {
            self.report_span(meta, sev, targets.to_vec(), s, e, message, help);
        }
    }
    pub fn record_use(&mut self, feature: &'static str, rule: &'static str, tok: usize) {
        if !self.collect_uses {
            return;
        }
        let (s, _) = self.src.span(tok);
        let (line, column) = self.src.lines.line_col_u32(s);
        self.uses.push(FeatureUse {
            feature,
            rule,
            line,
            column,
        });
    }

    // ---- token helpers shared by rules ----

    /// Tokens of the operand ending just before `k` (a binary operator): a postfix chain of
    /// identifiers, member accesses, calls and subscripts. Returns its first token.
    pub fn left_operand(&self, k: usize) -> Option<usize> {
        let src = self.src;
        let mut i = k.checked_sub(1)?;
        let mut steps = 0;
        loop {
            steps += 1;
            if steps > 64 {
                return Some(i);
            }
            let t = src.s(i);
            let start = if t == ")" || t == "]" {
                src.mate(i)?
            } else if src.kind(i) == Some(Tk::Ident) || src.kind(i) == Some(Tk::Number) {
                i
            } else {
                return None;
            };
            // continue through `.`, `->`, `::` and a preceding call/subscript name
            if start == 0 {
                return Some(start);
            }
            let p = src.s(start - 1);
            if (t == ")" || t == "]") && src.kind(start - 1) == Some(Tk::Ident) {
                i = start - 1;
                continue;
            }
            if (p == "." || p == "->" || p == "::") && start >= 2 {
                i = start - 2;
                continue;
            }
            return Some(start);
        }
    }
    /// Tokens of the operand starting just after `k` (a binary operator); returns its last token.
    pub fn right_operand(&self, k: usize) -> Option<usize> {
        let src = self.src;
        let mut i = k + 1;
        let mut steps = 0;
        if i >= src.toks.len() {
            return None;
        }
        loop {
            steps += 1;
            if steps > 64 {
                return Some(i);
            }
            let t = src.s(i);
            let end = if t == "(" {
                src.mate(i)?
            } else if src.kind(i) == Some(Tk::Ident) || src.kind(i) == Some(Tk::Number) {
                let mut e = i;
                while matches!(src.s(e + 1), "(" | "[") {
                    e = src.mate(e + 1)?;
                }
                e
            } else {
                return None;
            };
            if matches!(src.s(end + 1), "." | "->" | "::") {
                i = end + 2;
                continue;
            }
            return Some(end);
        }
    }
    /// Whether any identifier in tokens `a..=b` satisfies `pred`.
    pub fn any_ident(&self, a: usize, b: usize, pred: impl Fn(&str) -> bool) -> bool {
        (a..=b.min(self.src.toks.len().saturating_sub(1)))
            .any(|i| self.src.kind(i) == Some(Tk::Ident) && pred(self.src.s(i)))
    }
    /// Text of tokens `a..=b` joined without spaces (for messages), shortened.
    pub fn snippet(&self, a: usize, b: usize) -> String {
        let (s, _) = self.src.span(a);
        let (_, e) = self.src.span(b);
        let raw = self.src.text.get(s..e).unwrap_or("");
        let one: String = raw.split_whitespace().collect::<Vec<_>>().join(" ");
        if one.chars().count() > 60 {
            let mut t: String = one.chars().take(57).collect();
            t.push_str("...");
            t
        } else {
            one
        }
    }
    /// Whether token `i` never compiles where a wave64 hazard bites: an NVIDIA-only branch
    /// (`__CUDA_ARCH__`, `__CUDACC__`, `!defined(USE_ROCM)`, ...) or a branch that only
    /// 32-lane device passes reach (`__GFX11__`, `__AMDGCN_WAVEFRONT_SIZE == 32`, the `#else`
    /// of `__AMDGCN_WAVEFRONT_SIZE == 64`). Code in other AMD-only branches is scanned: a
    /// 32-lane assumption there is certainly wrong on wave64 hardware.
    ///
    /// The `#elif`/`#else` of a group that chooses by AMD architecture or wavefront size is
    /// guarded too: the width there is the list's choice, which `wave-size-arch-list` checks
    /// per target.
    ///
    /// A run-time test of the width that chooses a path (`if (warpSize == 32) { ... } else
    /// { ... }`) guards its 32-lane path the same way.
    pub fn guarded(&self, i: usize) -> bool {
        match self.src.platform(i) {
            Platform::Nvidia => true,
            _ => {
                self.amd_wave(i) == 32 || self.in_arch_alternative(i) || self.runtime_wave(i) == 32
            }
        }
    }
    /// The file's run-time tests of the warp width.
    pub fn wave_guards(&self) -> &crate::rules::wave_guard::WaveGuards {
        self.wave_guards
            .get_or_init(|| crate::rules::wave_guard::scan(self))
    }
    /// Width a run-time test of the warp width fixes for token `i` (0: not fixed).
    pub fn runtime_wave(&self, i: usize) -> u8 {
        self.wave_guards().wave_at(i)
    }
    /// Whether token `i` sits in an `#elif`/`#else` (or below one) of a group whose conditions
    /// name AMD architectures or the wavefront size, reached by wave64 and wave32 device passes.
    pub fn in_arch_alternative(&self, i: usize) -> bool {
        let src = self.src;
        let Some(t) = src.toks.get(i) else {
            return false;
        };
        let mut b = t.branch;
        let mut guard = 0;
        while b != 0 && guard < 100_000 {
            let Some(br) = src.branches.get(b as usize) else {
                break;
            };
            // an alternative that parts of both widths may reach: the list chose per part
            if br.is_alternative
                && br.reach & crate::lex::pass::AMD_DEV64 != 0
                && br.reach & crate::lex::pass::AMD_DEV32 != 0
                && src
                    .groups
                    .get(br.group as usize)
                    .is_some_and(|g| g.names_amd_arch)
            {
                return true;
            }
            b = br.parent;
            guard += 1;
        }
        false
    }
    /// The warp intrinsic token `i` calls: its own name, or the intrinsic a project macro of
    /// that name stands for (`SHFL(v, l)` defined as `__shfl(v, l)` in another header).
    pub fn intrinsic_at(&self, i: usize) -> &str {
        let w = self.src.s(i);
        self.index.intrinsic_alias(w).unwrap_or(w)
    }
    /// Whether token `i` sits in a branch that never compiles for AMD.
    pub fn nv_only(&self, i: usize) -> bool {
        self.src.platform(i) == Platform::Nvidia
    }
    /// Wavefront width fixed by the AMD branches around token `i` (0: not fixed).
    pub fn amd_wave(&self, i: usize) -> u8 {
        let src = self.src;
        let Some(t) = src.toks.get(i) else {
            return 0;
        };
        let mut b = t.branch;
        let mut guard = 0;
        while b != 0 && guard < 100_000 {
            let Some(br) = src.branches.get(b as usize) else {
                break;
            };
            if br.wave != 0 {
                return br.wave;
            }
            b = br.parent;
            guard += 1;
        }
        0
    }
    /// Whether token `i` sits in a branch selected for matrix-core (MFMA) hardware, where
    /// fragment-layout arithmetic with 32 or 16 is fixed by the instruction.
    pub fn mfma_branch(&self, i: usize) -> bool {
        let src = self.src;
        let Some(t) = src.toks.get(i) else {
            return false;
        };
        let mut b = t.branch;
        let mut guard = 0;
        while b != 0 && guard < 100_000 {
            let Some(br) = src.branches.get(b as usize) else {
                break;
            };
            if br.mfma {
                return true;
            }
            b = br.parent;
            guard += 1;
        }
        false
    }
    /// Whether the file is compiled by HIP only: a `.hip` file, one that includes HIP headers
    /// unconditionally and no CUDA header, or one the include graph says only HIP compiles
    /// (it includes a HIP-only project header, or only HIP-only files include it).
    pub fn hip_file(&self) -> bool {
        self.src.hip_only
            || self
                .path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("hip"))
            || self.index.is_hip_only(self.path)
    }
    /// Whether token `i` is compiled for AMD for certain: an AMD-only branch or a HIP-only
    /// file (outside NVIDIA branches).
    pub fn amd_code(&self, i: usize) -> bool {
        match self.src.platform(i) {
            Platform::Amd => true,
            Platform::Nvidia => false,
            Platform::Any => self.hip_file(),
        }
    }
    /// Arguments of the call whose `(` is at `open`: token ranges (inclusive), split on
    /// top-level commas.
    pub fn call_args(&self, open: usize) -> Vec<(usize, usize)> {
        let src = self.src;
        let close = match src.mate(open) {
            Some(c) => c,
            None => return Vec::new(),
        };
        let mut out = Vec::new();
        let mut start = open + 1;
        let mut i = open + 1;
        let mut angle = 0i32;
        while i < close {
            let t = src.s(i);
            if matches!(t, "(" | "[" | "{") {
                if let Some(m) = src.mate(i) {
                    i = m + 1;
                    continue;
                }
            }
            if t == "<"
                && i > 0
                && src.kind(i - 1) == Some(Tk::Ident)
                && src
                    .s(i - 1)
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_uppercase() || c == 's')
            {
                angle += 1;
            } else if t == ">" && angle > 0 {
                angle -= 1;
            } else if t == "," && angle == 0 {
                if i > start {
                    out.push((start, i - 1));
                }
                start = i + 1;
            }
            i += 1;
        }
        if close > start {
            out.push((start, close - 1));
        }
        out
    }
}

/// Identifier denotes a lane index (`lane`, `lane_id`, `laneId`).
pub fn is_lane_ident(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    l.starts_with("lane") || l == "lid" || l == "lane_" || l.ends_with("_lane") || l == "ltid"
}
/// Identifier denotes a thread index in the block (`threadIdx`, `tid`, `thread_id`).
pub fn is_thread_ident(s: &str) -> bool {
    if s == "threadIdx" {
        return true;
    }
    let l = s.to_ascii_lowercase();
    matches!(
        l.as_str(),
        "tid"
            | "tidx"
            | "tx"
            | "thread_id"
            | "threadid"
            | "thread_idx"
            | "thread_index"
            | "threadindex"
            | "local_tid"
            | "thr_id"
            | "t_id"
            | "ltid"
            | "tid_x"
            | "thread_id_x"
            | "tid_in_block"
            | "local_id"
            | "lid"
    )
}
/// Identifier denotes a warp index (`warp_id`, `warpId`, `wid`).
pub fn is_warp_id_ident(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    matches!(
        l.as_str(),
        "wid"
            | "warp"
            | "warpid"
            | "warp_id"
            | "warp_idx"
            | "warpidx"
            | "warp_index"
            | "warpindex"
            | "warp_no"
            | "wrp"
    )
}
/// Identifier denotes a number of warps or wavefronts (`num_warps`, `nwarps`, `warps_per_block`,
/// `max_wavefronts`, `n_waves`): multiplied by the lane count it gives threads.
pub fn is_warp_count_ident(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    if l.contains("size") || l.contains("lane") || l.contains("thread") || l.contains("bit") {
        return false;
    }
    l.contains("warps")
        || l.contains("waves")
        || l.contains("wavefronts")
        || l.starts_with("nwarp")
        || l.starts_with("num_warp")
        || l.starts_with("n_warp")
        || l.starts_with("nwave")
        || l.starts_with("num_wave")
        || l.starts_with("n_wave")
        || l.contains("warp_count")
        || l.contains("wave_count")
}
/// Identifier denotes a number of AMD wavefronts (`max_wavefronts`, `num_waves`): AMD's own
/// term, so the code around it is written for AMD.
pub fn is_wave_count_ident(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    is_warp_count_ident(s) && (l.contains("wave"))
}
/// Identifier denotes the number of threads in a block (`blockDim`, `num_threads`).
pub fn is_block_threads_ident(s: &str) -> bool {
    if s == "blockDim" {
        return true;
    }
    let l = s.to_ascii_lowercase();
    l.contains("thread")
        && !l.contains("warp")
        && !l.contains("idx")
        && !l.contains("id")
        && l != "thread"
}
/// Identifier is a portable source of the warp width (never fires).
pub fn is_portable_warp_size(s: &str) -> bool {
    matches!(
        s,
        "warpSize" | "WARP_SIZE" | "C10_WARP_SIZE" | "KPLAN_WARP_SIZE" | "kWarpSize"
    ) || s.starts_with("KPLAN_")
        || s.to_ascii_lowercase().contains("warp_size")
        || s.to_ascii_lowercase().contains("warpsize")
}

/// Scans one C++/CUDA/HIP file.
pub fn scan_file(ctx: &ScanCtx, path: &Path, text: &str) -> Vec<Finding> {
    run(ctx, path, text, false).0
}

/// [`scan_file`] plus the intrinsics the file shadows ([`shadowed_intrinsics`]), from one pass.
pub fn scan_file_ex(ctx: &ScanCtx, path: &Path, text: &str) -> (Vec<Finding>, Vec<String>) {
    let (f, _, sh) = run_full(ctx, path, text, false);
    (f, sh)
}

/// Warp intrinsics this file redefines as function-like macros (a project shim such as
/// `#define __shfl_xor_sync(mask, v, o, w) __shfl_xor(v, o, w)`): their mask never reaches HIP.
pub fn shadowed_intrinsics(text: &str) -> Vec<String> {
    if memchr::memmem::find(text.as_bytes(), b"_sync").is_none()
        || memchr::memmem::find(text.as_bytes(), b"define").is_none()
    {
        return Vec::new();
    }
    let src = lex(text);
    src.defines
        .iter()
        .filter(|d| d.function_like)
        .filter_map(|d| src.text.get(d.name_start as usize..d.name_end as usize))
        .filter(|n| crate::rules::full_mask_literal::is_sync_intrinsic(n))
        .map(str::to_string)
        .collect()
}

/// NVIDIA-specific feature uses in one file (for the inventory).
pub fn feature_uses(ctx: &ScanCtx, path: &Path, text: &str) -> Vec<FeatureUse> {
    run(ctx, path, text, true).1
}

fn run(
    ctx: &ScanCtx,
    path: &Path,
    text: &str,
    inventory_only: bool,
) -> (Vec<Finding>, Vec<FeatureUse>) {
    let (f, u, _) = run_full(ctx, path, text, inventory_only);
    (f, u)
}

fn run_full(
    ctx: &ScanCtx,
    path: &Path,
    text: &str,
    inventory_only: bool,
) -> (Vec<Finding>, Vec<FeatureUse>, Vec<String>) {
    if prefilter().find(text).is_none() {
        return (Vec::new(), Vec::new(), Vec::new());
    }
    let local;
    let index: &crate::index::ProjectIndex = match &ctx.index {
        Some(i) => i,
        None => {
            local = crate::index::ProjectIndex::of_text(path, text);
            &local
        }
    };
    let src = crate::lex::lex_with(text, Some(&index.env));
    let shadowed: Vec<String> = src
        .defines
        .iter()
        .filter(|d| d.function_like)
        .filter_map(|d| src.text.get(d.name_start as usize..d.name_end as usize))
        .filter(|n| crate::rules::full_mask_literal::is_sync_intrinsic(n))
        .map(str::to_string)
        .collect();
    let mut cx = Cx {
        ctx,
        path,
        src: &src,
        index,
        is_header: ctx.is_header(path),
        out: Vec::new(),
        uses: Vec::new(),
        collect_uses: inventory_only,
        wave_guards: std::cell::OnceCell::new(),
        width_uses: Default::default(),
    };
    crate::rules::run_all(&mut cx, inventory_only);
    (cx.out, cx.uses, shadowed)
}
