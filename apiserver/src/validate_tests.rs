//! Tests of `validate`.
