//! Walking the inputs (respecting `.gitignore`), reading files, dispatching them by language,
//! applying suppressions and configuration, and sorting the result.

use crate::config::Config;
use crate::ctx::ScanCtx;
use crate::diag::{display_path, Finding};
use crate::error::ScanError;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// C/C++/CUDA/HIP extensions the scanner reads.
pub const CUDA_EXTS: &[&str] = &[
    "cu", "cuh", "hip", "h", "hpp", "cc", "cpp", "cxx", "inl", "hh", "hxx", "cuinc",
];
/// Python extensions (Triton kernels).
pub const PY_EXTS: &[&str] = &["py"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FileKind {
    Cuda,
    Python,
}

pub fn file_kind(path: &Path) -> Option<FileKind> {
    let raw = path.extension()?.to_str()?;
    // `.C` (upper case) and `.c++` are C++ by the compilers' conventions; `.c` is C
    if raw == "C" || raw == "c++" {
        return Some(FileKind::Cuda);
    }
    let ext = raw.to_ascii_lowercase();
    if CUDA_EXTS.contains(&ext.as_str()) {
        Some(FileKind::Cuda)
    } else if PY_EXTS.contains(&ext.as_str()) {
        Some(FileKind::Python)
    } else {
        None
    }
}

/// Note for a path that is not a regular file (never opened).
pub const NOT_REGULAR: &str = "not a regular file (a FIFO, socket or device), skipped";

/// A file the scan could not read or chose to skip, and why (reported; the scan goes on).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileNote {
    #[serde(serialize_with = "ser_path")]
    pub path: PathBuf,
    pub message: String,
}

fn ser_path<S: serde::Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&display_path(p))
}

/// Everything a scan produced, sorted.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ScanResult {
    pub files_scanned: usize,
    pub lines_scanned: usize,
    #[serde(skip)]
    pub bytes_scanned: u64,
    pub findings: Vec<Finding>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<FileNote>,
}

/// A file to scan and how to read it.
pub type FileEntry = (PathBuf, FileKind);
type Notes = Vec<FileNote>;

/// The files under `paths` the scanner reads, sorted. A path given explicitly is read whatever
/// its extension is, when it is a file. Walk errors (symlink loops, unreadable directories) are
/// returned as notes.
pub fn collect_files(paths: &[PathBuf]) -> Result<(Vec<FileEntry>, Notes), ScanError> {
    let mut files = Vec::new();
    let mut notes = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| ScanError::Input {
            path: p.clone(),
            message: format!("cannot read: {e}"),
        })?;
        if meta.is_file() {
            // a file named on the command line must be readable: not a note, an error
            if let Err(e) = std::fs::File::open(p) {
                return Err(ScanError::Input {
                    path: p.clone(),
                    message: format!("cannot read: {e}"),
                });
            }
            files.push((p.clone(), file_kind(p).unwrap_or(FileKind::Cuda)));
            continue;
        }
        if !meta.is_dir() {
            // a FIFO, socket or device: reading it could block or never end
            notes.push(FileNote {
                path: p.clone(),
                message: NOT_REGULAR.into(),
            });
            continue;
        }
        let walker = ignore::WalkBuilder::new(p)
            .hidden(true)
            .git_ignore(true)
            .git_global(false)
            .git_exclude(true)
            .require_git(false)
            .follow_links(true)
            .sort_by_file_path(|a, b| a.cmp(b))
            .build();
        for entry in walker {
            match entry {
                Ok(e) => match e.file_type() {
                    Some(t) if t.is_file() => {
                        if let Some(k) = file_kind(e.path()) {
                            files.push((e.path().to_path_buf(), k));
                        }
                    }
                    Some(t) if !t.is_dir() && !t.is_symlink() && file_kind(e.path()).is_some() => {
                        notes.push(FileNote {
                            path: e.path().to_path_buf(),
                            message: NOT_REGULAR.into(),
                        });
                    }
                    _ => {}
                },
                Err(e) => {
                    let path = walk_error_path(&e).unwrap_or_else(|| p.clone());
                    notes.push(FileNote {
                        path,
                        message: walk_error_message(&e),
                    });
                }
            }
        }
    }
    files.sort();
    files.dedup();
    // a directory symlink into a tree already walked reaches the same files again: one path
    // per file (the first in sorted order)
    let mut seen = std::collections::HashSet::new();
    files.retain(|(p, _)| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    Ok((files, notes))
}

fn walk_error_path(e: &ignore::Error) -> Option<PathBuf> {
    match e {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            walk_error_path(err)
        }
        ignore::Error::Loop { child, .. } => Some(child.clone()),
        _ => None,
    }
}

fn walk_error_message(e: &ignore::Error) -> String {
    match e {
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => walk_error_message(err),
        ignore::Error::Loop { ancestor, .. } => format!(
            "symbolic link loop to {}, not followed",
            display_path(ancestor)
        ),
        ignore::Error::Io(io) => format!("cannot read: {io}"),
        other => format!("cannot read: {other}"),
    }
}

/// Result of scanning one file.
pub enum FileOutcome {
    Scanned {
        lines: usize,
        bytes: u64,
        findings: Vec<Finding>,
        shadowed: Vec<String>,
    },
    Skipped(FileNote),
}

/// True when `bytes` looks binary (a NUL byte in the first 8 KiB).
pub fn is_binary(bytes: &[u8]) -> bool {
    memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some()
}

/// Reads and scans one file (any kind); never panics on content.
pub fn scan_one(ctx: &ScanCtx, path: &Path, kind: FileKind) -> FileOutcome {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            return FileOutcome::Skipped(FileNote {
                path: path.to_owned(),
                message: format!("cannot read: {e}"),
            })
        }
    };
    if is_binary(&bytes) {
        return FileOutcome::Skipped(FileNote {
            path: path.to_owned(),
            message: "binary file, skipped".into(),
        });
    }
    let text = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    let (findings, shadowed) = scan_text_ex(ctx, path, kind, &text);
    let lines = memchr::memchr_iter(b'\n', text.as_bytes()).count()
        + usize::from(!text.is_empty() && !text.ends_with('\n'));
    FileOutcome::Scanned {
        lines,
        bytes: text.len() as u64,
        findings,
        shadowed,
    }
}

/// Scans text as if read from `path`: rules, configuration filters and `kplan: allow(...)`
/// suppressions applied, findings sorted.
pub fn scan_text(ctx: &ScanCtx, path: &Path, kind: FileKind, text: &str) -> Vec<Finding> {
    scan_text_ex(ctx, path, kind, text).0
}

/// [`scan_text`] plus the warp intrinsics the file shadows with macros.
fn scan_text_ex(
    ctx: &ScanCtx,
    path: &Path,
    kind: FileKind,
    text: &str,
) -> (Vec<Finding>, Vec<String>) {
    let (raw, shadowed) = match kind {
        FileKind::Cuda => crate::cuda::scan_file_ex(ctx, path, text),
        FileKind::Python => (crate::python::scan_file(ctx, path, text), Vec::new()),
    };
    // suppression comments: looked for once per file, lines indexed only when present
    let allow_lines = if memchr::memmem::find(text.as_bytes(), b"kplan:").is_some() {
        Some(crate::diag::LineIndex::new(text))
    } else {
        None
    };
    let mut out: Vec<Finding> = raw
        .into_iter()
        .filter(|f| {
            ctx.rule_enabled(f.rule, path)
                && !allow_lines.as_ref().is_some_and(|li| suppressed(li, f))
        })
        .collect();
    out.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    out.dedup_by(|a, b| a.rule == b.rule && a.start == b.start && a.message == b.message);
    (out, shadowed)
}

/// The first `code` span of a message.
fn first_quoted(m: &str) -> Option<&str> {
    let a = m.find('`')?;
    let b = m[a + 1..].find('`')?;
    Some(&m[a + 1..a + 1 + b])
}

/// `kplan: allow(rule, ...)` (or `allow(all)`) on the finding's line or the line above.
fn suppressed(lines: &crate::diag::LineIndex, f: &Finding) -> bool {
    let line0 = f.line.saturating_sub(1) as usize;
    allows(lines.line_text(line0), f.rule)
        || (line0 > 0 && allows(lines.line_text(line0 - 1), f.rule))
}

/// Whether a source line carries `kplan: allow(...)` naming `rule`.
pub fn allows(line: &str, rule: &str) -> bool {
    let mut rest = line;
    while let Some(i) = rest.find("kplan:") {
        rest = &rest[i + 6..];
        let t = rest.trim_start();
        if let Some(args) = t.strip_prefix("allow(") {
            if let Some(end) = args.find(')') {
                if args[..end]
                    .split(',')
                    .map(str::trim)
                    .any(|r| r == rule || r == "all")
                {
                    return true;
                }
            }
        }
    }
    false
}

/// Scans every file under `paths` in parallel, all under `ctx`.
pub fn scan_paths(ctx: &ScanCtx, paths: &[PathBuf]) -> Result<ScanResult, ScanError> {
    let (files, skipped) = collect_files(paths)?;
    let files = files.into_iter().map(|(p, k)| (p, k, 0)).collect();
    Ok(scan_files(
        std::slice::from_ref(ctx),
        files,
        skipped,
        &|_, _| {},
    ))
}

/// Scans every file under `paths` in parallel, each under the configuration that applies to it:
/// `config` when given (`--config`), else the `kplan.toml` nearest to the file (its directory,
/// then each parent), else the defaults. `targets` (from the command line) overrides the
/// configurations' targets. Configuration errors stop the scan.
pub fn scan_tree(
    kb: &kplan_kb::Kb,
    targets: &[String],
    config: Option<Config>,
    paths: &[PathBuf],
) -> Result<ScanResult, ScanError> {
    scan_tree_with(kb, targets, config, paths, &|_| {})
}

/// [`scan_tree`] with `adjust` applied to every configuration before it is used (the command
/// line's `--select` / `--ignore`, see [`Config::apply_rule_selection`]).
pub fn scan_tree_with(
    kb: &kplan_kb::Kb,
    targets: &[String],
    config: Option<Config>,
    paths: &[PathBuf],
    adjust: &dyn Fn(&mut Config),
) -> Result<ScanResult, ScanError> {
    scan_tree_progress(kb, targets, config, paths, adjust, &|_, _| {})
}

/// [`scan_tree_with`] calling `on_file(done, total)` each time a file has been scanned (from
/// the worker threads, in completion order), for a progress display.
pub fn scan_tree_progress(
    kb: &kplan_kb::Kb,
    targets: &[String],
    config: Option<Config>,
    paths: &[PathBuf],
    adjust: &dyn Fn(&mut Config),
    on_file: &(dyn Fn(usize, usize) + Sync),
) -> Result<ScanResult, ScanError> {
    let (ctxs, assigned, skipped) = files_with_configs(kb, targets, config, paths, adjust)?;
    Ok(scan_files(&ctxs, assigned, skipped, on_file))
}

/// A file to scan, its kind and the index of its context in the list that comes with it.
pub(crate) type Assigned = (PathBuf, FileKind, usize);

/// The files under `paths` (as [`collect_files`]), each with the context of the configuration
/// that applies to it: `config` when given, else the nearest `kplan.toml` (its directory, then
/// each parent), else the defaults; `targets` overrides the configurations' targets, and
/// `adjust` is applied to every configuration before it is used. Every configuration met is
/// loaded and checked (an error in any of them is returned). The list of contexts is never
/// empty.
pub(crate) fn files_with_configs<'kb>(
    kb: &'kb kplan_kb::Kb,
    targets: &[String],
    config: Option<Config>,
    paths: &[PathBuf],
    adjust: &dyn Fn(&mut Config),
) -> Result<(Vec<ScanCtx<'kb>>, Vec<Assigned>, Notes), ScanError> {
    let checked = |mut cfg: Config| {
        adjust(&mut cfg);
        checked_ctx(kb, targets, cfg)
    };
    let (files, skipped) = collect_files(paths)?;
    let mut ctxs: Vec<ScanCtx> = Vec::new();
    let mut assigned = Vec::with_capacity(files.len());
    match config {
        Some(c) => {
            ctxs.push(checked(c)?);
            assigned.extend(files.into_iter().map(|(p, k)| (p, k, 0)));
        }
        None => {
            let mut nearest = NearestConfig::default();
            let mut by_config: BTreeMap<Option<PathBuf>, usize> = BTreeMap::new();
            for (p, k) in files {
                let cfg_path = nearest.for_file(&p);
                let i = match by_config.get(&cfg_path) {
                    Some(&i) => i,
                    None => {
                        let cfg = match &cfg_path {
                            Some(c) => crate::load_config(c)?,
                            None => Config::default(),
                        };
                        ctxs.push(checked(cfg)?);
                        by_config.insert(cfg_path, ctxs.len() - 1);
                        ctxs.len() - 1
                    }
                };
                assigned.push((p, k, i));
            }
            if ctxs.is_empty() {
                // nothing to scan: still check the scope the scan would have had
                let cfg = match crate::find_config(paths) {
                    Some(c) => crate::load_config(&c)?,
                    None => Config::default(),
                };
                ctxs.push(checked(cfg)?);
            }
        }
    }
    Ok((ctxs, assigned, skipped))
}

fn checked_ctx<'kb>(
    kb: &'kb kplan_kb::Kb,
    targets: &[String],
    cfg: Config,
) -> Result<ScanCtx<'kb>, ScanError> {
    let path = cfg.path.clone();
    let ctx = ScanCtx::new(kb, targets, cfg)?;
    if ctx.targets.is_empty() {
        return Err(ScanError::NoTargets { config: path });
    }
    Ok(ctx)
}

/// `kplan.toml` lookup up the tree, cached per directory.
#[derive(Default)]
struct NearestConfig {
    dirs: std::collections::HashMap<PathBuf, Option<PathBuf>>,
}

impl NearestConfig {
    fn for_file(&mut self, file: &Path) -> Option<PathBuf> {
        let dir = match file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if let Some(c) = self.dirs.get(&dir) {
            return c.clone();
        }
        let abs = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        let found = self.lookup(&abs);
        self.dirs.insert(dir, found.clone());
        found
    }
    /// Nearest configuration for an absolute directory, memoized on every ancestor visited.
    fn lookup(&mut self, abs: &Path) -> Option<PathBuf> {
        let mut visited = Vec::new();
        let mut found = None;
        for d in abs.ancestors() {
            if let Some(c) = self.dirs.get(d) {
                found = c.clone();
                break;
            }
            visited.push(d.to_path_buf());
            let c = d.join(crate::CONFIG_FILE);
            if c.is_file() {
                found = Some(c);
                break;
            }
        }
        for v in visited {
            self.dirs.insert(v, found.clone());
        }
        found
    }
}

fn scan_files(
    ctxs: &[ScanCtx],
    files: Vec<(PathBuf, FileKind, usize)>,
    mut skipped: Vec<FileNote>,
    on_file: &(dyn Fn(usize, usize) + Sync),
) -> ScanResult {
    // the project index: what every file defines, for the rules of every other file
    let indexed: Option<Vec<ScanCtx>> = (files.len() > 1).then(|| {
        let entries: Vec<FileEntry> = files.iter().map(|(p, k, _)| (p.clone(), *k)).collect();
        let index = std::sync::Arc::new(crate::index::ProjectIndex::build(&entries));
        ctxs.iter()
            .map(|c| c.with_shared_index(index.clone()))
            .collect()
    });
    let ctxs: &[ScanCtx] = indexed.as_deref().unwrap_or(ctxs);
    let total = files.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let outcomes: Vec<FileOutcome> = files
        .par_iter()
        .map(|(p, k, i)| {
            let o = scan_one(&ctxs[*i], p, *k);
            on_file(
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
                total,
            );
            o
        })
        .collect();
    let mut res = ScanResult::default();
    let mut shadowed: Vec<String> = Vec::new();
    for o in outcomes {
        match o {
            FileOutcome::Scanned {
                lines,
                bytes,
                findings,
                shadowed: sh,
            } => {
                res.files_scanned += 1;
                res.lines_scanned += lines;
                res.bytes_scanned += bytes;
                res.findings.extend(findings);
                shadowed.extend(sh);
            }
            FileOutcome::Skipped(n) => skipped.push(n),
        }
    }
    if !shadowed.is_empty() {
        // a project shim redefines these intrinsics: the literal mask never reaches HIP
        res.findings.retain(|f| {
            !matches!(f.rule, "full-mask-literal" | "nvidia-only-feature")
                || !first_quoted(&f.message).is_some_and(|n| shadowed.iter().any(|s| s == n))
        });
    }
    res.findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    res.skipped = skipped;
    res
}
