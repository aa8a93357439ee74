//! Integration test support.
