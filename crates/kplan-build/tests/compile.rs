//! Compiles the portability header and a kernel file that uses every primitive with the real
//! compilers for sm_80, sm_90a, gfx90a, gfx942, gfx1100 and the host, then reads what the
//! compilers produced. A missing toolchain skips with the reason, unless
//! KPLAN_REQUIRE_TOOLCHAINS=1 (CI), where it fails.

use kplan_build::{build, BuildOptions, BuildTarget, Status, TargetKind, TargetResult};
use std::path::{Path, PathBuf};
use std::process::Command;

use kplan_test_support::toolchain;

fn kernel() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/primitives.cu")
}

fn kb() -> &'static kplan_kb::Kb {
    kplan_kb::Kb::builtin()
}

fn target(id: &str) -> BuildTarget {
    if id == "host" {
        return BuildTarget {
            id: "host".into(),
            kind: TargetKind::Cpu { march: None },
        };
    }
    match kb().arch(id) {
        Some(a) => BuildTarget::from_arch(a),
        None if id.starts_with("sm_") => BuildTarget {
            id: id.into(),
            kind: TargetKind::Nvidia { sm: id.into() },
        },
        None => BuildTarget {
            id: id.into(),
            kind: TargetKind::Amd { gfx: id.into() },
        },
    }
}

/// Builds the test kernel for `ids` with the given defines, keeping artifacts in `out`.
fn build_ids(ids: &[&str], defines: &[(&str, &str)], out: &Path) -> Vec<TargetResult> {
    let mut opts = BuildOptions::new(ids.iter().map(|i| target(i)).collect());
    opts.defines = defines
        .iter()
        .map(|(n, v)| (n.to_string(), Some(v.to_string())))
        .collect();
    opts.out_dir = Some(out.to_path_buf());
    opts.header = kplan_gen::HeaderConfig::all();
    build(&kernel(), &opts, kb()).expect("build runs")
}

/// Ok results pass; skipped ones print the reason (or fail under KPLAN_REQUIRE_TOOLCHAINS=1);
/// failed ones fail with the compiler's message. Returns the results that compiled.
fn check(results: Vec<TargetResult>) -> Vec<TargetResult> {
    let mut ok = Vec::new();
    for r in results {
        match r.status {
            Status::Ok => ok.push(r),
            Status::Skipped => toolchain::skip(format!("{}: {}", r.target, r.diagnostics)),
            Status::Failed => panic!("{} failed to compile:\n{}", r.target, r.diagnostics),
        }
    }
    ok
}

#[test]
fn nvidia_targets_compile_every_primitive() {
    let out = tempfile::tempdir().unwrap();
    let ok = check(build_ids(
        &["sm_80", "sm_90a"],
        &[
            ("KPLAN_TEST_WAVE_SIZE", "32"),
            ("KPLAN_TEST_MASK_BITS", "32"),
        ],
        out.path(),
    ));
    for r in &ok {
        assert!(
            r.compiler
                .as_deref()
                .is_some_and(|c| c.starts_with("nvcc ")),
            "{:?}",
            r.compiler
        );
        assert_eq!(r.wave_size, Some(32));
        assert!(
            r.registers.is_some_and(|n| n > 0),
            "{}: no register count",
            r.target
        );
        // kplan_test_all declares a 256-float shared tile.
        assert!(
            r.shared_bytes.is_some_and(|b| b >= 1024),
            "{}: shared {:?}",
            r.target,
            r.shared_bytes
        );
        assert!(
            r.kernels
                .iter()
                .any(|k| k.name.contains("kplan_test_ballot")),
            "{:?}",
            r.kernels
        );
    }
}

/// The AMD builds, done once for the tests that read them; artifacts stay under the target dir.
fn amd_results() -> &'static [TargetResult] {
    static AMD: std::sync::OnceLock<Vec<TargetResult>> = std::sync::OnceLock::new();
    AMD.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kplan-build-amd");
        let _ = std::fs::remove_dir_all(&out);
        let mut all = build_ids(
            &["gfx90a", "gfx942"],
            &[
                ("KPLAN_TEST_WAVE_SIZE", "64"),
                ("KPLAN_TEST_MASK_BITS", "64"),
            ],
            &out,
        );
        all.extend(build_ids(
            &["gfx1100"],
            &[
                ("KPLAN_TEST_WAVE_SIZE", "32"),
                ("KPLAN_TEST_MASK_BITS", "64"),
            ],
            &out,
        ));
        check(all)
    })
}

/// The device assembly of one kernel (from its label to s_endpgm), without comments/directives.
fn kernel_asm(asm: &str, name_part: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for l in asm.lines() {
        if !inside
            && !l.starts_with('\t')
            && !l.starts_with(' ')
            && l.contains(name_part)
            && l.trim_end().contains(':')
            && !l.starts_with('.')
        {
            inside = true;
            continue;
        }
        if inside {
            let t = l.trim();
            if t.starts_with(';') || t.starts_with('.') || t.is_empty() {
                continue;
            }
            out.push_str(t);
            out.push('\n');
            if t.starts_with("s_endpgm") {
                break;
            }
        }
    }
    out
}

fn artifact(r: &TargetResult, ext: &str) -> PathBuf {
    r.artifacts
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == ext))
        .cloned()
        .unwrap_or_else(|| panic!("{}: no .{ext} artifact in {:?}", r.target, r.artifacts))
}

fn llvm_readelf() -> Option<PathBuf> {
    let clang = kplan_build::toolchain::find_hip_clang().ok()??;
    let dir = std::fs::canonicalize(&clang.path)
        .ok()?
        .parent()?
        .to_path_buf();
    let p = dir.join("llvm-readelf");
    p.is_file().then_some(p)
}

#[test]
fn amd_targets_compile_and_declare_their_wave_size() {
    let ok = amd_results();
    for r in ok {
        assert!(
            r.compiler
                .as_deref()
                .is_some_and(|c| c.starts_with("clang ")),
            "{:?}",
            r.compiler
        );
        assert!(
            r.registers.is_some_and(|n| n > 0),
            "{}: no VGPR count",
            r.target
        );
        assert!(
            r.sgprs.is_some_and(|n| n > 0),
            "{}: no SGPR count",
            r.target
        );
        assert!(
            r.shared_bytes.is_some_and(|b| b >= 1024),
            "{}: LDS {:?}",
            r.target,
            r.shared_bytes
        );
        let want = if r.target == "gfx1100" { 32 } else { 64 };
        assert_eq!(r.wave_size, Some(want), "{}", r.target);
        assert!(
            r.kernels.iter().all(|k| k.wave_size == Some(want)),
            "{}: {:?}",
            r.target,
            r.kernels
        );
        // The code object itself (not only the assembly) declares the wave size.
        let obj = artifact(r, "o");
        match llvm_readelf() {
            Some(readelf) => {
                let notes = Command::new(&readelf)
                    .arg("--notes")
                    .arg(&obj)
                    .output()
                    .unwrap();
                let text = String::from_utf8_lossy(&notes.stdout);
                assert!(
                    notes.status.success(),
                    "{}",
                    String::from_utf8_lossy(&notes.stderr)
                );
                assert!(
                    text.contains(&format!("amdgcn-amd-amdhsa--{}", r.target)),
                    "{}: {text}",
                    r.target
                );
                let sizes: Vec<&str> = text
                    .lines()
                    .filter(|l| l.contains(".wavefront_size:"))
                    .collect();
                assert!(
                    !sizes.is_empty(),
                    "{}: no .wavefront_size in the code object notes",
                    r.target
                );
                for l in sizes {
                    assert_eq!(
                        l.split(':').nth(1).map(str::trim),
                        Some(want.to_string().as_str()),
                        "{}: {l}",
                        r.target
                    );
                }
            }
            None => {
                toolchain::skip("code-object check: llvm-readelf not found next to the HIP clang")
            }
        }
    }
}

#[test]
fn gfx942_ballot_keeps_all_64_bits_in_the_isa() {
    let ok = amd_results();
    let Some(r942) = ok.iter().find(|r| r.target == "gfx942") else {
        return;
    };
    let asm = std::fs::read_to_string(artifact(r942, "s")).unwrap();
    let body = kernel_asm(&asm, "kplan_test_ballot");
    assert!(
        !body.is_empty(),
        "kplan_test_ballot not found in the gfx942 assembly"
    );
    // The compare that makes the ballot writes a 64-bit SGPR pair (or the 64-bit VCC) ...
    let cmp = body
        .lines()
        .find(|l| l.starts_with("v_cmp"))
        .unwrap_or_else(|| panic!("no v_cmp in:\n{body}"));
    let dest = cmp
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .trim_end_matches(',');
    let pair = dest.starts_with("s[") || dest == "vcc";
    assert!(
        pair,
        "gfx942 ballot compare writes {dest}, not a 64-bit SGPR pair:\n{body}"
    );
    // ... and the whole 64-bit mask is stored, not a zero-extended 32-bit half.
    assert!(
        body.contains("global_store_dwordx2"),
        "no 64-bit store of the ballot:\n{body}"
    );
    if dest.starts_with("s[") {
        let inner = dest.trim_start_matches("s[").trim_end_matches(']');
        let (lo, hi) = inner.split_once(':').unwrap();
        let reads_pair = body.contains(&format!("s[{lo}:{hi}]\n"))
            || body
                .lines()
                .filter(|l| l.contains(&format!(", s[{lo}:{hi}]")))
                .count()
                > 0;
        let reads_halves =
            body.contains(&format!(", s{lo}\n")) && body.contains(&format!(", s{hi}\n"));
        assert!(
            reads_pair || reads_halves,
            "the stored value does not come from {dest}:\n{body}"
        );
    }
    // Contrast: gfx1100 (wave32) produces a 32-bit compare result, so the check above can fail.
    if let Some(r1100) = ok.iter().find(|r| r.target == "gfx1100") {
        let asm = std::fs::read_to_string(artifact(r1100, "s")).unwrap();
        let body = kernel_asm(&asm, "kplan_test_ballot");
        let cmp = body.lines().find(|l| l.starts_with("v_cmp")).unwrap_or("");
        assert!(
            cmp.contains("vcc_lo")
                || cmp
                    .split_whitespace()
                    .nth(1)
                    .is_some_and(|d| d.starts_with('s') && !d.starts_with("s[")),
            "gfx1100: {cmp}"
        );
    }
}

#[test]
fn host_compiles_the_same_file_with_one_lane() {
    let out = tempfile::tempdir().unwrap();
    let ok = check(build_ids(&["host"], &[], out.path()));
    for r in &ok {
        assert_eq!(r.wave_size, Some(1));
        assert!(artifact(r, "o").is_file());
    }
}

#[test]
fn generated_isa_library_matches_rocm_numbering() {
    // The Debian ROCm 5.2 library for gfx940 says 9400: the same numbering kplan generates.
    for (gfx, want) in [
        ("gfx940", 9400),
        ("gfx942", 9402),
        ("gfx1100", 11000),
        ("gfx1201", 12001),
        ("gfx90a", 9010),
    ] {
        assert_eq!(
            kplan_build::amd::isa_version(gfx).map(|v| v.1),
            Some(want),
            "{gfx}"
        );
    }
}

#[test]
fn gfx950_is_skipped_or_built_never_failed() {
    // clang 19 does not know gfx950: that is a skip with the reason, not a failure.
    let out = tempfile::tempdir().unwrap();
    let r = build_ids(&["gfx950"], &[], out.path()).remove(0);
    match r.status {
        Status::Skipped => assert!(r.diagnostics.contains("gfx950"), "{}", r.diagnostics),
        Status::Ok => assert_eq!(r.wave_size, Some(64)),
        Status::Failed => panic!("gfx950 failed: {}", r.diagnostics),
    }
}

#[test]
fn compile_errors_come_back_per_target_with_the_compilers_message() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.cu");
    std::fs::write(&bad, "#include \"kplan_portability.h\"\nKPLAN_GLOBAL void k(float* y) {\n  y[0] = undefined_name;\n}\n").unwrap();
    let mut opts = BuildOptions::new(
        ["sm_80", "gfx942", "host"]
            .iter()
            .map(|i| target(i))
            .collect(),
    );
    opts.timeout = std::time::Duration::from_secs(120);
    let results = build(&bad, &opts, kb()).unwrap();
    assert_eq!(results.len(), 3);
    for r in results {
        match r.status {
            Status::Failed => {
                assert!(
                    r.diagnostics.contains("undefined_name"),
                    "{}: {}",
                    r.target,
                    r.diagnostics
                );
                assert!(
                    r.diagnostics.contains("bad.cu"),
                    "{}: {}",
                    r.target,
                    r.diagnostics
                );
            }
            Status::Skipped => toolchain::skip(format!("{}: {}", r.target, r.diagnostics)),
            s => panic!("{}: {s:?}: {}", r.target, r.diagnostics),
        }
    }
}

#[test]
fn missing_file_is_an_error() {
    let opts = BuildOptions::new(vec![target("host")]);
    let e = build(Path::new("/nonexistent/kernel.cu"), &opts, kb()).unwrap_err();
    assert!(e.to_string().contains("no such file"), "{e}");
}

#[test]
fn device_static_asserts_are_live() {
    // The mask-width assertion in the test kernel really runs in the gfx942 device pass: asking
    // for a 32-bit mask there must fail the compile.
    let out = tempfile::tempdir().unwrap();
    let r = build_ids(&["gfx942"], &[("KPLAN_TEST_MASK_BITS", "32")], out.path()).remove(0);
    match r.status {
        Status::Failed => assert!(
            r.diagnostics.contains("unexpected lane-mask width"),
            "{}",
            r.diagnostics
        ),
        Status::Skipped => toolchain::skip(format!("gfx942: {}", r.diagnostics)),
        s => panic!("gfx942 with a 32-bit mask expectation: {s:?}"),
    }
}

#[test]
fn header_generated_without_a_backend_refuses_to_compile_for_it() {
    // A header made for gfx942 only must stop an NVIDIA or wave32 compile with a clear #error.
    let dir = tempfile::tempdir().unwrap();
    let mut opts = BuildOptions::new(["sm_80", "gfx1100"].iter().map(|i| target(i)).collect());
    let gfx942 = kb().arch("gfx942").expect("gfx942 in the KB");
    opts.header = kplan_gen::HeaderConfig::from_archs(&[gfx942]);
    // Compile a copy in a directory without the committed header so kplan's generated one is used.
    let src = dir.path().join("k.cu");
    std::fs::copy(kernel(), &src).unwrap();
    for r in build(&src, &opts, kb()).unwrap() {
        match r.status {
            Status::Failed => assert!(
                r.diagnostics.contains("this header was generated without"),
                "{}: {}",
                r.target,
                r.diagnostics
            ),
            Status::Skipped => toolchain::skip(format!("{}: {}", r.target, r.diagnostics)),
            s => panic!("{}: {s:?}", r.target),
        }
    }
}

/// The committed header (all backends) in a temp include dir, for direct compiler runs.
fn header_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let text = kplan_gen::render_header(&kplan_gen::HeaderConfig::all());
    std::fs::write(d.path().join("kplan_portability.h"), text).unwrap();
    d
}

fn run_ok(tool: &Path, args: &[String]) {
    let out = Command::new(tool).args(args).output().unwrap();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{} {}:\n{}",
        tool.display(),
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn hip_host_pass_compiles_without_warnings() {
    // `kplan build` compiles AMD device code only; a real HIP build also runs the host pass,
    // where the header takes its other branch (no device target known).
    let clang = match kplan_build::toolchain::find_hip_clang() {
        Ok(Some(t)) => t.path,
        _ => return toolchain::skip("no HIP clang"),
    };
    let Some(hip_inc) = kplan_build::toolchain::hip_include_dir() else {
        return toolchain::skip("no HIP headers");
    };
    let inc = header_dir();
    for gfx in ["gfx942", "gfx1100"] {
        let args: Vec<String> = vec![
            "-x".into(),
            "hip".into(),
            "-std=c++17".into(),
            format!("--offload-arch={gfx}"),
            "--cuda-host-only".into(),
            "-Wall".into(),
            "-Wextra".into(),
            "-c".into(),
            format!("-I{}", inc.path().display()),
            format!("-I{}", hip_inc.display()),
            kernel().display().to_string(),
            "-o".into(),
            "/dev/null".into(),
        ];
        run_ok(&clang, &args);
    }
}

#[test]
fn host_backend_compiles_as_c_and_cxx_without_warnings() {
    let cxx = match kplan_build::toolchain::find_cxx() {
        Ok(Some(t)) => t.path,
        _ => return toolchain::skip("no host C++ compiler"),
    };
    let inc = header_dir();
    let src = inc.path().join("user.c");
    std::fs::write(
        &src,
        "#include \"kplan_portability.h\"\n\
         int f(int* p, int v) {\n\
           kplan_lane_mask_t m = KPLAN_BALLOT(v > 0);\n\
           int s = kplan_warp_reduce_sum(v) + KPLAN_SHFL_XOR(v, 1) + KPLAN_POPC_MASK(m) + KPLAN_FFS_MASK(m);\n\
           KPLAN_SYNCWARP();\n\
           KPLAN_FENCE_DEVICE();\n\
           kplan_atomic_add(p, s + KPLAN_LANE_ID() + KPLAN_WARP_ID());\n\
           return s + KPLAN_WARP_SIZE + kplan_warp_size(0);\n\
         }\n",
    )
    .unwrap();
    for lang in [["-x", "c", "-std=c11"], ["-x", "c++", "-std=c++17"]] {
        let mut args: Vec<String> = lang.iter().map(|s| s.to_string()).collect();
        args.extend(["-Wall", "-Wextra", "-pedantic", "-c"].map(String::from));
        args.push(src.display().to_string());
        args.extend(["-o".to_string(), "/dev/null".to_string()]);
        run_ok(&cxx, &args);
    }
}
