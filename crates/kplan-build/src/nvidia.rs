//! NVIDIA targets: nvcc with `-Xptxas -v`, resource usage from ptxas' report.

use crate::{process, Job, KernelUsage, Status, TargetResult, UsageTotals};

/// One entry function as ptxas reports it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PtxasKernel {
    pub name: String,
    pub registers: Option<u32>,
    pub shared_bytes: Option<u64>,
    /// Spill stores (bytes) of the entry function itself.
    pub spill_bytes: Option<u64>,
    pub stack_bytes: Option<u64>,
}

fn number_before(s: &str, unit: &str) -> Option<u64> {
    let i = s.find(unit)?;
    s[..i]
        .rsplit(|c: char| !c.is_ascii_digit())
        .find(|t| !t.is_empty())?
        .parse()
        .ok()
}

/// Parses `ptxas info` lines (nvcc `-Xptxas -v`): one record per "Compiling entry function".
pub fn parse_ptxas(text: &str) -> Vec<PtxasKernel> {
    let mut out: Vec<PtxasKernel> = Vec::new();
    // The entry whose properties ptxas is printing; properties of non-entry functions
    // ("Function properties for <callee>") are not an entry's own numbers.
    let mut props_for_entry = false;
    for line in text.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or("").to_string();
            out.push(PtxasKernel {
                name,
                ..Default::default()
            });
            props_for_entry = false;
            continue;
        }
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            let name = rest.trim();
            props_for_entry = out.last().is_some_and(|k| k.name == name);
            continue;
        }
        let Some(k) = out.last_mut() else { continue };
        if line.contains("bytes stack frame") && props_for_entry {
            k.stack_bytes = number_before(line, "bytes stack frame");
            k.spill_bytes = number_before(line, "bytes spill stores");
            continue;
        }
        if line.contains("Used ") && line.contains(" registers") {
            k.registers = number_before(line, " registers").map(|v| v as u32);
            k.shared_bytes = Some(number_before(line, " bytes smem").unwrap_or(0));
        }
    }
    out
}

pub(crate) fn compile(job: &Job, sm: &str, mut r: TargetResult) -> TargetResult {
    let tools = job.tools;
    let nvcc = match &tools.nvcc {
        Ok(Some(t)) => t,
        Ok(None) => {
            return r.skip("nvcc not found; install: the CUDA Toolkit (https://developer.nvidia.com/cuda-downloads), or `pip install nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-cuda-crt` and set KPLAN_NVCC (scripts/install-test-deps.sh does both)");
        }
        Err(e) => return r.fail(e.clone()),
    };
    match &tools.nvcc_version {
        Ok(v) => r.compiler = Some(v.clone()),
        Err(e) => return r.fail(e.clone()),
    }
    let stem = job.stem();
    let obj = job.out_dir.join(format!("{stem}-{}.o", r.target));
    let mut args: Vec<String> = vec![
        "-x".into(),
        "cu".into(),
        "-std=c++17".into(),
        format!("-arch={sm}"),
        "-Xptxas".into(),
        "-v".into(),
        "-c".into(),
    ];
    args.extend(job.include_args());
    args.extend(job.define_args());
    args.push(job.file.display().to_string());
    args.push("-o".into());
    args.push(obj.display().to_string());
    let out = match process::run(&nvcc.path, &args, None, job.opts.timeout) {
        Ok(o) => o,
        Err(e) => return r.fail(format!("cannot run {}: {e}", nvcc.path.display())),
    };
    r.seconds = out.elapsed.as_secs_f64();
    if out.timed_out {
        return r.fail(format!(
            "timed out after {} s (killed {})",
            job.opts.timeout.as_secs(),
            nvcc.path.display()
        ));
    }
    let text = out.text();
    if !out.success() {
        if text.contains("Unsupported gpu architecture")
            || text.contains("is not defined for option 'gpu-architecture'")
        {
            let c = r.compiler.clone().unwrap_or_default();
            return r.skip(format!(
                "{c} cannot compile for {sm}: {}",
                first_line(&text)
            ));
        }
        return r.fail(text);
    }
    let kernels = parse_ptxas(&text);
    r.diagnostics = text
        .lines()
        .filter(|l| !l.starts_with("ptxas info") && !l.starts_with("    "))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string();
    let mut t = UsageTotals::default();
    for k in &kernels {
        t.registers(k.registers);
        t.shared(k.shared_bytes);
        t.spill(k.spill_bytes);
        t.wave(Some(32));
    }
    t.apply(&mut r);
    if r.wave_size.is_none() {
        r.wave_size = Some(32);
    }
    r.kernels = kernels
        .iter()
        .map(|k| KernelUsage {
            name: k.name.clone(),
            registers: k.registers,
            sgprs: None,
            shared_bytes: k.shared_bytes,
            spill_bytes: k.spill_bytes,
            wave_size: Some(32),
        })
        .collect();
    r.artifacts = vec![obj];
    r.status = Status::Ok;
    r
}

fn first_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptxas_report_parses_entries_not_callees() {
        let text = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function '_Z3allPf' for 'sm_80'\n\
ptxas info    : Function properties for _Z3allPf\n\
    8 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n\
ptxas info    : Used 29 registers, used 1 barriers, 1024 bytes smem, 404 bytes cmem[0]\n\
ptxas info    : Function properties for _Z8outlinedf\n\
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Compiling entry function '_Z6ballotPKfPj' for 'sm_80'\n\
ptxas info    : Function properties for _Z6ballotPKfPj\n\
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 12 registers, used 0 barriers, 368 bytes cmem[0]\n";
        let k = parse_ptxas(text);
        assert_eq!(k.len(), 2);
        assert_eq!(k[0].name, "_Z3allPf");
        assert_eq!(k[0].registers, Some(29));
        assert_eq!(k[0].shared_bytes, Some(1024));
        assert_eq!(k[0].spill_bytes, Some(8));
        assert_eq!(k[1].registers, Some(12));
        assert_eq!(k[1].shared_bytes, Some(0));
        assert_eq!(k[1].spill_bytes, Some(0));
    }
}
