//! kplan-new: a kernel project from a plan (`kplan new SPEC.toml DIR`).
//!
//! [`generate`] turns a [`kplan_plan::Plan`] into a [`Project`]: the files of a project for the
//! plan's chosen strategy, in memory. [`write_project`] writes them into a directory: into a
//! temporary directory beside it first, then moved into place, so a failed run leaves no partial
//! tree, and never over an existing file unless asked to.
//!
//! What a project holds depends on the verdict and strategy:
//! - custom kernel, `hip-single-source` or `per-backend`: the portability header, the kernel
//!   skeleton for the op class (a simple, correct implementation on the header's names) with its
//!   tile configuration per target (plan section 6), the CPU fallback in C++ (also the
//!   reference), a `kplan verify` harness, `kplan.toml`, a Makefile and a CMake build, the CI
//!   workflow (`kplan ci`) and a README;
//! - custom kernel, `triton`: the same, plus the Triton kernel with its launch configurations per
//!   backend (the portable kernel stays as the CPU fallback's kernel form, which the plan's CPU
//!   legs build and verify);
//! - `use-vendor-library`: a dispatch wrapper over the libraries the plan names, compiled where
//!   the build finds them, the CPU fallback, its test and the workflow; no kernel.
//!
//! Op classes with a skeleton: elementwise, softmax, norm (RMSNorm, LayerNorm), reduction (sum,
//! mean, max, min; flat or per row) and gemm. Any other op, verdict or storage type is an
//! [`NewError::Unsupported`] that says what is supported; nothing is written then.

mod family;
mod files;
mod library;
mod plan_json;
mod template;
mod tiles;
mod triton;
mod write;

pub use plan_json::plan_from_json;
pub use write::write_project;

use kplan_kb::Kb;
use kplan_plan::Plan;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Errors of `kplan new`.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    /// The plan asks for something `kplan new` has no template for.
    #[error("{0}")]
    Unsupported(String),
    /// The plan JSON is not a kplan plan.
    #[error("{path}: {message}")]
    BadPlan { path: String, message: String },
    /// Existing files would be overwritten.
    #[error("{dir}: {} would be overwritten (use --force to replace them): {}", if .files.len() == 1 { "1 existing file" } else { "existing files" }, .files.join(", "))]
    Exists { dir: String, files: Vec<String> },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Options for [`generate`].
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The spec (or plan) path as the user gave it: named in generated headers and the workflow.
    pub source_path: String,
    /// Self-hosted runner labels per kind, as `kplan ci --runner`.
    pub runners: BTreeMap<String, String>,
    /// The kplan version and git revision the workflow pins (as `kplan ci`).
    pub kplan_version: String,
    pub kplan_rev: Option<String>,
}

/// One generated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectFile {
    /// Relative to the project directory, `/`-separated.
    pub path: String,
    pub text: String,
}

/// A generated project, in memory.
#[derive(Debug, Clone)]
pub struct Project {
    /// `hip-single-source`, `triton` or `library`: which template set was used.
    pub kind: &'static str,
    /// The op family the skeleton implements (`softmax`, `rmsnorm`, `reduce-sum`, ...).
    pub family: String,
    pub files: Vec<ProjectFile>,
    /// Things the user should know: targets without code, defaults taken.
    pub notes: Vec<String>,
}

impl Project {
    pub fn file(&self, path: &str) -> Option<&ProjectFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

/// The project for `plan`: every file, in memory. Errors when the verdict, strategy, op class or
/// storage type has no template; the message says what does.
pub fn generate(plan: &Plan, kb: &Kb, opts: &Options) -> Result<Project, NewError> {
    let kind = files::strategy_kind(plan)?;
    let fam = family::Family::of(plan, kind)?;
    let ctx = files::Ctx::new(plan, kb, opts, &fam)?;
    let mut p = Project {
        kind: kind.as_str(),
        family: fam.name(),
        files: Vec::new(),
        notes: ctx.notes.clone(),
    };
    match kind {
        files::Kind::SingleSource => files::single_source(&ctx, &fam, &mut p, false),
        files::Kind::Triton => {
            triton::add(&ctx, &fam, &mut p)?;
            files::single_source(&ctx, &fam, &mut p, true)
        }
        files::Kind::Library => library::add(&ctx, &fam, &mut p)?,
    }
    files::common(&ctx, &fam, &mut p);
    p.files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(p)
}
