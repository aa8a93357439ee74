//! Tests of `delete`.
