//! Tests of `object`.
