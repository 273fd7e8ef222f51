//! Checks the NVIDIA occupancy model against NVIDIA's own calculator: `cuda_occupancy.h`
//! from the CUDA toolkit is a self-contained header; a small C++ program fills its device
//! properties from the KB facts of each NVIDIA architecture, asks it for resident blocks per
//! SM for a set of launch configurations, and kplan's model must give the same numbers.
//!
//! Needs the toolkit headers (found next to `KPLAN_NVCC`, set by scripts/test-env.sh) and a
//! C++ compiler (`KPLAN_HIP_CLANG`, `clang++-19`, or `c++`). Without them the test is skipped
//! with a printed reason, unless `KPLAN_REQUIRE_TOOLCHAINS=1`, when it fails.

use kplan_kb::{occupancy, Kb, Vendor};
use std::path::PathBuf;
use std::process::Command;

const PROGRAM: &str = r#"
#include <cstdio>
#include <cstdlib>
#include "cuda_occupancy.h"
// argv: major minor threads_per_sm regs_per_sm smem_per_sm smem_optin reserved, then
// (threads regs smem) triples. Prints resident blocks per SM for each triple.
int main(int argc, char** argv) {
    cudaOccDeviceProp p;
    p.computeMajor = atoi(argv[1]);
    p.computeMinor = atoi(argv[2]);
    p.maxThreadsPerBlock = 1024;
    p.maxThreadsPerMultiprocessor = atoi(argv[3]);
    p.regsPerBlock = 65536;
    p.regsPerMultiprocessor = atoi(argv[4]);
    p.warpSize = 32;
    p.sharedMemPerBlock = 49152;
    p.sharedMemPerMultiprocessor = atol(argv[5]);
    p.numSms = 1;
    p.sharedMemPerBlockOptin = atol(argv[6]);
    p.reservedSharedMemPerBlock = atol(argv[7]);
    for (int i = 8; i + 2 < argc; i += 3) {
        cudaOccFuncAttributes a;
        a.maxThreadsPerBlock = 1024;
        a.numRegs = atoi(argv[i + 1]);
        a.sharedSizeBytes = 0;
        a.partitionedGCConfig = PARTITIONED_GC_OFF;
        a.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        a.maxDynamicSharedSizeBytes = atol(argv[6]);
        cudaOccDeviceState s;
        cudaOccResult r;
        cudaOccError e = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &p, &a, &s, atoi(argv[i]), atol(argv[i + 2]));
        printf("%d %d\n", (int)e, r.activeBlocksPerMultiprocessor);
    }
    return 0;
}
"#;

/// (threads per block, registers per thread (0 = not counted), dynamic shared bytes).
const CASES: [(u32, u32, u64); 14] = [
    (256, 0, 0),
    (256, 128, 0),
    (128, 33, 0),
    (256, 32, 48 * 1024),
    (32, 0, 0),
    (1024, 64, 0),
    (512, 40, 16 * 1024),
    (96, 72, 10_000),
    (64, 255, 0),
    (128, 0, 60_000),
    (1024, 255, 0),
    (192, 168, 2048),
    // Shared-memory bound, where the 1 KiB reserve and the 128 B rounding change the answer.
    (64, 0, 7168),
    (32, 0, 8300),
];

use kplan_test_support::toolchain::skip;

fn header_dir() -> Option<PathBuf> {
    let nvcc = PathBuf::from(std::env::var_os("KPLAN_NVCC")?);
    let inc = nvcc.parent()?.parent()?.join("include");
    inc.join("cuda_occupancy.h").is_file().then_some(inc)
}

fn cxx() -> Option<PathBuf> {
    let env = std::env::var_os("KPLAN_HIP_CLANG").map(PathBuf::from);
    env.into_iter()
        .chain(["clang++-19", "clang++", "c++"].map(PathBuf::from))
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        })
}

#[test]
fn nvidia_occupancy_matches_cuda_occupancy_h() {
    let Some(inc) = header_dir() else {
        return skip("no cuda_occupancy.h (set KPLAN_NVCC to a CUDA toolkit's nvcc)");
    };
    let Some(cxx) = cxx() else {
        return skip("no C++ compiler (set KPLAN_HIP_CLANG or install clang-19)");
    };
    let dir = std::env::temp_dir().join(format!("kplan-kb-cuda-occ-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, exe) = (dir.join("occ.cpp"), dir.join("occ"));
    std::fs::write(&src, PROGRAM).unwrap();
    let out = Command::new(&cxx)
        .args(["-x", "c++", "-std=c++11", "-O1"])
        .arg("-I")
        .arg(&inc)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "compiling the calculator failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let kb = Kb::builtin();
    let mut checked = 0;
    for arch in kb.archs_by_vendor(Vendor::Nvidia) {
        let (major, minor) = arch.compute_capability().unwrap();
        let fact = |f: Option<u64>, name: &str| {
            f.unwrap_or_else(|| panic!("{}: {name} unknown", arch.id))
                .to_string()
        };
        let mut args = vec![
            major.to_string(),
            minor.to_string(),
            fact(
                arch.max_threads_per_sm.value.map(u64::from),
                "max_threads_per_sm",
            ),
            fact(arch.registers_per_sm.value, "registers_per_sm"),
            fact(arch.shared_per_sm_bytes.value, "shared_per_sm_bytes"),
            fact(arch.shared_per_block_bytes.value, "shared_per_block_bytes"),
            fact(
                arch.shared_reserved_per_block_bytes
                    .as_ref()
                    .and_then(|f| f.value),
                "shared_reserved_per_block_bytes",
            ),
        ];
        for (t, r, s) in CASES {
            args.extend([t.to_string(), r.to_string(), s.to_string()]);
        }
        let out = Command::new(&exe).args(&args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let nvidia: Vec<(i32, u32)> = text
            .lines()
            .map(|l| {
                let mut it = l.split_whitespace().map(|x| x.parse::<i64>().unwrap());
                (it.next().unwrap() as i32, it.next().unwrap() as u32)
            })
            .collect();
        assert_eq!(nvidia.len(), CASES.len(), "{}: {text}", arch.id);
        for ((t, r, s), (err, blocks)) in CASES.into_iter().zip(nvidia) {
            assert_eq!(err, 0, "{}: calculator error for {t}/{r}/{s}", arch.id);
            let ours = occupancy(arch, t, (r > 0).then_some(r), s)
                .map(|o| o.blocks_per_sm)
                .unwrap_or(0);
            assert_eq!(
                ours, blocks,
                "{}: {t} threads, {r} regs, {s} B shared: kplan {ours}, cuda_occupancy.h {blocks}",
                arch.id
            );
            checked += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    // every NVIDIA architecture of the KB (10 today: sm_75 .. sm_120), each over every case
    let archs = kb.archs_by_vendor(Vendor::Nvidia).count();
    assert!(archs >= 10, "{archs} NVIDIA architectures");
    assert_eq!(checked, archs * CASES.len());
}
