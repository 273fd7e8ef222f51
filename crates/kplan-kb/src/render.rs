//! Text and JSON views of the knowledge base for `kplan targets` / `kplan features` and the
//! generated docs/targets.md. Everything returns a `String`; nothing prints.

use crate::model::*;
use crate::resolve::{Resolved, ResolvedVia};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::fmt::Write;

/// `232448` -> `227 KiB`; sizes that are not whole KiB/MiB/GiB stay in bytes.
pub fn bytes(n: u64) -> String {
    // Binary units first (hardware sizes), then decimal GB (datasheet memory sizes).
    const UNITS: [(u64, &str); 4] = [
        (1 << 30, "GiB"),
        (1_000_000_000, "GB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ];
    for (size, unit) in UNITS {
        if n >= size && n % size == 0 {
            return format!("{} {unit}", n / size);
        }
    }
    format!("{n} B")
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "unknown".into())
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Renders a fact's value for people: sizes in KiB/MiB, unknown as "unknown".
fn fact_value(name: &str, value: Option<&str>) -> String {
    match value {
        None => "unknown".into(),
        Some(v) if name.ends_with("_bytes") => v
            .parse::<u64>()
            .map(bytes)
            .unwrap_or_else(|_| v.to_string()),
        Some(v) => v.to_string(),
    }
}

/// A plain text table with left-aligned columns.
fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: Vec<String>| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                l.push_str(c);
            } else {
                let _ = write!(l, "{c:<width$}  ", width = w[i]);
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&mut out, header.iter().map(|h| h.to_string()).collect());
    line(&mut out, w.iter().map(|n| "-".repeat(*n)).collect());
    for r in rows {
        line(&mut out, r.clone());
    }
    out
}

fn warp_text(a: &Arch) -> String {
    let sizes = a.warp_sizes();
    match (a.warp_size.value, sizes.len()) {
        (None, _) => "unknown".into(),
        (Some(w), n) if n > 1 => format!(
            "{w} ({})",
            sizes
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("/")
        ),
        (Some(w), _) => w.to_string(),
    }
}

fn arch_rows(kb: &Kb) -> Vec<Vec<String>> {
    kb.archs
        .iter()
        .map(|a| {
            vec![
                a.id.clone(),
                a.vendor.as_str().to_string(),
                a.family.clone(),
                warp_text(a),
                a.shared_per_block_bytes
                    .value
                    .map(bytes)
                    .unwrap_or_else(|| "unknown".into()),
                opt(a.min_toolchain()),
                a.reference_device.clone().unwrap_or_else(|| "none".into()),
            ]
        })
        .collect()
}

/// Dies of a multi-die package that HIP/CUDA show as separate devices (an MI250X has two GCDs);
/// `None` for one die.
fn dies(d: &Device) -> Option<u32> {
    d.dies_per_package
        .as_ref()
        .and_then(|f| f.value)
        .filter(|n| *n > 1)
}

/// One row per device, with what one kernel launch sees: one die of a multi-die package.
fn device_rows(kb: &Kb) -> Vec<Vec<String>> {
    kb.devices
        .iter()
        .map(|full| {
            let d = full.per_kernel_view();
            vec![
                full.id.clone(),
                match dies(full) {
                    Some(n) => format!("{} (one of {n} dies)", full.name),
                    None => full.name.clone(),
                },
                d.arch.clone(),
                opt(d.compute_units.value),
                d.bandwidth_gbs()
                    .map(num)
                    .unwrap_or_else(|| "unknown".into()),
                d.peak(Dtype::Bf16)
                    .map(num)
                    .unwrap_or_else(|| "unknown".into()),
                d.peak(Dtype::Fp32)
                    .map(num)
                    .unwrap_or_else(|| "unknown".into()),
            ]
        })
        .collect()
}

const ARCH_HEADER: [&str; 7] = [
    "arch",
    "vendor",
    "family",
    "warp",
    "smem/LDS per block",
    "min toolchain",
    "reference device",
];
const DEVICE_HEADER: [&str; 7] = [
    "device",
    "name",
    "arch",
    "SMs/CUs",
    "GB/s",
    "bf16 TFLOP/s",
    "fp32 TFLOP/s",
];

/// `kplan targets`: every architecture, then every device.
pub fn targets_human(kb: &Kb) -> String {
    let mut out = String::from("Architectures\n\n");
    out.push_str(&table(&ARCH_HEADER, &arch_rows(kb)));
    out.push_str("\nDevices, per kernel launch: one die of a multi-die package (dense peak rates; `unknown` = no source found)\n\n");
    out.push_str(&table(&DEVICE_HEADER, &device_rows(kb)));
    for d in kb.devices.iter().filter(|d| dies(d).is_some()) {
        out.push_str(&format!(
            "{}: the package has {} dies, {} SMs/CUs and {} GB/s in all; each die is its own device to HIP/CUDA, and plans use one.\n",
            d.id,
            dies(d).unwrap_or(1),
            opt(d.compute_units.value),
            d.bandwidth_gbs().map(num).unwrap_or_else(|| "unknown".into())
        ));
    }
    out.push_str("\n`kplan targets show NAME` lists every fact of one architecture or device with its source.\n");
    out
}

/// `kplan targets --format json`: the architectures and devices as stored.
pub fn targets_json(kb: &Kb) -> Value {
    json!({ "architectures": kb.archs, "devices": kb.devices })
}

fn source_title(kb: &Kb, key: &str) -> String {
    kb.source(key)
        .map(|s| s.title.clone())
        .unwrap_or_else(|| key.to_string())
}

fn facts_block(kb: &Kb, rows: &[crate::FactRow], used: &mut BTreeSet<String>) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|f| {
            if !f.source.is_empty() {
                used.insert(f.source.clone());
            }
            let mut v = fact_value(f.name, f.value.as_deref());
            if let Some(n) = &f.note {
                let _ = write!(v, " ({n})");
            }
            vec![
                f.name.to_string(),
                if f.source.is_empty() {
                    "-".into()
                } else {
                    format!("[{}]", f.source)
                },
                v,
            ]
        })
        .collect();
    let _ = kb;
    table(&["fact", "source", "value"], &rows)
}

fn sources_block(kb: &Kb, used: &BTreeSet<String>) -> String {
    let mut out = String::from("\nSources\n");
    for k in used {
        let _ = write!(out, "  [{k}] {}", source_title(kb, k));
        if let Some(s) = kb.source(k) {
            let _ = write!(out, " ({})", s.kind);
            if let Some(u) = &s.url {
                let _ = write!(out, " {u}");
            }
        }
        out.push('\n');
    }
    out
}

fn arch_section(kb: &Kb, a: &Arch, used: &mut BTreeSet<String>) -> String {
    let mut out = format!(
        "Architecture {} ({}, {})\n",
        a.id,
        a.vendor.as_str(),
        a.family
    );
    if !a.aliases.is_empty() {
        let _ = writeln!(out, "aliases: {}", a.aliases.join(", "));
    }
    let _ = writeln!(
        out,
        "compile target: {}",
        a.compile_target.as_deref().unwrap_or("unknown")
    );
    let _ = writeln!(
        out,
        "warp sizes: {}",
        if a.warp_sizes().is_empty() {
            "unknown".into()
        } else {
            a.warp_sizes()
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    out.push('\n');
    out.push_str(&facts_block(kb, &a.facts(), used));
    for n in &a.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn device_section(kb: &Kb, d: &Device, used: &mut BTreeSet<String>) -> String {
    let mut out = format!("Device {} ({}), architecture {}\n", d.id, d.name, d.arch);
    if !d.aliases.is_empty() {
        let _ = writeln!(out, "aliases: {}", d.aliases.join(", "));
    }
    out.push('\n');
    out.push_str(&facts_block(kb, &d.facts(), used));
    for n in &d.notes {
        let _ = writeln!(out, "note: {n}");
    }
    out
}

fn features_of(kb: &Kb, arch: &str, used: &mut BTreeSet<String>) -> String {
    let rows: Vec<Vec<String>> = kb
        .features
        .iter()
        .map(|f| match f.support.get(arch) {
            Some(s) => {
                used.insert(s.source.clone());
                let mut st = s.status.as_str().to_string();
                if let Some(t) = &s.min_toolchain {
                    let _ = write!(st, " ({t}+)");
                }
                if let Some(n) = &s.note {
                    let _ = write!(st, ": {n}");
                }
                vec![f.id.clone(), format!("[{}]", s.source), st]
            }
            None => vec![f.id.clone(), "-".into(), "unknown: not in the KB".into()],
        })
        .collect();
    format!(
        "\nFeatures on {arch}\n\n{}",
        table(&["feature", "source", "availability"], &rows)
    )
}

/// `kplan targets show NAME`: every fact of the architecture or device with its source, the
/// devices of the architecture (or the architecture of the device), and feature availability.
pub fn target_show_human(kb: &Kb, r: &Resolved<'_>) -> String {
    let mut used = BTreeSet::new();
    let mut out = String::new();
    match r.via {
        ResolvedVia::Device => {
            let d = r.device.expect("a device resolution has a device");
            out.push_str(&device_section(kb, d, &mut used));
            out.push('\n');
            out.push_str(&arch_section(kb, r.arch, &mut used));
        }
        ResolvedVia::Arch => {
            out.push_str(&arch_section(kb, r.arch, &mut used));
            let devs: Vec<&str> = kb.devices_of(&r.arch.id).map(|d| d.id.as_str()).collect();
            let _ = writeln!(
                out,
                "\ndevices: {}",
                if devs.is_empty() {
                    "none in the KB".to_string()
                } else {
                    devs.join(", ")
                }
            );
            match r.device {
                Some(d) => {
                    let _ = writeln!(
                        out,
                        "reference device (numbers used when a spec names {}): {}\n",
                        r.arch.id, d.id
                    );
                    out.push_str(&device_section(kb, d, &mut used));
                }
                None => {
                    let _ = writeln!(
                        out,
                        "reference device: none (bandwidth and peak rates are unknown for {})",
                        r.arch.id
                    );
                }
            }
        }
    }
    out.push_str(&features_of(kb, &r.arch.id, &mut used));
    out.push_str(&sources_block(kb, &used));
    out
}

fn used_sources_json(kb: &Kb, keys: impl IntoIterator<Item = String>) -> Value {
    let m: serde_json::Map<String, Value> = keys
        .into_iter()
        .filter_map(|k| {
            kb.source(&k)
                .map(|s| (k, serde_json::to_value(s).unwrap_or(Value::Null)))
        })
        .collect();
    Value::Object(m)
}

/// `kplan targets show NAME --format json`.
pub fn target_show_json(kb: &Kb, r: &Resolved<'_>) -> Value {
    let features: serde_json::Map<String, Value> = kb
        .features
        .iter()
        .map(|f| {
            let v = match f.support.get(&r.arch.id) {
                Some(s) => serde_json::to_value(s).unwrap_or(Value::Null),
                None => json!({ "status": "unknown" }),
            };
            (f.id.clone(), v)
        })
        .collect();
    let mut keys: BTreeSet<String> = r.arch.facts().into_iter().map(|f| f.source).collect();
    if let Some(d) = r.device {
        keys.extend(
            d.facts()
                .into_iter()
                .map(|f| f.source)
                .filter(|s| !s.is_empty()),
        );
    }
    keys.extend(
        kb.features
            .iter()
            .filter_map(|f| f.support.get(&r.arch.id))
            .map(|s| s.source.clone()),
    );
    json!({
        "name": r.name,
        "resolved_via": match r.via { ResolvedVia::Arch => "arch", ResolvedVia::Device => "device" },
        "arch": r.arch,
        "device": r.device,
        "devices_of_arch": kb.devices_of(&r.arch.id).map(|d| d.id.as_str()).collect::<Vec<_>>(),
        "features": features,
        "sources": used_sources_json(kb, keys),
    })
}

fn status_code(s: Availability) -> &'static str {
    match s {
        Availability::Yes => "yes",
        Availability::No => "no",
        Availability::Partial => "part",
        Availability::Unknown => "?",
    }
}

/// `kplan features`: one line per feature with the architectures grouped by availability.
pub fn features_human(kb: &Kb) -> String {
    let mut out = String::new();
    for f in &kb.features {
        let _ = writeln!(out, "{} [{}] {}", f.id, f.origin, f.name);
        for st in [
            Availability::Yes,
            Availability::Partial,
            Availability::No,
            Availability::Unknown,
        ] {
            let archs: Vec<&str> = kb
                .archs
                .iter()
                .filter(|a| {
                    f.support
                        .get(&a.id)
                        .map(|s| s.status)
                        .unwrap_or(Availability::Unknown)
                        == st
                })
                .map(|a| a.id.as_str())
                .collect();
            if !archs.is_empty() {
                let _ = writeln!(out, "  {:<8} {}", st.as_str(), archs.join(" "));
            }
        }
    }
    out.push_str("\n`kplan features show ID` gives each architecture's minimum toolchain, caveat, source and the fallback.\n");
    out
}

/// `kplan features --format json`: the features as stored.
pub fn features_json(kb: &Kb) -> Value {
    json!({ "features": kb.features })
}

/// `kplan features show ID`.
pub fn feature_show_human(kb: &Kb, f: &Feature) -> String {
    let mut out = format!(
        "{} ({}) [origin: {}]\n{}\n",
        f.id, f.name, f.origin, f.description
    );
    let _ = writeln!(
        out,
        "fallback: {}",
        f.fallback.as_deref().unwrap_or("none documented")
    );
    let mut used = BTreeSet::new();
    let rows: Vec<Vec<String>> = kb
        .archs
        .iter()
        .map(|a| match f.support.get(&a.id) {
            Some(s) => {
                used.insert(s.source.clone());
                vec![
                    a.id.clone(),
                    s.status.as_str().to_string(),
                    s.min_toolchain.clone().unwrap_or_else(|| "-".into()),
                    s.note.clone().unwrap_or_default(),
                    format!("[{}]", s.source),
                ]
            }
            None => vec![
                a.id.clone(),
                "unknown".into(),
                "-".into(),
                "not in the KB".into(),
                "-".into(),
            ],
        })
        .collect();
    out.push('\n');
    // The note column is last-but-one; keep the source visible by putting it before the note.
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| {
            vec![
                r[0].clone(),
                r[1].clone(),
                r[2].clone(),
                r[4].clone(),
                r[3].clone(),
            ]
        })
        .collect();
    out.push_str(&table(
        &["arch", "status", "min toolchain", "source", "note"],
        &rows,
    ));
    out.push_str(&sources_block(kb, &used));
    out
}

/// `kplan features show ID --format json`.
pub fn feature_show_json(kb: &Kb, f: &Feature) -> Value {
    let keys = f.support.values().map(|s| s.source.clone());
    json!({ "feature": f, "sources": used_sources_json(kb, keys) })
}

/// docs/targets.md, generated from the KB (`cargo xtask generate`; a test checks it).
pub fn targets_markdown(kb: &Kb) -> String {
    let mut out = String::new();
    out.push_str("<!-- @generated by kplan-kb (render::targets_markdown) from crates/kplan-kb/data/*.toml. Do not edit: run `cargo xtask generate` -->\n\n");
    out.push_str("# Targets, devices and features\n\n");
    out.push_str("Every value below comes from the knowledge base in `crates/kplan-kb/data/`; each carries a source\n");
    out.push_str(
        "key listed at the end. `unknown` means no source was found: kplan does not guess. See\n",
    );
    out.push_str("[kb.md](kb.md) for how the knowledge base is organised.\n\n");
    let md_table = |out: &mut String, header: &[&str], rows: &[Vec<String>]| {
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
        for r in rows {
            let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    };
    out.push_str("## Architectures\n\n");
    md_table(&mut out, &ARCH_HEADER, &arch_rows(kb));
    out.push_str("\n## Architecture facts\n\n");
    let names: Vec<&'static str> = {
        let mut seen = Vec::new();
        for a in &kb.archs {
            for f in a.facts() {
                if !seen.contains(&f.name) {
                    seen.push(f.name);
                }
            }
        }
        seen
    };
    for chunk in kb.archs.chunks(6) {
        let mut header = vec!["fact"];
        header.extend(chunk.iter().map(|a| a.id.as_str()));
        let rows: Vec<Vec<String>> = names
            .iter()
            .map(|n| {
                let mut r = vec![n.to_string()];
                for a in chunk {
                    let cell = a.facts().into_iter().find(|f| f.name == *n).map(|f| {
                        format!("{} [{}]", fact_value(f.name, f.value.as_deref()), f.source)
                    });
                    r.push(cell.unwrap_or_else(|| "-".into()));
                }
                r
            })
            .collect();
        md_table(&mut out, &header, &rows);
        out.push('\n');
    }
    out.push_str("## Devices\n\n");
    let mut header = vec!["device", "arch", "SMs/CUs", "L2", "memory", "GB/s"];
    header.extend(Dtype::PEAK.iter().map(|d| d.as_str()));
    let rows: Vec<Vec<String>> = kb
        .devices
        .iter()
        .map(|d| {
            // a multi-die package: the per-die figure (what one launch sees), then the package's
            let n = dies(d);
            let per = |v: Option<f64>, show: &dyn Fn(f64) -> String| -> String {
                match (v, n) {
                    (Some(v), Some(n)) => {
                        format!("{} per die ({} in {n} dies)", show(v / n as f64), show(v))
                    }
                    (Some(v), None) => show(v),
                    (None, _) => "unknown".into(),
                }
            };
            let mut r = vec![
                format!("{} ({})", d.id, d.name),
                d.arch.clone(),
                format!(
                    "{} [{}]",
                    per(d.compute_units.value.map(f64::from), &|v| num(v)),
                    d.compute_units.source
                ),
                format!(
                    "{} [{}]",
                    per(d.l2_bytes.value.map(|b| b as f64), &|v| bytes(v as u64)),
                    d.l2_bytes.source
                ),
                format!(
                    "{} [{}]",
                    per(d.memory_bytes.value.map(|b| b as f64), &|v| bytes(v as u64)),
                    d.memory_bytes.source
                ),
                format!(
                    "{} [{}]",
                    per(d.bandwidth_gbs(), &num),
                    d.bandwidth_gbs.source
                ),
            ];
            for dt in Dtype::PEAK {
                r.push(match d.peak_fact(dt) {
                    Some(f) => format!("{} [{}]", per(f.value, &num), f.source),
                    None => "-".into(),
                });
            }
            r
        })
        .collect();
    md_table(&mut out, &header, &rows);
    out.push_str("\nPeak rates are dense TFLOP/s (TOP/s for int8), matrix units where they exist. `-`: not in the KB.\n\n");
    out.push_str("## Product aliases\n\n");
    let rows: Vec<Vec<String>> = kb
        .devices
        .iter()
        .map(|d| vec![d.id.clone(), d.aliases.join(", ")])
        .chain(
            kb.archs
                .iter()
                .filter(|a| !a.aliases.is_empty())
                .map(|a| vec![a.id.clone(), a.aliases.join(", ")]),
        )
        .collect();
    md_table(&mut out, &["name", "aliases"], &rows);
    out.push_str("\n## Feature availability\n\n");
    out.push_str("`yes`, `no`, `part` (partial: see `kplan features show ID`), `?` (unknown).\n\n");
    for chunk in kb.archs.chunks(10) {
        let mut header = vec!["feature"];
        header.extend(chunk.iter().map(|a| a.id.as_str()));
        let rows: Vec<Vec<String>> = kb
            .features
            .iter()
            .map(|f| {
                let mut r = vec![f.id.clone()];
                r.extend(
                    chunk
                        .iter()
                        .map(|a| status_code(kb.availability(&f.id, &a.id)).to_string()),
                );
                r
            })
            .collect();
        md_table(&mut out, &header, &rows);
        out.push('\n');
    }
    out.push_str("## Sources\n\n");
    let rows: Vec<Vec<String>> = kb
        .sources
        .iter()
        .map(|(k, s)| {
            let mut where_ = s.url.clone().unwrap_or_default();
            if let Some(l) = &s.locator {
                if !where_.is_empty() {
                    where_.push_str("; ");
                }
                where_.push_str(l);
            }
            vec![k.clone(), s.kind.clone(), s.title.clone(), where_]
        })
        .collect();
    md_table(&mut out, &["key", "kind", "title", "where"], &rows);
    out
}

/// `kplan ops`: every op class with its name and counts of libraries, algorithms and risks.
pub fn ops_human(kb: &Kb) -> String {
    // the id column is as wide as the longest id
    let w = kb
        .ops
        .iter()
        .map(|o| o.id.chars().count())
        .max()
        .unwrap_or(0)
        .max("op class".len());
    let mut out = format!("{:<w$} libraries  algorithms  risks  name\n", "op class");
    for o in &kb.ops {
        out.push_str(&format!(
            "{:<w$} {:>9}  {:>10}  {:>5}  {}\n",
            o.id,
            o.library.len(),
            o.algorithm.len(),
            o.risk.len(),
            o.name
        ));
    }
    out.push_str("\n`kplan ops show NAME` gives one op class's libraries, algorithms and risks with sources.\n");
    out
}

pub fn ops_json(kb: &Kb) -> serde_json::Value {
    serde_json::to_value(&kb.ops).unwrap_or(serde_json::Value::Null)
}

/// `kplan ops show NAME`: everything the operation knowledge base has on one op class.
pub fn op_show_human(kb: &Kb, o: &crate::OpInfo) -> String {
    let title = |k: &str| {
        kb.source(k)
            .map(|s| s.title.as_str())
            .unwrap_or("(unknown source)")
    };
    let u = crate::scoped::unscoped;
    let mut out = format!("Op class {} ({})\n\n", o.id, o.name);
    out.push_str(&format!(
        "latency-bound when: {}\ntile hint: {}\n",
        u(&o.latency_bound),
        u(&o.tile_hint)
    ));
    if !o.aliases.is_empty() {
        out.push_str(&format!("other names: {}\n", o.aliases.join(", ")));
    }
    if let Some(c) = &o.cpu_reference {
        out.push_str(&format!("CPU reference check: {c}\n"));
    }
    out.push_str("\nlibraries:\n");
    for l in &o.library {
        out.push_str(&format!(
            "  {:<7} {} [{}], min version {}: {} [{}]\n",
            l.vendor,
            u(&l.name),
            l.role,
            l.min_version.as_deref().map_or("unknown".to_string(), u),
            u(&l.covers),
            l.source
        ));
    }
    out.push_str("\nalgorithms:\n");
    for a in &o.algorithm {
        out.push_str(&format!(
            "  {}: {} [{}]\n",
            u(&a.name),
            u(&a.when),
            a.source
        ));
    }
    out.push_str("\nrisks:\n");
    for r in &o.risk {
        out.push_str(&format!(
            "  {}: {}\n    why: {}\n    mitigation: {}\n    source: {} ({})\n",
            r.id,
            u(&r.title),
            u(&r.why),
            u(&r.mitigation),
            r.source,
            title(&r.source)
        ));
    }
    out
}

pub fn op_show_json(o: &crate::OpInfo) -> serde_json::Value {
    serde_json::to_value(o).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_render_in_binary_units() {
        assert_eq!(bytes(232448), "227 KiB");
        assert_eq!(bytes(62914560), "60 MiB");
        assert_eq!(bytes(206158430208), "192 GiB");
        assert_eq!(bytes(80000000000), "80 GB");
        assert_eq!(bytes(1000), "1000 B");
    }

    #[test]
    fn numbers_render_without_trailing_zeros() {
        assert_eq!(num(4800.0), "4800");
        assert_eq!(num(1307.4), "1307.4");
        assert_eq!(num(0.254), "0.254");
    }
}
