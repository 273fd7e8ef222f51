//! `--inventory`: the NVIDIA-specific features a tree uses, with counts and locations. The
//! input of `kplan plan --source DIR`'s risk register.

use crate::ctx::ScanCtx;
use crate::diag::display_path;
use crate::error::ScanError;
use crate::walk::{collect_files, FileKind};
use kplan_kb::Kb;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Location {
    #[serde(serialize_with = "ser_path")]
    pub path: PathBuf,
    pub line: u32,
    pub column: u32,
}

fn ser_path<S: serde::Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&display_path(p))
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InventoryItem {
    /// KB feature id (`wmma`, `async-copy`, `inline-ptx`, ...).
    pub feature: String,
    /// The rule that reports hazards of this feature.
    pub rule: String,
    pub count: usize,
    /// Every use, sorted.
    pub locations: Vec<Location>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Inventory {
    pub files_scanned: usize,
    /// Sorted by feature id.
    pub items: Vec<InventoryItem>,
}

/// One use of a feature found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureUse {
    pub feature: &'static str,
    pub rule: &'static str,
    pub line: u32,
    pub column: u32,
}

/// Inventory of NVIDIA-specific features used under `paths` (files or directories), each file
/// under the `kplan.toml` nearest to it (see [`inventory_tree`]). `targets` may be empty (the
/// configurations' targets, else the default scope); unknown targets are errors.
pub fn inventory(paths: &[PathBuf], targets: &[String], kb: &Kb) -> Result<Inventory, ScanError> {
    inventory_tree(kb, targets, None, paths, &|_| {})
}

/// Inventory of `paths`, each file under the configuration that applies to it: `config` when
/// given (`--config`), else the `kplan.toml` nearest to the file, else the defaults, as
/// [`crate::scan_tree`] does. A use is listed when the rule that reports it is enabled for the
/// file (`select`, `ignore`, `per-file-ignores`; `adjust` applies the command line's
/// `--select` / `--ignore` to every configuration). Configuration errors stop the inventory.
pub fn inventory_tree(
    kb: &Kb,
    targets: &[String],
    config: Option<crate::config::Config>,
    paths: &[PathBuf],
    adjust: &dyn Fn(&mut crate::config::Config),
) -> Result<Inventory, ScanError> {
    let (ctxs, files, _notes) =
        crate::walk::files_with_configs(kb, targets, config, paths, adjust)?;
    Ok(inventory_of(&ctxs, &files))
}

/// [`inventory`] of `paths`, every file under `ctx`.
pub fn inventory_with(ctx: &ScanCtx, paths: &[PathBuf]) -> Result<Inventory, ScanError> {
    let (files, _notes) = collect_files(paths)?;
    let files: Vec<_> = files.into_iter().map(|(p, k)| (p, k, 0)).collect();
    Ok(inventory_of(std::slice::from_ref(ctx), &files))
}

fn inventory_of(ctxs: &[ScanCtx], files: &[crate::walk::Assigned]) -> Inventory {
    let per_file: Vec<(PathBuf, Vec<FeatureUse>)> = files
        .par_iter()
        .filter(|(_, k, _)| *k == FileKind::Cuda)
        .filter_map(|(p, _, i)| {
            let ctx = &ctxs[*i];
            let bytes = std::fs::read(p).ok()?;
            if crate::walk::is_binary(&bytes) {
                return None;
            }
            let text = String::from_utf8_lossy(&bytes);
            let mut uses = crate::cuda::feature_uses(ctx, p, &text);
            uses.retain(|u| ctx.rule_enabled(u.rule, p));
            Some((p.clone(), uses))
        })
        .collect();
    let files_scanned = per_file.len();
    let mut map: BTreeMap<(&'static str, &'static str), Vec<Location>> = BTreeMap::new();
    for (p, uses) in per_file {
        for u in uses {
            map.entry((u.feature, u.rule)).or_default().push(Location {
                path: p.clone(),
                line: u.line,
                column: u.column,
            });
        }
    }
    let items = map
        .into_iter()
        .map(|((feature, rule), mut locations)| {
            locations.sort();
            InventoryItem {
                feature: feature.to_string(),
                rule: rule.to_string(),
                count: locations.len(),
                locations,
            }
        })
        .collect();
    Inventory {
        files_scanned,
        items,
    }
}
