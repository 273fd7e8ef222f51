//! `inline-asm-unguarded`: PTX or GCN inline assembly outside an architecture guard, or guarded
//! with no fallback branch.

use crate::cuda::Cx;
use crate::diag::Severity;
use crate::lex::{Platform, Tk};
use crate::rule::{Lang, RuleMeta, Scope};
use kplan_kb::Vendor;

pub static META: RuleMeta = RuleMeta {
    id: "inline-asm-unguarded",
    summary: "inline PTX or GCN assembly without an architecture guard or fallback",
    what: "Finds `asm(...)` statements whose template is PTX (NVIDIA) or GCN/CDNA/RDNA ISA (AMD) and that are not \
inside a preprocessor branch for that platform (`__CUDA_ARCH__`, `!defined(__HIP_PLATFORM_AMD__)`, \
`__gfx942__`, ...), guarded ones inside a function body whose guard has no `#else` fallback, and PTX under \
a condition that is true in an AMD device pass (the `#else` of `defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800`: \
HIP leaves `__CUDA_ARCH__` undefined, so AMD compiles the branch meant for new NVIDIA GPUs), reported once at \
the `#if` that needs an AMD term.",
    why: "The other vendor's compiler rejects the assembly, or, when the guard has no fallback, compiles the \
function to nothing: the kernel runs and produces garbage.",
    example: "__device__ unsigned lane_id() {\n    unsigned r;\n    asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(r));\n    return r;\n}",
    use_instead: "__device__ unsigned lane_id() {\n#if defined(__CUDA_ARCH__)\n    unsigned r;\n    asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(r));\n    return r;\n#else\n    return __lane_id();\n#endif\n}",
    severity: Severity::Error,
    scope: Scope::PerFinding,
    lang: Lang::Cuda,
    features: &["inline-ptx", "inline-gcn-asm"],
};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum AsmKind {
    Ptx,
    Gcn,
    Unknown,
}

/// Classifies an assembly template.
pub fn classify_asm(t: &str) -> AsmKind {
    let ptx = [
        "%%",
        ".reg",
        ".u32",
        ".b32",
        ".b64",
        ".u64",
        ".f32",
        ".f16",
        ".s32",
        "mov.",
        "ld.",
        "st.",
        "cvt.",
        "mma.",
        "cp.async",
        "shfl.",
        "bar.",
        "red.",
        "atom.",
        "prmt",
        "lop3",
        "ldmatrix",
        "stmatrix",
        "mbarrier",
        "fence.",
        "setp.",
        "wgmma",
        "tcgen05",
        "elect.",
        "griddepcontrol",
        "membar",
        "nanosleep",
        "vote.",
        "activemask",
        "match.",
        "redux.",
        "tanh.approx",
        "ex2.approx",
        "rcp.approx",
    ];
    let gcn = [
        "v_",
        "s_waitcnt",
        "s_mov",
        "s_",
        "ds_",
        "buffer_",
        "global_load",
        "global_store",
        "flat_",
        "scratch_",
        "v_mfma",
        "s_barrier",
        "s_setprio",
        "s_nop",
        "s_sleep",
        "dpp",
        "row_shr",
        "row_bcast",
    ];
    let x86 = [
        "%%eax", "%%rax", "%%ebx", "%%rbx", "%%ecx", "%%rcx", "%%edx", "%%rdx", "%%xmm", "%%ymm",
        "%%rsp", "%%esp", "cpuid", "rdtsc", "xgetbv", "pause",
    ];
    // `__asm("llvm.amdgcn.raw.buffer.load.f32")` binds a declaration to an LLVM intrinsic
    if x86.iter().any(|p| t.contains(p)) || host_isa(t) || t.trim_start().starts_with("llvm.") {
        return AsmKind::Unknown;
    }
    let trimmed = t.trim_start();
    if gcn.iter().any(|p| trimmed.starts_with(p))
        || t.contains("v_mfma")
        || t.contains("s_waitcnt")
        || t.contains("ds_swizzle")
        || t.contains("ds_bpermute")
    {
        return AsmKind::Gcn;
    }
    if ptx.iter().any(|p| t.contains(p)) {
        return AsmKind::Ptx;
    }
    AsmKind::Unknown
}

/// The template is assembly for a host CPU (x86, Arm, RISC-V, POWER, LoongArch, s390x), which
/// shares mnemonics and suffixes (`ld.`, `.f32`, `mov`) with PTX: it is neither PTX nor GCN.
/// PTX-only qualifiers (`.global`, `.shared`, `.sync`, `.reg`, special registers) win.
pub fn host_isa(t: &str) -> bool {
    let ptx_only = [
        ".global", ".shared", ".sync", ".aligned", ".reg", ".pred", "cvta", "%laneid", "%tid",
        "%smid", "%clock", ".param", ".local", ".const",
    ];
    if ptx_only.iter().any(|p| t.contains(p)) {
        return false;
    }
    let words: Vec<&str> = t
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .filter(|w| !w.is_empty())
        .collect();
    let host_mnemonic = |w: &str| {
        let l = w.to_ascii_lowercase();
        // RISC-V V, scalar and CSR
        l.starts_with("vsetvl")
            || l.starts_with("vle")
            || l.starts_with("vse")
            || l.starts_with("vlse")
            || l.starts_with("vfmacc")
            || l.starts_with("vfmv")
            || l.starts_with("vmv")
            || l.starts_with("vwmul")
            || l.starts_with("vredsum")
            || matches!(l.as_str(), "addi" | "addiw" | "slli" | "srli" | "srai" | "bnez" | "beqz" | "bltz" | "bgez")
            || l.starts_with("vfw")
            || l.starts_with("vnsr")
            || l.starts_with("vwadd")
            || l.starts_with("vsext")
            || l == "csrr"
            || l == "csrw"
            || l == "fence.i"
            // Arm (A64 / NEON / SVE / SME)
            || matches!(l.as_str(), "ld1" | "st1" | "ld1w" | "st1w" | "ld1b" | "ldr" | "str" | "ldp" | "stp"
                | "prfm" | "fmla" | "sdot" | "udot" | "smmla" | "ummla" | "dup" | "ptrue" | "whilelo"
                | "smstart" | "smstop" | "zero" | "fmopa" | "bfmmla" | "addv" | "ext" | "tbl")
            || l.ends_with(".4s")
            || l.ends_with(".8h")
            || l.ends_with(".16b")
            || l.ends_with(".2d")
            // x86 (AT&T and Intel syntax)
            || l.starts_with("vpdp")
            || l.starts_with("vmovdq")
            || l.starts_with("vpadd")
            || l.starts_with("vfmadd")
            || l.starts_with("prefetcht")
            || matches!(l.as_str(), "movl" | "movq" | "leaq" | "xorl" | "rdtscp" | "lfence" | "mfence" | "sfence")
            // POWER, LoongArch, s390x
            || l.starts_with("lxv")
            || l.starts_with("stxv")
            || l.starts_with("xxl")
            || l.starts_with("xvld")
            || l.starts_with("xvst")
            || l.starts_with("vlrep")
    };
    words.iter().any(|w| host_mnemonic(w))
}

/// Every `asm(...)` in the file: (token of `asm`, token of `)`, template text, kind).
pub fn asm_statements<'a>(src: &crate::lex::Src<'a>) -> Vec<(usize, usize, String, AsmKind)> {
    let n = src.toks.len();
    let mut out = Vec::new();
    for i in 0..n {
        if src.kind(i) != Some(Tk::Ident) || !matches!(src.s(i), "asm" | "__asm__" | "__asm") {
            continue;
        }
        let mut k = i + 1;
        while matches!(
            src.s(k),
            "volatile" | "__volatile__" | "__volatile" | "goto" | "inline"
        ) {
            k += 1;
        }
        if !src.is(k, "(") {
            continue;
        }
        let Some(c) = src.mate(k) else { continue };
        let mut tpl = String::new();
        let mut j = k + 1;
        while j < c && !src.is(j, ":") {
            if src.kind(j) == Some(Tk::Str) {
                tpl.push_str(src.str_body(j));
            }
            j += 1;
        }
        let kind = classify_asm(&tpl);
        out.push((i, c, tpl, kind));
    }
    out
}

/// The file is compiled for AMD only: HIP-only by its includes or extension, or named so by
/// its path (a component or file-name word `amd`, `hip`, `rocm`, `amdgcn`, `gfx*`).
fn amd_only_file(cx: &Cx) -> bool {
    cx.hip_file()
        || cx.path.iter().any(|c| {
            c.to_str().is_some_and(|c| {
                c.to_ascii_lowercase()
                    .split(|ch: char| !ch.is_ascii_alphanumeric())
                    .any(|w| {
                        matches!(w, "amd" | "hip" | "rocm" | "amdgcn" | "amdgpu")
                            || w.starts_with("gfx")
                    })
            })
        })
}

pub fn check(cx: &mut Cx) {
    if !cx.has("asm") {
        return;
    }
    let src = cx.src;
    let mut amd_taken_ptx: Vec<usize> = Vec::new();
    for (i, c, _tpl, kind) in asm_statements(src) {
        let (own, other_vendor, isa) = match kind {
            AsmKind::Ptx => (Platform::Nvidia, Vendor::Amd, "PTX"),
            AsmKind::Gcn => (Platform::Amd, Vendor::Nvidia, "AMD GCN"),
            AsmKind::Unknown => continue,
        };
        let targets = cx.ctx.vendor_targets(other_vendor);
        if targets.is_empty() {
            continue;
        }
        // GCN assembly in a file that only AMD compiles (a HIP-only file, or one its path
        // names as AMD's: `amd_buffer_addressing.hpp`, `hip/`, `rocm/`) needs no NVIDIA guard
        if kind == AsmKind::Gcn && amd_only_file(cx) {
            continue;
        }
        let end = c;
        match src.platform_branch(i) {
            // under a condition that is no platform test as a whole (`#else` of
            // `defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800`): PTX there is an error when an AMD
            // device pass provably compiles the branch; a condition on a macro kplan cannot
            // evaluate (a feature macro) is trusted
            None if src.in_conditional(i, false) => {
                if own == Platform::Nvidia {
                    amd_taken_ptx.push(i);
                }
            }
            None => {
                let guard = if own == Platform::Nvidia {
                    "`__CUDA_ARCH__` or `!defined(__HIP_PLATFORM_AMD__)`"
                } else {
                    "`__HIP_PLATFORM_AMD__` or an `__gfx*__` macro"
                };
                let msg = format!("inline {isa} assembly is not under an architecture guard");
                cx.report_with(&META, Severity::Error, targets, i, end, msg, &format!("guard it with {guard} and give the other platforms a fallback (an intrinsic or plain C++)"));
            }
            Some((br, g)) if br.platform == own => {
                let inside = src.toks.get(i).map(|t| t.func).unwrap_or(0);
                if !br.is_alternative
                    && !g.has_alternative
                    && inside != 0
                    && g.func == inside
                    && !src.in_conditional(i, true)
                {
                    let msg = format!(
                        "inline {isa} assembly is guarded but the guard has no `#else` fallback"
                    );
                    cx.report_with(&META, Severity::Warning, targets, i, end, msg, "add an `#else` branch that computes the same result (an intrinsic or plain C++), or a static assertion");
                }
            }
            Some(_) => {}
        }
    }
    report_amd_taken_ptx(cx, &amd_taken_ptx);
}

/// PTX statements under conditions an AMD device pass takes: one finding per `#if` group, at the
/// directive that opens it (the condition that needs an AMD term), naming the AMD targets
/// that compile the branch and the lines of the assembly.
fn report_amd_taken_ptx(cx: &mut Cx, asm: &[usize]) {
    if asm.is_empty() {
        return;
    }
    let src = cx.src;
    // a file that defines `__CUDA_ARCH__` itself (a HIP shim) decides its own value
    if src
        .defines
        .iter()
        .any(|d| src.text.get(d.name_start as usize..d.name_end as usize) == Some("__CUDA_ARCH__"))
    {
        return;
    }
    let passes = crate::rules::target_cond::amd_passes(cx);
    // branch -> AMD targets compiling it, asked once per branch
    let mut taken_by: std::collections::HashMap<u32, Vec<String>> = Default::default();
    // group -> (first asm token, asm lines, AMD targets compiling it)
    let mut groups: Vec<(u32, usize, Vec<u32>, Vec<String>)> = Vec::new();
    for &i in asm {
        let Some(t) = src.toks.get(i) else { continue };
        let b = t.branch;
        let taken = taken_by
            .entry(b)
            .or_insert_with(|| {
                passes
                    .iter()
                    .filter(|p| crate::rules::target_cond::branch_taken(cx, b, p) == Some(true))
                    .map(|p| p.arch.clone())
                    .collect()
            })
            .clone();
        if taken.is_empty() {
            continue;
        }
        let Some(br) = src.branches.get(b as usize) else {
            continue;
        };
        let line = t.line + 1;
        match groups.iter_mut().find(|g| g.0 == br.group) {
            Some(g) => g.2.push(line),
            None => groups.push((br.group, i, vec![line], taken)),
        }
    }
    for (group, i, lines, taken) in groups {
        // the directive that opens the group
        let Some(first) = src
            .branches
            .iter()
            .find(|b| b.group == group && !b.is_alternative)
        else {
            continue;
        };
        let Some(inner) = src
            .toks
            .get(i)
            .and_then(|t| src.branches.get(t.branch as usize))
        else {
            continue;
        };
        let (s, e) = (first.cond.0 as usize, first.cond.1 as usize);
        let cond = src.text.get(s..e).unwrap_or("").trim();
        let which = if inner.is_alternative {
            let d = src
                .text
                .get(inner.cond.0 as usize..inner.cond.1 as usize)
                .unwrap_or("")
                .trim();
            let d = d.split("//").next().unwrap_or("").trim();
            format!("its `{d}` branch")
        } else {
            "its first branch".to_string()
        };
        let at = match lines.as_slice() {
            [one] => format!("line {one}"),
            many => {
                let shown: Vec<String> = many.iter().take(5).map(|l| l.to_string()).collect();
                let more = if many.len() > 5 {
                    format!(" and {} more", many.len() - 5)
                } else {
                    String::new()
                };
                format!("lines {}{more}", shown.join(", "))
            }
        };
        let msg = format!(
            "`{cond}` is no guard against AMD: HIP does not define `__CUDA_ARCH__`, so the AMD device pass compiles {which}, which holds inline PTX assembly ({at})"
        );
        cx.report_span(
            &META,
            Severity::Error,
            taken,
            s,
            e,
            msg,
            "give the AMD device pass its own branch (`|| defined(__HIP_PLATFORM_AMD__)` on the fallback side, or `#elif defined(__HIP_DEVICE_COMPILE__)`) with an intrinsic or plain C++",
        );
    }
}
