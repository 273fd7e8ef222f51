//! Capability methods on top of the data (cubecl `AMDArchitecture` style): consumers ask
//! questions ("which warp sizes can run here?") instead of reading raw fields.

use crate::model::*;

impl Arch {
    /// Every warp / wavefront / sub-group size the hardware can run, smallest first
    /// (RDNA: `[32, 64]`; CDNA: `[64]`; NVIDIA: `[32]`). Empty when the warp size is unknown.
    pub fn warp_sizes(&self) -> Vec<u32> {
        let mut v = if self.warp_sizes.is_empty() {
            self.warp_size.value.into_iter().collect()
        } else {
            self.warp_sizes.clone()
        };
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The warp size kernels get by default (HIP on RDNA: 32, since the HIP runtime does not
    /// support wave64 there).
    pub fn default_warp_size(&self) -> Option<u32> {
        self.warp_size.value
    }

    /// True where only 64-wide wavefronts run (CDNA).
    pub fn is_wave64_only(&self) -> bool {
        self.warp_sizes() == [64]
    }

    /// True where both wave32 and wave64 code can be generated (RDNA).
    pub fn has_selectable_warp_size(&self) -> bool {
        self.warp_sizes().len() > 1
    }

    pub fn is_gpu(&self) -> bool {
        self.vendor != Vendor::Cpu
    }

    pub fn is_cpu(&self) -> bool {
        self.vendor == Vendor::Cpu
    }

    /// AMD CDNA (MFMA, wave64) architectures.
    pub fn is_cdna(&self) -> bool {
        self.vendor == Vendor::Amd && self.family.starts_with("CDNA")
    }

    /// AMD RDNA (WMMA, wave32 native) architectures.
    pub fn is_rdna(&self) -> bool {
        self.vendor == Vendor::Amd && self.family.starts_with("RDNA")
    }

    /// NVIDIA compute capability as (major, minor), parsed from `sm_XY[a|f]`.
    pub fn compute_capability(&self) -> Option<(u32, u32)> {
        if self.vendor != Vendor::Nvidia {
            return None;
        }
        let digits: String = self
            .id
            .strip_prefix("sm_")?
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let n: u32 = digits.parse().ok()?;
        Some((n / 10, n % 10))
    }

    /// Shared memory / LDS one block can use (after opt-in), in bytes.
    pub fn max_shared_per_block(&self) -> Option<u64> {
        self.shared_per_block_bytes.value
    }

    /// Shared memory a block gets without opt-in; equals the maximum where no opt-in exists.
    pub fn default_shared_per_block(&self) -> Option<u64> {
        match &self.shared_per_block_default_bytes {
            Some(f) => f.value,
            None => self.shared_per_block_bytes.value,
        }
    }

    /// True when using more than [`Arch::default_shared_per_block`] needs an explicit opt-in
    /// (NVIDIA: dynamic shared memory + `cudaFuncSetAttribute`).
    pub fn shared_needs_opt_in(&self, bytes: u64) -> bool {
        matches!(self.default_shared_per_block(), Some(d) if bytes > d)
    }

    /// The minimum toolchain as text ("CUDA 12.0", "ROCm 6.0.0"), when known.
    pub fn min_toolchain(&self) -> Option<&str> {
        self.min_toolchain.value.as_deref()
    }

    /// Every fact of this architecture as (field name, value rendered, fact's source, note);
    /// unknown values render as `None`. Used by `kplan targets show` and the docs.
    pub fn facts(&self) -> Vec<FactRow> {
        let mut rows = Vec::new();
        let mut push =
            |name: &'static str, value: Option<String>, source: &'_ str, note: Option<&'_ str>| {
                rows.push((name, value, source.to_string(), note.map(str::to_string)));
            };
        macro_rules! f {
            ($name:literal, $f:expr) => {{
                let f = &$f;
                push(
                    $name,
                    f.value.as_ref().map(|v| v.to_string()),
                    &f.source,
                    f.note.as_deref(),
                );
            }};
        }
        macro_rules! o {
            ($name:literal, $f:expr) => {{
                if let Some(f) = &$f {
                    push(
                        $name,
                        f.value.as_ref().map(|v| v.to_string()),
                        &f.source,
                        f.note.as_deref(),
                    );
                }
            }};
        }
        f!("warp_size", self.warp_size);
        f!("max_threads_per_block", self.max_threads_per_block);
        f!("shared_per_block_bytes", self.shared_per_block_bytes);
        o!(
            "shared_per_block_default_bytes",
            self.shared_per_block_default_bytes
        );
        f!("shared_per_sm_bytes", self.shared_per_sm_bytes);
        o!(
            "shared_reserved_per_block_bytes",
            self.shared_reserved_per_block_bytes
        );
        o!(
            "shared_alloc_granularity_bytes",
            self.shared_alloc_granularity_bytes
        );
        f!("shared_banks", self.shared_banks);
        f!("registers_per_sm", self.registers_per_sm);
        f!("max_registers_per_thread", self.max_registers_per_thread);
        o!(
            "register_alloc_granularity",
            self.register_alloc_granularity
        );
        f!("max_threads_per_sm", self.max_threads_per_sm);
        f!("max_blocks_per_sm", self.max_blocks_per_sm);
        o!("max_warps_per_sm", self.max_warps_per_sm);
        o!("sm_sub_partitions", self.sm_sub_partitions);
        o!("simds_per_cu", self.simds_per_cu);
        o!("max_waves_per_simd", self.max_waves_per_simd);
        o!("vgprs_per_simd_lane", self.vgprs_per_simd_lane);
        o!("cus_per_wgp", self.cus_per_wgp);
        o!("simd_bits", self.simd_bits);
        f!("min_toolchain", self.min_toolchain);
        rows.into_iter()
            .map(|(name, value, source, note)| FactRow {
                name,
                value,
                source,
                note,
            })
            .collect()
    }
}

/// One rendered fact: used by listings that show every fact with its source.
#[derive(Debug, Clone, PartialEq)]
pub struct FactRow {
    pub name: &'static str,
    /// `None`: unknown (the note says why).
    pub value: Option<String>,
    pub source: String,
    pub note: Option<String>,
}

impl Device {
    /// The device as one kernel launch sees it: for a package of several runtime devices
    /// ([`Device::dies_per_package`]), each count, size, bandwidth and peak divided by the die
    /// count and the name saying so; otherwise the device itself.
    pub fn per_kernel_view(&self) -> std::borrow::Cow<'_, Device> {
        let n = match self.dies_per_package.as_ref().and_then(|f| f.value) {
            Some(n) if n > 1 => n,
            _ => return std::borrow::Cow::Borrowed(self),
        };
        let mut d = self.clone();
        let nf = n as f64;
        d.name = format!(
            "{} (one of {n} dies: what one kernel launch sees)",
            self.name
        );
        d.compute_units.value = d.compute_units.value.map(|v| v / n);
        d.l2_bytes.value = d.l2_bytes.value.map(|v| v / n as u64);
        d.memory_bytes.value = d.memory_bytes.value.map(|v| v / n as u64);
        d.bandwidth_gbs.value = d.bandwidth_gbs.value.map(|v| v / nf);
        for f in d
            .peak_tflops
            .values_mut()
            .chain(d.peak_vector_tflops.values_mut())
        {
            f.value = f.value.map(|v| v / nf);
        }
        std::borrow::Cow::Owned(d)
    }

    /// Dense peak TFLOP/s (TOP/s for int8) for `dtype`: matrix units where they exist, else
    /// vector. `None` when unknown or when the device has no path for that dtype.
    pub fn peak(&self, dtype: Dtype) -> Option<f64> {
        self.peak_tflops.get(&dtype).and_then(|f| f.value)
    }

    /// The fact behind [`Device::peak`] (to cite its source and note).
    pub fn peak_fact(&self, dtype: Dtype) -> Option<&Fact<f64>> {
        self.peak_tflops.get(&dtype)
    }

    /// Vector (SIMT, non-matrix) peak where the source gives it separately (A100, H100, H200,
    /// MI100, MI210, MI250X, MI300X). `None` otherwise: then [`Device::peak`]'s note says
    /// whether the headline rate is a vector or a matrix rate.
    pub fn vector_peak(&self, dtype: Dtype) -> Option<f64> {
        self.peak_vector_tflops.get(&dtype).and_then(|f| f.value)
    }

    /// Datasheet DRAM/HBM bandwidth in GB/s.
    pub fn bandwidth_gbs(&self) -> Option<f64> {
        self.bandwidth_gbs.value
    }

    /// Ridge point (FLOP per byte) for `dtype`: peak / bandwidth. Below it a kernel is
    /// memory-bound on this device.
    pub fn ridge_point(&self, dtype: Dtype) -> Option<f64> {
        let peak = self.peak(dtype)?;
        let bw = self.bandwidth_gbs()?;
        (bw > 0.0).then(|| peak * 1e12 / (bw * 1e9))
    }

    /// Every fact of this device, rendered (see [`Arch::facts`]).
    pub fn facts(&self) -> Vec<FactRow> {
        let mut rows = Vec::new();
        let mut push =
            |name: &'static str, value: Option<String>, f_source: &str, note: Option<&str>| {
                rows.push(FactRow {
                    name,
                    value,
                    source: f_source.to_string(),
                    note: note.map(str::to_string),
                });
            };
        push(
            "compute_units",
            self.compute_units.value.map(|v| v.to_string()),
            &self.compute_units.source,
            self.compute_units.note.as_deref(),
        );
        push(
            "l2_bytes",
            self.l2_bytes.value.map(|v| v.to_string()),
            &self.l2_bytes.source,
            self.l2_bytes.note.as_deref(),
        );
        if let Some(f) = &self.llc_bytes {
            push(
                "llc_bytes",
                f.value.map(|v| v.to_string()),
                &f.source,
                f.note.as_deref(),
            );
        }
        push(
            "memory_bytes",
            self.memory_bytes.value.map(|v| v.to_string()),
            &self.memory_bytes.source,
            self.memory_bytes.note.as_deref(),
        );
        push(
            "bandwidth_gbs",
            self.bandwidth_gbs.value.map(|v| v.to_string()),
            &self.bandwidth_gbs.source,
            self.bandwidth_gbs.note.as_deref(),
        );
        for (name, f) in [
            ("clock_mhz", &self.clock_mhz),
            ("memory_clock_mhz", &self.memory_clock_mhz),
        ] {
            if let Some(f) = f {
                push(
                    name,
                    f.value.map(|v| v.to_string()),
                    &f.source,
                    f.note.as_deref(),
                );
            }
        }
        if let Some(f) = &self.memory_bus_bits {
            push(
                "memory_bus_bits",
                f.value.map(|v| v.to_string()),
                &f.source,
                f.note.as_deref(),
            );
        }
        for d in Dtype::PEAK {
            let name = PEAK_NAMES[d as usize];
            match self.peak_tflops.get(&d) {
                Some(f) => push(
                    name,
                    f.value.map(|v| v.to_string()),
                    &f.source,
                    f.note.as_deref(),
                ),
                None => push(name, None, "", Some("not in the KB")),
            }
        }
        for (d, f) in &self.peak_vector_tflops {
            push(
                VECTOR_PEAK_NAMES[*d as usize],
                f.value.map(|v| v.to_string()),
                &f.source,
                f.note.as_deref(),
            );
        }
        rows
    }
}

const PEAK_NAMES: [&str; 7] = [
    "peak_tflops.fp64",
    "peak_tflops.fp32",
    "peak_tflops.tf32",
    "peak_tflops.fp16",
    "peak_tflops.bf16",
    "peak_tflops.fp8",
    "peak_tflops.int8",
];
const VECTOR_PEAK_NAMES: [&str; 7] = [
    "peak_vector_tflops.fp64",
    "peak_vector_tflops.fp32",
    "peak_vector_tflops.tf32",
    "peak_vector_tflops.fp16",
    "peak_vector_tflops.bf16",
    "peak_vector_tflops.fp8",
    "peak_vector_tflops.int8",
];

impl Kb {
    /// Architectures of one vendor, in KB order.
    pub fn archs_by_vendor(&self, vendor: Vendor) -> impl Iterator<Item = &Arch> {
        self.archs.iter().filter(move |a| a.vendor == vendor)
    }

    /// Devices mapped to architecture `arch_id`, in KB order.
    pub fn devices_of(&self, arch_id: &str) -> impl Iterator<Item = &Device> + '_ {
        let id = arch_id.to_string();
        self.devices.iter().filter(move |d| d.arch == id)
    }

    /// The architecture a device belongs to.
    pub fn arch_of(&self, device: &Device) -> Option<&Arch> {
        self.arch(&device.arch)
    }

    /// The device whose numbers stand in for `arch` (its documented reference device).
    pub fn reference_device(&self, arch: &Arch) -> Option<&Device> {
        arch.reference_device
            .as_deref()
            .and_then(|d| self.device(d))
    }

    /// Features available (status yes or partial) on `arch_id`.
    pub fn features_on<'a>(
        &'a self,
        arch_id: &'a str,
    ) -> impl Iterator<Item = (&'a Feature, &'a Support)> + 'a {
        self.features
            .iter()
            .filter_map(move |f| f.support.get(arch_id).map(|s| (f, s)))
    }

    /// Measured results for an op class (`norm`, `softmax`, ...) on a device, in KB order.
    pub fn measurements_for<'a>(
        &'a self,
        op: &'a str,
        device_id: &'a str,
    ) -> impl Iterator<Item = &'a Measurement> + 'a {
        self.measurements
            .iter()
            .filter(move |m| m.op == op && m.device == device_id)
    }

    /// Measured results for one kernel (`rmsnorm`, ...) on a device.
    pub fn measurements_for_kernel<'a>(
        &'a self,
        kernel: &'a str,
        device_id: &'a str,
    ) -> impl Iterator<Item = &'a Measurement> + 'a {
        self.measurements
            .iter()
            .filter(move |m| m.kernel == kernel && m.device == device_id)
    }

    /// Feature ids, for "did you mean" on unknown feature names.
    pub fn suggest_feature(&self, name: &str) -> Option<String> {
        crate::resolve::closest(name, self.features.iter().map(|f| f.id.as_str()))
    }
}

impl Support {
    /// Usable on that architecture (yes, or partial with the caveat in the note).
    pub fn is_usable(&self) -> bool {
        matches!(self.status, Availability::Yes | Availability::Partial)
    }
}

impl Availability {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// A toolchain requirement such as "CUDA 12.4" or "ROCm 6.0.0", parsed for comparison.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ToolchainVersion {
    /// "CUDA" or "ROCm".
    pub toolchain: String,
    /// Numeric components: [12, 4], [6, 0, 0].
    pub version: Vec<u32>,
}

impl ToolchainVersion {
    /// Parses `"<name> <x.y[.z]>"`; `None` for anything else (CPU flag sets, free text).
    pub fn parse(s: &str) -> Option<ToolchainVersion> {
        let (name, ver) = s.trim().split_once(' ')?;
        let version: Option<Vec<u32>> = ver.trim().split('.').map(|p| p.parse().ok()).collect();
        let mut version = version?;
        while version.len() > 1 && version.last() == Some(&0) {
            version.pop();
        }
        Some(ToolchainVersion {
            toolchain: name.to_string(),
            version,
        })
    }
}

impl Kb {
    /// The newest of the architecture's minimum toolchain and the minimum toolchains of the
    /// given features on that architecture (same toolchain only), as written in the KB.
    /// `None` when the architecture's own minimum is unknown.
    pub fn min_toolchain_with(&self, arch: &Arch, feature_ids: &[&str]) -> Option<String> {
        let mut best = arch.min_toolchain()?.to_string();
        let mut best_v = ToolchainVersion::parse(&best);
        for id in feature_ids {
            let Some(t) = self
                .support(id, &arch.id)
                .and_then(|s| s.min_toolchain.as_deref())
            else {
                continue;
            };
            let v = ToolchainVersion::parse(t);
            match (&best_v, &v) {
                (Some(b), Some(n)) if b.toolchain == n.toolchain && n.version > b.version => {
                    best = t.to_string();
                    best_v = v;
                }
                _ => {}
            }
        }
        Some(best)
    }
}
