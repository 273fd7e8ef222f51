//! Writing a project: into a temporary directory beside the destination, then moved into place.

use crate::{NewError, Project};
use std::path::{Path, PathBuf};

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> NewError {
    let path = path.to_path_buf();
    move |source| NewError::Io { what, path, source }
}

/// Writes `project` into `dir`.
///
/// Every file is first written into a temporary directory next to `dir` (same filesystem). When
/// `dir` does not exist, that directory is renamed to `dir`: the project appears whole or not at
/// all. When `dir` exists, the files are moved into it one by one, after all of them were
/// written; without `force`, any project file that already exists in `dir` is an error before
/// anything is written ([`NewError::Exists`] lists them). Files of `dir` that are not part of the
/// project are never touched. Returns the paths written, relative to `dir`.
pub fn write_project(project: &Project, dir: &Path, force: bool) -> Result<Vec<String>, NewError> {
    let exists = match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() || (m.file_type().is_symlink() && dir.is_dir()) => true,
        Ok(_) => {
            return Err(NewError::Io {
                what: "cannot create the project directory",
                path: dir.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "exists and is not a directory",
                ),
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(io("cannot read", dir)(e)),
    };
    if exists && !force {
        let clash: Vec<String> = project
            .files
            .iter()
            .filter(|f| std::fs::symlink_metadata(dir.join(&f.path)).is_ok())
            .map(|f| f.path.clone())
            .collect();
        if !clash.is_empty() {
            return Err(NewError::Exists {
                dir: dir.display().to_string(),
                files: clash,
            });
        }
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(NewError::Io {
            what: "cannot create the project directory in",
            path: parent,
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
        });
    }
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "project".into());
    let tmp = tempdir_beside(&parent, &name)?;
    let result = (|| -> Result<Vec<String>, NewError> {
        for f in &project.files {
            let p = tmp.join(&f.path);
            if let Some(d) = p.parent() {
                std::fs::create_dir_all(d).map_err(io("cannot create", d))?;
            }
            std::fs::write(&p, &f.text).map_err(io("cannot write", &p))?;
        }
        if !exists {
            std::fs::rename(&tmp, dir).map_err(io("cannot create", dir))?;
        } else {
            for f in &project.files {
                let to = dir.join(&f.path);
                if let Some(d) = to.parent() {
                    std::fs::create_dir_all(d).map_err(io("cannot create", d))?;
                }
                std::fs::rename(tmp.join(&f.path), &to).map_err(io("cannot write", &to))?;
            }
        }
        Ok(project.files.iter().map(|f| f.path.clone()).collect())
    })();
    if tmp.exists() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}

fn tempdir_beside(parent: &Path, name: &str) -> Result<PathBuf, NewError> {
    for n in 0..100u32 {
        let p = parent.join(format!(".{name}.kplan-new-{}-{n}", std::process::id()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io("cannot create a directory in", parent)(e)),
        }
    }
    Err(NewError::Io {
        what: "cannot create a temporary directory in",
        path: parent.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::AlreadyExists, "100 names taken"),
    })
}
