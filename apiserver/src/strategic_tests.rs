//! Tests of `strategic`.
