//! The header's AMD wave size must not hang on `__AMDGCN_WAVEFRONT_SIZE` alone (deprecated in
//! ROCm 7): compile its wave-size logic with clang for wave64 and wave32 targets (generic ones
//! too) with the compiler's macros present, with only the old one, with none (gfx family
//! fallback), and with a contradicting value (the cross-check must stop the compile).

use std::path::PathBuf;
use std::process::Command;

use kplan_test_support::toolchain::{self, required as require};

fn clang() -> Option<PathBuf> {
    match kplan_build::toolchain::find_hip_clang() {
        Ok(Some(t)) => Some(t.path),
        Ok(None) => {
            toolchain::skip("no HIP clang found (set KPLAN_HIP_CLANG)");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Compiles the probe for `gfx` with extra flags; Ok(()) or Err(compiler message).
fn probe(clang: &PathBuf, gfx: &str, want: u32, flags: &[&str]) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("probe.hip");
    let mut text = kplan_gen::hip_wave_size_probe();
    text.push_str(&format!(
        "#if KPLAN_DEVICE_PASS\nstatic_assert(KPLAN_WARP_SIZE == {want}, \"KPLAN_WARP_SIZE is not {want}\");\n#endif\n"
    ));
    std::fs::write(&src, text).unwrap();
    let out = Command::new(clang)
        .args([
            "-x",
            "hip",
            "-nogpuinc",
            "-nogpulib",
            "--cuda-device-only",
            "-fsyntax-only",
            "-Wno-builtin-macro-redefined",
        ])
        .arg(format!("--offload-arch={gfx}"))
        .args(flags)
        .arg(&src)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

const NO_NEW: &[&str] = &["-U__AMDGCN_WAVEFRONT_SIZE__"];
const NO_MACROS: &[&str] = &["-U__AMDGCN_WAVEFRONT_SIZE__", "-U__AMDGCN_WAVEFRONT_SIZE"];

#[test]
fn wave_size_comes_from_the_target_with_or_without_the_compiler_macros() {
    let Some(clang) = clang() else { return };
    for (gfx, want) in [
        ("gfx90a", 64),
        ("gfx942", 64),
        ("gfx9-generic", 64),
        ("gfx1100", 32),
        ("gfx11-generic", 32),
        ("gfx1201", 32),
    ] {
        for flags in [&[][..], NO_NEW, NO_MACROS] {
            if let Err(e) = probe(&clang, gfx, want, flags) {
                if e.contains("invalid target ID") || e.contains("unsupported") {
                    assert!(
                        !require() || !["gfx90a", "gfx942", "gfx1100"].contains(&gfx),
                        "{gfx}: {e}"
                    );
                    eprintln!("SKIP {gfx}: this clang does not know it");
                    break;
                }
                panic!("{gfx} with {flags:?}: expected KPLAN_WARP_SIZE == {want}:\n{e}");
            }
        }
    }
}

#[test]
fn contradicting_compiler_value_is_caught_on_gfx9() {
    let Some(clang) = clang() else { return };
    let e = probe(
        &clang,
        "gfx942",
        32,
        &[
            "-U__AMDGCN_WAVEFRONT_SIZE__",
            "-D__AMDGCN_WAVEFRONT_SIZE__=32",
        ],
    )
    .unwrap_err();
    assert!(e.contains("only runs wave64"), "{e}");
    // And the probe can fail at all: a wrong expectation is reported.
    let e = probe(&clang, "gfx1100", 64, &[]).unwrap_err();
    assert!(e.contains("KPLAN_WARP_SIZE is not 64"), "{e}");
}

#[test]
fn wave64_on_rdna_follows_the_compiler() {
    // gfx11 defaults to wave32, but -mwavefrontsize64 makes the compiler's macro 64: it wins.
    let Some(clang) = clang() else { return };
    if let Err(e) = probe(&clang, "gfx1100", 64, &["-mwavefrontsize64"]) {
        panic!("gfx1100 -mwavefrontsize64: {e}");
    }
}
