//! `cross-block-progress`: hand-written kernel code on AMD targets in which blocks wait for
//! or publish to other blocks: a grid barrier (cooperative launch), decoupled look-back
//! (multi-block scans and radix sorts), or global flags/counters through atomics. AMD gives no
//! forward-progress guarantee between workgroups that are not co-resident, and on MI300-class
//! parts the per-XCD L2s are not coherent with each other, so a flag written with a plain
//! store may never be seen by a block on another XCD [ROCm-MI300].

use super::Cx;
use crate::model::Risk;
use crate::spec::{Op, Problem};
use kplan_kb::Vendor;

/// Why this kernel communicates across blocks, if it does.
fn reason(cx: &Cx) -> Option<&'static str> {
    let s = cx.spec;
    let f = |id: &str| s.features.iter().any(|x| x == id);
    let long = |len: u64| match &s.problem {
        Problem::Flat { n } => *n >= len,
        Problem::Rows { cols, .. } => *cols >= len,
        _ => false,
    };
    if f("cooperative-launch") || f("grid-sync") {
        return Some("a grid-wide barrier (cooperative launch)");
    }
    if s.op == Op::Scan && long(1 << 20) {
        return Some("decoupled look-back between the blocks of one scan");
    }
    if s.op == Op::Sort && s.dim("n").is_some_and(|n| n >= 1 << 20) {
        return Some("decoupled look-back between the blocks of each radix-sort pass");
    }
    if s.op == Op::Stencil && s.dim("steps").is_some_and(|n| n > 1) {
        return Some("a time loop that synchronises the whole grid between steps");
    }
    None
}

pub fn check(cx: &Cx) -> Option<Risk> {
    let why = reason(cx)?;
    let amd: Vec<&crate::decide::Target> = cx
        .coded_targets()
        .filter(|t| t.vendor() == Vendor::Amd)
        .collect();
    if amd.is_empty() {
        return None;
    }
    let xcd: Vec<String> = amd
        .iter()
        .filter(|t| {
            t.device.as_deref().is_some_and(|d| {
                d.compute_units
                    .note
                    .as_deref()
                    .is_some_and(|n| n.contains("per XCD"))
            }) || t.arch.id.starts_with("gfx94")
                || t.arch.id == "gfx950"
        })
        .map(|t| t.name.clone())
        .collect();
    let mut evidence = vec![format!("the kernel needs {why}")];
    if !xcd.is_empty() {
        evidence.push(format!(
            "{}: L2 per XCD, not coherent across XCDs [ROCm-MI300]",
            xcd.join(", ")
        ));
    }
    Some(Risk {
        id: "cross-block-progress".into(),
        title: format!("cross-block communication on AMD: {why}"),
        kind: "hazard".into(),
        targets: amd.iter().map(|t| t.name.clone()).collect(),
        severity: "high".into(),
        mitigation: "take tile ids from an atomic counter in launch order so a block only waits on blocks already running; publish flags with release and read them with acquire at agent (device) scope, never with plain loads in a spin loop; size a cooperative grid to the co-resident limit (hipOccupancyMaxActiveBlocksPerMultiprocessor x CUs) and launch it with hipLaunchCooperativeKernel; on MI300-class parts keep counters in device (coarse-grained) memory and expect cross-XCD flag latency".into(),
        fallback: Some("split the kernel at the synchronisation point into separate launches (reduce-then-scan; one launch per time step): one extra pass over the data or one launch overhead per step".into()),
        evidence,
        sources: vec!["ROCm-MI300".into(), "MERRILL-SCAN".into()],
    })
}

#[cfg(test)]
mod tests {
    use crate::decide::hazards::test_support::risk_ids;

    const SPEC: &str = "[kernel]\nname = \"s\"\nop = \"scan\"\ndtypes = [\"int32\", \"int64\"]\nproblem = { n = N }\n[backends]\ntargets = [\"mi300x\"]\n[abstraction]\nallowed = [\"hip-single-source\"]\n";

    #[test]
    fn fires_for_a_long_multi_block_scan_on_amd() {
        let ids = risk_ids(&SPEC.replace("N", "1000000000"));
        assert!(ids.iter().any(|i| i == "cross-block-progress"), "{ids:?}");
    }

    #[test]
    fn silent_for_a_short_scan() {
        let ids = risk_ids(&SPEC.replace("N", "4096"));
        assert!(!ids.iter().any(|i| i == "cross-block-progress"), "{ids:?}");
    }
}
