//! `kplan --kb DIR`: a user's copy of the knowledge base is read and validated like the
//! built-in one, and every error names the file (and line:column for syntax/type errors).

use kplan_kb::{Kb, KbError, BUILTIN};
use std::path::PathBuf;

/// A temp directory holding the built-in files, with `edit` applied to one of them.
fn kb_copy(tag: &str, file: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kplan-kb-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in BUILTIN {
        let text = if name == file {
            edit(text)
        } else {
            text.to_string()
        };
        std::fs::write(dir.join(name), text).unwrap();
    }
    dir
}

fn load_err(dir: &PathBuf) -> String {
    let e = Kb::load_dir(dir).expect_err("the broken KB must be rejected");
    let _ = std::fs::remove_dir_all(dir);
    e.to_string()
}

#[test]
fn unchanged_copy_loads() {
    let dir = kb_copy("ok", "", |t| t.to_string());
    let kb = Kb::load_dir(&dir).unwrap();
    assert_eq!(kb.archs.len(), Kb::builtin().archs.len());
    // measurements.toml is optional in a user's copy.
    std::fs::remove_file(dir.join("measurements.toml")).unwrap();
    assert!(Kb::load_dir(&dir).unwrap().measurements.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn syntax_error_reports_file_line_column() {
    // Break line 3 of devices.toml's first device block: an unterminated string.
    let dir = kb_copy("syntax", "devices.toml", |t| {
        t.replacen("id = \"t4\"", "id = \"t4", 1)
    });
    let line = BUILTIN[2]
        .1
        .lines()
        .position(|l| l == "id = \"t4\"")
        .unwrap()
        + 1;
    let e = load_err(&dir);
    assert!(e.contains(&format!("devices.toml:{line}:")), "{e}");
}

#[test]
fn wrong_type_reports_file_line_column() {
    let dir = kb_copy("type", "architectures.toml", |t| {
        t.replacen(
            "warp_size = { value = 32, source = \"CUDA-TS\" }",
            "warp_size = { value = \"32\", source = \"CUDA-TS\" }",
            1,
        )
    });
    let line = BUILTIN[1]
        .1
        .lines()
        .position(|l| l.starts_with("warp_size = { value = 32, source = \"CUDA-TS\" }"))
        .unwrap()
        + 1;
    let e = load_err(&dir);
    assert!(e.contains(&format!("architectures.toml:{line}:")), "{e}");
}

#[test]
fn unknown_field_is_rejected_with_position() {
    let dir = kb_copy("field", "devices.toml", |t| {
        t.replacen(
            "name = \"NVIDIA T4\"",
            "name = \"NVIDIA T4\"\nbandwith_gbs = 1",
            1,
        )
    });
    let e = load_err(&dir);
    assert!(
        e.contains("devices.toml:") && e.contains("bandwith_gbs"),
        "{e}"
    );
}

#[test]
fn dangling_source_key_is_rejected() {
    let dir = kb_copy("source", "devices.toml", |t| {
        t.replacen("source = \"T4-3P\"", "source = \"NOPE\"", 1)
    });
    let e = load_err(&dir);
    assert!(
        e.contains("devices.toml") && e.contains("unknown source key `NOPE`"),
        "{e}"
    );
}

#[test]
fn dangling_arch_and_reference_device_are_rejected() {
    let dir = kb_copy("arch", "devices.toml", |t| {
        t.replacen("arch = \"sm_75\"", "arch = \"sm_76\"", 1)
    });
    assert!(load_err(&dir).contains("unknown arch `sm_76`"));
    let dir = kb_copy("refdev", "architectures.toml", |t| {
        t.replacen("reference_device = \"t4\"", "reference_device = \"t5\"", 1)
    });
    assert!(load_err(&dir).contains("unknown reference_device `t5`"));
    let dir = kb_copy("featarch", "features.toml", |t| {
        t.replacen("sm_75 = {", "sm_77 = {", 1)
    });
    assert!(load_err(&dir).contains("unknown arch `sm_77`"));
}

#[test]
fn duplicate_names_are_rejected() {
    // A device alias that is also an architecture alias.
    let dir = kb_copy("dup", "devices.toml", |t| {
        t.replacen("aliases = [\"tesla-t4\"", "aliases = [\"sm75\"", 1)
    });
    let e = load_err(&dir);
    assert!(e.contains("name `sm75` is used twice"), "{e}");
}

#[test]
fn measurements_are_validated() {
    let entry = |device: &str, op: &str, unit: &str, source: &str| {
        format!(
            "[[measurement]]\nid = \"m1\"\nkernel = \"rmsnorm\"\nop = \"{op}\"\nimplementation = \"kplan-cuda\"\n\
             device = \"{device}\"\ndtype = \"bf16\"\nshape = {{ rows = 16384, cols = 8192 }}\nachieved = 3900.0\n\
             unit = \"{unit}\"\nfraction_of_peak = 0.81\ndate = \"2026-11-29\"\ncommand = \"kplan bench\"\nsource = \"{source}\"\n"
        )
    };
    let good = entry("h200", "norm", "GB/s", "DEV");
    let dir = kb_copy("m-ok", "measurements.toml", |_| good.clone());
    let kb = Kb::load_dir(&dir).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(kb.measurements_for("norm", "h200").count(), 1);
    assert_eq!(kb.measurements_for("norm", "h100-sxm").count(), 0);
    for (bad, want) in [
        (
            entry("h300", "norm", "GB/s", "DEV"),
            "unknown device `h300`",
        ),
        (
            entry("h200", "normalize", "GB/s", "DEV"),
            "unknown op `normalize`",
        ),
        (entry("h200", "norm", "GB", "DEV"), "unknown unit `GB`"),
        (
            entry("h200", "norm", "GB/s", "NOPE"),
            "unknown source key `NOPE`",
        ),
        (format!("{good}\n{good}"), "id is used twice"),
    ] {
        let dir = kb_copy("m-bad", "measurements.toml", |_| bad.clone());
        let e = load_err(&dir);
        assert!(e.contains("measurements.toml") && e.contains(want), "{e}");
    }
}

#[test]
fn missing_required_file_names_it() {
    let dir = kb_copy("missing", "", |t| t.to_string());
    std::fs::remove_file(dir.join("features.toml")).unwrap();
    let e = Kb::load_dir(&dir).unwrap_err();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(matches!(e, KbError::Io { .. }));
    assert!(e.to_string().contains("features.toml"), "{e}");
}

#[test]
fn unknown_fact_without_note_and_bad_numbers_are_rejected() {
    let dir = kb_copy("nonote", "devices.toml", |t| {
        t.replacen(
            "compute_units = { value = 40, source = \"T4-3P\" }",
            "compute_units = { source = \"T4-3P\" }",
            1,
        )
    });
    let e = load_err(&dir);
    assert!(
        e.contains("device t4") && e.contains("no value and no note"),
        "{e}"
    );
    let dir = kb_copy("negbw", "devices.toml", |t| {
        t.replacen("value = 320.0", "value = -320.0", 1)
    });
    assert!(load_err(&dir).contains("bandwidth_gbs must be a positive number"));
    let dir = kb_copy("family", "architectures.toml", |t| {
        t.replacen(
            "reference_device = \"a100-sxm\"",
            "reference_device = \"rtx3090\"",
            1,
        )
    });
    assert!(load_err(&dir).contains("a different family"));
}
