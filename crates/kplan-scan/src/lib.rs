//! kplan-scan: the portability scanner.

pub mod python;
