//! The `cpu-simt` backend: a harness's kernel source compiled by the host C++ compiler against
//! the SIMT runtime that `kplan-gen` renders (every GPU thread a fiber, W-lane warps), and the
//! harness's C/C++ reference compiled beside it. Both run as child processes that read one input
//! file (every argument's bytes, outputs already poisoned) and write the compared buffers.
//!
//! Input file: `KPSM`, u32 argument count, per argument u64 byte count + bytes (scalars: 8 bytes),
//! u32 launch count, per launch 3 x u32 grid, 3 x u32 block, u64 dynamic shared bytes. Output
//! file: the `out` and `inout` buffers back to back, in argument order.

use crate::error::RunError;
use crate::harness::{ArgKind, Dtype, Harness, Lang};
use crate::skip::Skip;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// One launch's dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u64,
}

/// Everything one run of a harness case needs: one byte buffer per argument (scalars as their 8
/// little-endian bytes) and one [`Dims`] per kernel.
#[derive(Debug, Clone)]
pub struct RunInput {
    pub args: Vec<Vec<u8>>,
    pub launches: Vec<Dims>,
}

impl RunInput {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.args.iter().map(|a| a.len() + 8).sum::<usize>() + 64);
        v.extend_from_slice(b"KPSM");
        v.extend_from_slice(&(self.args.len() as u32).to_le_bytes());
        for a in &self.args {
            v.extend_from_slice(&(a.len() as u64).to_le_bytes());
            v.extend_from_slice(a);
        }
        v.extend_from_slice(&(self.launches.len() as u32).to_le_bytes());
        for l in &self.launches {
            for x in l.grid.iter().chain(l.block.iter()) {
                v.extend_from_slice(&x.to_le_bytes());
            }
            v.extend_from_slice(&l.shared.to_le_bytes());
        }
        v
    }
}

/// Splits an output file into the compared buffers of `h` given their byte sizes.
pub fn split_outputs(raw: &[u8], sizes: &[usize]) -> Option<Vec<Vec<u8>>> {
    if raw.len() != sizes.iter().sum::<usize>() {
        return None;
    }
    let mut out = Vec::new();
    let mut at = 0;
    for &s in sizes {
        out.push(raw[at..at + s].to_vec());
        at += s;
    }
    Some(out)
}

/// A config point as `-D` pairs.
pub type Defines = Vec<(String, String)>;

/// The C++ type a kernel scalar argument is passed as.
fn kernel_scalar(d: Dtype, slot: usize) -> String {
    match d {
        Dtype::Fp16 => format!("__ushort_as_half(*(unsigned short*)kplan_args[{slot}])"),
        Dtype::Bf16 => format!("__ushort_as_bfloat16(*(unsigned short*)kplan_args[{slot}])"),
        _ => format!("*({}*)kplan_args[{slot}]", d.c_type()),
    }
}

const READER: &str = r#"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
namespace kplan_io {
struct any_ptr {
    void* p;
    template <typename T> operator T*() const { return static_cast<T*>(p); }
};
static unsigned char* slurp(const char* path, size_t* len) {
    FILE* f = std::fopen(path, "rb");
    if (!f) { std::perror(path); std::exit(2); }
    std::fseek(f, 0, SEEK_END);
    long n = std::ftell(f);
    std::fseek(f, 0, SEEK_SET);
    unsigned char* b = (unsigned char*)std::malloc((size_t)n + 1);
    if (!b || std::fread(b, 1, (size_t)n, f) != (size_t)n) { std::perror(path); std::exit(2); }
    std::fclose(f);
    *len = (size_t)n;
    return b;
}
struct Input {
    unsigned nargs = 0;
    void* args[256];
    size_t bytes[256];
    unsigned nlaunch = 0;
    unsigned dims[64][6];
    unsigned long long shared[64];
};
static void read_input(const char* path, Input& in) {
    size_t len = 0, at = 0;
    unsigned char* b = slurp(path, &len);
    auto need = [&](size_t n) { if (at + n > len) { std::fprintf(stderr, "kplan: truncated input file\n"); std::exit(2); } };
    need(8);
    if (std::memcmp(b, "KPSM", 4) != 0) { std::fprintf(stderr, "kplan: bad input file\n"); std::exit(2); }
    std::memcpy(&in.nargs, b + 4, 4);
    at = 8;
    if (in.nargs > 256) std::exit(2);
    for (unsigned i = 0; i < in.nargs; ++i) {
        unsigned long long n;
        need(8);
        std::memcpy(&n, b + at, 8);
        at += 8;
        need((size_t)n);
        /* 256-byte aligned, as cudaMalloc gives, and never empty */
        void* p = std::aligned_alloc(256, ((size_t)n + 256) / 256 * 256);
        if (!p) { std::fprintf(stderr, "kplan: out of memory\n"); std::exit(2); }
        std::memcpy(p, b + at, (size_t)n);
        at += (size_t)n;
        in.args[i] = p;
        in.bytes[i] = (size_t)n;
    }
    need(4);
    std::memcpy(&in.nlaunch, b + at, 4);
    at += 4;
    if (in.nlaunch > 64) std::exit(2);
    for (unsigned k = 0; k < in.nlaunch; ++k) {
        need(32);
        std::memcpy(in.dims[k], b + at, 24);
        std::memcpy(&in.shared[k], b + at + 24, 8);
        at += 32;
    }
    std::free(b);
}
static void write_output(const char* path, const Input& in, const int* which, int n) {
    FILE* f = std::fopen(path, "wb");
    if (!f) { std::perror(path); std::exit(2); }
    for (int i = 0; i < n; ++i)
        if (std::fwrite(in.args[which[i]], 1, in.bytes[which[i]], f) != in.bytes[which[i]]) { std::perror(path); std::exit(2); }
    if (std::fclose(f) != 0) { std::perror(path); std::exit(2); }
}
} // namespace kplan_io
"#;

/// The launching translation unit: the kernel sources (rewritten copies), then `main`.
pub fn launcher_source(h: &Harness, copies: &[(PathBuf, PathBuf)]) -> String {
    let mut s = String::new();
    for (_, copy) in copies {
        let _ = writeln!(s, "#include \"{}\"", copy.display());
    }
    s.push_str(READER);
    s.push_str("static void* kplan_args[256];\n");
    for (k, e) in h.kernels.iter().enumerate() {
        let call: Vec<String> = e
            .args
            .iter()
            .map(|&i| {
                let a = &h.args[i];
                if a.kind == ArgKind::Scalar {
                    kernel_scalar(a.dtype, i)
                } else {
                    format!("kplan_io::any_ptr{{kplan_args[{i}]}}")
                }
            })
            .collect();
        let _ = writeln!(
            s,
            "static void kplan_kernel_{k}(void*) {{ {}({}); }}",
            e.entry,
            call.join(", ")
        );
    }
    let compared: Vec<String> = (0..h.args.len())
        .filter(|&i| h.args[i].kind.compared())
        .map(|i| i.to_string())
        .collect();
    s.push_str("int main(int argc, char** argv) {\n    if (argc != 3) return 2;\n    static kplan_io::Input in;\n    kplan_io::read_input(argv[1], in);\n");
    let _ = writeln!(
        s,
        "    if (in.nargs != {} || in.nlaunch != {}) {{ std::fprintf(stderr, \"kplan: input does not match the harness\\n\"); return 2; }}",
        h.args.len(),
        h.kernels.len()
    );
    s.push_str("    for (unsigned i = 0; i < in.nargs; ++i) kplan_args[i] = in.args[i];\n");
    for (k, e) in h.kernels.iter().enumerate() {
        let _ = writeln!(
            s,
            "    ::kplan_simt::launch({:?}, dim3(in.dims[{k}][0], in.dims[{k}][1], in.dims[{k}][2]), dim3(in.dims[{k}][3], in.dims[{k}][4], in.dims[{k}][5]), (size_t)in.shared[{k}], kplan_kernel_{k}, nullptr);",
            e.entry
        );
    }
    let _ = writeln!(
        s,
        "    static const int which[] = {{{}}};\n    kplan_io::write_output(argv[2], in, which, {});\n    return 0;\n}}",
        compared.join(", "),
        compared.len()
    );
    s
}

/// The reference's translation unit (C++ references are included; C ones are declared and
/// linked).
pub fn reference_source(h: &Harness) -> String {
    let r = &h.reference;
    let mut s = String::new();
    let ref_args: Vec<usize> = (0..h.args.len())
        .filter(|&i| h.args[i].kind != ArgKind::Scratch)
        .collect();
    match r.lang {
        Lang::Cpp => {
            let _ = writeln!(s, "#include \"{}\"", r.source.display());
            s.push_str(READER);
        }
        Lang::C => {
            s.push_str(READER);
            let proto: Vec<String> = ref_args
                .iter()
                .map(|&i| {
                    let a = &h.args[i];
                    match a.kind {
                        ArgKind::Scalar => a.dtype.c_type().to_string(),
                        ArgKind::In => format!("const {}*", a.dtype.c_type()),
                        _ => format!("{}*", a.dtype.c_type()),
                    }
                })
                .collect();
            let _ = writeln!(s, "extern \"C\" void {}({});", r.function, proto.join(", "));
        }
    }
    let call: Vec<String> = ref_args
        .iter()
        .map(|&i| {
            let a = &h.args[i];
            if a.kind == ArgKind::Scalar {
                format!("*({}*)in.args[{i}]", a.dtype.c_type())
            } else {
                format!("kplan_io::any_ptr{{in.args[{i}]}}")
            }
        })
        .collect();
    let compared: Vec<String> = (0..h.args.len())
        .filter(|&i| h.args[i].kind.compared())
        .map(|i| i.to_string())
        .collect();
    let _ = writeln!(
        s,
        "int main(int argc, char** argv) {{\n    if (argc != 3) return 2;\n    static kplan_io::Input in;\n    kplan_io::read_input(argv[1], in);\n    if (in.nargs != {}) return 2;\n    {}({});\n    static const int which[] = {{{}}};\n    kplan_io::write_output(argv[2], in, which, {});\n    return 0;\n}}",
        h.args.len(),
        r.function,
        call.join(", "),
        compared.join(", "),
        compared.len()
    );
    s
}

// ---------------------------------------------------------------- source preparation

/// Rewrites what the host compiler cannot take as written and keeps every line where it was:
/// `extern __shared__ T name[];` (dynamic shared memory) becomes a pointer to the block's
/// dynamic shared buffer. The copy starts with `#line 1 "<the user's file>"`, so diagnostics
/// name the user's file and lines.
pub fn prepare_source(text: &str, original: &Path) -> String {
    let file = original
        .display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    let mut out = format!("#line 1 \"{file}\"\n");
    let b = text.as_bytes();
    let mut i = 0;
    let mut line = 1usize;
    // Brace stack: true = namespace-like (namespace, extern "C"), false = anything else.
    let mut braces: Vec<bool> = Vec::new();
    let mut since_stmt = String::new();
    let mut last_copy = 0;
    while i < b.len() {
        let c = b[i];
        // comments and literals are skipped whole
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                if b[i] == b'\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 2;
            continue;
        }
        if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            since_stmt.push('"');
            continue;
        }
        if c == b'\n' {
            line += 1;
            since_stmt.push(' ');
            i += 1;
            continue;
        }
        if c == b'{' {
            let ns = since_stmt.contains("namespace") || since_stmt.contains("extern \"");
            braces.push(ns);
            since_stmt.clear();
            i += 1;
            continue;
        }
        if c == b'}' {
            braces.pop();
            since_stmt.clear();
            i += 1;
            continue;
        }
        if c == b';' {
            since_stmt.clear();
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = &text[s..i];
            if word == "extern" {
                let mut j = i;
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                if text[j..].starts_with("__shared__") {
                    if let Some(end) = text[j..].find(';').map(|e| j + e) {
                        let decl = &text[j + "__shared__".len()..end];
                        if let Some((ty, name)) = dynamic_shared_decl(decl) {
                            out.push_str(&text[last_copy..s]);
                            let file_scope = braces.iter().all(|&ns| ns);
                            let newlines = text[s..=end].matches('\n').count();
                            if file_scope {
                                let _ = write!(
                                    out,
                                    "\n#undef {name}\n#define {name} (reinterpret_cast<{ty}*>(::kplan_simt::dyn_shared()))\n#line {} \"{file}\"\n",
                                    line + newlines
                                );
                            } else {
                                let _ = write!(
                                    out,
                                    "{ty}* const {name} = reinterpret_cast<{ty}*>(::kplan_simt::dyn_shared());"
                                );
                                out.push_str(&"\n".repeat(newlines));
                            }
                            line += newlines;
                            i = end + 1;
                            last_copy = i;
                            since_stmt.clear();
                            continue;
                        }
                    }
                }
            }
            since_stmt.push_str(word);
            since_stmt.push(' ');
            continue;
        }
        since_stmt.push(c as char);
        i += 1;
    }
    out.push_str(&text[last_copy..]);
    out
}

/// 1-based (line, column) of every `asm` keyword outside comments and literals.
pub fn asm_keywords(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut line, mut line_start) = (0, 1, 0);
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            line_start = i + 1;
            i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                if b[i] == b'\n' {
                    line += 1;
                    line_start = i + 1;
                }
                i += 1;
            }
            i += 2;
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            if &text[s..i] == "asm" {
                out.push((line, text[line_start..s].chars().count() + 1));
            }
        } else {
            i += 1;
        }
    }
    out
}

/// `T name[]` (after `extern __shared__`, alignment attributes removed) -> (T, name).
fn dynamic_shared_decl(decl: &str) -> Option<(String, String)> {
    let mut d = decl.to_string();
    for kw in ["__align__", "__attribute__", "alignas", "__declspec"] {
        while let Some(p) = d.find(kw) {
            let rest = &d[p + kw.len()..];
            let open = rest.find('(')?;
            if !rest[..open].trim().is_empty() {
                return None;
            }
            let mut depth = 0;
            let mut close = None;
            for (k, ch) in rest.char_indices().skip(open) {
                match ch {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            close = Some(k);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let close = close?;
            d = format!("{} {}", &d[..p], &rest[close + 1..]);
        }
    }
    let d = d.trim();
    let d = d.strip_suffix(']')?.trim_end();
    let d = d.strip_suffix('[')?.trim_end();
    let name_start = d
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map(|p| p + 1)
        .unwrap_or(0);
    let name = &d[name_start..];
    let ty = d[..name_start].trim();
    if name.is_empty() || ty.is_empty() || name.chars().next()?.is_ascii_digit() {
        return None;
    }
    Some((
        ty.split_whitespace().collect::<Vec<_>>().join(" "),
        name.to_string(),
    ))
}

// ---------------------------------------------------------------- compiling and running

/// Headers a CUDA or HIP kernel includes that the runtime stands in for.
const REDIRECTS: &[&str] = &[
    "cuda_runtime.h",
    "cuda_runtime_api.h",
    "cuda.h",
    "cuda_fp16.h",
    "cuda_bf16.h",
    "device_launch_parameters.h",
    "cooperative_groups.h",
    "cooperative_groups/reduce.h",
    "hip/hip_runtime.h",
    "hip/hip_runtime_api.h",
    "hip/hip_fp16.h",
    "hip/hip_bf16.h",
    "hip/hip_cooperative_groups.h",
    "kplan_portability.h",
];

/// Runs `cmd` with a time limit ([`crate::cpu::run_tool`], so through
/// [`kplan_build::process::run_command`]: the process group is killed on timeout and both pipes
/// are drained); returns (success, stderr).
fn run_limited(cmd: Command, limit: Duration, what: &str) -> Result<(bool, String), RunError> {
    let out = crate::cpu::run_tool(cmd, limit, what)?;
    Ok((out.success(), out.stderr))
}

/// The compiled kernel and reference programs of one harness.
pub struct SimtBuild {
    cxx: PathBuf,
    cc: Option<PathBuf>,
    dir: tempfile::TempDir,
    copies: Vec<(PathBuf, PathBuf)>,
    /// `file:line:col` of every `asm` keyword in the kernel sources.
    asm_uses: Vec<String>,
    kernels: HashMap<(Defines, u32), Result<PathBuf, String>>,
    references: HashMap<Defines, Result<PathBuf, String>>,
    pub timeout: Duration,
}

fn c_compiler() -> Option<PathBuf> {
    for var in ["KPLAN_CC", "CC"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(v));
        }
    }
    let path = std::env::var_os("PATH")?;
    for name in ["cc", "gcc", "clang"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

impl SimtBuild {
    /// Writes the runtime, the header redirects and the rewritten kernel sources. `Ok(Err)`:
    /// no C++ compiler (a skip).
    pub fn new(h: &Harness) -> Result<Result<SimtBuild, Skip>, RunError> {
        let Some(cxx) = crate::cpu::find_cxx()? else {
            return Ok(Err(Skip::no_cxx()));
        };
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |e| RunError::Io { path: p, source: e }
        };
        let dir = tempfile::Builder::new()
            .prefix("kplan-simt-")
            .tempdir()
            .map_err(io(&std::env::temp_dir()))?;
        let inc = dir.path().join("include");
        let runtime = inc.join(kplan_gen::SIMT_RUNTIME_NAME);
        std::fs::create_dir_all(inc.join("cooperative_groups")).map_err(io(&inc))?;
        std::fs::create_dir_all(inc.join("hip")).map_err(io(&inc))?;
        std::fs::write(&runtime, kplan_gen::render_simt_runtime()).map_err(io(&runtime))?;
        for r in REDIRECTS {
            let p = inc.join(r);
            std::fs::write(&p, "#pragma once\n#include \"kplan_simt.h\"\n").map_err(io(&p))?;
        }
        let src = dir.path().join("src");
        std::fs::create_dir_all(&src).map_err(io(&src))?;
        let mut copies: Vec<(PathBuf, PathBuf)> = Vec::new();
        let mut asm_uses = Vec::new();
        for k in &h.kernels {
            if copies.iter().any(|(o, _)| o == &k.source) {
                continue;
            }
            let text = std::fs::read_to_string(&k.source).map_err(io(&k.source))?;
            let name = format!(
                "{}-{}",
                copies.len(),
                k.source
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("kernel.cu")
            );
            let copy = src.join(name);
            std::fs::write(&copy, prepare_source(&text, &k.source)).map_err(io(&copy))?;
            for (line, col) in asm_keywords(&text) {
                asm_uses.push(format!("{}:{line}:{col}", k.source.display()));
            }
            copies.push((k.source.clone(), copy));
        }
        let cc = if h.reference.lang == Lang::C {
            c_compiler()
        } else {
            None
        };
        Ok(Ok(SimtBuild {
            cxx,
            cc,
            dir,
            copies,
            asm_uses,
            kernels: HashMap::new(),
            references: HashMap::new(),
            timeout: Duration::from_secs(
                std::env::var("KPLAN_VERIFY_TIMEOUT")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(600),
            ),
        }))
    }

    pub fn compiler(&self) -> &Path {
        &self.cxx
    }

    fn tidy(&self, log: &str) -> String {
        let d = self.dir.path().display().to_string();
        let log = log
            .replace(&format!("{d}/include/"), "<kplan cpu-simt runtime>/")
            .replace(&format!("{d}/"), "<kplan>/");
        log.chars().take(6000).collect()
    }

    fn key_label(defs: &Defines) -> String {
        let mut s = String::new();
        for (k, v) in defs {
            let v: String = v
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            let _ = write!(s, "{k}{v}-");
        }
        s
    }

    fn build_kernel(&self, h: &Harness, defs: &Defines, warp: u32) -> Result<PathBuf, String> {
        let tag = format!("k-{}w{warp}", Self::key_label(defs));
        let main = self.dir.path().join(format!("{tag}.cpp"));
        std::fs::write(&main, launcher_source(h, &self.copies)).map_err(|e| e.to_string())?;
        let exe = self.dir.path().join(&tag);
        let mut cmd = Command::new(&self.cxx);
        cmd.args([
            "-std=c++17",
            "-O1",
            "-pthread",
            "-w",
            "-fno-strict-aliasing",
        ])
        .arg(format!("-DKPLAN_SIMT_WARP={warp}"))
        .arg("-DKPLAN_SIMT_MAIN=1")
        .arg("-I")
        .arg(self.dir.path().join("include"))
        .arg("-include")
        .arg(
            self.dir
                .path()
                .join("include")
                .join(kplan_gen::SIMT_RUNTIME_NAME),
        );
        for (orig, _) in &self.copies {
            if let Some(d) = orig.parent() {
                cmd.arg("-iquote").arg(d);
            }
        }
        for k in &h.kernels {
            for i in &k.include {
                cmd.arg("-I").arg(i);
            }
        }
        for (k, v) in defs {
            cmd.arg(format!("-D{k}={v}"));
        }
        cmd.arg(&main).arg("-o").arg(&exe);
        let (ok, log) =
            run_limited(cmd, self.timeout, "kernel compile").map_err(|e| e.to_string())?;
        if !ok {
            let mut notes = String::new();
            if log.contains("cannot_run_inline_asm") {
                for at in &self.asm_uses {
                    let _ = writeln!(
                        notes,
                        "{at}: error: inline assembly (`asm`) is not emulated by cpu-simt"
                    );
                }
            }
            return Err(notes + &self.tidy(&log));
        }
        Ok(exe)
    }

    fn build_reference(&self, h: &Harness, defs: &Defines) -> Result<PathBuf, String> {
        let tag = format!("r-{}", Self::key_label(defs));
        let main = self.dir.path().join(format!("{tag}.cpp"));
        std::fs::write(&main, reference_source(h)).map_err(|e| e.to_string())?;
        let exe = self.dir.path().join(&tag);
        let mut objs = Vec::new();
        if h.reference.lang == Lang::C {
            let Some(cc) = &self.cc else {
                return Err("no C compiler found for the C reference (set KPLAN_CC or CC)".into());
            };
            let obj = self.dir.path().join(format!("{tag}.o"));
            let mut c = Command::new(cc);
            c.args(["-O1", "-w", "-c"]);
            if let Some(d) = h.reference.source.parent() {
                c.arg("-I").arg(d);
            }
            for (k, v) in defs {
                c.arg(format!("-D{k}={v}"));
            }
            c.arg(&h.reference.source).arg("-o").arg(&obj);
            let (ok, log) =
                run_limited(c, self.timeout, "reference compile").map_err(|e| e.to_string())?;
            if !ok {
                return Err(self.tidy(&log));
            }
            objs.push(obj);
        }
        let mut cmd = Command::new(&self.cxx);
        cmd.args(["-std=c++17", "-O1", "-w"]);
        if let Some(d) = h.reference.source.parent() {
            cmd.arg("-iquote").arg(d);
        }
        for (k, v) in defs {
            cmd.arg(format!("-D{k}={v}"));
        }
        cmd.arg(&main).args(&objs).arg("-o").arg(&exe).arg("-lm");
        let (ok, log) =
            run_limited(cmd, self.timeout, "reference compile").map_err(|e| e.to_string())?;
        if !ok {
            return Err(self.tidy(&log));
        }
        Ok(exe)
    }

    /// Compiles every (config, warp) kernel and every config's reference, in parallel.
    pub fn prepare(&mut self, h: &Harness, configs: &[Defines], warps: &[u32]) {
        let mut jobs: Vec<(Defines, Option<u32>)> = Vec::new();
        for c in configs {
            if !self.references.contains_key(c) {
                jobs.push((c.clone(), None));
            }
            for &w in warps {
                if !self.kernels.contains_key(&(c.clone(), w)) {
                    jobs.push((c.clone(), Some(w)));
                }
            }
        }
        let this = &*self;
        let results = crate::exec::parallel(&jobs, |(d, w)| {
            let r = match w {
                Some(w) => this.build_kernel(h, d, *w),
                None => this.build_reference(h, d),
            };
            ((d.clone(), *w), r)
        });
        for ((d, w), r) in results {
            match w {
                Some(w) => {
                    self.kernels.insert((d, w), r);
                }
                None => {
                    self.references.insert(d, r);
                }
            }
        }
    }

    pub fn kernel(&self, defs: &Defines, warp: u32) -> Result<&Path, String> {
        match self.kernels.get(&(defs.clone(), warp)) {
            Some(Ok(p)) => Ok(p),
            Some(Err(e)) => Err(e.clone()),
            None => Err("not compiled".into()),
        }
    }

    pub fn reference(&self, defs: &Defines) -> Result<&Path, String> {
        match self.references.get(defs) {
            Some(Ok(p)) => Ok(p),
            Some(Err(e)) => Err(e.clone()),
            None => Err("not compiled".into()),
        }
    }

    /// Runs a compiled program on `input`; returns the output file's bytes.
    pub fn run(&self, exe: &Path, input: &RunInput, what: &str) -> Result<Vec<u8>, RunError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let inp = self.dir.path().join(format!("in-{n}.bin"));
        let outp = self.dir.path().join(format!("out-{n}.bin"));
        std::fs::write(&inp, input.encode()).map_err(|e| RunError::Io {
            path: inp.clone(),
            source: e,
        })?;
        let mut cmd = Command::new(exe);
        cmd.arg(&inp).arg(&outp);
        let r = run_limited(cmd, self.timeout, what);
        let _ = std::fs::remove_file(&inp);
        let (ok, log) = r?;
        if !ok {
            let _ = std::fs::remove_file(&outp);
            return Err(RunError::Exec {
                what: what.to_string(),
                message: self.tidy(log.trim()),
            });
        }
        let raw = std::fs::read(&outp).map_err(|e| RunError::Io {
            path: outp.clone(),
            source: e,
        });
        let _ = std::fs::remove_file(&outp);
        raw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_shared_is_rewritten_in_place() {
        let src = "extern __shared__ float smem[];\n__global__ void k() {\n  extern __shared__ __align__(16) unsigned char buf[];\n  buf[0] = 1; // extern __shared__ int no[];\n}\n";
        let out = prepare_source(src, Path::new("/u/k.cu"));
        assert!(out.starts_with("#line 1 \"/u/k.cu\"\n"));
        assert!(out.contains("#define smem (reinterpret_cast<float*>(::kplan_simt::dyn_shared()))"));
        assert!(out.contains("#line 1 \"/u/k.cu\"\n\n__global__"), "{out}");
        assert!(out.contains("unsigned char* const buf = reinterpret_cast<unsigned char*>"));
        assert!(out.contains("// extern __shared__ int no[];"));
        // lines after the rewrite keep their numbers: `buf[0]` is still on line 4
        let after_line1: Vec<&str> = out
            .split("#line 1 \"/u/k.cu\"\n")
            .last()
            .unwrap()
            .lines()
            .collect();
        assert_eq!(
            after_line1.iter().position(|l| l.contains("buf[0] = 1")),
            Some(3)
        );
        assert_eq!(
            dynamic_shared_decl(" __align__(sizeof(T)) T data[]"),
            Some(("T".into(), "data".into()))
        );
        assert_eq!(dynamic_shared_decl(" float x[32]"), None);
        assert_eq!(
            asm_keywords("// asm\nint a; asm volatile(\"asm\");\n/* asm */ asm(\"x\");"),
            vec![(2, 8), (3, 11)]
        );
    }
}
