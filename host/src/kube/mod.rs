//! Kubernetes vocabulary, without behaviour: the bottom room every other one may use, and
//! which uses nothing of them (as kube-rs keeps `kube-core` below its client and runtime).
//!
//! - [`resource`]: [`ResourceDef`], the one type for a kind, and the built-in kinds'
//!   definitions;
//! - [`scope`]: the built-in kinds and their scopes, and the kinds CustomResourceDefinitions
//!   add;
//! - [`versions`]: the versions each built-in API group serves;
//! - [`fields`]: the fields a LIST or WATCH of a built-in kind can be selected by;
//! - [`selector`]: label selectors in their string form (`app=web, tier in (a,b)`);
//! - [`deletion`]: what a DELETE that removes an object answers, by kind;
//! - [`events`]: the two forms of an Event (`v1`, `events.k8s.io/v1`) and the conversion
//!   between them;
//! - [`names`]: the short names and categories of the built-in resources;
//! - [`printers`]: the columns and cells of server-side printing (`Table` answers);
//! - [`scale`]: the kinds with a `scale` subresource and the Scale they are seen as;
//! - [`rbac`]: RBAC's rules and the attributes of a request they are matched against, and
//!   [`rbac_check`]: the entries of a rule that can never match;
//! - [`yaml11`]: YAML documents read into JSON as kubectl reads them, and [`nesting`]: how
//!   deeply a document nests, measured before it is parsed.

pub(crate) mod deletion;
pub(crate) mod events;
pub(crate) mod fields;
pub(crate) mod names;
pub(crate) mod nesting;
pub(crate) mod printers;
pub(crate) mod rbac;
pub(crate) mod rbac_check;
pub(crate) mod resource;
pub(crate) mod scale;
pub(crate) mod scope;
pub(crate) mod selector;
pub(crate) mod versions;
pub(crate) mod yaml11;

pub use rbac::Attributes;
pub use rbac::PolicyRule;
pub use resource::ResourceDef;
pub use scope::Scope;
pub use selector::LabelSelector;
pub use selector::LabelSet;

/// The deepest nesting of JSON arrays and objects (the top-level object counts as one) that
/// wink reads from untrusted text: `serde_json`'s recursion limit. The YAML reader refuses
/// anything deeper as it reads it, and so do the sources that build objects from files or
/// writes; an [`Object`](crate::informer::Object) reads back no deeper.
pub const MAX_DEPTH: usize = 127;
