//! Tests of `create`.
