//! CPU targets: the host C++ compiler builds the same source with the header's host backend
//! (one lane per warp). Resource counters do not apply; wave size is the header's 1.

use crate::{process, Job, Status, TargetResult};

/// The machine this kplan runs on, in the spelling of a target triple's first field.
fn host_arch() -> &'static str {
    std::env::consts::ARCH
}

/// Which ISA a CPU `compile_target` (a `-march` value) belongs to.
fn isa_of(march: &str) -> &'static str {
    if march.starts_with("x86-64")
        || march.starts_with("haswell")
        || march.starts_with("skylake")
        || march.starts_with("znver")
    {
        "x86_64"
    } else if march.starts_with("armv8") || march.starts_with("armv9") {
        "aarch64"
    } else {
        "unknown"
    }
}

pub(crate) fn compile(job: &Job, march: Option<&str>, mut r: TargetResult) -> TargetResult {
    let tools = job.tools;
    let mut cross_triple: Option<String> = None;
    if let Some(m) = march {
        let isa = isa_of(m);
        if isa != "unknown" && isa != host_arch() {
            cross_triple = Some(format!("{isa}-linux-gnu"));
        }
    }
    // Cross-compiling needs clang (any clang takes --target); the host compiler otherwise.
    let (tool, version) = if cross_triple.is_some() {
        match (&tools.hip_clang, &tools.hip_clang_version) {
            (Ok(Some(t)), Ok(v)) => (t, v.clone()),
            _ => {
                let id = r.target.clone();
                return r.skip(format!(
                    "{} is a {} target and this machine is {}: cross-compiling needs clang (set KPLAN_HIP_CLANG)",
                    id,
                    cross_triple.as_deref().unwrap_or(""),
                    host_arch()
                ));
            }
        }
    } else {
        match (&tools.cxx, &tools.cxx_version) {
            (Ok(Some(t)), Ok(v)) => (t, v.clone()),
            (Ok(None), _) => {
                return r.skip(
                    "no host C++ compiler found; install: apt-get install g++ (or set KPLAN_CXX)",
                )
            }
            (Err(e), _) | (_, Err(e)) => return r.fail(e.clone()),
        }
    };
    r.compiler = Some(version);
    let stem = job.stem();
    let obj = job.out_dir.join(format!("{stem}-{}.o", r.target));
    let mut args: Vec<String> = vec![
        "-x".into(),
        "c++".into(),
        "-std=c++17".into(),
        "-O2".into(),
        "-c".into(),
    ];
    if let Some(t) = &cross_triple {
        args.push(format!("--target={t}"));
    }
    if let Some(m) = march {
        args.push(format!("-march={m}"));
    }
    args.extend(job.include_args());
    args.extend(job.define_args());
    args.push(job.file.display().to_string());
    args.push("-o".into());
    args.push(obj.display().to_string());
    let out = match process::run(&tool.path, &args, None, job.opts.timeout) {
        Ok(o) => o,
        Err(e) => return r.fail(format!("cannot run {}: {e}", tool.path.display())),
    };
    r.seconds = out.elapsed.as_secs_f64();
    if out.timed_out {
        return r.fail(format!(
            "timed out after {} s (killed {})",
            job.opts.timeout.as_secs(),
            tool.path.display()
        ));
    }
    let text = out.text();
    if !out.success() {
        return r.fail(text);
    }
    r.diagnostics = text;
    r.wave_size = Some(1);
    r.spill_bytes = None;
    r.artifacts = vec![obj];
    r.status = Status::Ok;
    r
}
