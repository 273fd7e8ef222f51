//! A run that could not happen here, and why (no compiler, no GPU, no libcuda or libnvrtc): the
//! one "skipped" value verify and bench return. A skip is reported, never counted as a pass.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skip {
    pub reason: String,
}

impl Skip {
    pub fn new(reason: impl Into<String>) -> Skip {
        Skip {
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped: {}", self.reason)
    }
}
