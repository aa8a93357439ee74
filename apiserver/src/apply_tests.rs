//! Tests of `apply`.
