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
