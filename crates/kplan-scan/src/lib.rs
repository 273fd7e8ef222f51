//! kplan-scan
