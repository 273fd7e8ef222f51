//! CPU backend: the kernel source itself, compiled by the host C++ compiler against the
//! header's host path with `kernels/host_runner.cpp` (one OS thread per GPU thread, one lane per
//! warp, a real barrier for `__syncthreads`), run as a child process.

use crate::error::RunError;
use crate::exec::{decode, encode, Case, Executor};
use crate::kernels::{source_file, Backend, Config, KernelSources, Shape};
use crate::reference::{DType, Op};
use crate::skip::Skip;
use kplan_build::process;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How long one host compile or link may take.
pub const COMPILE_TIMEOUT: Duration = Duration::from_secs(300);
/// How long one run of a host kernel binary may take.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(600);

/// Finds a C++20 compiler ([`kplan_build::toolchain::find_cxx`]); `Err` when `KPLAN_CXX` or
/// `CXX` names no executable.
pub fn find_cxx() -> Result<Option<PathBuf>, RunError> {
    kplan_build::toolchain::find_cxx()
        .map(|t| t.map(|t| t.path))
        .map_err(|message| RunError::Exec {
            what: "finding the host C++ compiler".into(),
            message,
        })
}

/// A scratch directory removed on drop.
pub fn scratch_dir(tag: &str) -> Result<tempfile::TempDir, RunError> {
    tempfile::Builder::new()
        .prefix(&format!("kplan-{tag}-"))
        .tempdir()
        .map_err(|e| RunError::Io {
            path: std::env::temp_dir(),
            source: e,
        })
}

/// Runs `cmd` under `timeout` ([`process::run_command`]); `what` names it in errors.
pub(crate) fn run_tool(
    cmd: Command,
    timeout: Duration,
    what: &str,
) -> Result<process::Output, RunError> {
    let out = process::run_command(cmd, timeout).map_err(|e| RunError::Exec {
        what: what.to_string(),
        message: e.to_string(),
    })?;
    if out.timed_out {
        return Err(RunError::Exec {
            what: what.to_string(),
            message: format!("timed out after {} s", timeout.as_secs()),
        });
    }
    Ok(out)
}

pub struct HostExecutor {
    cxx: PathBuf,
    dir: tempfile::TempDir,
    binaries: HashMap<(Op, DType, Config), PathBuf>,
}

impl HostExecutor {
    /// Prepares the sources; `Ok(Err(skip))` when no C++ compiler is found (a skip, not a
    /// failure).
    pub fn new(sources: &KernelSources) -> Result<Result<HostExecutor, Skip>, RunError> {
        let Some(cxx) = find_cxx()? else {
            return Ok(Err(Skip::no_cxx()));
        };
        let dir = scratch_dir("host")?;
        sources.materialize(dir.path())?;
        Ok(Ok(HostExecutor {
            cxx,
            dir,
            binaries: HashMap::new(),
        }))
    }

    fn cxx_cmd(&self) -> Command {
        let mut cmd = Command::new(&self.cxx);
        cmd.arg("-std=c++20").arg("-O1").arg("-pthread").arg("-w");
        cmd
    }

    fn check(&self, cmd: Command, what: String) -> Result<(), RunError> {
        let compiler = self.cxx.display().to_string();
        let out = run_tool(cmd, COMPILE_TIMEOUT, &compiler)?;
        if !out.success() {
            return Err(RunError::Compile {
                compiler,
                what,
                log: out.stderr.chars().take(4000).collect(),
            });
        }
        Ok(())
    }

    /// The launch side (host_runner.cpp), compiled once.
    fn runner_object(&mut self) -> Result<PathBuf, RunError> {
        let obj = self.dir.path().join("host_runner.o");
        if !obj.is_file() {
            let mut cmd = self.cxx_cmd();
            cmd.arg("-c")
                .arg(self.dir.path().join("host_runner.cpp"))
                .arg("-o")
                .arg(&obj);
            self.check(cmd, "host_runner.cpp".into())?;
        }
        Ok(obj)
    }

    fn exe_path(&self, op: Op, dtype: DType, cfg: &Config) -> PathBuf {
        self.dir.path().join(format!(
            "{}-{}-{}",
            op.as_str(),
            dtype.as_str(),
            cfg.label()
        ))
    }

    fn build_one(
        &self,
        runner: &Path,
        op: Op,
        dtype: DType,
        cfg: &Config,
    ) -> Result<PathBuf, RunError> {
        let exe = self.exe_path(op, dtype, cfg);
        let obj = exe.with_extension("o");
        let kernel_id = match op {
            Op::ReduceSum => 1,
            Op::Softmax => 2,
            Op::Rmsnorm => 3,
            Op::Add => 4,
            Op::QuantizeFp8 => 5,
        };
        let mut cmd = self.cxx_cmd();
        cmd.arg("-I")
            .arg(self.dir.path())
            .arg(format!("-DKPLAN_KERNEL={kernel_id}"));
        for (k, v) in cfg.defines(dtype) {
            cmd.arg(format!("-D{k}={v}"));
        }
        cmd.arg("-c")
            .arg(self.dir.path().join("host_kernel.cpp"))
            .arg("-o")
            .arg(&obj);
        let what = format!("{} ({}, {})", source_file(op), dtype.as_str(), cfg.label());
        self.check(cmd, what.clone())?;
        let mut link = self.cxx_cmd();
        link.arg(&obj).arg(runner).arg("-o").arg(&exe);
        self.check(link, what)?;
        Ok(exe)
    }

    /// Compiles the runner for one (op, dtype, config); cached.
    pub fn compile(&mut self, op: Op, dtype: DType, cfg: &Config) -> Result<PathBuf, RunError> {
        if let Some(p) = self.binaries.get(&(op, dtype, *cfg)) {
            return Ok(p.clone());
        }
        let runner = self.runner_object()?;
        let exe = self.build_one(&runner, op, dtype, cfg)?;
        self.binaries.insert((op, dtype, *cfg), exe.clone());
        Ok(exe)
    }

    /// Compiles several configurations in parallel (errors surface later, at their run).
    pub fn precompile(&mut self, list: &[(Op, DType, Config)]) {
        let Ok(runner) = self.runner_object() else {
            return;
        };
        let todo: Vec<&(Op, DType, Config)> = list
            .iter()
            .filter(|k| !self.binaries.contains_key(k))
            .collect();
        let this = &*self;
        let built = crate::exec::parallel(&todo, |k| {
            this.build_one(&runner, k.0, k.1, &k.2)
                .ok()
                .map(|p| (**k, p))
        });
        self.binaries.extend(built.into_iter().flatten());
    }

    pub fn scratch(&self) -> &Path {
        self.dir.path()
    }
}

impl Executor for HostExecutor {
    fn describe(&self) -> String {
        format!("host C++ ({})", self.cxx.display())
    }
    fn backend(&self) -> Backend {
        Backend::Host
    }
    fn warp(&self) -> u32 {
        1
    }
    fn sms(&self) -> u32 {
        std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1)
    }

    fn prepare(&mut self, list: &[(Op, DType, Config)]) {
        self.precompile(list);
    }

    fn run(
        &mut self,
        op: Op,
        dtype: DType,
        cfg: &Config,
        case: &Case,
    ) -> Result<Vec<f32>, RunError> {
        let exe = self.compile(op, dtype, cfg)?;
        let input = self.dir.path().join("in.bin");
        let output = self.dir.path().join("out.bin");
        let mut bytes = encode(&case.a, dtype);
        bytes.extend(encode(&case.b, dtype));
        std::fs::write(&input, &bytes).map_err(|e| RunError::Io {
            path: input.clone(),
            source: e,
        })?;
        let _ = std::fs::remove_file(&output);
        let grid = cfg.grid(case.shape, self.sms());
        let mut cmd = Command::new(&exe);
        cmd.arg(&input).arg(&output).arg(grid.to_string());
        match case.shape {
            Shape::Flat(n) => {
                cmd.arg(n.to_string());
            }
            Shape::Rows { rows, cols } => {
                cmd.arg(rows.to_string())
                    .arg(cols.to_string())
                    .arg(format!("{:e}", case.eps));
            }
        }
        let out = run_tool(cmd, RUN_TIMEOUT, &exe.display().to_string())?;
        if !out.success() {
            let status = out
                .status
                .map(|s| s.to_string())
                .unwrap_or_else(|| "no exit status".into());
            return Err(RunError::Exec {
                what: format!("{} ({}, {})", source_file(op), dtype.as_str(), cfg.label()),
                message: format!("{status}; {}", out.stderr.trim()),
            });
        }
        let raw = std::fs::read(&output).map_err(|e| RunError::Io {
            path: output.clone(),
            source: e,
        })?;
        if op == Op::QuantizeFp8 {
            let n = case.shape.elements() as usize;
            let (q, s) = raw.split_at(n.min(raw.len()));
            return Ok(crate::cuda::decode_output(
                op,
                dtype,
                case.shape,
                crate::kernels::fp8_encoding(cfg, Backend::Host),
                q,
                s,
            ));
        }
        Ok(if op == Op::ReduceSum {
            decode(&raw, DType::F32)
        } else {
            decode(&raw, dtype)
        })
    }
}
