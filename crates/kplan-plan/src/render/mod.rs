//! Plan renderers: Markdown for design reviews, JSON for tools (schema: docs/plan.schema.json),
//! the roofline chart as SVG (beside the Markdown), and the CI matrix as a GitHub Actions
//! workflow (`kplan ci`).

mod markdown;
mod svg;
pub mod workflow;

pub use markdown::{markdown, markdown_with_chart};
pub use svg::roofline_svg;
pub use workflow::{workflow, WorkflowOptions};

/// A byte count with an SI prefix: 16.8 MB, 50.3 MB, 256 MB.
pub(crate) fn si_bytes(b: f64) -> String {
    markdown::si_unit(b, "B")
}

/// A count with an SI prefix and a unit: 1.5 TFLOP.
pub(crate) fn si_unit(x: f64, unit: &str) -> String {
    markdown::si_unit(x, unit)
}

/// The plan as pretty-printed JSON, newline-terminated.
pub fn json(plan: &crate::Plan) -> String {
    let mut s =
        serde_json::to_string_pretty(plan).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// The nine section headings of a Markdown plan, in order.
pub const HEADINGS: [&str; 9] = [
    "1. Backend matrix",
    "2. Operation analysis",
    "3. Abstraction strategy",
    "4. Portability risk register",
    "5. Portability header",
    "6. Tile strategy per backend",
    "7. CI matrix",
    "8. Performance expectations",
    "Review checklist",
];
