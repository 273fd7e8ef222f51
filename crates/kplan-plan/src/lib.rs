//! kplan-plan: the backend-agnostic kernel plan.
//!
//! [`parse_spec`] reads a kernel spec (TOML) into a validated [`Spec`], reporting bad input as a
//! located [`SpecError`]; [`build_plan`] derives the plan from the spec and the knowledge base;
//! [`render::markdown`] and [`render::json`] print it.

pub mod analysis;
mod build;
pub mod decide;
pub mod efficiency;
pub mod error;
pub mod keys;
pub mod model;
pub mod render;
pub mod schema;
pub mod spec;

pub use build::{build_plan, PlanInputs};
pub use decide::risks::SourceFinding;
pub use error::SpecError;
pub use model::Plan;
pub use spec::{parse_spec, parse_spec_targets, Spec, SpecNote};
