//! kplan's hardware knowledge base: architectures, devices, features and the sources behind
//! every number.
//!
//! The data lives in TOML files under `data/` (compiled in); `Kb::load_dir` reads the same files
//! from a user's directory (`kplan --kb DIR`). Every numeric fact is a [`Fact`]: a value (or none,
//! when no source was found: unknown stays unknown) and the key of the source it came from.
//!
//! Compile architectures (`sm_90a`, `gfx942`, `cpu-x86_64-avx2`) and devices (`h100-sxm`,
//! `mi300x`) are different things: per-architecture facts (warp size, shared/LDS limits,
//! registers, features) live on [`Arch`]; per-device numbers (SM/CU count, caches, bandwidth,
//! peak TFLOP/s) live on [`Device`], each mapped to its architecture. [`Kb::resolve`] accepts
//! either, or a product alias, and says which reference device stands in for an architecture.

mod api;
mod load;
mod model;
pub mod occupancy;
pub mod render;
mod resolve;
pub mod scoped;
pub mod text;

pub use api::{FactRow, ToolchainVersion};
pub use load::{KbError, BUILTIN, FILES};
pub use model::*;
pub use occupancy::{occupancy, Occupancy, OccupancyError};
pub use resolve::{closest, ResolveError, Resolved, ResolvedVia};
pub use text::{line_col, LineIndex};

/// Every variant of a `strum::VariantArray` enum as an array, in declaration order: the
/// `ALL: [Self; N]` constant of an enum whose names come from strum derives
/// (`pub const ALL: [Op; 5] = kplan_kb::all_variants();`). A wrong `N` fails to compile.
pub const fn all_variants<T: strum::VariantArray + Copy, const N: usize>() -> [T; N] {
    let v = T::VARIANTS;
    assert!(v.len() == N, "N is not the number of variants");
    let mut out = [v[0]; N];
    let mut i = 1;
    while i < N {
        out[i] = v[i];
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_kb_loads_and_validates() {
        let kb = Kb::builtin();
        assert!(!kb.archs.is_empty());
    }

    #[test]
    fn product_alias_resolves_to_device_and_its_arch() {
        let kb = Kb::builtin();
        let r = kb.resolve("H100").unwrap();
        assert_eq!(r.arch.id, "sm_90a");
        assert_eq!(r.via, ResolvedVia::Device);
        assert_eq!(r.device.map(|d| d.id.as_str()), Some("h100-sxm"));
    }

    #[test]
    fn arch_resolves_with_reference_device() {
        let r = Kb::builtin().resolve("sm_90a").unwrap();
        assert_eq!(r.via, ResolvedVia::Arch);
        assert_eq!(r.device.map(|d| d.id.as_str()), Some("h100-sxm"));
    }

    #[test]
    fn unknown_target_suggests_close_name() {
        let kb = Kb::builtin();
        assert_eq!(
            kb.resolve("gfx9420").unwrap_err().suggestion.as_deref(),
            Some("gfx942")
        );
        assert_eq!(
            kb.resolve("sm_90x").unwrap_err().suggestion.as_deref(),
            Some("sm_90")
        );
        assert_eq!(
            kb.resolve("h20O").unwrap_err().suggestion.as_deref(),
            Some("h200")
        );
        assert_eq!(kb.resolve("zzzz").unwrap_err().suggestion, None);
    }
}
