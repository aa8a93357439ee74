//! Tests of `status`.
