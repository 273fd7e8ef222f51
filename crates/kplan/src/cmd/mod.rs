//! One module per verb. Each `run` returns the exit code for a completed run (0 ok, 1 findings
//! or failed targets) or an error; every error exits with code 2 (usage, input or config error).

use anyhow::Context;
use kplan_kb::Kb;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub mod build;
pub mod ci;
pub mod doctor;
pub mod header;
pub mod kb;
pub mod mcp;
pub mod new;
pub mod plan;
pub mod run;
pub mod scan;

/// Exit code for usage, input and configuration errors.
pub const EXIT_USAGE: u8 = 2;

/// `--color`: when output is coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorWhen {
    /// When the stream is a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    Always,
    Never,
}

/// `--format` of a verb whose output is text for people only (`kplan header`): `human`, the
/// name every verb gives its text output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TextFormat {
    #[default]
    Human,
}

/// Output settings every verb honours: `--color`, `--quiet`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Output {
    pub color: ColorWhen,
    /// `--quiet`: results only; no warnings, summaries or progress.
    pub quiet: bool,
}

impl Output {
    /// Whether to colour a stream that is (`tty`) or is not a terminal.
    pub fn color_for(&self, tty: bool) -> bool {
        match self.color {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => tty && std::env::var_os("NO_COLOR").map_or(true, |v| v.is_empty()),
        }
    }
    /// Whether standard output gets colour (never when writing to a file).
    pub fn stdout_color(&self, to_file: bool) -> bool {
        use std::io::IsTerminal;
        !to_file && self.color_for(std::io::stdout().is_terminal())
    }
    pub fn stderr_color(&self) -> bool {
        use std::io::IsTerminal;
        self.color_for(std::io::stderr().is_terminal())
    }
    /// A spinner with `message` and the elapsed time on standard error while long work runs:
    /// only when standard error is a terminal, `--quiet` is not given and `machine_output` (JSON,
    /// SARIF) is false. Finished (cleared) when dropped.
    pub fn progress(&self, message: String, machine_output: bool) -> Progress {
        use std::io::IsTerminal;
        if self.quiet || machine_output || !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let pb = indicatif::ProgressBar::new_spinner();
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            pb.set_style(style);
        }
        pb.set_message(message);
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        Progress(Some(pb))
    }
}

/// See [`Output::progress`].
pub struct Progress(Option<indicatif::ProgressBar>);

impl Output {
    /// A bar with `message`, `N/M` and the elapsed time on standard error while `total` items
    /// of long work run (build targets, verify cases), under the same conditions as
    /// [`Output::progress`]. [`Progress::set`] moves it; finished (cleared) when dropped.
    pub fn progress_bar(&self, message: String, total: usize, machine_output: bool) -> Progress {
        let p = self.progress(message, machine_output);
        if let Some(pb) = &p.0 {
            pb.set_length(total as u64);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} ({elapsed})")
            {
                pb.set_style(style);
            }
        }
        p
    }
}

impl Progress {
    /// `done` of `total` items finished.
    pub fn set(&self, done: usize, total: usize) {
        if let Some(pb) = &self.0 {
            pb.set_length(total as u64);
            pb.set_position(done as u64);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(pb) = self.0.take() {
            pb.finish_and_clear();
        }
    }
}

/// What every verb gets: the knowledge base in use and the output settings.
pub struct Ctx {
    kb: KbHandle,
    pub out: Output,
}

enum KbHandle {
    Builtin(&'static Kb),
    Loaded(Box<Kb>),
}

impl Ctx {
    pub fn new(kb_dir: Option<&Path>, out: Output) -> anyhow::Result<Ctx> {
        let kb =
            match kb_dir {
                None => KbHandle::Builtin(Kb::builtin()),
                Some(d) => KbHandle::Loaded(Box::new(Kb::load_dir(d).with_context(|| {
                    format!("cannot load knowledge base from {}", d.display())
                })?)),
            };
        Ok(Ctx { kb, out })
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

/// A kernel spec read from `path` and parsed, with its text; `Ok(Err(EXIT_USAGE))` once its
/// located error (`path:line:col`, for invalid UTF-8 as for any spec error) is printed on
/// standard error.
pub fn read_spec(kb: &Kb, path: &Path) -> anyhow::Result<Result<(String, kplan_plan::Spec), u8>> {
    let raw =
        std::fs::read(path).with_context(|| format!("cannot read spec {}", path.display()))?;
    let shown = path.display().to_string();
    let text = match String::from_utf8(raw) {
        Ok(t) => t,
        Err(e) => {
            // binary or mis-encoded input: locate the first bad byte like any other spec error
            let bytes = e.as_bytes();
            let at = e.utf8_error().valid_up_to();
            let valid = std::str::from_utf8(&bytes[..at]).unwrap_or("");
            let (line, col) = kplan_kb::line_col(valid, at);
            eprintln!(
                "{shown}:{line}:{col}: error: invalid UTF-8 (byte 0x{:02x}), expected a UTF-8 TOML kernel spec",
                bytes[at]
            );
            return Ok(Err(EXIT_USAGE));
        }
    };
    match kplan_plan::parse_spec(&text, kb) {
        Ok(spec) => Ok(Ok((text, spec))),
        Err(e) => {
            // a located diagnostic (file:line:col, source line, caret); nothing is written
            eprint!("{}", e.render(&shown, &text));
            Ok(Err(EXIT_USAGE))
        }
    }
}

pub fn report(e: anyhow::Error, out: Output) -> ExitCode {
    if is_broken_pipe(&e) {
        // the reader went away (`kplan scan | head -1`): nothing more to say, as `head` users
        // expect of any filter
        return ExitCode::SUCCESS;
    }
    if out.stderr_color() {
        eprintln!("\x1b[1;31merror\x1b[0m: {e:#}");
    } else {
        eprintln!("error: {e:#}");
    }
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
