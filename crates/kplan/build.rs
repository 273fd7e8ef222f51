//! Records the git commit kplan is built from as `KPLAN_GIT_REV`, so that `kplan ci` pins the
//! workflow it writes to the kplan that wrote it. Set `KPLAN_GIT_REV` in the environment to name
//! it by hand (a build outside a git checkout, e.g. from a source archive, records none).

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let out = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && !out.is_empty()).then_some(out)
}

fn main() {
    println!("cargo:rerun-if-env-changed=KPLAN_GIT_REV");
    if let Some(r) = std::env::var("KPLAN_GIT_REV")
        .ok()
        .filter(|r| !r.is_empty())
    {
        println!("cargo:rustc-env=KPLAN_GIT_REV={r}");
        return;
    }
    let Some(rev) = git(&["rev-parse", "HEAD"]).filter(|r| r.len() == 40) else {
        return;
    };
    // a new commit (HEAD or the branch it names moves) records the new revision
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(r);
    }
    for w in watch {
        if let Some(p) = git(&["rev-parse", "--path-format=absolute", "--git-path", &w]) {
            if PathBuf::from(&p).exists() {
                println!("cargo:rerun-if-changed={p}");
            }
        }
    }
    println!("cargo:rustc-env=KPLAN_GIT_REV={rev}");
}
