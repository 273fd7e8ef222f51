//! One module per verb. Each `run` returns the exit code for a completed run (0 ok, 1 findings
//! or failed targets) or an error; every error exits with code 2 (usage, input or config error).

use anyhow::Context;
use kplan_kb::Kb;
use std::path::Path;
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

pub fn report(e: anyhow::Error) -> ExitCode {
    eprintln!("error: {e:#}");
    ExitCode::from(EXIT_USAGE)
}

/// Writes `text` to `path` atomically (temp file + rename), or to stdout when `path` is None,
/// so that a failed run never leaves a half-written output file.
pub fn write_output(path: Option<&Path>, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    match path {
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        Some(p) => {
            let dir = p
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let tmp = dir.join(format!(
                ".{}.kplan-tmp-{}",
                p.file_name().and_then(|n| n.to_str()).unwrap_or("out"),
                std::process::id()
            ));
            std::fs::write(&tmp, text)
                .with_context(|| format!("cannot write {}", tmp.display()))?;
            std::fs::rename(&tmp, p).with_context(|| format!("cannot write {}", p.display()))?;
        }
    }
    Ok(())
}
