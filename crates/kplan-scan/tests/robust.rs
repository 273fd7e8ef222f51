//! The structure pass and every rule never panic: hostile shapes, and a deterministic stream of
//! random token soup (the fuzz target in fuzz/ explores further; it does not run in CI).

use kplan_kb::Kb;
use kplan_scan::lex::{classify_condition, lex, Platform};
use kplan_scan::{scan_text, FileKind, ScanCtx};
use std::path::Path;

fn ctx() -> ScanCtx<'static> {
    ScanCtx::with_targets(Kb::builtin(), &["sm_90a", "gfx942", "gfx1100"]).unwrap()
}

#[test]
fn hostile_shapes() {
    let c = ctx();
    let cases: Vec<String> = vec![
        String::new(),
        "/*".into(),
        "\"".into(),
        "'".into(),
        "R\"x(".into(),
        "u8R\"delim(abc)delim".into(),
        "#".into(),
        "#if".into(),
        "#endif\n#endif\n#else\n#elif 1\n".into(),
        "#define\n#define X(\n#define Y \\\n".into(),
        "__global__".into(),
        "__global__ void k(".into(),
        "__global__ void k() {".into(),
        "}}}}}}]]]]))))".into(),
        "asm(".into(),
        "asm volatile(\"mov.u32 %0, %%laneid;\"".into(),
        "__shfl_xor_sync(".into(),
        "for (int o = 16; o > 0; o /= 2)".into(),
        "k<<<".into(),
        "k<<<1, 32".into(),
        "__launch_bounds__(".into(),
        "__shared__ float x[".into(),
        "__shared__ float x[99999999999999999999999][1];".into(),
        "__shared__ double x[18446744073709551615][18446744073709551615];".into(),
        "int x = 0x;".into(),
        "0xffffffffffffffffffffffffffff".into(),
        "\u{feff}__global__ void k(){ é = threadIdx.x % 32; }".into(),
        format!("__global__ void k() {}", "{".repeat(10_000)),
        format!("{}{}", "(".repeat(10_000), "[".repeat(10_000)),
        format!("#if {}1{}\n#endif\n", "(".repeat(5_000), ")".repeat(5_000)),
        format!("#if {}defined(X)\n#endif\n", "!".repeat(5_000)),
        "__device__ int f() { return __ballot_sync(0xffffffff, 1) == 0xffffffff; }".repeat(100),
    ];
    for (i, t) in cases.iter().enumerate() {
        let _ = scan_text(&c, Path::new(&format!("case{i}.cu")), FileKind::Cuda, t);
        let _ = kplan_scan::cuda::feature_uses(&c, Path::new("x.cu"), t);
    }
}

#[test]
fn random_token_soup_never_panics() {
    let c = ctx();
    let alphabet: &[&str] = &[
        "__global__",
        "__device__",
        "void",
        "k",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        ";",
        ",",
        "=",
        "%",
        "/",
        "&",
        ">>",
        "<<<",
        ">>>",
        "32",
        "31",
        "16",
        "5",
        "0xffffffff",
        "threadIdx",
        ".",
        "x",
        "lane",
        "warpSize",
        "__shfl_xor_sync",
        "__ballot_sync",
        "unsigned",
        "__popc",
        "asm",
        "volatile",
        "\"mov.u32 %0, %%laneid;\"",
        "\n#if defined(__HIP_PLATFORM_AMD__)\n",
        "\n#else\n",
        "\n#endif\n",
        "\n#define WARP_SIZE 32\n",
        "for",
        "int",
        "offset",
        "<",
        ">",
        "__shared__",
        "float",
        "__launch_bounds__",
        "volatile",
        "tid",
        "+",
        "/*",
        "*/",
        "//",
        "\"",
        "'",
        "R\"(",
        ")\"",
        "\\\n",
        "#",
        "\n",
        " ",
        "wmma",
        "::",
        "__nv_fp8_e4m3",
        "constexpr",
        "static_assert",
        "__AMDGCN_WAVEFRONT_SIZE",
        "é",
    ];
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for case in 0..1500 {
        let len = (next() % 300) as usize;
        let mut s = String::new();
        for _ in 0..len {
            s.push_str(alphabet[(next() % alphabet.len() as u64) as usize]);
            if next() % 3 == 0 {
                s.push(' ');
            }
        }
        let _ = scan_text(&c, Path::new(&format!("soup{case}.cu")), FileKind::Cuda, &s);
    }
}

#[test]
fn comments_strings_and_raw_strings_are_not_code() {
    let src = "// threadIdx.x % 32\n/* threadIdx.x % 32 */ const char* a = \"threadIdx.x % 32\";\nconst char* b = R\"x(threadIdx.x % 32 )\" still raw)x\";\nint z;\n";
    let s = lex(src);
    let idents: Vec<&str> = (0..s.toks.len())
        .filter(|&i| s.is_ident(i))
        .map(|i| s.s(i))
        .collect();
    assert_eq!(
        idents,
        ["const", "char", "a", "const", "char", "b", "int", "z"]
    );
    // line numbers survive the raw string
    let z = (0..s.toks.len()).find(|&i| s.is(i, "z")).unwrap();
    assert_eq!(s.line(z), 3);
}

#[test]
fn platform_conditions() {
    let cases = [
        ("defined(__HIP_PLATFORM_AMD__)", Platform::Amd),
        ("!defined(USE_ROCM)", Platform::Nvidia),
        (
            "defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800",
            Platform::Nvidia,
        ),
        ("defined(__CUDACC__) || defined(__HIPCC__)", Platform::Any),
        ("defined(__gfx942__) || defined(__gfx90a__)", Platform::Amd),
        ("defined(USE_ROCM) && defined(FOO)", Platform::Amd),
        ("__HIP_DEVICE_COMPILE__", Platform::Amd),
        ("defined(__HIP_PLATFORM_NVIDIA__)", Platform::Nvidia),
        ("GGML_USE_HIP", Platform::Amd),
        ("defined(FOO)", Platform::Any),
    ];
    for (c, want) in cases {
        assert_eq!(classify_condition(c).0, want, "{c}");
    }
    // #else of an AMD test is the NVIDIA side; #elif without a platform test too
    let s = lex("#ifdef USE_ROCM\nint a;\n#else\nint b;\n#endif\n#if defined(__HIP__)\nint c;\n#elif FOO\nint d;\n#endif\n");
    let plat = |name: &str| s.platform((0..s.toks.len()).find(|&i| s.is(i, name)).unwrap());
    assert_eq!(plat("a"), Platform::Amd);
    assert_eq!(plat("b"), Platform::Nvidia);
    assert_eq!(plat("c"), Platform::Amd);
    assert_eq!(plat("d"), Platform::Nvidia);
}

#[test]
fn device_function_bodies() {
    let s = lex("__global__ void __launch_bounds__(256) k(int* x) { x[0] = 1; }\nvoid host() { int y = 0; }\nCUTLASS_DEVICE void f() { int z; }\n__device__ int arr[2] = {1, 2};\n");
    let at = |name: &str| (0..s.toks.len()).find(|&i| s.is(i, name)).unwrap();
    assert!(s.in_device(at("x") + 3));
    assert!(!s.in_device(at("y")));
    assert!(s.in_device(at("z")));
    let k = s
        .funcs
        .iter()
        .find(|f| f.name.is_some_and(|n| s.s(n as usize) == "k"))
        .expect("kernel name found after __launch_bounds__");
    assert_eq!(k.kind, kplan_scan::lex::FnKind::Global);
    assert_eq!(
        s.funcs.len(),
        2,
        "`__device__ int arr[2] = {{...}}` is not a function"
    );
}

/// Scans `bytes` the way a file on disk is scanned (lossy UTF-8), as CUDA and as Python, and
/// through the lexers directly.
fn scan_bytes_every_way(bytes: &[u8]) -> Vec<kplan_scan::Finding> {
    let c = ctx();
    let text = String::from_utf8_lossy(bytes);
    let _ = lex(&text);
    let _ = kplan_scan::python::lex::lex(&text);
    let _ = scan_text(&c, Path::new("x.py"), FileKind::Python, &text);
    let _ = kplan_scan::cuda::feature_uses(&c, Path::new("x.cu"), &text);
    scan_text(&c, Path::new("x.cu"), FileKind::Cuda, &text)
}

#[test]
fn non_ascii_after_punctuation_in_a_condition() {
    // the three lines that used to panic slicing inside `é`
    let f = scan_bytes_every_way("#if (é)\n#endif\n__global__ void k(){}\n".as_bytes());
    assert!(f.iter().all(|f| f.line >= 1));
    for cond in [
        "(é)",
        "!é",
        "é||é",
        "(\u{1F600}",
        "<\u{3b1}",
        "|\u{e9}",
        "=\u{e9}",
    ] {
        let _ = classify_condition(cond);
        let _ =
            scan_bytes_every_way(format!("#if {cond}\nint a;\n#elif {cond}\n#endif\n").as_bytes());
    }
    // a platform test after the odd bytes is still read
    assert_eq!(
        classify_condition("(é) || defined(__HIP_PLATFORM_AMD__)").0,
        Platform::Any
    );
    assert_eq!(
        classify_condition("é && defined(__HIP_PLATFORM_AMD__)").0,
        Platform::Amd
    );
}

#[test]
fn invalid_utf8_bytes() {
    let mut b = b"#if (".to_vec();
    b.extend_from_slice(&[0xff, 0xfe, 0xc3]);
    b.extend_from_slice(b")\n#endif\n__global__ void k(){ int l = threadIdx.x % 32; }\n");
    let f = scan_bytes_every_way(&b);
    assert!(
        f.iter()
            .any(|f| f.rule == "warp-size-literal" && f.line == 3),
        "{f:?}"
    );
    let _ = scan_bytes_every_way(&[0x80, b'(', 0xc3, b'"', 0xe2, 0x82, b'\'', 0xf0]);
}

#[test]
fn byte_order_mark() {
    let f = scan_bytes_every_way(
        "\u{feff}__global__ void k(){ int l = threadIdx.x % 32; }\n".as_bytes(),
    );
    let hit = f
        .iter()
        .find(|f| f.rule == "warp-size-literal")
        .expect("fires");
    // the mark is not a character of line 1: `threadIdx` is the 30th character after it
    assert_eq!((hit.line, hit.column), (1, 30), "{hit:?}");
    let _ = scan_bytes_every_way("\u{feff}".as_bytes());
    let _ = scan_bytes_every_way("\u{feff}#if (\u{feff})\n".as_bytes());
}

#[test]
fn crlf_line_endings() {
    let f = scan_bytes_every_way(
        b"#if defined(X) \\\r\n  || (1)\r\n#endif\r\n__global__ void k(){\r\n int l = threadIdx.x % 32;\r\n}\r\n",
    );
    let hit = f
        .iter()
        .find(|f| f.rule == "warp-size-literal")
        .expect("fires");
    assert_eq!((hit.line, hit.column), (5, 10), "{hit:?}");
    let _ = scan_bytes_every_way(b"\r\r\r\\\r\n\r#\r");
}

#[test]
fn nul_bytes() {
    let _ = scan_bytes_every_way(b"__global__ void k(){\0 int l = threadIdx.x % 32;\0}\0");
    let _ = scan_bytes_every_way(b"#if (\0)\n#endif\n\0\0");
}

#[test]
fn only_endif_and_stray_directives() {
    for t in [
        "#endif",
        "#endif\n",
        "#else",
        "#elif",
        "#elif (é)\n#endif\n#endif",
    ] {
        let _ = scan_bytes_every_way(t.as_bytes());
    }
}

#[test]
fn unterminated_comment_string_and_raw_string() {
    for t in [
        "__global__ void k(){ /* never closed é",
        "__global__ void k(){ const char* s = \"never closed é",
        "__global__ void k(){ const char* s = \"escape at end \\",
        "__global__ void k(){ auto s = R\"d(never closed é",
        "__global__ void k(){ auto s = R\"é(never closed",
        "__global__ void k(){ char c = '\\",
        "__global__ void k(){ char c = 'é",
    ] {
        let _ = scan_bytes_every_way(t.as_bytes());
    }
    for t in [
        "x = '''never closed é",
        "x = \"é\\",
        "x = r'\\é",
        "def f(é\\\n",
    ] {
        let _ = kplan_scan::python::lex::lex(t);
        let _ = scan_bytes_every_way(t.as_bytes());
    }
}

#[test]
fn missing_endif_is_a_finding_and_the_rest_is_still_scanned() {
    let c = ctx();
    let text = "#ifdef __HIP_PLATFORM_AMD__\n#define W 64\n__global__ void k(int* x) { x[threadIdx.x % 32] = 0; }\n";
    let f = scan_text(&c, Path::new("a.cu"), FileKind::Cuda, text);
    let unb: Vec<_> = f
        .iter()
        .filter(|f| f.rule == "unbalanced-conditional")
        .collect();
    assert_eq!(unb.len(), 1, "{f:?}");
    assert_eq!((unb[0].line, unb[0].column), (1, 1));
    assert_eq!(unb[0].severity, kplan_scan::Severity::Warning);
    // without the fix the whole kernel read as AMD-only code and this finding was hidden
    assert!(
        f.iter()
            .any(|f| f.rule == "warp-size-literal" && f.line == 3),
        "{f:?}"
    );
    // a stray #else / #endif: reported at its line, ignored for the structure
    let text = "int a;\n#else\n__global__ void k(int* x) { x[threadIdx.x % 32] = 0; }\n#endif\n";
    let f = scan_text(&c, Path::new("a.cu"), FileKind::Cuda, text);
    let lines: Vec<u32> = f
        .iter()
        .filter(|f| f.rule == "unbalanced-conditional")
        .map(|f| f.line)
        .collect();
    assert_eq!(lines, [2, 4], "{f:?}");
    assert!(f.iter().any(|f| f.rule == "warp-size-literal"), "{f:?}");
}

#[test]
fn config_empty_targets_and_unknown_target_have_positions() {
    use kplan_scan::{check_rule_id, Config};
    let e = Config::parse(
        Path::new("kplan.toml"),
        "select = []\ntargets = []\n",
        &check_rule_id,
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("kplan.toml:2:11: "), "{e}");
    assert!(e.contains("`targets` is empty"), "{e}");
    let cfg = Config::parse(
        Path::new("kplan.toml"),
        "[scan]\ntargets = [\"sm_90a\", \"gfx9420\"]\n",
        &check_rule_id,
    )
    .unwrap();
    let e = ScanCtx::new(Kb::builtin(), &[], cfg)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with("kplan.toml:2:22: unknown target `gfx9420`"),
        "{e}"
    );
    assert!(e.contains("did you mean `gfx942`"), "{e}");
    // unknown keys and wrong types: located too
    let e = Config::parse(
        Path::new("kplan.toml"),
        "[scan]\nselect = [\"warp-size-literal\"]\ncolour = 1\n",
        &check_rule_id,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("kplan.toml:3:1: unknown key `scan.colour`"),
        "{e}"
    );
    let e = Config::parse(
        Path::new("kplan.toml"),
        "targets = \"gfx942\"\n",
        &check_rule_id,
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("kplan.toml:1:11: "), "{e}");
}

/// Inputs `bench/fuzz.sh` kept because they crashed a fuzz target: each must now scan cleanly.
#[test]
fn kept_fuzz_inputs_scan_without_panicking() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/fuzz");
    for target in ["scan_file", "python_lex"] {
        let Ok(rd) = std::fs::read_dir(root.join(target)) else {
            continue;
        };
        for e in rd.flatten() {
            let bytes = std::fs::read(e.path()).unwrap();
            let _ = scan_bytes_every_way(&bytes);
        }
    }
}

#[test]
fn non_ascii_in_a_python_name_after_mi() {
    // found by bench/fuzz.sh python_lex: a name part `mi` + multibyte characters
    let _ = scan_bytes_every_way(
        "import torch\nFP8_MAX = 448\ndef is_miéé1(): pass\nx = on_mi\u{3b1}\u{3b2}\n".as_bytes(),
    );
}

/// A writer that keeps what it is given and the largest single write.
#[derive(Default)]
struct Recorder {
    bytes: Vec<u8>,
    largest_write: usize,
}

impl std::io::Write for Recorder {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.largest_write = self.largest_write.max(b.len());
        self.bytes.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A scan result of many findings, some with secondary labels.
fn many_findings() -> kplan_scan::ScanResult {
    let c = ctx();
    let unit = "__global__ void k(float* acc, int lane) {\n    unsigned b = __ballot_sync(0xffffffff, acc[lane] > 0);\n    int w = b; acc[threadIdx.x % 32] = __shfl_xor_sync(0xffffffff, acc[lane], 16);\n}\n";
    let text = unit.repeat(400);
    let path = Path::new("tests/many.cu");
    let mut findings = scan_text(&c, path, FileKind::Cuda, &text);
    assert!(findings.len() > 1000, "{} findings", findings.len());
    // secondary labels (SARIF relatedLocations) on some of them
    for f in findings.iter_mut().step_by(7) {
        f.labels.push(kplan_scan::Label {
            start: f.start,
            end: f.end,
            line: f.line,
            column: f.column,
            end_line: f.end_line,
            end_column: f.end_column,
            message: "related \"place\" é".into(),
        });
    }
    kplan_scan::ScanResult {
        files_scanned: 1,
        lines_scanned: text.lines().count(),
        bytes_scanned: text.len() as u64,
        findings,
        skipped: Vec::new(),
    }
}

#[test]
fn json_and_sarif_stream_the_text_of_a_sorted_json_document() {
    use kplan_scan::render;
    let res = many_findings();
    let rules = kplan_scan::all_rules();
    let mut json = Recorder::default();
    render::json_to(&res, &mut json).unwrap();
    let mut sarif = Recorder::default();
    render::sarif_to(&res, &rules, "0.0.0-test", &mut sarif).unwrap();
    for (name, out) in [("json", &json), ("sarif", &sarif)] {
        let text = std::str::from_utf8(&out.bytes).unwrap();
        // byte for byte what a JSON value with sorted keys prints (the format before streaming)
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        let canonical = serde_json::to_string_pretty(&v).unwrap() + "\n";
        assert!(
            text == canonical,
            "{name} output is not the sorted pretty form"
        );
        // written in pieces as it is produced, never as one report-sized buffer
        assert!(
            out.bytes.len() > 8 << 16,
            "{name}: {} bytes",
            out.bytes.len()
        );
        assert!(
            out.largest_write <= 1 << 16,
            "{name}: one write of {} bytes",
            out.largest_write
        );
    }
    // the String forms are the same text
    assert_eq!(render::json(&res).as_bytes(), &json.bytes[..]);
    assert_eq!(
        render::sarif(&res, &rules, "0.0.0-test").as_bytes(),
        &sarif.bytes[..]
    );
    let mut gh = Recorder::default();
    render::github_to(&res, &mut gh).unwrap();
    assert_eq!(render::github(&res).as_bytes(), &gh.bytes[..]);
}

#[test]
fn a_failing_writer_stops_the_json_report_with_its_error() {
    struct Full(usize);
    impl std::io::Write for Full {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.0 == 0 {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            let n = b.len().min(self.0);
            self.0 -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let res = many_findings();
    let e = kplan_scan::render::json_to(&res, &mut Full(100_000)).unwrap_err();
    // the kind survives serde's wrapping: a closed pipe still ends the CLI quietly
    assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
    let e = kplan_scan::render::sarif_to(&res, &kplan_scan::all_rules(), "0", &mut Full(100_000))
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
}
