//! Tests of `resource`.
