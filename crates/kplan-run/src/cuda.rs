//! CUDA backend through dynamic loading (cudarc): libnvrtc compiles the kernel source with the
//! header at run time, libcuda loads and launches it. Nothing CUDA is needed to build kplan; a
//! machine without libcuda, libnvrtc or a GPU gets a skip with the reason.

use crate::cpu::scratch_dir;
use crate::error::RunError;
use crate::exec::{decode, encode, Case, Executor};
use crate::kernels::{source_file, Backend, Config, KernelSources, Shape};
use crate::reference::{DType, Op};
use crate::skip::Skip;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Where libnvrtc may live besides the loader's search path: the discovery `kplan build` and
/// `kplan doctor` use ([`kplan_build::toolchain::nvrtc_candidates`]).
fn nvrtc_candidates() -> Vec<PathBuf> {
    kplan_build::toolchain::nvrtc_candidates()
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

/// Loads libnvrtc (once); Err is the reason it cannot be used.
pub fn nvrtc_status() -> Result<String, String> {
    static STATUS: OnceLock<Result<String, String>> = OnceLock::new();
    STATUS
        .get_or_init(|| {
            // Pre-load from a known location so cudarc's lookup by soname finds it loaded.
            for p in nvrtc_candidates() {
                if p.is_file() {
                    // libnvrtc opens its builtins library by name at compile time: load the one
                    // beside it first so that lookup finds it.
                    if let Some(dir) = p.parent() {
                        if let Ok(rd) = std::fs::read_dir(dir) {
                            for e in rd.flatten() {
                                let n = e.file_name().to_string_lossy().into_owned();
                                if n.starts_with("libnvrtc-builtins.so") {
                                    // SAFETY: as below.
                                    if let Ok(lib) = unsafe { libloading::Library::new(e.path()) } {
                                        std::mem::forget(lib);
                                    }
                                }
                            }
                        }
                    }
                    // SAFETY: loading libnvrtc runs only its initialisers; the handle is leaked
                    // on purpose so the library stays loaded for the process.
                    if let Ok(lib) = unsafe { libloading::Library::new(&p) } {
                        std::mem::forget(lib);
                        return Ok(p.display().to_string());
                    }
                }
            }
            // SAFETY: only probes whether the library can be opened.
            if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
                Ok("libnvrtc (loader path)".to_string())
            } else {
                Err("libnvrtc not found (install the nvidia-cuda-nvrtc wheel or the CUDA toolkit, or set KPLAN_NVRTC to libnvrtc.so)".to_string())
            }
        })
        .clone()
}

/// Compiles `op` for `arch` (e.g. `compute_90`) with NVRTC; returns the PTX text.
pub fn compile_ptx(
    include_dir: &Path,
    op: Op,
    dtype: DType,
    cfg: &Config,
    arch: &str,
) -> Result<String, RunError> {
    nvrtc_status().map_err(|m| RunError::Exec {
        what: "NVRTC".into(),
        message: m,
    })?;
    let src_path = include_dir.join(source_file(op));
    let src = std::fs::read_to_string(&src_path).map_err(|e| RunError::Io {
        path: src_path.clone(),
        source: e,
    })?;
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        format!("--include-path={}", include_dir.display()),
    ];
    for (k, v) in cfg.defines(dtype) {
        options.push(format!("-D{k}={v}"));
    }
    let opts = cudarc::nvrtc::CompileOptions {
        options,
        name: Some(source_file(op).to_string()),
        ..Default::default()
    };
    match cudarc::nvrtc::compile_ptx_with_opts(src, opts) {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(cudarc::nvrtc::CompileError::CompileError { log, .. }) => Err(RunError::Compile {
            compiler: "NVRTC".into(),
            what: format!(
                "{} ({}, {}, {arch})",
                source_file(op),
                dtype.as_str(),
                cfg.label()
            ),
            log: log.to_string_lossy().into_owned(),
        }),
        Err(e) => Err(RunError::Compile {
            compiler: "NVRTC".into(),
            what: format!("{} ({}, {})", source_file(op), dtype.as_str(), cfg.label()),
            log: format!("{e:?}"),
        }),
    }
}

fn cu(what: &str) -> impl Fn(cudarc::driver::DriverError) -> RunError + '_ {
    move |e| {
        let msg = e
            .error_string()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        RunError::Cuda {
            what: what.to_string(),
            message: format!("{:?} {msg}", e.0),
        }
    }
}

/// A GPU that can run the kernels: context, stream, device facts and compiled modules.
pub struct CudaExecutor {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub name: String,
    pub cc: (i32, i32),
    pub sm_count: u32,
    pub l2_bytes: u64,
    dir: tempfile::TempDir,
    modules: HashMap<(Op, DType, Config), Arc<CudaModule>>,
}

/// Device 0 as every CUDA backend uses it: its context with one stream (cudarc's cross-stream
/// event tracking off), its name and compute capability.
pub struct Device {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub name: String,
    pub cc: (i32, i32),
}

/// Opens device 0: libcuda present, libnvrtc loadable, a context. `Ok(Err(skip))` names what is
/// missing here (a skip, not a failure).
pub fn open_device() -> Result<Result<Device, Skip>, RunError> {
    // SAFETY: only probes whether libcuda can be opened.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Ok(Err(Skip::new(
            "libcuda not found (no NVIDIA driver on this machine)",
        )));
    }
    if let Err(m) = nvrtc_status() {
        return Ok(Err(Skip::new(m)));
    }
    let ctx = match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => return Ok(Err(Skip::new(format!("no usable CUDA device: {:?}", e.0)))),
    };
    // One stream: cudarc's cross-stream event tracking is not needed and would add events.
    // SAFETY: every buffer is used on this one stream only.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.default_stream();
    let name = ctx.name().map_err(cu("cuDeviceGetName"))?;
    let cc = ctx.compute_capability().map_err(cu("compute capability"))?;
    Ok(Ok(Device {
        ctx,
        stream,
        name,
        cc,
    }))
}

impl CudaExecutor {
    /// Opens device 0. `Ok(Err(skip))` when CUDA is not usable here (skip, not failure).
    pub fn open(sources: &KernelSources) -> Result<Result<CudaExecutor, Skip>, RunError> {
        let dev = match open_device()? {
            Ok(d) => d,
            Err(skip) => return Ok(Err(skip)),
        };
        use cudarc::driver::sys::CUdevice_attribute as A;
        let sm_count = dev
            .ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(cu("SM count"))? as u32;
        let l2_bytes = dev
            .ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .map_err(cu("L2 size"))? as u64;
        let dir = scratch_dir("cuda")?;
        sources.materialize_nvrtc(dir.path())?;
        Ok(Ok(CudaExecutor {
            ctx: dev.ctx,
            stream: dev.stream,
            name: dev.name,
            cc: dev.cc,
            sm_count,
            l2_bytes,
            dir,
            modules: HashMap::new(),
        }))
    }

    pub fn arch(&self) -> String {
        format!("compute_{}{}", self.cc.0, self.cc.1)
    }

    /// Driver version as "13.0".
    pub fn driver_version(&self) -> String {
        let mut v = 0i32;
        // SAFETY: writes one int.
        let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
        if r == cudarc::driver::sys::CUresult::CUDA_SUCCESS {
            format!("{}.{}", v / 1000, (v % 1000) / 10)
        } else {
            "unknown".into()
        }
    }

    pub fn function(
        &mut self,
        op: Op,
        dtype: DType,
        cfg: &Config,
        name: &str,
    ) -> Result<CudaFunction, RunError> {
        let key = (op, dtype, *cfg);
        if !self.modules.contains_key(&key) {
            let ptx = compile_ptx(self.dir.path(), op, dtype, cfg, &self.arch())?;
            let m = self
                .ctx
                .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
                .map_err(cu("cuModuleLoadData"))?;
            self.modules.insert(key, m);
        }
        self.modules[&key]
            .load_function(name)
            .map_err(cu("cuModuleGetFunction"))
    }

    pub fn upload(&self, bytes: &[u8]) -> Result<CudaSlice<u8>, RunError> {
        let mut b = self.alloc(bytes.len().max(16))?;
        if !bytes.is_empty() {
            self.stream
                .memcpy_htod(bytes, &mut b.slice_mut(..bytes.len()))
                .map_err(cu("memcpy HtoD"))?;
        }
        Ok(b)
    }

    pub fn alloc(&self, bytes: usize) -> Result<CudaSlice<u8>, RunError> {
        // SAFETY: the contents are written (poisoned or uploaded) before any read.
        unsafe { self.stream.alloc::<u8>(bytes.max(16)) }.map_err(cu("cuMemAlloc"))
    }

    /// Buffer filled with 0xff bytes (NaN in fp32 and bf16): unwritten outputs show up.
    pub fn poisoned(&self, bytes: usize) -> Result<CudaSlice<u8>, RunError> {
        self.upload(&vec![0xffu8; bytes.max(16)])
    }

    /// Launches `op` on device buffers (no synchronisation). `b` is add's b or rmsnorm's weight;
    /// `partials` holds at least `grid` floats for reduce_sum.
    #[allow(clippy::too_many_arguments)]
    pub fn launch(
        &mut self,
        op: Op,
        dtype: DType,
        cfg: &Config,
        shape: Shape,
        eps: f32,
        a: &CudaSlice<u8>,
        b: &CudaSlice<u8>,
        out: &mut CudaSlice<u8>,
        partials: &mut CudaSlice<u8>,
    ) -> Result<(), RunError> {
        let grid = cfg.grid(shape, self.sm_count);
        let lc = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (cfg.block, 1, 1),
            shared_mem_bytes: 0,
        };
        let stream = self.stream.clone();
        // Launches kernel `$f` with `$lc` and the arguments in order.
        macro_rules! launch {
            ($f:expr, $lc:expr; $($arg:expr),+ $(,)?) => {{
                let f: &CudaFunction = &$f;
                let lc: LaunchConfig = $lc;
                let mut args = stream.launch_builder(f);
                $(args.arg($arg);)+
                // SAFETY: every call below passes the arguments of its kernel's signature in
                // order (kernels/*.cu), and the buffers hold what the kernel reads and writes
                // for this shape (`out_bytes`, `partials_bytes`).
                unsafe { args.launch(lc) }.map_err(cu("launch"))?;
            }};
        }
        let (r, c) = match shape {
            Shape::Rows { rows, cols } => (rows as i32, cols as i32),
            Shape::Flat(_) => (0, 0),
        };
        match (op, shape) {
            (Op::ReduceSum, Shape::Flat(n)) => {
                let f = self.function(op, dtype, cfg, "kplan_reduce_sum_partial")?;
                let g = self.function(op, dtype, cfg, "kplan_reduce_sum_final")?;
                let one = LaunchConfig {
                    grid_dim: (1, 1, 1),
                    ..lc
                };
                let (n, count) = (n as i64, grid as i32);
                launch!(f, lc; a, &n, &mut *partials);
                launch!(g, one; &*partials, &count, out);
            }
            (Op::Add, Shape::Flat(n)) => {
                let f = self.function(op, dtype, cfg, "kplan_add")?;
                let n = n as i64;
                launch!(f, lc; a, b, out, &n);
            }
            (Op::Softmax, Shape::Rows { .. }) => {
                let f = self.function(op, dtype, cfg, "kplan_softmax")?;
                launch!(f, lc; a, out, &r, &c);
            }
            (Op::Rmsnorm, Shape::Rows { .. }) => {
                let f = self.function(op, dtype, cfg, "kplan_rmsnorm")?;
                launch!(f, lc; a, b, out, &r, &c, &eps);
            }
            (Op::QuantizeFp8, Shape::Rows { .. }) => {
                // codes into `out`, one scale per row into `partials` (at least `rows` floats)
                let f = self.function(op, dtype, cfg, "kplan_quantize_fp8")?;
                launch!(f, lc; a, out, &mut *partials, &r, &c);
            }
            _ => {
                return Err(RunError::Exec {
                    what: op.as_str().into(),
                    message: "shape does not fit the kernel".into(),
                })
            }
        }
        Ok(())
    }

    pub fn sync(&self) -> Result<(), RunError> {
        self.stream.synchronize().map_err(cu("kernel execution"))
    }
}

impl Executor for CudaExecutor {
    fn describe(&self) -> String {
        format!(
            "{} (sm_{}{}, {} SMs)",
            self.name, self.cc.0, self.cc.1, self.sm_count
        )
    }
    fn backend(&self) -> Backend {
        Backend::Cuda
    }
    fn warp(&self) -> u32 {
        32
    }
    fn sms(&self) -> u32 {
        self.sm_count
    }

    fn run(
        &mut self,
        op: Op,
        dtype: DType,
        cfg: &Config,
        case: &Case,
    ) -> Result<Vec<f32>, RunError> {
        let a = self.upload(&encode(&case.a, dtype))?;
        let b = self.upload(&encode(&case.b, dtype))?;
        let out_bytes = out_bytes(op, dtype, case.shape);
        let mut out = self.poisoned(out_bytes)?;
        let grid = cfg.grid(case.shape, self.sm_count) as usize;
        let mut partials = self.poisoned(partials_bytes(op, case.shape, grid))?;
        self.launch(
            op,
            dtype,
            cfg,
            case.shape,
            case.eps,
            &a,
            &b,
            &mut out,
            &mut partials,
        )?;
        self.sync()?;
        let host = self.stream.clone_dtoh(&out).map_err(cu("memcpy DtoH"))?;
        let second = if op == Op::QuantizeFp8 {
            self.stream
                .clone_dtoh(&partials)
                .map_err(cu("memcpy DtoH"))?
        } else {
            Vec::new()
        };
        Ok(decode_output(
            op,
            dtype,
            case.shape,
            crate::kernels::fp8_encoding(cfg, Backend::Cuda),
            &host[..out_bytes],
            &second,
        ))
    }
}

/// Bytes of a launch's main output: reduce_sum one fp32, quantize_fp8 one byte per element,
/// the others one element of `dtype` per input element.
pub fn out_bytes(op: Op, dtype: DType, shape: Shape) -> usize {
    match op {
        Op::ReduceSum => 4,
        Op::QuantizeFp8 => shape.elements() as usize,
        _ => shape.elements() as usize * dtype.bytes(),
    }
}

/// Bytes of the second buffer: reduce_sum's per-block partials, quantize_fp8's row scales.
pub fn partials_bytes(op: Op, shape: Shape, grid: usize) -> usize {
    match (op, shape) {
        (Op::QuantizeFp8, Shape::Rows { rows, .. }) => rows * 4,
        _ => grid * 4,
    }
}

/// A launch's output as `f32`: quantize_fp8 gives the decoded codes followed by the row scales
/// (`second`), reduce_sum its one fp32, the others their elements.
pub fn decode_output(
    op: Op,
    dtype: DType,
    shape: Shape,
    enc: crate::reference::Fp8Encoding,
    main: &[u8],
    second: &[u8],
) -> Vec<f32> {
    match (op, shape) {
        (Op::ReduceSum, _) => decode(main, DType::F32),
        (Op::QuantizeFp8, Shape::Rows { rows, .. }) => {
            let mut v: Vec<f32> = main
                .iter()
                .map(|&c| crate::reference::fp8_to_f32(c, enc))
                .collect();
            v.extend(decode(&second[..(rows * 4).min(second.len())], DType::F32));
            v
        }
        _ => decode(main, dtype),
    }
}
