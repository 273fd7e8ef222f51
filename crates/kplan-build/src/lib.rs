//! kplan-build: compiler discovery, invocation and resource-usage parsing.

pub mod triton;
