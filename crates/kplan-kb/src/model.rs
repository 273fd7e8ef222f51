use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use strum::{AsRefStr, EnumIter, EnumString, IntoStaticStr};

/// One sourced fact. `value: None` means the fact was looked for and not found (the `note`
/// says why); consumers must then say "unknown", never guess.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fact<T> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<T>,
    /// Key into `sources.toml`.
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl<T: Copy> Fact<T> {
    pub fn get(&self) -> Option<T> {
        self.value
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[derive(EnumIter, AsRefStr, IntoStaticStr, strum::Display, EnumString)]
#[strum(serialize_all = "kebab-case")]
pub enum Vendor {
    Nvidia,
    Amd,
    Intel,
    Apple,
    Cpu,
}

impl Vendor {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Numeric data types: the ones the KB records peak rates for ([`Dtype::PEAK`]) and the
/// integer and narrow float types kernels also store (no peak table: their rates stay unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[derive(EnumIter, AsRefStr, IntoStaticStr, strum::Display, EnumString)]
#[strum(serialize_all = "kebab-case")]
pub enum Dtype {
    Fp64,
    Fp32,
    Tf32,
    Fp16,
    Bf16,
    Fp8,
    Int8,
    /// OCP FP6 (e2m3 / e3m2), 6 bits.
    Fp6,
    /// FP4 e2m1, 4 bits (NVFP4 and MXFP4 are block-scaled forms of it).
    Fp4,
    Int4,
    Uint8,
    Int16,
    Uint16,
    Int32,
    Uint32,
    Int64,
    Uint64,
}

impl Dtype {
    /// The dtypes with a peak-rate table (`peak_tflops.<dtype>` in devices.toml).
    pub const PEAK: [Dtype; 7] = [
        Dtype::Fp64,
        Dtype::Fp32,
        Dtype::Tf32,
        Dtype::Fp16,
        Dtype::Bf16,
        Dtype::Fp8,
        Dtype::Int8,
    ];
    pub fn as_str(self) -> &'static str {
        self.into()
    }
    pub fn parse(s: &str) -> Option<Dtype> {
        s.parse().ok()
    }
    /// Storage size in bits.
    pub fn bits(self) -> u32 {
        match self {
            Dtype::Fp64 | Dtype::Int64 | Dtype::Uint64 => 64,
            Dtype::Fp32 | Dtype::Tf32 | Dtype::Int32 | Dtype::Uint32 => 32,
            Dtype::Fp16 | Dtype::Bf16 | Dtype::Int16 | Dtype::Uint16 => 16,
            Dtype::Fp8 | Dtype::Int8 | Dtype::Uint8 => 8,
            Dtype::Fp6 => 6,
            Dtype::Fp4 | Dtype::Int4 => 4,
        }
    }
    /// Storage size in bytes, rounded up to a whole byte (4- and 6-bit types: 1). Traffic
    /// models use [`Dtype::size`], which keeps the fraction.
    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }
    /// Storage size in bytes as a fraction (int4/fp4: 0.5, fp6: 0.75): packed storage.
    pub fn size(self) -> f64 {
        self.bits() as f64 / 8.0
    }
    /// Whether the type is an integer type.
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            Dtype::Int4
                | Dtype::Int8
                | Dtype::Uint8
                | Dtype::Int16
                | Dtype::Uint16
                | Dtype::Int32
                | Dtype::Uint32
                | Dtype::Int64
                | Dtype::Uint64
        )
    }
    /// Whether the type has a peak-rate table in the KB.
    pub fn has_peak_table(self) -> bool {
        Dtype::PEAK.contains(&self)
    }
}

/// A compile architecture (what a compiler targets): `sm_90a`, `gfx942`, `cpu-x86_64-avx2`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arch {
    pub id: String,
    pub vendor: Vendor,
    /// Human name of the generation: "Hopper", "CDNA3", "RDNA3", "x86-64 AVX2".
    pub family: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Device whose numbers the plan uses when a spec names only this architecture.
    #[serde(default)]
    pub reference_device: Option<String>,
    /// What the compiler is given: `sm_90a` for nvcc, `gfx942` for `--offload-arch`.
    #[serde(default)]
    pub compile_target: Option<String>,
    /// Default warp / wavefront / sub-group size (CPU: 1 lane per "warp").
    pub warp_size: Fact<u32>,
    /// Every size the hardware can run (RDNA: [32, 64]); empty = only `warp_size`.
    #[serde(default)]
    pub warp_sizes: Vec<u32>,
    pub max_threads_per_block: Fact<u32>,
    /// Largest shared memory / LDS one block can get (after opt-in where one is needed).
    pub shared_per_block_bytes: Fact<u64>,
    /// Shared memory a block gets without opt-in (NVIDIA: 48 KiB), if different.
    #[serde(default)]
    pub shared_per_block_default_bytes: Option<Fact<u64>>,
    pub shared_per_sm_bytes: Fact<u64>,
    pub shared_banks: Fact<u32>,
    /// 32-bit registers per SM / CU (VGPR file / 4 bytes on AMD).
    pub registers_per_sm: Fact<u64>,
    pub max_registers_per_thread: Fact<u32>,
    pub max_threads_per_sm: Fact<u32>,
    pub max_blocks_per_sm: Fact<u32>,
    /// "CUDA 11.8", "ROCm 6.0.0"; CPU: the compiler flag set.
    pub min_toolchain: Fact<String>,
    /// CPU only: SIMD width in bits.
    #[serde(default)]
    pub simd_bits: Option<Fact<u32>>,
    /// Resident warps (wavefronts) per SM / CU.
    #[serde(default)]
    pub max_warps_per_sm: Option<Fact<u32>>,
    /// Shared memory the driver reserves per resident block (NVIDIA CC >= 8.0: 1 KiB).
    #[serde(default)]
    pub shared_reserved_per_block_bytes: Option<Fact<u64>>,
    /// Shared memory / LDS is allocated to a block in multiples of this many bytes.
    #[serde(default)]
    pub shared_alloc_granularity_bytes: Option<Fact<u32>>,
    /// Register allocation granule: registers per warp (NVIDIA: 256) or VGPRs per lane (AMD).
    #[serde(default)]
    pub register_alloc_granularity: Option<Fact<u32>>,
    /// NVIDIA: SM sub-partitions (register file split, warp schedulers).
    #[serde(default)]
    pub sm_sub_partitions: Option<Fact<u32>>,
    /// AMD: SIMD units per CU (RDNA: per CU; a WGP holds `cus_per_wgp` CUs).
    #[serde(default)]
    pub simds_per_cu: Option<Fact<u32>>,
    /// AMD: most wavefronts one SIMD keeps resident.
    #[serde(default)]
    pub max_waves_per_simd: Option<Fact<u32>>,
    /// AMD: VGPRs per SIMD lane shared by the waves on that SIMD (the VGPR budget for occupancy).
    #[serde(default)]
    pub vgprs_per_simd_lane: Option<Fact<u32>>,
    /// AMD RDNA: CUs per work-group processor (a HIP workgroup runs on a WGP by default).
    #[serde(default)]
    pub cus_per_wgp: Option<Fact<u32>>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// A physical product with per-device numbers, mapped to one architecture.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Device {
    pub id: String,
    pub name: String,
    pub arch: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// SMs (NVIDIA), CUs (AMD), Xe-cores (Intel), GPU cores (Apple), cores (CPU).
    pub compute_units: Fact<u32>,
    pub l2_bytes: Fact<u64>,
    /// Infinity Cache / SLC, where one exists.
    #[serde(default)]
    pub llc_bytes: Option<Fact<u64>>,
    pub memory_bytes: Fact<u64>,
    /// Datasheet peak DRAM/HBM bandwidth, GB/s (10^9 bytes/s).
    pub bandwidth_gbs: Fact<f64>,
    /// Peak (boost) SM / CU clock in MHz, where sourced or derivable from per-clock rates.
    #[serde(default)]
    pub clock_mhz: Option<Fact<f64>>,
    /// Memory clock in MHz and bus width in bits (bandwidth = 2 x clock x width / 8 on HBM).
    #[serde(default)]
    pub memory_clock_mhz: Option<Fact<f64>>,
    #[serde(default)]
    pub memory_bus_bits: Option<Fact<u32>>,
    /// Dense peak TFLOP/s (TOP/s for int8) per dtype, matrix units where they exist.
    #[serde(default)]
    pub peak_tflops: BTreeMap<Dtype, Fact<f64>>,
    /// Vector (non-matrix) peaks, where the source gives them separately.
    #[serde(default)]
    pub peak_vector_tflops: BTreeMap<Dtype, Fact<f64>>,
    /// Multi-die packages the runtime shows as several devices (MI250X: 2 GCDs): how many. One
    /// kernel launch runs on one of them, so plans use the per-die share of the package figures.
    #[serde(default)]
    pub dies_per_package: Option<Fact<u32>>,
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Device {
    /// The kind of device memory the bandwidth figure is for, from the KB's memory note:
    /// `HBM` (HBM2e/HBM3/HBM3e), `GDDR` (GDDR6/6X/7) or, where the note names neither, the
    /// neutral `DRAM`. Plans say "DRAM roofline" for GDDR parts, not "HBM".
    pub fn memory_kind(&self) -> &'static str {
        let note = self
            .memory_bytes
            .note
            .as_deref()
            .unwrap_or_default()
            .to_ascii_uppercase();
        if note.contains("HBM") {
            "HBM"
        } else if note.contains("GDDR") {
            "GDDR"
        } else {
            "DRAM"
        }
    }
    /// The word for the roofline's memory in plan text: `HBM` on HBM parts, `DRAM` otherwise.
    pub fn roofline_memory(&self) -> &'static str {
        match self.memory_kind() {
            "HBM" => "HBM",
            _ => "DRAM",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[derive(EnumIter, AsRefStr, IntoStaticStr, strum::Display, EnumString)]
#[strum(serialize_all = "kebab-case")]
pub enum Availability {
    Yes,
    No,
    /// Available with a caveat the note spells out (e.g. emulated, only some variants).
    Partial,
    Unknown,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Support {
    pub status: Availability,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_toolchain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub source: String,
}

/// A hardware/toolchain feature a kernel may need (`wgmma`, `fp8-matrix`, `warp-shuffle`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Feature {
    pub id: String,
    pub name: String,
    pub description: String,
    /// Which vendor's programming model the feature belongs to ("nvidia", "amd", "portable").
    pub origin: String,
    /// What to do where it is missing: the software fallback and its documented penalty.
    #[serde(default)]
    pub fallback: Option<String>,
    /// Other names a spec may use for this feature (`warp-shuffles`, `matrix-cores`).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// A generic feature (`tensor-cores`, `fp8`) is the first of these member features that
    /// a target has; its support is derived from theirs when the KB loads (no own table).
    #[serde(default)]
    pub members: Vec<String>,
    /// Availability per architecture id; an architecture not listed is `Unknown`.
    #[serde(default)]
    pub support: BTreeMap<String, Support>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub title: String,
    #[serde(default)]
    pub url: Option<String>,
    /// Repository path and commit, where the source is a file in a public repository.
    #[serde(default)]
    pub locator: Option<String>,
    /// vendor | third-party | measured | derived | compiler
    pub kind: String,
}

impl Source {
    pub const KINDS: [&'static str; 5] =
        ["vendor", "third-party", "measured", "derived", "compiler"];
}

/// The whole knowledge base.
#[derive(Debug, Clone)]
pub struct Kb {
    pub archs: Vec<Arch>,
    pub devices: Vec<Device>,
    pub features: Vec<Feature>,
    pub sources: BTreeMap<String, Source>,
    /// Measured kernel results (measurements.toml); may be empty.
    pub measurements: Vec<Measurement>,
    /// What is known about each operation class (ops.toml); may be empty.
    pub ops: Vec<OpInfo>,
}

/// The operation knowledge of one op class (ops.toml).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpInfo {
    /// The spec's op class (`scan`, `spmv`, ...).
    pub id: String,
    pub name: String,
    /// What makes it latency-bound, and what to do then.
    pub latency_bound: String,
    /// The tile heuristic the plan's tile section follows.
    pub tile_hint: String,
    /// How the CPU fallback is compared with the GPU kernels for this op (what must match: a
    /// permutation bit for bit, counts exactly, sums within an order-dependent tolerance): the
    /// `cpu-fallback-drift` risk's mitigation for the op. `None`: the generic wording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_reference: Option<String>,
    /// An operation that is no op class of the spec (kplan has no work model for it) but whose
    /// libraries, algorithms and risks the knowledge base knows: a spec naming it is planned as
    /// a custom op with this entry's knowledge.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub knowledge_only: bool,
    /// For a `knowledge_only` entry that is a variant of an op class (`mla` of `attention`,
    /// `structured-sparse-gemm` of `gemm`): that class, whose work model (FLOPs, bytes, problem
    /// keys, tiles) the plan keeps while the libraries, algorithms and risks come from this entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
    /// Other names of the operation (`top-p-sampling` for `sampling`): a spec naming one is
    /// planned as this op class (or, for a `knowledge_only` entry, as a custom op with it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub library: Vec<OpLibrary>,
    #[serde(default)]
    pub algorithm: Vec<OpAlgorithm>,
    #[serde(default)]
    pub risk: Vec<OpRisk>,
}

impl OpInfo {
    pub const VENDORS: [&'static str; 4] = ["nvidia", "amd", "cpu", "any"];
    pub const ROLES: [&'static str; 2] = ["reuse", "baseline"];
    /// Libraries that run on `vendor` (its own and the `any` ones).
    pub fn libraries_for<'a>(
        &'a self,
        vendor: &'a str,
    ) -> impl Iterator<Item = &'a OpLibrary> + 'a {
        self.library
            .iter()
            .filter(move |l| l.vendor == vendor || l.vendor == "any")
    }
}

/// A library that implements an op class on one backend.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpLibrary {
    pub name: String,
    /// nvidia | amd | cpu | any
    pub vendor: String,
    /// `reuse`: one call implements the whole op; `baseline`: a library to fuse around or beat.
    pub role: String,
    /// What it covers.
    pub covers: String,
    /// The first version with this coverage, where a source gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_version: Option<String>,
    pub source: String,
    /// What the library is: `vendor` (shipped with the vendor's toolkit: cuBLAS, CUB, rocPRIM,
    /// oneDNN) or `kernel-library` (an open-source kernel library: CUTLASS, CK, FlashAttention).
    #[serde(default)]
    pub kind: LibraryKind,
    /// The abstraction level a team allows when it allows this library, for a library that is
    /// compiled into the team's own code (`cutlass`, `composable-kernel`); none: a library
    /// called as a library (allowed with `vendor-library`). Either allowance admits it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstraction: Option<String>,
    /// Where one call of the library covers the spec (a condition in the grammar of the
    /// risks' `when`: dtypes, layout, fusion, page size, group size, latency budget); none: every
    /// spec of the op. Where it does not hold, the library is the baseline, not the reuse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// What the library lacks where `when` does not hold, said in the plan (same source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
    /// How a call gets run-to-run identical results where the library's default is not (an
    /// atomic or split reduction): the switch and its cost; none: the KB knows no such switch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deterministic: Option<String>,
    /// The source of `deterministic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deterministic_source: Option<String>,
}

/// What a library is, for labelling a plan's reuse (never "BLAS" for a non-BLAS library).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LibraryKind {
    /// Shipped with the vendor's toolkit (cuBLAS, CUB, rocBLAS, rocPRIM).
    #[default]
    Vendor,
    /// The vendor's, but a separate download with its own versions (cuDNN, NCCL, cuSPARSELt).
    Separate,
    KernelLibrary,
}

impl LibraryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LibraryKind::Vendor => "vendor library",
            LibraryKind::Separate => "vendor library, separate download",
            LibraryKind::KernelLibrary => "open-source kernel library",
        }
    }
}

/// An algorithm family and when it is the right one.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpAlgorithm {
    pub name: String,
    pub when: String,
    pub source: String,
}

/// A hazard specific to the op class.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpRisk {
    pub id: String,
    /// `forward` or `backward` where the hazard belongs to one direction only; none: both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    /// Where the hazard applies: a condition over the problem sizes, modifiers, dtypes and
    /// targets (the grammar is kplan-plan's `decide::when`); none: every spec of the op.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    pub title: String,
    pub why: String,
    pub mitigation: String,
    pub source: String,
}

impl Kb {
    /// What the KB knows about an op class.
    pub fn op_info(&self, id: &str) -> Option<&OpInfo> {
        self.ops.iter().find(|o| o.id == id)
    }
    pub fn arch(&self, id: &str) -> Option<&Arch> {
        self.archs.iter().find(|a| a.id == id)
    }
    pub fn device(&self, id: &str) -> Option<&Device> {
        self.devices.iter().find(|d| d.id == id)
    }
    pub fn feature(&self, id: &str) -> Option<&Feature> {
        self.features.iter().find(|f| f.id == id)
    }
    /// The feature with this id or alias (case-insensitive).
    pub fn feature_named(&self, name: &str) -> Option<&Feature> {
        let n = name.trim();
        self.features.iter().find(|f| {
            f.id.eq_ignore_ascii_case(n) || f.aliases.iter().any(|a| a.eq_ignore_ascii_case(n))
        })
    }
    pub fn source(&self, key: &str) -> Option<&Source> {
        self.sources.get(key)
    }
    /// Availability of `feature` on `arch`; `Unknown` when the KB has no entry.
    pub fn support(&self, feature: &str, arch: &str) -> Option<&Support> {
        self.feature(feature)?.support.get(arch)
    }
    pub fn availability(&self, feature: &str, arch: &str) -> Availability {
        self.support(feature, arch)
            .map(|s| s.status)
            .unwrap_or(Availability::Unknown)
    }
}

/// A measured kernel result the plan can quote next to its roofline expectation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measurement {
    /// Unique id, e.g. `h200-rmsnorm-bf16-16384x8192-kplan-cuda`.
    pub id: String,
    /// Kernel name: `reduce_sum`, `softmax`, `rmsnorm`, `add`, ...
    pub kernel: String,
    /// Spec op class: one of [`Measurement::OPS`].
    pub op: String,
    /// What ran: `kplan-cuda`, `kplan-triton`, `torch`, ...
    pub implementation: String,
    /// Device id (devices.toml).
    pub device: String,
    /// Storage dtype (one of the KB's dtypes).
    pub dtype: String,
    /// Problem sizes, e.g. `{ rows = 16384, cols = 8192 }`.
    #[serde(default)]
    pub shape: BTreeMap<String, u64>,
    pub achieved: f64,
    /// `GB/s` or `TFLOP/s`.
    pub unit: String,
    /// `achieved` / the device's datasheet peak for that unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction_of_peak: Option<f64>,
    /// When it was measured (YYYY-MM-DD).
    pub date: String,
    /// The committed command that produced it.
    pub command: String,
    /// Key into sources.toml (kind = "measured"; locator = the committed results file).
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Measurement {
    /// The op classes a spec may name.
    pub const OPS: [&'static str; 8] = [
        "elementwise",
        "reduction",
        "softmax",
        "norm",
        "gemm",
        "attention",
        "scan",
        "custom",
    ];
    pub const UNITS: [&'static str; 2] = ["GB/s", "TFLOP/s"];
}
