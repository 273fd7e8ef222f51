//! Running a compiler with a time limit. The child gets its own process group so that a
//! timeout kills the whole tree (nvcc runs cicc and ptxas; a wrapper script runs its own
//! children), and both pipes are drained on threads so a chatty compiler cannot block.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What a finished (or killed) compiler run left behind.
#[derive(Debug, Clone)]
pub struct Output {
    /// Exit code; `None` when killed by a signal or by the timeout.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
    pub elapsed: Duration,
}

impl Output {
    pub fn success(&self) -> bool {
        !self.timed_out && self.code == Some(0)
    }
    /// stderr then stdout, trimmed (compilers split their messages between the two).
    pub fn text(&self) -> String {
        let mut s = self.stderr.trim_end().to_string();
        if !self.stdout.trim().is_empty() {
            if !s.is_empty() {
                s.push('\n');
            }
            s.push_str(self.stdout.trim_end());
        }
        s
    }
}

/// Runs `program args` in `cwd` (if given), killing its process group after `timeout`.
pub fn run(
    program: &Path,
    args: &[String],
    cwd: Option<&Path>,
    timeout: Duration,
) -> std::io::Result<Output> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let mut so = child.stdout.take().expect("stdout is piped");
    let mut se = child.stderr.take().expect("stderr is piped");
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = so.read_to_end(&mut b);
        String::from_utf8_lossy(&b).into_owned()
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = se.read_to_end(&mut b);
        String::from_utf8_lossy(&b).into_owned()
    });
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break Some(st);
        }
        if start.elapsed() >= timeout {
            timed_out = true;
            kill_tree(&mut child);
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = start.elapsed();
    let stdout = t_out.join().unwrap_or_default();
    let stderr = t_err.join().unwrap_or_default();
    Ok(Output {
        code: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        stdout,
        stderr,
        timed_out,
        elapsed,
    })
}

fn kill_tree(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        // The child leads its own process group (process_group(0) above): signal the group.
        let pgid = child.id() as libc::pid_t;
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn timeout_kills_the_whole_group() {
        let sh = Path::new("/bin/sh");
        let args = vec![
            "-c".to_string(),
            "sleep 30 & sleep 30; echo never".to_string(),
        ];
        let out = run(sh, &args, None, Duration::from_millis(300)).unwrap();
        assert!(out.timed_out);
        assert!(
            out.elapsed < Duration::from_secs(10),
            "took {:?}",
            out.elapsed
        );
        assert!(!out.stdout.contains("never"));
    }

    #[test]
    fn collects_exit_code_and_both_streams() {
        let args = vec![
            "-c".to_string(),
            "echo out; echo err >&2; exit 3".to_string(),
        ];
        let out = run(Path::new("/bin/sh"), &args, None, Duration::from_secs(10)).unwrap();
        assert_eq!(out.code, Some(3));
        assert_eq!(out.text(), "err\nout");
    }
}
