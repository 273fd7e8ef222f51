//! What a backend runs: one kernel launch on one case, outputs decoded to `f32`.

use crate::error::RunError;
use crate::kernels::{verify_configs, Backend, Config, Shape, Tiles};
use crate::reference::{f32_to_bf16, DType, Op};

/// Inputs of one kernel run, already rounded to the storage type.
#[derive(Debug, Clone)]
pub struct Case {
    pub shape: Shape,
    /// x (reduce_sum, softmax, rmsnorm) or a (add).
    pub a: Vec<f32>,
    /// b (add), weight (rmsnorm), empty otherwise.
    pub b: Vec<f32>,
    /// rmsnorm epsilon.
    pub eps: f32,
}

/// A backend able to run the reference kernels.
pub trait Executor {
    /// Human description: compiler or device name.
    fn describe(&self) -> String;
    fn backend(&self) -> Backend;
    /// Warp size the kernels are compiled with (1 on the host).
    fn warp(&self) -> u32;
    /// Multiprocessors (grid sizing of flat kernels).
    fn sms(&self) -> u32;
    /// The configurations verify runs on `shape`, each with why it does not fit (None: it
    /// runs): by default the kernels' own ([`verify_configs`]: the chosen default, then the
    /// tiles.toml list).
    fn configs(
        &self,
        tiles: &Tiles,
        op: Op,
        dtype: DType,
        shape: Shape,
    ) -> Vec<(Config, Option<String>)> {
        verify_configs(tiles, self.backend(), op, dtype, shape, self.warp())
    }
    /// A configuration's name in reports.
    fn label(&self, cfg: &Config) -> String {
        cfg.label()
    }
    /// Compiles ahead what `run` will need (in parallel where the backend can).
    fn prepare(&mut self, _list: &[(Op, DType, Config)]) {}
    /// Runs `op` with `cfg` on `case`; returns the output (one value for reduce_sum).
    fn run(
        &mut self,
        op: Op,
        dtype: DType,
        cfg: &Config,
        case: &Case,
    ) -> Result<Vec<f32>, RunError>;
}

/// Little-endian storage bytes of `v` in `dtype`.
pub fn encode(v: &[f32], dtype: DType) -> Vec<u8> {
    match dtype {
        DType::F32 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::Bf16 => v
            .iter()
            .flat_map(|x| f32_to_bf16(*x).to_le_bytes())
            .collect(),
    }
}

/// Decodes storage bytes of `dtype` to `f32`.
pub fn decode(bytes: &[u8], dtype: DType) -> Vec<f32> {
    match dtype {
        DType::F32 => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        DType::Bf16 => bytes
            .chunks_exact(2)
            .map(|c| crate::reference::bf16_to_f32(u16::from_le_bytes([c[0], c[1]])))
            .collect(),
    }
}

/// `f` over every job on up to 8 threads (each job typically runs a compiler), the results in no
/// particular order.
pub(crate) fn parallel<T: Sync, R: Send>(jobs: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, 8);
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || jobs.iter().skip(t).step_by(threads).map(f).collect()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| Vec::new()))
            .collect()
    })
}
