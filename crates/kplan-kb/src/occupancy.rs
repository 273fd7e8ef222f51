//! Occupancy estimate: how many blocks of a kernel fit on one SM / CU / WGP at once.
//!
//! The models follow the vendors' own calculators, with every constant read from the KB:
//!
//! **NVIDIA** (as `cuda_occupancy.h` in the CUDA toolkit [CUDA-OCC]):
//! - warps per block = ceil(threads / 32); blocks ≤ max warps per SM / warps per block;
//! - blocks ≤ max resident blocks per SM;
//! - registers are allocated per warp: regs × 32 rounded up to 256; the register file is split
//!   over 4 sub-partitions, so warps per SM = 4 × floor((regs per SM / 4) / regs per warp);
//!   a block whose registers (warps rounded up to a multiple of 4) exceed 64 K cannot launch;
//! - shared memory per block = (bytes + 1 KiB reserved by the driver on CC ≥ 8.0) rounded up
//!   to 128 B (256 B on CC 7.x); blocks ≤ shared per SM / that (the carveout is assumed at its
//!   maximum, which the driver picks when a kernel needs it).
//!
//! **AMD CDNA** (unit = CU): 4 SIMDs per CU, each keeping at most 8 wavefronts; VGPRs per lane
//! are rounded up to the allocation granule (4 on gfx908, 8 on gfx90a/gfx942) and each SIMD
//! has 512 VGPRs per lane (unified VGPR + AccVGPR on gfx90a/gfx942/gfx950) or 256 (gfx908), so
//! waves per SIMD = min(max waves, floor(VGPR budget / allocated VGPRs)). A block's waves are
//! spread over the CU's SIMDs, so blocks ≤ floor(SIMDs × waves per SIMD / waves per block).
//! LDS per CU bounds blocks too.
//!
//! **AMD RDNA** (unit = WGP, HIP's default work-group-processor mode): a WGP is 2 CUs × 2 SIMD32;
//! per-CU thread/wave/block limits are doubled, LDS is the WGP's 128 KiB, and each SIMD has
//! 1536 VGPRs per lane in wave32 with a granule of 24 (the numbers LLVM 19 uses, checked by
//! `tests/occupancy_llvm.rs` against clang's own occupancy remarks).
//!
//! `tests/occupancy_cuda.rs` compiles NVIDIA's `cuda_occupancy.h` and checks this model
//! against it for every NVIDIA architecture in the KB.
//!
//! A limit whose fact is unknown in the KB is skipped and named in
//! [`Occupancy::unknown_limits`]: the estimate is then an upper bound, and says so.

use crate::model::{Arch, Vendor};

/// How many blocks fit on one unit and what stops more from fitting.
#[derive(Debug, Clone, PartialEq)]
pub struct Occupancy {
    /// Resident blocks per SM (NVIDIA), CU (CDNA) or WGP (RDNA).
    pub blocks_per_sm: u32,
    /// Resident warps / wavefronts per unit.
    pub warps_per_sm: u32,
    /// The hardware maximum of resident warps / wavefronts per unit.
    pub max_warps_per_sm: u32,
    /// warps_per_sm / max_warps_per_sm.
    pub fraction: f64,
    /// What bounds `blocks_per_sm`: `threads` | `blocks` | `registers` | `shared`.
    pub limiter: &'static str,
    /// The unit the numbers are per: `SM`, `CU` or `WGP`.
    pub unit: &'static str,
    /// Warp / wavefront size the estimate assumed.
    pub warp_size: u32,
    /// Blocks each limit allows, in the order threads, blocks, registers, shared (a limit that
    /// did not apply, e.g. registers not given, is absent).
    pub limits: Vec<(&'static str, u32)>,
    /// Limits that could not be checked because the KB does not know the fact.
    pub unknown_limits: Vec<&'static str>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OccupancyError {
    #[error("no occupancy model for {arch} ({vendor}): only NVIDIA and AMD GPUs are modelled")]
    NoModel { arch: String, vendor: &'static str },
    #[error("occupancy on {arch} needs `{fact}`, which the knowledge base does not know")]
    UnknownFact { arch: String, fact: &'static str },
    #[error("a block of {threads} threads does not fit on {arch}: {reason}")]
    DoesNotFit {
        arch: String,
        threads: u32,
        reason: String,
    },
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}
fn round_up(a: u64, g: u64) -> u64 {
    if g == 0 {
        a
    } else {
        ceil_div(a, g) * g
    }
}

/// Occupancy of a kernel launched with `block_threads` threads per block, `regs_per_thread`
/// registers (VGPRs on AMD; `None`: not known yet, registers are then not counted) and
/// `shared_bytes_per_block` bytes of shared memory / LDS (static + dynamic).
pub fn occupancy(
    arch: &Arch,
    block_threads: u32,
    regs_per_thread: Option<u32>,
    shared_bytes_per_block: u64,
) -> Result<Occupancy, OccupancyError> {
    let unknown = |fact: &'static str| OccupancyError::UnknownFact {
        arch: arch.id.clone(),
        fact,
    };
    let no_fit = |reason: String| OccupancyError::DoesNotFit {
        arch: arch.id.clone(),
        threads: block_threads,
        reason,
    };
    if !matches!(arch.vendor, Vendor::Nvidia | Vendor::Amd) {
        return Err(OccupancyError::NoModel {
            arch: arch.id.clone(),
            vendor: arch.vendor.as_str(),
        });
    }
    let warp = arch.warp_size.value.ok_or_else(|| unknown("warp_size"))?;
    if block_threads == 0 {
        return Err(no_fit("a block needs at least one thread".into()));
    }
    if let Some(max) = arch.max_threads_per_block.value {
        if block_threads > max {
            return Err(no_fit(format!("at most {max} threads per block")));
        }
    }
    if let Some(max) = arch.shared_per_block_bytes.value {
        if shared_bytes_per_block > max {
            return Err(no_fit(format!(
                "{shared_bytes_per_block} B of shared memory requested, at most {max} B per block"
            )));
        }
    }
    if let (Some(r), Some(max)) = (regs_per_thread, arch.max_registers_per_thread.value) {
        if r > max {
            return Err(no_fit(format!(
                "{r} registers per thread requested, at most {max}"
            )));
        }
    }
    let warps_per_block = ceil_div(block_threads as u64, warp as u64);
    match arch.vendor {
        Vendor::Nvidia => nvidia(
            arch,
            warp,
            warps_per_block,
            regs_per_thread,
            shared_bytes_per_block,
            &unknown,
            &no_fit,
        ),
        _ => amd(
            arch,
            warp,
            warps_per_block,
            regs_per_thread,
            shared_bytes_per_block,
            &unknown,
        ),
    }
}

fn finish(
    unit: &'static str,
    warp: u32,
    warps_per_block: u64,
    max_warps: u64,
    limits: Vec<(&'static str, u64)>,
    unknown_limits: Vec<&'static str>,
) -> Occupancy {
    // The first of the smallest limits names the limiter (ties go to threads, then blocks).
    let (limiter, blocks) =
        limits.iter().copied().fold(
            ("threads", u64::MAX),
            |best, l| if l.1 < best.1 { l } else { best },
        );
    let blocks = if blocks == u64::MAX { 0 } else { blocks };
    let warps = blocks * warps_per_block;
    Occupancy {
        blocks_per_sm: blocks.min(u32::MAX as u64) as u32,
        warps_per_sm: warps.min(u32::MAX as u64) as u32,
        max_warps_per_sm: max_warps as u32,
        fraction: if max_warps == 0 {
            0.0
        } else {
            warps as f64 / max_warps as f64
        },
        limiter,
        unit,
        warp_size: warp,
        limits: limits
            .into_iter()
            .map(|(n, b)| (n, b.min(u32::MAX as u64) as u32))
            .collect(),
        unknown_limits,
    }
}

fn nvidia(
    arch: &Arch,
    warp: u32,
    warps_per_block: u64,
    regs: Option<u32>,
    smem: u64,
    unknown: &dyn Fn(&'static str) -> OccupancyError,
    no_fit: &dyn Fn(String) -> OccupancyError,
) -> Result<Occupancy, OccupancyError> {
    let max_warps = match arch.max_warps_per_sm.as_ref().and_then(|f| f.value) {
        Some(w) => w as u64,
        None => {
            arch.max_threads_per_sm
                .value
                .ok_or_else(|| unknown("max_threads_per_sm"))? as u64
                / warp as u64
        }
    };
    let mut limits = vec![("threads", max_warps / warps_per_block)];
    let mut unknown_limits = Vec::new();
    match arch.max_blocks_per_sm.value {
        Some(b) => limits.push(("blocks", b as u64)),
        None => unknown_limits.push("blocks"),
    }
    if let Some(r) = regs {
        let file = arch
            .registers_per_sm
            .value
            .ok_or_else(|| unknown("registers_per_sm"))?;
        let gran = arch
            .register_alloc_granularity
            .as_ref()
            .and_then(|f| f.value)
            .unwrap_or(256) as u64;
        let parts = arch
            .sm_sub_partitions
            .as_ref()
            .and_then(|f| f.value)
            .unwrap_or(4) as u64;
        let per_warp = round_up(r as u64 * warp as u64, gran);
        if per_warp > 0 {
            // The launch check assumes the block's warps spread over every sub-partition; the
            // per-block register limit equals the per-SM file (64 K) on CC 7.5-12.0 [CUDA-TS].
            let assumed = per_warp * round_up(warps_per_block, parts);
            if assumed > file {
                return Err(no_fit(format!(
                    "{r} registers x {} threads needs {assumed} registers (with allocation rounding), the limit is {file}",
                    warps_per_block * warp as u64
                )));
            }
            let warps_by_regs = parts * ((file / parts) / per_warp);
            limits.push(("registers", warps_by_regs / warps_per_block));
        }
    }
    let per_sm = arch.shared_per_sm_bytes.value;
    match per_sm {
        Some(per_sm) => {
            let reserved = arch
                .shared_reserved_per_block_bytes
                .as_ref()
                .and_then(|f| f.value)
                .unwrap_or(0);
            let gran = arch
                .shared_alloc_granularity_bytes
                .as_ref()
                .and_then(|f| f.value)
                .unwrap_or(0) as u64;
            if let Some(blocks) = per_sm.checked_div(round_up(smem + reserved, gran)) {
                limits.push(("shared", blocks));
            }
        }
        None if smem > 0 => unknown_limits.push("shared"),
        None => {}
    }
    Ok(finish(
        "SM",
        warp,
        warps_per_block,
        max_warps,
        limits,
        unknown_limits,
    ))
}

fn amd(
    arch: &Arch,
    warp: u32,
    waves_per_block: u64,
    regs: Option<u32>,
    smem: u64,
    unknown: &dyn Fn(&'static str) -> OccupancyError,
) -> Result<Occupancy, OccupancyError> {
    let get = |f: &Option<crate::model::Fact<u32>>| f.as_ref().and_then(|f| f.value);
    // RDNA runs a workgroup on a WGP (two CUs); CDNA on one CU.
    let cus = get(&arch.cus_per_wgp).unwrap_or(1) as u64;
    let unit = if cus > 1 { "WGP" } else { "CU" };
    let simds = get(&arch.simds_per_cu).ok_or_else(|| unknown("simds_per_cu"))? as u64 * cus;
    let per_cu_waves = get(&arch.max_warps_per_sm).map(u64::from);
    let waves_per_simd = match (get(&arch.max_waves_per_simd), per_cu_waves) {
        (Some(w), _) => w as u64,
        (None, Some(cu)) => cu * cus / simds,
        (None, None) => return Err(unknown("max_waves_per_simd")),
    };
    let max_waves = simds * waves_per_simd;
    let mut unknown_limits = Vec::new();
    // Threads per unit: the per-CU limit x CUs, when known; the wave slots bound it anyway.
    let by_threads = match arch.max_threads_per_sm.value {
        Some(t) => (t as u64 * cus / warp as u64).min(max_waves) / waves_per_block,
        None => max_waves / waves_per_block,
    };
    let mut limits = vec![("threads", by_threads)];
    match arch.max_blocks_per_sm.value {
        Some(b) => limits.push(("blocks", b as u64 * cus)),
        None => unknown_limits.push("blocks"),
    }
    if let Some(r) = regs {
        match get(&arch.vgprs_per_simd_lane) {
            Some(budget) => {
                let gran = get(&arch.register_alloc_granularity).unwrap_or(1) as u64;
                let alloc = round_up(r.max(1) as u64, gran);
                let per_simd = (budget as u64 / alloc).min(waves_per_simd);
                limits.push(("registers", simds * per_simd / waves_per_block));
            }
            None => unknown_limits.push("registers"),
        }
    }
    if smem > 0 {
        match arch.shared_per_sm_bytes.value {
            Some(lds) => {
                let gran = arch
                    .shared_alloc_granularity_bytes
                    .as_ref()
                    .and_then(|f| f.value)
                    .unwrap_or(0) as u64;
                limits.push(("shared", lds / round_up(smem, gran)));
            }
            None => unknown_limits.push("shared"),
        }
    }
    Ok(finish(
        unit,
        warp,
        waves_per_block,
        max_waves,
        limits,
        unknown_limits,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Kb;

    fn occ(arch: &str, threads: u32, regs: Option<u32>, smem: u64) -> Occupancy {
        occupancy(Kb::builtin().arch(arch).unwrap(), threads, regs, smem).unwrap()
    }

    #[test]
    fn h100_plain_256_threads_is_thread_limited_at_full_occupancy() {
        // 256 threads = 8 warps; 64 warps/SM / 8 = 8 blocks; 32 blocks allowed; smem 0 + 1 KiB
        // reserved = 1024 B -> 233472 / 1024 = 228 blocks. min = 8 (threads), 64/64 warps.
        let o = occ("sm_90a", 256, None, 0);
        assert_eq!(
            (o.blocks_per_sm, o.warps_per_sm, o.max_warps_per_sm),
            (8, 64, 64)
        );
        assert_eq!(o.limiter, "threads");
        assert_eq!(o.fraction, 1.0);
        assert_eq!(o.unit, "SM");
    }

    #[test]
    fn h100_register_limited() {
        // 128 regs x 32 lanes = 4096 regs/warp (already a multiple of 256).
        // 65536 / 4 partitions = 16384 per partition -> 4 warps each -> 16 warps/SM.
        // 256 threads = 8 warps -> 2 blocks, 16/64 warps = 0.25.
        let o = occ("sm_90a", 256, Some(128), 0);
        assert_eq!((o.blocks_per_sm, o.warps_per_sm), (2, 16));
        assert_eq!(o.limiter, "registers");
        assert_eq!(o.fraction, 0.25);
    }

    #[test]
    fn h100_register_rounding() {
        // 33 regs x 32 = 1056 -> rounded to 1280 per warp. 16384 / 1280 = 12 warps per
        // partition -> 48 warps/SM; 128 threads = 4 warps -> 12 blocks; threads allow 16.
        let o = occ("sm_90a", 128, Some(33), 0);
        assert_eq!(
            (o.blocks_per_sm, o.warps_per_sm, o.limiter),
            (12, 48, "registers")
        );
    }

    #[test]
    fn a100_shared_limited_with_reserved_kib() {
        // 48 KiB + 1 KiB reserved = 50176 B (multiple of 128). 167936 / 50176 = 3 blocks.
        // 256 threads -> threads allow 8. 3 blocks x 8 warps = 24 of 64 warps.
        let o = occ("sm_80", 256, Some(32), 48 * 1024);
        assert_eq!(
            (o.blocks_per_sm, o.warps_per_sm, o.limiter),
            (3, 24, "shared")
        );
        assert_eq!(o.fraction, 24.0 / 64.0);
    }

    #[test]
    fn rtx4090_block_limited_small_blocks() {
        // sm_89: 32 threads = 1 warp; 48 warps allow 48 blocks but only 24 blocks per SM.
        let o = occ("sm_89", 32, None, 0);
        assert_eq!(
            (o.blocks_per_sm, o.warps_per_sm, o.limiter),
            (24, 24, "blocks")
        );
        assert_eq!(o.fraction, 0.5);
    }

    #[test]
    fn too_many_registers_for_block_is_an_error() {
        // 255 regs x 32 = 8160 -> 8192 per warp; 1024 threads = 32 warps -> 262144 > 65536.
        let e = occupancy(Kb::builtin().arch("sm_90a").unwrap(), 1024, Some(255), 0).unwrap_err();
        assert!(matches!(e, OccupancyError::DoesNotFit { .. }), "{e}");
        let e = occupancy(Kb::builtin().arch("sm_80").unwrap(), 2048, None, 0).unwrap_err();
        assert!(e.to_string().contains("at most 1024 threads"), "{e}");
        let e = occupancy(Kb::builtin().arch("gfx942").unwrap(), 256, None, 65537).unwrap_err();
        assert!(e.to_string().contains("65536"), "{e}");
    }

    #[test]
    fn mi300x_vgpr_limited() {
        // gfx942: 256 threads = 4 waves of 64. 128 VGPRs (multiple of 8): 512 / 128 = 4 waves
        // per SIMD x 4 SIMDs = 16 waves -> 4 blocks. Threads: 2048 / 64 = 32 waves -> 8 blocks.
        let o = occ("gfx942", 256, Some(128), 0);
        assert_eq!(
            (o.blocks_per_sm, o.warps_per_sm, o.max_warps_per_sm),
            (4, 16, 32)
        );
        assert_eq!((o.limiter, o.unit, o.warp_size), ("registers", "CU", 64));
        assert_eq!(o.fraction, 0.5);
    }

    #[test]
    fn mi300x_lds_limited() {
        // 40 KiB LDS per block: 65536 / 40960 = 1 block per CU -> 4 waves of 32.
        let o = occ("gfx942", 256, Some(32), 40 * 1024);
        assert_eq!(
            (o.blocks_per_sm, o.warps_per_sm, o.limiter),
            (1, 4, "shared")
        );
        assert_eq!(o.fraction, 0.125);
    }

    #[test]
    fn gfx908_has_half_the_vgpr_budget() {
        // gfx908: 256 ArchVGPRs per lane. 100 VGPRs (granule 4 -> 100): 256 / 100 = 2 waves
        // per SIMD -> 8 waves per CU; 256-thread blocks (4 waves) -> 2 blocks.
        let o = occ("gfx908", 256, Some(100), 0);
        assert_eq!(
            (o.blocks_per_sm, o.warps_per_sm, o.limiter),
            (2, 8, "registers")
        );
        // gfx90a, same kernel: 100 -> 104; 512 / 104 = 4 waves per SIMD -> 16 waves -> 4 blocks.
        assert_eq!(occ("gfx90a", 256, Some(100), 0).blocks_per_sm, 4);
    }

    #[test]
    fn rdna3_counts_per_wgp_in_wave32() {
        // gfx1100, wave32: 256 threads = 8 waves. WGP = 2 CUs x 2 SIMDs = 4 SIMDs x 16 waves
        // = 64 wave slots; threads: 1024 x 2 / 32 = 64 waves -> 8 blocks; blocks 32 x 2 = 64.
        let o = occ("gfx1100", 256, None, 0);
        assert_eq!(
            (o.blocks_per_sm, o.warps_per_sm, o.max_warps_per_sm),
            (8, 64, 64)
        );
        assert_eq!((o.unit, o.warp_size, o.limiter), ("WGP", 32, "threads"));
        // 128 VGPRs -> 144 (granule 24); 1536 / 144 = 10 waves per SIMD -> 40 waves -> 5 blocks.
        let o = occ("gfx1100", 256, Some(128), 0);
        assert_eq!(
            (o.blocks_per_sm, o.warps_per_sm, o.limiter),
            (5, 40, "registers")
        );
        // LDS: 48 KiB per block in a 128 KiB WGP -> 2 blocks.
        let o = occ("gfx1100", 256, None, 48 * 1024);
        assert_eq!((o.blocks_per_sm, o.limiter), (2, "shared"));
    }

    #[test]
    fn unknown_limits_are_reported_not_guessed() {
        // gfx950: max blocks and threads per CU are not in the KB: the estimate says so.
        // 256 threads = 4 waves; 64 VGPRs: 512 / 64 = 8 waves per SIMD -> 32 waves -> 8 blocks.
        let o = occ("gfx950", 256, Some(64), 0);
        assert!(o.unknown_limits.contains(&"blocks"), "{o:?}");
        assert_eq!((o.blocks_per_sm, o.limiter), (8, "threads"));
        // An arch without SIMD facts cannot be estimated at all: an error, not a guess.
        let mut a = Kb::builtin().arch("gfx942").unwrap().clone();
        a.simds_per_cu = None;
        let e = occupancy(&a, 256, None, 0).unwrap_err();
        assert_eq!(
            e,
            OccupancyError::UnknownFact {
                arch: "gfx942".into(),
                fact: "simds_per_cu"
            }
        );
    }

    #[test]
    fn cpus_have_no_occupancy_model() {
        let e =
            occupancy(Kb::builtin().arch("cpu-x86_64-avx2").unwrap(), 256, None, 0).unwrap_err();
        assert!(matches!(e, OccupancyError::NoModel { .. }));
    }
}
