//! The embedded cluster measured against a real kube-apiserver: one corpus of requests sent
//! in order to both, the answers normalised ([`normalise`]) and compared ([`compare`]),
//! every difference explained by a stated reason, and the report
//! (`docs/api-agreement.md`, [`report`]) generated from it.

pub mod compare;
pub mod corpus;
pub mod normalise;
pub mod report;
pub mod run;
