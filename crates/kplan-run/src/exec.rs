//! What a backend runs: one kernel launch on one case, outputs decoded to `f32`.

use crate::error::RunError;
use crate::kernels::{Backend, Config, Shape};
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
