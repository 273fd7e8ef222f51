//! One module per verb. Each `run` returns the exit code for a completed run (0 ok, 1 findings
//! or failed targets) or an error; every error exits with code 2 (usage, input or config error).

use anyhow::Context;
use kplan_kb::Kb;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub mod build;
pub mod header;
pub mod kb;
pub mod plan;
pub mod run;
pub mod scan;

/// Exit code for usage, input and configuration errors.
pub const EXIT_USAGE: u8 = 2;

/// What every verb gets: the knowledge base in use.
pub struct Ctx {
    kb: KbHandle,
}

enum KbHandle {
    Builtin(&'static Kb),
    Loaded(Box<Kb>),
}

impl Ctx {
    pub fn new(kb_dir: Option<&Path>) -> anyhow::Result<Ctx> {
        let kb =
            match kb_dir {
                None => KbHandle::Builtin(Kb::builtin()),
                Some(d) => KbHandle::Loaded(Box::new(Kb::load_dir(d).with_context(|| {
                    format!("cannot load knowledge base from {}", d.display())
                })?)),
            };
        Ok(Ctx { kb })
    }
    pub fn kb(&self) -> &Kb {
        match &self.kb {
            KbHandle::Builtin(k) => k,
            KbHandle::Loaded(k) => k,
        }
    }
}

/// Whether skipped checks fail the run: `--strict`, or `KPLAN_STRICT=1` in the environment.
pub fn strict(flag: bool) -> bool {
    flag || std::env::var("KPLAN_STRICT").is_ok_and(|v| v == "1")
}

pub fn report(e: anyhow::Error) -> ExitCode {
    if is_broken_pipe(&e) {
        // the reader went away (`kplan scan | head -1`): nothing more to say, as `head` users
        // expect of any filter
        return ExitCode::SUCCESS;
    }
    eprintln!("error: {e:#}");
    ExitCode::from(EXIT_USAGE)
}

/// Whether `e` is (caused by) writing to a pipe whose reader has closed it.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Writes `text` to `path` (see [`with_output`]), or to stdout when `path` is None.
pub fn write_output(path: Option<&Path>, text: &str) -> anyhow::Result<()> {
    with_output(path, |w| w.write_all(text.as_bytes()))
}

/// Runs `write` on the output: stdout (buffered; a write error, such as a full disk, is an
/// error, and a closed pipe is reported as [`std::io::ErrorKind::BrokenPipe`] for [`report`] to
/// end quietly), or `path`:
/// - a regular file, or a path that does not exist yet: written to a temporary file in the same
///   directory and renamed over it once complete, so a failed run never leaves a half-written
///   file; an existing file keeps its permissions;
/// - a symbolic link: the same, applied to the file it points to (the link stays a link);
/// - anything else (a FIFO, a character device such as `/dev/null`, a socket): written to
///   directly, never replaced.
pub fn with_output(
    path: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let Some(p) = path else {
        let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
        write(&mut out)
            .and_then(|()| out.flush())
            .context("cannot write to standard output")?;
        return Ok(());
    };
    let target = resolve_links(p)?;
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => anyhow::bail!("cannot write {}: is a directory", p.display()),
        Ok(m) if !m.is_file() => {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .with_context(|| format!("cannot open {}", p.display()))?;
            let mut w = std::io::BufWriter::with_capacity(1 << 16, f);
            write(&mut w)
                .and_then(|()| w.flush())
                .with_context(|| format!("cannot write {}", p.display()))?;
            Ok(())
        }
        Ok(m) => atomic_write(p, &target, Some(m.permissions()), write),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => atomic_write(p, &target, None, write),
        Err(e) => Err(e).with_context(|| format!("cannot write {}", p.display())),
    }
}

/// `p` with every symbolic link along its last component followed (the target may not exist).
fn resolve_links(p: &Path) -> anyhow::Result<PathBuf> {
    let mut cur = p.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&cur)
                    .with_context(|| format!("cannot read link {}", cur.display()))?;
                cur = match cur.parent() {
                    Some(d) if to.is_relative() => d.join(to),
                    _ => to,
                };
            }
            _ => return Ok(cur),
        }
    }
    anyhow::bail!(
        "cannot write {}: too many levels of symbolic links",
        p.display()
    )
}

fn atomic_write(
    shown: &Path,
    target: &Path,
    perms: Option<std::fs::Permissions>,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    // created like any new file (mode 0666 less the umask), unlike tempfile's 0600
    let mut n = 0u32;
    let (tmp, file) = loop {
        let tmp = dir.join(format!(".{name}.kplan-tmp-{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot write {}", shown.display()));
            }
        }
    };
    let result = (|| -> std::io::Result<()> {
        let mut w = std::io::BufWriter::new(file);
        write(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        if let Some(p) = perms {
            f.set_permissions(p)?;
        }
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, target)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e).with_context(|| format!("cannot write {}", shown.display()));
    }
    Ok(())
}
