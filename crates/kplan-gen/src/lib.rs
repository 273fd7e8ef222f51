//! kplan-gen
