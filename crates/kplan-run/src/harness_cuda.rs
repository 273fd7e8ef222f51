//! A harness's kernel on an NVIDIA GPU: NVRTC compiles the user's source (named by its own
//! path, so diagnostics point at the user's file), the driver API runs it (both through dynamic
//! loading). No libcuda, libnvrtc or device: a skip with the reason.

use crate::cuda::open_device;
use crate::error::RunError;
use crate::harness::{ArgKind, Dtype, Harness};
use crate::harness_verify::KernelRunner;
use crate::simt::{Defines, RunInput};
use crate::skip::Skip;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use std::collections::HashMap;
use std::sync::Arc;

pub struct CudaRunner {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    cc: (i32, i32),
    include: tempfile::TempDir,
    h: Harness,
    funcs: HashMap<Defines, Result<Vec<CudaFunction>, String>>,
}

fn cu(what: &str) -> impl Fn(cudarc::driver::DriverError) -> RunError + '_ {
    move |e| RunError::Cuda {
        what: what.to_string(),
        message: format!("{:?}", e.0),
    }
}

/// The `.entry` of `entry` in `ptx`: the name itself (extern "C") or the one mangled entry
/// whose name is `entry` (`_Z<len><entry>...`).
pub fn find_entry(ptx: &str, entry: &str) -> Result<String, String> {
    let names: Vec<&str> = ptx
        .lines()
        .filter_map(|l| l.split(".entry ").nth(1))
        .map(|r| {
            r.split(|c: char| c == '(' || c.is_whitespace())
                .next()
                .unwrap_or("")
        })
        .collect();
    if names.contains(&entry) {
        return Ok(entry.to_string());
    }
    let prefix = format!("_Z{}{}", entry.len(), entry);
    let hits: Vec<&&str> = names.iter().filter(|n| n.starts_with(&prefix)).collect();
    match hits.len() {
        1 => Ok(hits[0].to_string()),
        0 => Err(format!(
            "no kernel `{entry}` in the compiled module (entries: {})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        )),
        _ => Err(format!(
            "`{entry}` names several kernels ({}); declare it extern \"C\"",
            hits.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

impl CudaRunner {
    /// `Ok(Err(skip))` when CUDA cannot be used here.
    pub fn open(h: &Harness) -> Result<Result<CudaRunner, Skip>, RunError> {
        let dev = match open_device()? {
            Ok(d) => d,
            Err(skip) => return Ok(Err(skip)),
        };
        let include = tempfile::Builder::new()
            .prefix("kplan-nvrtc-")
            .tempdir()
            .map_err(|e| RunError::Io {
                path: std::env::temp_dir(),
                source: e,
            })?;
        let hp = include.path().join("kplan_portability.h");
        std::fs::write(
            &hp,
            kplan_gen::render_header(&kplan_gen::HeaderConfig::all()),
        )
        .map_err(|e| RunError::Io {
            path: hp,
            source: e,
        })?;
        Ok(Ok(CudaRunner {
            ctx: dev.ctx,
            stream: dev.stream,
            name: dev.name,
            cc: dev.cc,
            include,
            h: h.clone(),
            funcs: HashMap::new(),
        }))
    }

    fn compile(&self, defs: &Defines) -> Result<Vec<CudaFunction>, String> {
        let mut out = Vec::new();
        let mut modules: HashMap<std::path::PathBuf, (Arc<cudarc::driver::CudaModule>, String)> =
            HashMap::new();
        for k in &self.h.kernels {
            if !modules.contains_key(&k.source) {
                let src = std::fs::read_to_string(&k.source)
                    .map_err(|e| format!("{}: {e}", k.source.display()))?;
                let mut options = vec![
                    format!("--gpu-architecture=compute_{}{}", self.cc.0, self.cc.1),
                    "--std=c++17".to_string(),
                    format!("--include-path={}", self.include.path().display()),
                ];
                if let Some(d) = k.source.parent() {
                    options.push(format!("--include-path={}", d.display()));
                }
                for i in &k.include {
                    options.push(format!("--include-path={}", i.display()));
                }
                for (n, v) in defs {
                    options.push(format!("-D{n}={v}"));
                }
                let opts = cudarc::nvrtc::CompileOptions {
                    options,
                    name: Some(k.source.display().to_string()),
                    ..Default::default()
                };
                let ptx = match cudarc::nvrtc::compile_ptx_with_opts(src, opts) {
                    Ok(p) => p.to_src(),
                    Err(cudarc::nvrtc::CompileError::CompileError { log, .. }) => {
                        return Err(log.to_string_lossy().into_owned())
                    }
                    Err(e) => return Err(format!("{e:?}")),
                };
                let m = self
                    .ctx
                    .load_module(cudarc::nvrtc::Ptx::from_src(ptx.clone()))
                    .map_err(|e| format!("cuModuleLoadData: {:?}", e.0))?;
                modules.insert(k.source.clone(), (m, ptx));
            }
            let (m, ptx) = &modules[&k.source];
            let name = find_entry(ptx, &k.entry)?;
            out.push(
                m.load_function(&name)
                    .map_err(|e| format!("cuModuleGetFunction {name}: {:?}", e.0))?,
            );
        }
        Ok(out)
    }
}

enum Scalar {
    F64(f64),
    F32(f32),
    U16(u16),
    I64(i64),
    I32(i32),
    U32(u32),
    I8(i8),
    U8(u8),
}

fn scalar(d: Dtype, b: &[u8]) -> Scalar {
    let mut a = [0u8; 8];
    a[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
    match d {
        Dtype::Fp64 => Scalar::F64(f64::from_le_bytes(a)),
        Dtype::Fp32 => Scalar::F32(f32::from_le_bytes([a[0], a[1], a[2], a[3]])),
        Dtype::Fp16 | Dtype::Bf16 => Scalar::U16(u16::from_le_bytes([a[0], a[1]])),
        Dtype::Int64 => Scalar::I64(i64::from_le_bytes(a)),
        Dtype::Int32 => Scalar::I32(i32::from_le_bytes([a[0], a[1], a[2], a[3]])),
        Dtype::Uint32 => Scalar::U32(u32::from_le_bytes([a[0], a[1], a[2], a[3]])),
        Dtype::Int8 => Scalar::I8(a[0] as i8),
        Dtype::Uint8 => Scalar::U8(a[0]),
    }
}

impl KernelRunner for CudaRunner {
    fn device(&self) -> String {
        format!("{} (sm_{}{})", self.name, self.cc.0, self.cc.1)
    }
    fn prepare(&mut self, _h: &Harness, configs: &[Defines], _warps: &[u32]) {
        for c in configs {
            if !self.funcs.contains_key(c) {
                let r = self.compile(c);
                self.funcs.insert(c.clone(), r);
            }
        }
    }
    fn compile_error(&self, defs: &Defines, _warp: u32) -> Option<String> {
        match self.funcs.get(defs) {
            Some(Err(e)) => Some(e.clone()),
            _ => None,
        }
    }
    fn run(&mut self, defs: &Defines, _warp: u32, input: &RunInput) -> Result<Vec<u8>, RunError> {
        let funcs = match self.funcs.get(defs) {
            Some(Ok(f)) => f.clone(),
            Some(Err(e)) => {
                return Err(RunError::Compile {
                    compiler: "NVRTC".into(),
                    what: "kernel".into(),
                    log: e.clone(),
                })
            }
            None => {
                return Err(RunError::Exec {
                    what: "kernel".into(),
                    message: "not compiled".into(),
                })
            }
        };
        let h = &self.h;
        let mut bufs: Vec<Option<CudaSlice<u8>>> = Vec::new();
        let mut scalars: Vec<Option<Scalar>> = Vec::new();
        for (i, a) in h.args.iter().enumerate() {
            if a.kind == ArgKind::Scalar {
                bufs.push(None);
                scalars.push(Some(scalar(a.dtype, &input.args[i])));
            } else {
                let bytes = &input.args[i];
                // SAFETY: written below before any kernel reads it.
                let mut b = unsafe { self.stream.alloc::<u8>(bytes.len().max(256)) }
                    .map_err(cu("cuMemAlloc"))?;
                if !bytes.is_empty() {
                    self.stream
                        .memcpy_htod(bytes, &mut b.slice_mut(..bytes.len()))
                        .map_err(cu("memcpy HtoD"))?;
                }
                bufs.push(Some(b));
                scalars.push(None);
            }
        }
        for (k, e) in h.kernels.iter().enumerate() {
            let d = input.launches[k];
            let lc = LaunchConfig {
                grid_dim: (d.grid[0], d.grid[1], d.grid[2]),
                block_dim: (d.block[0], d.block[1], d.block[2]),
                shared_mem_bytes: d.shared as u32,
            };
            let mut lb = self.stream.launch_builder(&funcs[k]);
            for &i in &e.args {
                match (&bufs[i], &scalars[i]) {
                    (Some(b), _) => {
                        lb.arg(b);
                    }
                    (None, Some(s)) => match s {
                        Scalar::F64(v) => {
                            lb.arg(v);
                        }
                        Scalar::F32(v) => {
                            lb.arg(v);
                        }
                        Scalar::U16(v) => {
                            lb.arg(v);
                        }
                        Scalar::I64(v) => {
                            lb.arg(v);
                        }
                        Scalar::I32(v) => {
                            lb.arg(v);
                        }
                        Scalar::U32(v) => {
                            lb.arg(v);
                        }
                        Scalar::I8(v) => {
                            lb.arg(v);
                        }
                        Scalar::U8(v) => {
                            lb.arg(v);
                        }
                    },
                    _ => {}
                }
            }
            // SAFETY: the argument list follows the harness, which states the kernel's signature;
            // every buffer holds the elements the harness's len gives.
            unsafe { lb.launch(lc) }.map_err(cu("launch"))?;
        }
        self.stream.synchronize().map_err(cu("kernel execution"))?;
        let mut out = Vec::new();
        for (i, a) in h.args.iter().enumerate() {
            if a.kind.compared() {
                let b = bufs[i].as_ref().expect("buffer");
                let host = self.stream.clone_dtoh(b).map_err(cu("memcpy DtoH"))?;
                out.extend_from_slice(&host[..input.args[i].len()]);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_found_by_name_or_mangled_name() {
        let ptx = ".visible .entry block_sum(\n.visible .entry _Z8row_sumsPKfPfi(\n";
        assert_eq!(find_entry(ptx, "block_sum").unwrap(), "block_sum");
        assert_eq!(find_entry(ptx, "row_sums").unwrap(), "_Z8row_sumsPKfPfi");
        assert!(find_entry(ptx, "row").is_err());
    }
}
