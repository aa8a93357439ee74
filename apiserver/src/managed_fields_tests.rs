//! Tests of `managed_fields`.
