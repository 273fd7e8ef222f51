//! The built-in knowledge base holds what issue 2 requires, and its facts are traceable.

use kplan_kb::*;

const REQUIRED_ARCHS: [&str; 19] = [
    "sm_75",
    "sm_80",
    "sm_86",
    "sm_89",
    "sm_90",
    "sm_90a",
    "sm_100a",
    "sm_120",
    "gfx908",
    "gfx90a",
    "gfx942",
    "gfx950",
    "gfx1100",
    "gfx1201",
    "cpu-x86_64-avx2",
    "cpu-x86_64-avx512",
    "cpu-aarch64",
    "intel-xe-hpc",
    "apple-m3",
];

const REQUIRED_DEVICES: [&str; 12] = [
    "a100-sxm",
    "h100-sxm",
    "h200",
    "b200",
    "l40s",
    "rtx4090",
    "mi250x",
    "mi300x",
    "mi325x",
    "mi355x",
    "rx7900xtx",
    "rx9070xt",
];

#[test]
fn required_archs_and_devices_exist() {
    let kb = Kb::builtin();
    for a in REQUIRED_ARCHS {
        assert!(kb.arch(a).is_some(), "missing arch {a}");
    }
    for d in REQUIRED_DEVICES {
        assert!(kb.device(d).is_some(), "missing device {d}");
    }
}

#[test]
fn aliases_resolve_to_the_documented_arch() {
    let kb = Kb::builtin();
    let cases = [
        ("h100", "sm_90a", Some("h100-sxm")),
        ("h200", "sm_90a", Some("h200")),
        ("a100", "sm_80", Some("a100-sxm")),
        ("mi300x", "gfx942", Some("mi300x")),
        ("mi250x", "gfx90a", Some("mi250x")),
        ("mi355x", "gfx950", Some("mi355x")),
        ("rx7900xtx", "gfx1100", Some("rx7900xtx")),
        ("RX-7900-XTX", "gfx1100", Some("rx7900xtx")),
        ("rtx-4090", "sm_89", Some("rtx4090")),
        ("b200", "sm_100a", Some("b200")),
        ("cpu-x86_64", "cpu-x86_64-avx2", None),
        ("cpu", "cpu-x86_64-avx2", None),
        ("x86_64", "cpu-x86_64-avx2", None),
        ("aarch64", "cpu-aarch64", None),
        ("arm64", "cpu-aarch64", None),
        ("sm90a", "sm_90a", Some("h100-sxm")),
        ("sm_80", "sm_80", Some("a100-sxm")),
        ("gfx942", "gfx942", Some("mi300x")),
        ("gfx1100", "gfx1100", Some("rx7900xtx")),
    ];
    for (name, arch, device) in cases {
        let r = kb.resolve(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.arch.id, arch, "{name}");
        assert_eq!(r.device.map(|d| d.id.as_str()), device, "{name}");
    }
}

#[test]
fn h200_is_sm_90a_with_its_own_bandwidth() {
    let r = Kb::builtin().resolve("h200").unwrap();
    assert_eq!(r.arch.id, "sm_90a");
    assert_eq!(r.via, ResolvedVia::Device);
    let d = r.device.unwrap();
    assert_eq!(d.bandwidth_gbs(), Some(4800.0));
    assert_eq!(d.compute_units.value, Some(132));
    assert_eq!(d.compute_units.source, "DEV");
    assert_eq!(d.l2_bytes.value, Some(60 * 1024 * 1024));
    // H100 keeps its own numbers.
    assert_eq!(
        Kb::builtin()
            .resolve("h100")
            .unwrap()
            .device
            .unwrap()
            .bandwidth_gbs(),
        Some(3350.0)
    );
}

#[test]
fn wavefront_sizes() {
    let kb = Kb::builtin();
    let mi300 = kb.resolve("mi300x").unwrap().arch;
    assert_eq!(mi300.warp_size.value, Some(64));
    assert!(mi300.is_wave64_only());
    let rdna3 = kb.arch("gfx1100").unwrap();
    assert_eq!(rdna3.warp_size.value, Some(32));
    assert_eq!(rdna3.warp_sizes(), vec![32, 64]);
    assert!(rdna3.has_selectable_warp_size() && !rdna3.is_wave64_only());
    assert!(rdna3
        .warp_size
        .note
        .as_deref()
        .unwrap()
        .contains("HIP runtime does not support"));
    assert_eq!(kb.arch("gfx1201").unwrap().warp_sizes(), vec![32, 64]);
    assert_eq!(kb.arch("intel-xe-hpc").unwrap().warp_sizes(), vec![16, 32]);
    assert_eq!(kb.arch("sm_90a").unwrap().warp_sizes(), vec![32]);
    for a in kb.archs_by_vendor(Vendor::Nvidia) {
        assert_eq!(a.warp_size.value, Some(32), "{}", a.id);
    }
}

#[test]
fn unknown_values_stay_unknown_with_a_note() {
    let kb = Kb::builtin();
    let l40s = kb.device("l40s").unwrap();
    assert_eq!(l40s.l2_bytes.value, None);
    assert!(l40s.l2_bytes.note.as_deref().unwrap().contains("not found"));
    assert_eq!(kb.device("b200").unwrap().l2_bytes.value, None);
    assert_eq!(kb.device("mi355x").unwrap().peak(Dtype::Fp64), None);
    assert_eq!(kb.device("rx7900xtx").unwrap().peak(Dtype::Bf16), None);
    assert_eq!(kb.device("l4").unwrap().compute_units.value, None);
    assert_eq!(kb.device("m3-max").unwrap().bandwidth_gbs(), None);
    // Every fact without a value explains itself.
    for a in &kb.archs {
        for f in a.facts() {
            if f.value.is_none() {
                assert!(
                    f.note.is_some(),
                    "arch {} fact {} has neither value nor note",
                    a.id,
                    f.name
                );
            }
        }
    }
    for d in &kb.devices {
        for (dt, f) in &d.peak_tflops {
            if f.value.is_none() {
                assert!(
                    f.note.is_some(),
                    "device {} peak {:?} has neither value nor note",
                    d.id,
                    dt
                );
            }
        }
    }
}

#[test]
fn every_fact_names_an_existing_source() {
    // Validation already enforces this when loading; check it independently here.
    let kb = Kb::builtin();
    let mut n = 0;
    for a in &kb.archs {
        for f in a.facts() {
            assert!(
                kb.source(&f.source).is_some(),
                "arch {} {}: source {}",
                a.id,
                f.name,
                f.source
            );
            n += 1;
        }
    }
    for d in &kb.devices {
        for f in d.facts().into_iter().filter(|f| !f.source.is_empty()) {
            assert!(
                kb.source(&f.source).is_some(),
                "device {} {}: source {}",
                d.id,
                f.name,
                f.source
            );
            n += 1;
        }
    }
    for f in &kb.features {
        for (arch, s) in &f.support {
            assert!(
                kb.source(&s.source).is_some(),
                "feature {} on {arch}: source {}",
                f.id,
                s.source
            );
        }
    }
    assert!(n > 300, "only {n} facts");
}

#[test]
fn sparse_rates_are_only_used_halved_with_a_note() {
    let kb = Kb::builtin();
    for d in &kb.devices {
        for (dt, f) in &d.peak_tflops {
            if let Some(note) = &f.note {
                if note.contains("sparse") && f.value.is_some() {
                    assert!(
                        note.contains("/ 2") || note.contains("dense"),
                        "{} {:?}: {note}",
                        d.id,
                        dt
                    );
                }
            }
        }
    }
    assert_eq!(kb.device("l4").unwrap().peak(Dtype::Fp16), Some(121.0));
}

#[test]
fn ridge_point_is_peak_over_bandwidth() {
    let h100 = Kb::builtin().device("h100-sxm").unwrap();
    // 989 TFLOP/s / 3350 GB/s = 989e12 / 3.35e12 = 295.2 FLOP/B
    let r = h100.ridge_point(Dtype::Bf16).unwrap();
    assert!((r - 295.22).abs() < 0.01, "{r}");
}

#[test]
fn every_arch_except_cpu_has_a_reference_device() {
    let kb = Kb::builtin();
    // ISA targets the KB has no product numbers for stay without a stand-in device: another
    // part's figures would be wrong for them.
    let without = [
        "sm_103", "gfx940", "gfx941", "gfx1101", "gfx1102", "gfx1200",
    ];
    for a in kb.archs.iter().filter(|a| a.is_gpu()) {
        if without.contains(&a.id.as_str()) {
            assert!(kb.reference_device(a).is_none(), "{}", a.id);
            continue;
        }
        let d = kb
            .reference_device(a)
            .unwrap_or_else(|| panic!("{} has no reference device", a.id));
        // sm_90 (portable Hopper code) stands on the H100, an sm_90a device: same hardware.
        let da = kb.arch(&d.arch).unwrap();
        assert_eq!(
            da.family, a.family,
            "reference device of {} belongs to {}",
            a.id, d.arch
        );
    }
}

#[test]
fn feature_ids_are_exactly_the_documented_ones() {
    let expected = [
        "warp-shuffle",
        "warp-shuffle-sync",
        "warp-vote",
        "warp-reduce",
        "warp-match",
        "syncwarp",
        "shared-memory",
        "large-shared-memory",
        "cooperative-launch",
        "dynamic-parallelism",
        "async-copy",
        "tma",
        "clusters",
        "wmma",
        "mma-sync",
        "wgmma",
        "tcgen05",
        "mfma",
        "rdna-wmma",
        "bf16-matrix",
        "fp8-matrix",
        "fp8-ocp",
        "fp8-fnuz",
        "tf32-matrix",
        "packed-fp32",
        "fp32-atomic-add",
        "fp16-atomic-add",
        "bf16-atomic-add",
        "fp64-atomic-add",
        "inline-ptx",
        "inline-gcn-asm",
        "bf16",
        "fp16",
        "int-atomics",
        "tensor-cores",
        "fp8",
        "nanosleep",
        "block-scoped-atomics",
    ];
    let kb = Kb::builtin();
    let mut ids: Vec<&str> = kb.features.iter().map(|f| f.id.as_str()).collect();
    ids.sort_unstable();
    let mut want = expected.to_vec();
    want.sort_unstable();
    assert_eq!(ids, want);
    for f in &kb.features {
        assert!(
            ["nvidia", "amd", "portable"].contains(&f.origin.as_str()),
            "{}: origin {}",
            f.id,
            f.origin
        );
        // Every GPU arch of the two main vendors has an answer (even if it is "unknown").
        for a in kb
            .archs
            .iter()
            .filter(|a| matches!(a.vendor, Vendor::Nvidia | Vendor::Amd))
        {
            if f.id.starts_with("fp8-") || f.id == "tf32-matrix" || f.id == "packed-fp32" {
                continue;
            }
            assert!(
                f.support.contains_key(&a.id),
                "feature {} says nothing about {}",
                f.id,
                a.id
            );
        }
    }
}

#[test]
fn feature_availability_matches_the_fact_sheet() {
    let kb = Kb::builtin();
    let cases = [
        ("wgmma", "sm_90a", Availability::Yes),
        ("wgmma", "sm_90", Availability::No),
        ("wgmma", "sm_100a", Availability::No),
        ("tcgen05", "sm_100a", Availability::Yes),
        ("tcgen05", "sm_120", Availability::No),
        ("warp-reduce", "sm_75", Availability::No),
        ("warp-reduce", "sm_80", Availability::Yes),
        ("warp-reduce", "gfx942", Availability::Unknown),
        ("fp8-matrix", "gfx942", Availability::Yes),
        ("fp8-fnuz", "gfx942", Availability::Yes),
        ("fp8-ocp", "gfx942", Availability::No),
        ("fp8-ocp", "gfx950", Availability::Yes),
        ("fp8-matrix", "sm_80", Availability::No),
        ("dynamic-parallelism", "gfx90a", Availability::No),
        ("tma", "gfx950", Availability::No),
        ("clusters", "sm_90", Availability::Yes),
        ("mfma", "gfx1100", Availability::No),
        ("rdna-wmma", "gfx1100", Availability::Yes),
        ("packed-fp32", "gfx908", Availability::No),
        ("packed-fp32", "gfx90a", Availability::Yes),
        ("large-shared-memory", "gfx950", Availability::Yes),
        ("large-shared-memory", "gfx942", Availability::No),
        ("fp32-atomic-add", "gfx90a", Availability::Partial),
        ("inline-ptx", "gfx942", Availability::No),
        ("warp-shuffle", "cpu-x86_64-avx2", Availability::No),
        // Generic features take the first available member per target.
        ("tensor-cores", "sm_100a", Availability::Yes),
        ("tensor-cores", "gfx1100", Availability::Yes),
        ("tensor-cores", "cpu-aarch64", Availability::No),
        ("fp8", "gfx942", Availability::Yes),
        ("fp8", "sm_80", Availability::No),
        ("int-atomics", "gfx1100", Availability::Yes),
        // HIP's __match_*_sync: 64-bit masks, behind a macro in ROCm 6.2, default from 6.3.
        ("warp-match", "gfx942", Availability::Partial),
        ("warp-match", "gfx1100", Availability::Partial),
        // RDNA4's WMMA has no TF32 variant.
        ("tf32-matrix", "gfx1201", Availability::No),
        ("tf32-matrix", "gfx942", Availability::Yes),
    ];
    for (f, a, want) in cases {
        assert_eq!(kb.availability(f, a), want, "{f} on {a}");
    }
    assert!(kb
        .support("fp8-matrix", "gfx942")
        .unwrap()
        .note
        .as_deref()
        .unwrap()
        .contains("FNUZ"));
    assert_eq!(
        kb.support("wgmma", "sm_90a")
            .unwrap()
            .min_toolchain
            .as_deref(),
        Some("CUDA 12.0")
    );
    assert_eq!(
        kb.support("warp-match", "gfx90a")
            .unwrap()
            .min_toolchain
            .as_deref(),
        Some("ROCm 6.2")
    );
    assert_eq!(kb.suggest_feature("wgma").as_deref(), Some("wgmma"));
    assert_eq!(kb.resolve_feature("tensor-cores", "sm_90a"), "wgmma");
    assert_eq!(kb.resolve_feature("tensor-cores", "gfx942"), "mfma");
    assert_eq!(kb.resolve_feature("tensor-cores", "gfx1201"), "rdna-wmma");
    assert_eq!(kb.resolve_feature("fp8", "gfx942"), "fp8-fnuz");
    assert_eq!(kb.resolve_feature("fp8", "gfx950"), "fp8-ocp");
    assert!(kb
        .support("tensor-cores", "sm_80")
        .unwrap()
        .note
        .as_deref()
        .unwrap()
        .starts_with("as `mma-sync`"));
    assert_eq!(
        kb.feature_named("warp-shuffles").unwrap().id,
        "warp-shuffle"
    );
    assert_eq!(kb.feature_named("Matrix-Cores").unwrap().id, "tensor-cores");
}

#[test]
fn spelling_variants_resolve_only_where_unambiguous() {
    let kb = Kb::builtin();
    for (name, want) in [
        ("gfx942:sramecc+:xnack-", "gfx942"),
        ("gfx90a:xnack+", "gfx90a"),
        ("RTX 4090", "sm_89"),
        ("rx_7900_xtx", "gfx1100"),
        ("  H100 SXM  ", "sm_90a"),
        ("SM_90A", "sm_90a"),
        ("cpu-x86_64", "cpu-x86_64-avx2"),
    ] {
        assert_eq!(
            kb.resolve(name).map(|r| r.arch.id.as_str()).ok(),
            Some(want),
            "{name}"
        );
    }
    // sm_100 (non-`a`) is a different compile target from sm_100a: its own architecture,
    // without the arch-specific tcgen05.
    assert_eq!(kb.resolve("sm_100").unwrap().arch.id, "sm_100");
    assert_eq!(kb.availability("tcgen05", "sm_100"), Availability::No);
    assert_eq!(kb.availability("tcgen05", "sm_100a"), Availability::Yes);
    assert!(kb.resolve("gfx9420").is_err());
}

#[test]
fn min_toolchain_accounts_for_features() {
    let kb = Kb::builtin();
    let sm89 = kb.arch("sm_89").unwrap();
    assert_eq!(
        kb.min_toolchain_with(sm89, &[]).as_deref(),
        Some("CUDA 11.8")
    );
    // FP8 mma on sm_89 needs PTX 8.4 / CUDA 12.4.
    assert_eq!(
        kb.min_toolchain_with(sm89, &["fp8-matrix", "warp-shuffle"])
            .as_deref(),
        Some("CUDA 12.4")
    );
    let gfx942 = kb.arch("gfx942").unwrap();
    assert_eq!(
        kb.min_toolchain_with(gfx942, &["syncwarp"]).as_deref(),
        Some("ROCm 7.0")
    );
    assert_eq!(
        kb.min_toolchain_with(kb.arch("gfx908").unwrap(), &["mfma"]),
        None
    );
    assert!(
        ToolchainVersion::parse("ROCm 6.0.0").unwrap()
            < ToolchainVersion::parse("ROCm 6.2").unwrap()
    );
    assert_eq!(ToolchainVersion::parse("-march=x86-64-v3"), None);
}

#[test]
fn derived_clocks_reproduce_the_sourced_peaks() {
    // Each derived clock must give back its device's peak: clock x FLOPS/clk/CU x CUs.
    let kb = Kb::builtin();
    for (dev, dtype, flops_per_clk_cu) in [
        ("mi100", Dtype::Fp16, 1024.0),
        ("mi250x", Dtype::Fp16, 1024.0),
        ("mi300x", Dtype::Fp16, 2048.0),
        ("mi355x", Dtype::Fp8, 8192.0),
    ] {
        let d = kb.device(dev).unwrap();
        let clock = d.clock_mhz.as_ref().unwrap().value.unwrap();
        let cus = d.compute_units.value.unwrap() as f64;
        let peak = clock * 1e6 * flops_per_clk_cu * cus / 1e12;
        let want = d.peak(dtype).unwrap();
        assert!(
            (peak - want).abs() / want < 0.001,
            "{dev}: {peak} vs {want}"
        );
    }
    // H200: 2 x 3201 MHz x 6016 bit / 8 = 4815 GB/s, within 0.5% of the 4800 GB/s spec.
    let h200 = kb.device("h200").unwrap();
    let bw = 2.0
        * h200.memory_clock_mhz.as_ref().unwrap().value.unwrap()
        * 1e6
        * h200.memory_bus_bits.as_ref().unwrap().value.unwrap() as f64
        / 8.0
        / 1e9;
    assert!(
        (bw - 4815.0).abs() < 1.0 && (bw / 4800.0 - 1.0).abs() < 0.005,
        "{bw}"
    );
}

#[test]
fn feature_min_toolchains_are_comparable_versions() {
    let kb = Kb::builtin();
    for f in &kb.features {
        for (arch, s) in &f.support {
            if let Some(t) = &s.min_toolchain {
                let v = ToolchainVersion::parse(t)
                    .unwrap_or_else(|| panic!("{} on {arch}: `{t}`", f.id));
                let want = match kb.arch(arch).unwrap().vendor {
                    Vendor::Nvidia => "CUDA",
                    Vendor::Amd => "ROCm",
                    _ => panic!("{} on {arch}: toolchain {t} on a non-GPU arch", f.id),
                };
                assert_eq!(v.toolchain, want, "{} on {arch}", f.id);
            }
        }
    }
}
