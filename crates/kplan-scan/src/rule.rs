//! Rule metadata: what `kplan rules`, `kplan explain`, the docs and SARIF read.

use crate::diag::Severity;
use serde::Serialize;
use strum::{AsRefStr, EnumIter, EnumString, IntoStaticStr};

/// Which source language a rule reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[derive(EnumIter, AsRefStr, IntoStaticStr, strum::Display, EnumString)]
#[strum(serialize_all = "kebab-case")]
pub enum Lang {
    /// CUDA/HIP C++ (`.cu .cuh .hip .h .hpp .cc .cpp .cxx .inl`).
    Cuda,
    /// Triton kernels in Python (`.py`).
    Python,
}

impl Lang {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// When a rule's findings matter, given the targets in scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Bites only when a target whose warp is wider than 32 lanes (wave64) is in scope.
    Wave64,
    /// Bites when any AMD target is in scope.
    Amd,
    /// Bites when any NVIDIA target is in scope.
    Nvidia,
    /// Bites when targets of more than one vendor are in scope.
    MultiVendor,
    /// Decided per finding by the rule (e.g. through the KB's feature support).
    PerFinding,
}

/// Everything known about a rule except its check function. One `static` per rule file.
#[derive(Debug, Clone, Serialize)]
pub struct RuleMeta {
    /// Kebab-case id; never reused.
    pub id: &'static str,
    /// One line, lowercase, no trailing period.
    pub summary: &'static str,
    /// "What it does" section (Markdown).
    pub what: &'static str,
    /// "Why is this bad?" section (Markdown).
    pub why: &'static str,
    /// "Example" section: code that fires.
    pub example: &'static str,
    /// "Use instead" section: the portable rewrite, which must not fire.
    pub use_instead: &'static str,
    /// Severity when the rule's scope is met.
    pub severity: Severity,
    pub scope: Scope,
    pub lang: Lang,
    /// KB feature ids this rule reports (for the inventory and SARIF properties).
    pub features: &'static [&'static str],
}

impl RuleMeta {
    /// The rule's documentation page (Markdown), as `kplan explain` prints it.
    pub fn doc_markdown(&self) -> String {
        let lang = match self.lang {
            Lang::Cuda => "cuda",
            Lang::Python => "python",
        };
        format!(
            "# {id}\n\n{summary}\n\n- default severity: {sev}\n- applies when: {scope}\n- language: {l}\n\n## What it does\n\n{what}\n\n## Why is this bad?\n\n{why}\n\n## Example\n\n```{lang}\n{ex}\n```\n\n## Use instead\n\n```{lang}\n{ui}\n```\n\nSuppress one occurrence with `// kplan: allow({id})` on the line or the line above{py}.\n",
            id = self.id,
            summary = self.summary,
            sev = self.severity.as_str(),
            scope = self.scope_text(),
            l = self.lang.as_str(),
            what = self.what.trim(),
            why = self.why.trim(),
            ex = self.example.trim_matches('\n'),
            ui = self.use_instead.trim_matches('\n'),
            py = if self.lang == Lang::Python { " (`# kplan: allow(...)` in Python)" } else { "" },
        )
    }
    pub fn scope_text(&self) -> &'static str {
        match self.scope {
            Scope::Wave64 => "a wave64 target (AMD CDNA/GCN, or RDNA in wave64 mode) is in scope",
            Scope::Amd => "an AMD target is in scope",
            Scope::Nvidia => "an NVIDIA target is in scope",
            Scope::MultiVendor => "targets of more than one vendor are in scope",
            Scope::PerFinding => "a target in scope lacks the feature (per the knowledge base)",
        }
    }
}
