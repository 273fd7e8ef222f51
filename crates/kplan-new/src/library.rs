//! Library verdicts: a dispatch wrapper over the vendor libraries the plan names, compiled where
//! the build finds them; the CPU fallback and its test; no kernel.

use crate::family::Family;
use crate::files::{Ctx, Storage};
use crate::template::{self, render};
use crate::{NewError, Project, ProjectFile};
use kplan_plan::Plan;

/// The libraries the plan names for the op, per target, for messages.
pub fn names(plan: &Plan) -> String {
    let mut v: Vec<String> = plan
        .strategy
        .per_target
        .iter()
        .map(|t| format!("{} on {}", t.implementation, t.target))
        .collect();
    v.dedup();
    if v.is_empty() {
        "no library".into()
    } else {
        v.join("; ")
    }
}

pub fn add(ctx: &Ctx, f: &Family, p: &mut Project) -> Result<(), NewError> {
    if *f != Family::Gemm {
        return Err(NewError::Unsupported(format!(
            "no library dispatch template for `{}`",
            f.name()
        )));
    }
    crate::files::cpu_files(ctx, f, p);
    let mut vars = ctx.vars();
    let (is32, is64, cuda, cublas_c, hip, hip_c) = match ctx.storage {
        Storage::F32 => (
            "1",
            "0",
            "CUDA_R_32F",
            "CUBLAS_COMPUTE_32F",
            "HIPBLAS_R_32F",
            "HIPBLAS_COMPUTE_32F",
        ),
        Storage::F64 => (
            "0",
            "1",
            "CUDA_R_64F",
            "CUBLAS_COMPUTE_64F",
            "HIPBLAS_R_64F",
            "HIPBLAS_COMPUTE_64F",
        ),
        Storage::Bf16 => (
            "0",
            "0",
            "CUDA_R_16BF",
            "CUBLAS_COMPUTE_32F",
            "HIPBLAS_R_16B",
            "HIPBLAS_COMPUTE_32F",
        ),
        Storage::Fp16 => (
            "0",
            "0",
            "CUDA_R_16F",
            "CUBLAS_COMPUTE_32F",
            "HIPBLAS_R_16F",
            "HIPBLAS_COMPUTE_32F",
        ),
    };
    for (k, v) in [
        ("IS_F32", is32),
        ("IS_F64", is64),
        ("CUDA_DTYPE", cuda),
        ("CUBLAS_COMPUTE", cublas_c),
        ("HIP_DTYPE", hip),
        ("HIP_COMPUTE", hip_c),
    ] {
        vars.push((k, v.to_string()));
    }
    let r = ctx.as_refs(&vars);
    p.files.push(ProjectFile {
        path: format!("src/{}_dispatch.cpp", ctx.file),
        text: render(template::LIB_GEMM, &r),
    });
    p.files.push(ProjectFile {
        path: "Makefile".into(),
        text: render(template::LIB_MAKEFILE, &r),
    });
    Ok(())
}

pub fn fill_in(ctx: &Ctx) -> String {
    format!(
        "No kernel: the plan's verdict is a library call ({}). `src/{f}_dispatch.cpp` calls the library\nof each backend the build finds and checks it against the CPU fallback (`make dispatch`);\nadd the library's handle, stream and workspace management of your application around it.",
        names(ctx.plan),
        f = ctx.file
    )
}
