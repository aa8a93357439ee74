//! Tests of `patch`.
