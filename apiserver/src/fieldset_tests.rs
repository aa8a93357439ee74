//! Tests of `fieldset`.
