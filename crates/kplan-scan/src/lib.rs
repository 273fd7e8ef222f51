//! kplan-scan: the portability scanner for CUDA/HIP (and, through `python`, Triton) code.
//!
//! Entry points: [`scan_paths`] (walk + scan), [`scan_text`] (one buffer), [`inventory`]
//! (NVIDIA-specific features with counts and locations), [`all_rules`] (the one registry).

pub mod config;
pub mod ctx;
pub mod cuda;
pub mod diag;
pub mod error;
pub mod index;
pub mod inventory;
pub mod lex;
pub mod python;
pub mod render;
pub mod rule;
pub mod rules;
pub mod walk;

pub use config::{Config, CONFIG_FILE};
pub use ctx::{ScanCtx, Target, DEFAULT_TARGETS};
pub use diag::{display_path, Finding, Label, LineIndex, Severity};
pub use error::ScanError;
pub use inventory::{
    inventory, inventory_tree, inventory_with, Inventory, InventoryItem, Location,
};
pub use rule::{Lang, RuleMeta, Scope};
pub use walk::{
    scan_paths, scan_text, scan_tree, scan_tree_progress, scan_tree_with, FileKind, FileNote,
    ScanResult,
};

/// Every rule: CUDA/HIP rules, then Triton rules. Ids are unique (a test checks).
pub fn all_rules() -> Vec<&'static RuleMeta> {
    rules::RULES
        .iter()
        .copied()
        .chain(python::RULES.iter())
        .collect()
}

/// The rule with id `id`.
pub fn rule(id: &str) -> Option<&'static RuleMeta> {
    all_rules().into_iter().find(|r| r.id == id)
}

/// `None` when `id` names a rule, else `Some(closest id)`: the shape [`Config::parse`] wants.
pub fn check_rule_id(id: &str) -> Option<Option<String>> {
    if rule(id).is_some() {
        return None;
    }
    let ids: Vec<&str> = all_rules().iter().map(|r| r.id).collect();
    Some(kplan_kb::closest(id, ids))
}

/// Finds `kplan.toml` for a scan of `paths`: in the first path (or its directory) and its
/// ancestors, nearest first.
pub fn find_config(paths: &[std::path::PathBuf]) -> Option<std::path::PathBuf> {
    let first = paths.first()?;
    let start = if first.is_dir() {
        first.clone()
    } else {
        first.parent()?.to_path_buf()
    };
    let start = std::fs::canonicalize(&start).unwrap_or(start);
    start
        .ancestors()
        .map(|d| d.join(CONFIG_FILE))
        .find(|c| c.is_file())
}

/// Loads `kplan.toml` from `path`, validating rule ids against the registry.
pub fn load_config(path: &std::path::Path) -> Result<Config, ScanError> {
    Config::load(path, &check_rule_id)
}
