//! Running a tool with a time limit: compilers, kernel binaries and the Python drivers all go
//! through [`run_command`]. The child gets its own process group so that a timeout kills the
//! whole tree (nvcc runs cicc and ptxas; a wrapper script or a Python driver runs its own
//! children), and both pipes are drained on threads so a chatty tool cannot block.
//!
//! Finding the tools is [`crate::toolchain`]'s job; [`run_driver`] is the transport to the
//! embedded Python drivers (script and JSON request written to a temp dir, reply on stdout);
//! [`DriverSession`] keeps one driver running for many requests (one JSON line each way).

use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What a finished (or killed) run left behind.
#[derive(Debug, Clone)]
pub struct Output {
    /// Exit code; `None` when killed by a signal or by the timeout.
    pub code: Option<i32>,
    /// How it ended; `None` when it timed out (or could not be waited for).
    pub status: Option<ExitStatus>,
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
    cmd.args(args);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    run_command(cmd, timeout)
}

/// Runs `cmd` (its program, arguments, environment and directory as set) with stdin closed and
/// both outputs captured, killing its process group after `timeout`.
pub fn run_command(mut cmd: Command, timeout: Duration) -> std::io::Result<Output> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
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
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = start.elapsed();
    let stdout = t_out.join().unwrap_or_default();
    let stderr = t_err.join().unwrap_or_default();
    Ok(Output {
        code: status.and_then(|s| s.code()),
        status,
        stdout,
        stderr,
        timed_out,
        elapsed,
    })
}

/// Why a Python driver gave no reply.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    #[error("cannot run {python}: {source}")]
    Spawn {
        python: String,
        source: std::io::Error,
    },
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot encode the request: {0}")]
    Request(String),
    #[error("timed out after {0} s")]
    Timeout(u64),
    /// The driver exited unsuccessfully; `tail` is the last lines of its stderr.
    #[error("{python} exited with {status}: {tail}")]
    Exit {
        python: String,
        status: String,
        tail: String,
    },
}

/// `python script ARGS` for an embedded driver: the script written to `dir`, `TRITON_CACHE_DIR`
/// inside it, and Debian's `ld.lld` for Triton releases that run one.
/// What the Python drivers share (`import kplan_driver_common`), written beside each driver.
pub const DRIVER_COMMON: &str = include_str!("../python/kplan_driver_common.py");

fn driver_command(python: &Path, script: &str, dir: &Path) -> std::io::Result<Command> {
    let script_path = dir.join("driver.py");
    std::fs::write(&script_path, script)?;
    std::fs::write(dir.join("kplan_driver_common.py"), DRIVER_COMMON)?;
    let mut cmd = Command::new(python);
    cmd.arg(&script_path)
        .env("TRITON_CACHE_DIR", dir.join("cache"));
    // Triton 3.6 links AMD code objects with the LLD built into libtriton; older releases run
    // `ld.lld` from TRITON_HIP_LLD_PATH, so point them at Debian's lld-19 when it is there.
    if std::env::var_os("TRITON_HIP_LLD_PATH").is_none() {
        if let Some(lld) = [
            "/usr/bin/ld.lld-19",
            "/usr/bin/ld.lld",
            "/opt/rocm/llvm/bin/ld.lld",
        ]
        .iter()
        .find(|p| Path::new(p).is_file())
        {
            cmd.env("TRITON_HIP_LLD_PATH", lld);
        }
    }
    Ok(cmd)
}

/// The last lines of a driver's stderr, for an error message.
fn stderr_tail(stderr: &str) -> String {
    let tail: Vec<&str> = stderr.lines().rev().take(12).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// Runs `python script request.json` with a time limit (the script and the request written to
/// a temp dir, `TRITON_CACHE_DIR` inside it), returning the driver's stdout.
pub fn run_driver(
    python: &Path,
    script: &str,
    request: &serde_json::Value,
    timeout: Duration,
) -> Result<String, DriverError> {
    let dir = tempfile::Builder::new().prefix("kplan-triton-").tempdir()?;
    let req_path = dir.path().join("request.json");
    std::fs::write(
        &req_path,
        serde_json::to_vec(request).map_err(|e| DriverError::Request(e.to_string()))?,
    )?;
    let mut cmd = driver_command(python, script, dir.path())?;
    cmd.arg(&req_path);
    let out = run_command(cmd, timeout).map_err(|source| DriverError::Spawn {
        python: python.display().to_string(),
        source,
    })?;
    if out.timed_out {
        return Err(DriverError::Timeout(timeout.as_secs()));
    }
    if !out.success() {
        return Err(DriverError::Exit {
            python: python.display().to_string(),
            status: out
                .status
                .map(|s| s.to_string())
                .unwrap_or_else(|| "no status".into()),
            tail: stderr_tail(&out.stderr),
        });
    }
    Ok(out.stdout)
}

/// An embedded driver kept running across requests (`python script --serve`): one JSON line in
/// on stdin and one line back on stdout per request, in its own process group, stderr drained
/// on a thread. A request that times out kills the group (the session answers no more);
/// dropping the session closes stdin (the driver's cue to exit) and kills what is left.
pub struct DriverSession {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    replies: std::sync::mpsc::Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
    python: String,
    _dir: tempfile::TempDir,
}

impl DriverSession {
    /// Starts `python script --serve` (the script in a temp dir, as [`run_driver`] does).
    pub fn start(python: &Path, script: &str) -> Result<DriverSession, DriverError> {
        use std::io::BufRead;
        let dir = tempfile::Builder::new().prefix("kplan-triton-").tempdir()?;
        let mut cmd = driver_command(python, script, dir.path())?;
        cmd.arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let spawn_error = |source| DriverError::Spawn {
            python: python.display().to_string(),
            source,
        };
        let mut child = cmd.spawn().map_err(spawn_error)?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut se = child.stderr.take().expect("stderr is piped");
        let (tx, replies) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = se.read_to_end(&mut b);
            String::from_utf8_lossy(&b).into_owned()
        });
        Ok(DriverSession {
            stdin: child.stdin.take(),
            child,
            replies,
            stderr: Some(stderr),
            python: python.display().to_string(),
            _dir: dir,
        })
    }

    /// Sends `request` and waits up to `timeout` for the driver's reply line.
    pub fn request(
        &mut self,
        request: &serde_json::Value,
        timeout: Duration,
    ) -> Result<String, DriverError> {
        use std::io::Write;
        let mut line =
            serde_json::to_string(request).map_err(|e| DriverError::Request(e.to_string()))?;
        line.push('\n');
        let sent = match self.stdin.as_mut() {
            Some(w) => w
                .write_all(line.as_bytes())
                .and_then(|()| w.flush())
                .is_ok(),
            None => false,
        };
        let reply = if sent {
            self.replies.recv_timeout(timeout)
        } else {
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
        };
        match reply {
            Ok(r) => Ok(r),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                self.finish(Duration::ZERO);
                Err(DriverError::Timeout(timeout.as_secs()))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                let status = self
                    .finish(Duration::from_secs(2))
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "no status".into());
                let stderr = self
                    .stderr
                    .take()
                    .and_then(|h| h.join().ok())
                    .unwrap_or_default();
                Err(DriverError::Exit {
                    python: self.python.clone(),
                    status,
                    tail: stderr_tail(&stderr),
                })
            }
        }
    }

    /// Closes stdin, gives the driver `grace` to exit, then kills its process group.
    fn finish(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.stdin = None;
        let start = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(st)) => return Some(st),
                Ok(None) if start.elapsed() < grace => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => break,
            }
        }
        kill_tree(&mut self.child);
        self.child.wait().ok()
    }
}

impl Drop for DriverSession {
    fn drop(&mut self) {
        // the driver exits at the end of its input; a stuck one is killed
        self.finish(Duration::from_secs(2));
    }
}

/// Last JSON line of a driver's stdout (a kernel file may print on import).
pub fn last_json_line(stdout: &str) -> Option<&str> {
    stdout
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('{'))
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

    #[test]
    fn a_session_answers_each_request_and_times_out() {
        // /bin/sh stands in for the interpreter: `sh driver.py --serve` echoes every line back,
        // and sleeps instead of answering `"slow"`.
        let sh = Path::new("/bin/sh");
        let script =
            "while read -r l; do case \"$l\" in *slow*) sleep 30;; esac; echo \"$l\"; done\n";
        let mut s = DriverSession::start(sh, script).unwrap();
        let t = Duration::from_secs(10);
        assert_eq!(
            s.request(&serde_json::json!({"a": 1}), t).unwrap(),
            "{\"a\":1}"
        );
        assert_eq!(s.request(&serde_json::json!([2]), t).unwrap(), "[2]");
        let start = Instant::now();
        let e = s.request(&serde_json::json!("slow"), Duration::from_millis(300));
        assert!(matches!(e, Err(DriverError::Timeout(0))), "{e:?}");
        assert!(start.elapsed() < Duration::from_secs(10));
        // killed: no more answers
        assert!(matches!(
            s.request(&serde_json::json!(3), t),
            Err(DriverError::Exit { .. })
        ));
        // a driver that exits says so with its stderr
        let mut s = DriverSession::start(sh, "read -r l; echo gone >&2; exit 5\n").unwrap();
        match s.request(&serde_json::json!(1), t) {
            Err(DriverError::Exit { status, tail, .. }) => {
                assert!(status.contains('5'), "{status}");
                assert_eq!(tail, "gone");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn driver_transport_times_out_and_reports_exits() {
        // /bin/sh stands in for the interpreter: the transport is the same for any script.
        let sh = Path::new("/bin/sh");
        let req = serde_json::json!({"x": 1});
        let e = run_driver(
            sh,
            "sleep 30 & sleep 30\n",
            &req,
            Duration::from_millis(300),
        );
        assert!(matches!(e, Err(DriverError::Timeout(0))), "{e:?}");
        let e = run_driver(sh, "echo bad >&2; exit 4\n", &req, Duration::from_secs(10));
        match e {
            Err(DriverError::Exit { status, tail, .. }) => {
                assert!(status.contains('4'), "{status}");
                assert_eq!(tail, "bad");
            }
            other => panic!("{other:?}"),
        }
        // The request file is the first argument; stdout comes back.
        let out = run_driver(sh, "cat \"$1\"\n", &req, Duration::from_secs(10)).unwrap();
        assert_eq!(last_json_line(&out), Some("{\"x\":1}"));
    }
}
