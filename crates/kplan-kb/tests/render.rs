//! The text and JSON views behind `kplan targets` and `kplan features`.

use kplan_kb::{render, Kb};

#[test]
fn targets_listing_names_every_arch_and_device() {
    let kb = Kb::builtin();
    let text = render::targets_human(kb);
    for a in &kb.archs {
        assert!(text.contains(&a.id), "{}", a.id);
    }
    for d in &kb.devices {
        assert!(text.contains(&d.id), "{}", d.id);
    }
    let json = render::targets_json(kb);
    assert_eq!(
        json["architectures"].as_array().unwrap().len(),
        kb.archs.len()
    );
    assert_eq!(json["devices"].as_array().unwrap().len(), kb.devices.len());
}

#[test]
fn show_gives_every_fact_its_source_and_unknowns_as_unknown() {
    let kb = Kb::builtin();
    for name in kb
        .archs
        .iter()
        .map(|a| a.id.as_str())
        .chain(kb.devices.iter().map(|d| d.id.as_str()))
    {
        let r = kb.resolve(name).unwrap();
        let text = render::target_show_human(kb, &r);
        for f in r.arch.facts() {
            assert!(text.contains(f.name), "{name}: {}", f.name);
            assert!(
                text.contains(&format!("[{}]", f.source)),
                "{name}: source {}",
                f.source
            );
            let title = &kb.source(&f.source).unwrap().title;
            assert!(
                text.contains(title.as_str()),
                "{name}: title of {}",
                f.source
            );
        }
        let json = render::target_show_json(kb, &r);
        assert_eq!(json["arch"]["id"], r.arch.id.as_str());
        assert_eq!(
            json["features"].as_object().unwrap().len(),
            kb.features.len()
        );
    }
    // The L40S L2 size is not known: it must say so.
    let r = kb.resolve("l40s").unwrap();
    let text = render::target_show_human(kb, &r);
    let l2 = text.lines().find(|l| l.starts_with("l2_bytes")).unwrap();
    assert!(l2.contains("unknown") && l2.contains("not found"), "{l2}");
    // An arch shown by name lists its devices and the reference device.
    let text = render::target_show_human(kb, &kb.resolve("gfx942").unwrap());
    assert!(text.contains("devices: mi300x, mi300a, mi325x"), "{text}");
    assert!(text.contains("Device mi300x"));
    // A device names its arch.
    let text = render::target_show_human(kb, &kb.resolve("h200").unwrap());
    assert!(text.starts_with("Device h200 (NVIDIA H200 SXM), architecture sm_90a"));
    assert!(text.contains("4800"));
}

#[test]
fn features_views() {
    let kb = Kb::builtin();
    let text = render::features_human(kb);
    for f in &kb.features {
        assert!(text.contains(&f.id));
    }
    let f = kb.feature("fp8-matrix").unwrap();
    let text = render::feature_show_human(kb, f);
    assert!(
        text.contains("FNUZ") && text.contains("fallback:"),
        "{text}"
    );
    let gfx942 = text.lines().find(|l| l.starts_with("gfx942 ")).unwrap();
    assert!(
        gfx942.contains("yes") && gfx942.contains("ROCm 6.0.0"),
        "{gfx942}"
    );
    let json = render::feature_show_json(kb, f);
    assert_eq!(json["feature"]["support"]["gfx942"]["status"], "yes");
    assert!(json["sources"]["PTX-mma"]["title"].is_string());
}

/// Snapshots of the CLI views (`kplan targets`, `targets show`, `features`, `features show`):
/// `UPDATE_GOLDEN=1 cargo test -p kplan-kb --test render` rewrites them.
#[test]
fn cli_view_snapshots() {
    let kb = Kb::builtin();
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let views: Vec<(&str, String)> = vec![
        ("targets.txt", render::targets_human(kb)),
        (
            "targets-show-gfx942.txt",
            render::target_show_human(kb, &kb.resolve("gfx942").unwrap()),
        ),
        (
            "targets-show-h200.txt",
            render::target_show_human(kb, &kb.resolve("h200").unwrap()),
        ),
        ("features.txt", render::features_human(kb)),
        (
            "features-show-fp8-matrix.txt",
            render::feature_show_human(kb, kb.feature("fp8-matrix").unwrap()),
        ),
    ];
    for (name, text) in views {
        kplan_test_support::golden::assert_golden(
            &dir.join(name),
            &text,
            "UPDATE_GOLDEN=1 cargo test -p kplan-kb --test render",
        );
    }
}
