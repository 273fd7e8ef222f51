use std::path::PathBuf;

/// Errors that stop a scan (usage, input and configuration errors; exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("unknown target `{name}`{}", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    UnknownTarget {
        name: String,
        suggestion: Option<String>,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Config {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("no targets in scope{}: give --targets (e.g. --targets sm_90a,gfx942)", config.as_ref().map(|c| format!(" (configuration {})", c.display())).unwrap_or_default())]
    NoTargets { config: Option<PathBuf> },
    #[error("{path}: {message}")]
    Input { path: PathBuf, message: String },
    #[error("unknown rule `{id}`{}", suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default())]
    UnknownRule {
        id: String,
        suggestion: Option<String>,
    },
}
