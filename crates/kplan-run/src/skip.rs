//! A run that could not happen here, and why (no compiler, no GPU, no libcuda or libnvrtc): the
//! one "skipped" value verify and bench return. A skip is reported, never counted as a pass.
//!
//! Every backend that may be absent opens as `Result<Result<Backend, Skip>, RunError>`: the outer
//! error is a real failure (a bad `KPLAN_CXX`, an unreadable file), the inner one a skip. The
//! reports carry it as `Option<Skip>`; in JSON the harness report writes it as an object
//! (`"skip": {"reason": ...}`), the verify report (reference kernels and Triton kernels alike)
//! and bench as the string `"skip_reason"`: the field names the reports have always had
//! ([`as_reason`] writes the string form).

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

    /// No host C++ compiler: the cpu and cpu-simt backends cannot run.
    pub fn no_cxx() -> Skip {
        Skip::new("no C++ compiler found (set KPLAN_CXX or CXX, or install g++ or clang++)")
    }
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped: {}", self.reason)
    }
}

/// Serialises an `Option<Skip>` as its reason string (use with
/// `skip_serializing_if = "Option::is_none"`).
pub fn as_reason<S: serde::Serializer>(skip: &Option<Skip>, s: S) -> Result<S::Ok, S::Error> {
    match skip {
        Some(k) => s.serialize_str(&k.reason),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct R {
        #[serde(
            rename = "skip_reason",
            serialize_with = "as_reason",
            skip_serializing_if = "Option::is_none"
        )]
        skip: Option<Skip>,
    }

    #[test]
    fn reason_string_form() {
        let v = serde_json::to_value(R {
            skip: Some(Skip::new("no GPU")),
        })
        .unwrap();
        assert_eq!(v, serde_json::json!({"skip_reason": "no GPU"}));
        let v = serde_json::to_value(R { skip: None }).unwrap();
        assert_eq!(v, serde_json::json!({}));
        assert_eq!(Skip::new("x").to_string(), "skipped: x");
    }
}
