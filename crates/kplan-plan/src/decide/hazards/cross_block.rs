//! `cross-block-progress`: hand-written kernel code on AMD targets in which blocks wait for
//! or publish to other blocks: a grid barrier (cooperative launch), decoupled look-back
//! (multi-block scans and radix sorts), or global flags/counters through atomics. AMD gives no
//! forward-progress guarantee between workgroups that are not co-resident, and on MI300-class
//! parts the per-XCD L2s are not coherent with each other, so a flag written with a plain
//! store may never be seen by a block on another XCD [ROCm-MI300].

use super::test_support::{Fx, ELEMENTWISE};
use super::{Cx, Fixtures};
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

pub fn check(cx: &Cx) -> Vec<Risk> {
    risk(cx).into_iter().collect()
}

fn risk(cx: &Cx) -> Option<Risk> {
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
    Some(
        Risk::builder("cross-block-progress", "hazard", "high")
            .title(format!("cross-block communication on AMD: {why}"))
            .targets(amd.iter().map(|t| t.name.clone()).collect())
            .mitigation("take tile ids from an atomic counter in launch order so a block only waits on blocks already running; publish flags with release and read them with acquire at agent (device) scope, never with plain loads in a spin loop; size a cooperative grid to the co-resident limit (hipOccupancyMaxActiveBlocksPerMultiprocessor x CUs) and launch it with hipLaunchCooperativeKernel; on MI300-class parts keep counters in device (coarse-grained) memory and expect cross-XCD flag latency")
            .fallback("split the kernel at the synchronisation point into separate launches (reduce-then-scan; one launch per time step): one extra pass over the data or one launch overhead per step")
            .evidence(evidence)
            .sources(["ROCm-MI300", "MERRILL-SCAN"])
            .build(),
    )
}

/// The spec this rule's fixtures vary.
const SPEC: Fx = ELEMENTWISE
    .op("scan")
    .dtypes(&["int32", "int64"])
    .problem("n = 1000000000")
    .targets(&["mi300x"]);

/// Specs that must raise this rule's risk and specs that must not.
pub(super) const FIXTURES: Fixtures = Fixtures {
    probe: "cross-block-progress",
    fires: &[SPEC],
    silent: &[SPEC.problem("n = 4096")],
};
