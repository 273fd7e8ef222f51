//! kplan-run
