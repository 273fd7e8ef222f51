//! Triton/Python scanning: the `.py` side of `kplan scan`.

use crate::ctx::ScanCtx;
use crate::diag::Finding;
use crate::rule::RuleMeta;
use std::path::Path;

/// Rules that read Triton kernels; chained into [`crate::all_rules`].
pub static RULES: &[RuleMeta] = &[];

/// Scans one `.py` file. `text` is the file's contents (lossy UTF-8).
pub fn scan_file(_ctx: &ScanCtx, _path: &Path, _text: &str) -> Vec<Finding> {
    Vec::new()
}
