//! kplan-build
