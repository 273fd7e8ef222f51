//! NVRTC compiles every reference kernel (both dtypes, every configuration verify and bench use)
//! to PTX for sm_80 and sm_90: the CUDA path short of running, on machines without a GPU.
//! Skipped with the reason when libnvrtc is absent; a failure under KPLAN_REQUIRE_TOOLCHAINS=1.

use kplan_run::cpu::scratch_dir;
use kplan_run::cuda::{compile_ptx, nvrtc_status};
use kplan_run::kernels::{portability_header, verify_configs, Backend, KernelSources, Shape};
use kplan_run::reference::{DType, Op};
use kplan_run::verify::default_shapes;

#[test]
fn every_kernel_compiles_to_ptx() {
    if let Err(reason) = nvrtc_status() {
        return kplan_test_support::toolchain::skip(reason);
    }
    let (header, _) = portability_header().expect("portability header");
    let sources = KernelSources::builtin(header);
    let tiles = sources.tiles().unwrap();
    let dir = scratch_dir("nvrtc-test").unwrap();
    sources.materialize_nvrtc(dir.path()).unwrap();
    let mut compiled = 0;
    for op in [Op::ReduceSum, Op::Softmax, Op::Rmsnorm, Op::Add] {
        for dtype in DType::ALL {
            let mut shapes = default_shapes(op, Backend::Cuda);
            if op == Op::Softmax || op == Op::Rmsnorm {
                for cols in [1024, 16384, 32768] {
                    shapes.push(Shape::Rows { rows: 8192, cols });
                }
            }
            let mut configs = Vec::new();
            for s in shapes {
                for (c, why) in verify_configs(&tiles, Backend::Cuda, op, dtype, s, 32) {
                    if why.is_none() && !configs.contains(&c) {
                        configs.push(c);
                    }
                }
            }
            for (i, c) in configs.iter().enumerate() {
                // every configuration for sm_90, the first (default) also for sm_80
                let archs: &[&str] = if i == 0 {
                    &["compute_80", "compute_90"]
                } else {
                    &["compute_90"]
                };
                for arch in archs {
                    let ptx = compile_ptx(dir.path(), op, dtype, c, arch).unwrap_or_else(|e| {
                        panic!(
                            "{} {} {} {arch}: {e}",
                            op.as_str(),
                            dtype.as_str(),
                            c.label()
                        )
                    });
                    assert!(ptx.contains(".entry"), "no kernel entry in PTX");
                    if c.vec as usize * dtype.bytes() == 16 {
                        assert!(
                            ptx.contains(".v4.u32")
                                || ptx.contains(".v4.b32")
                                || ptx.contains(".v4.f32"),
                            "{} {} {}: 16-byte vectors expected in PTX",
                            op.as_str(),
                            dtype.as_str(),
                            c.label()
                        );
                    }
                    compiled += 1;
                }
            }
        }
    }
    assert!(compiled >= 40, "only {compiled} compiles");
}
