//! CUDA/HIP C++ scanning: one structure pass per file, then every enabled rule.

use crate::ctx::ScanCtx;
use crate::diag::Finding;
use crate::inventory::FeatureUse;
use std::path::Path;

/// Scans one C++/CUDA/HIP file.
pub fn scan_file(_ctx: &ScanCtx, _path: &Path, _text: &str) -> Vec<Finding> {
    Vec::new()
}

/// NVIDIA-specific feature uses in one file (for the inventory).
pub fn feature_uses(_ctx: &ScanCtx, _path: &Path, _text: &str) -> Vec<FeatureUse> {
    Vec::new()
}
