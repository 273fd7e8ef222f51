//! kplan-plan
