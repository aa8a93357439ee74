//! One request to a cluster, in the terms of the Kubernetes API: a verb on a resource (or
//! its status subresource), with a body or a patch. Patch types, delete options and
//! subresources are [`wink_apiserver`]'s, whose rules the embedded cluster applies.

use std::fmt;

pub use wink_apiserver::{DeleteOptions, PatchType, Preconditions, PropagationPolicy, Subresource};

/// A Kubernetes API verb, as RBAC names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verb {
    /// Read one object.
    Get,
    /// Create an object from `body`.
    Create,
    /// Replace an object with `body`.
    Update,
    /// Patch an object.
    Patch(PatchType),
    /// Delete an object.
    Delete(DeleteOptions),
}

impl Verb {
    /// The verb's RBAC name: `get`, `create`, `update`, `patch`, `delete`.
    pub fn rbac(&self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch(_) => "patch",
            Verb::Delete(_) => "delete",
        }
    }
}

/// What a cluster knows of a kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The plural resource name, e.g. `deployments`.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

/// One request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// What to do.
    pub verb: Verb,
    /// The object's `apiVersion`.
    pub api_version: String,
    /// The object's `kind`.
    pub kind: String,
    /// The namespace (none for cluster-scoped objects).
    pub namespace: Option<String>,
    /// The name (for create: from the body, possibly empty with `generateName`).
    pub name: String,
    /// The subresource addressed, if any.
    pub subresource: Option<Subresource>,
    /// The object (create, update) or the patch document (patch); empty otherwise.
    pub body: String,
    /// Decided but not stored (the API's `dryRun=All`): the answer is what the write would
    /// store, and nobody sees a change.
    pub dry_run: bool,
}

impl Request {
    /// A request without a body or subresource.
    pub fn new(
        verb: Verb,
        api_version: impl Into<String>,
        kind: impl Into<String>,
        namespace: Option<String>,
        name: impl Into<String>,
    ) -> Self {
        Self {
            verb,
            api_version: api_version.into(),
            kind: kind.into(),
            namespace,
            name: name.into(),
            subresource: None,
            body: String::new(),
            dry_run: false,
        }
    }

    /// Only decided, not stored, when `dry_run` (see [`Request::dry_run`]).
    pub fn with_dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// With this body: the object, or the patch document.
    pub fn with_body(mut self, body: impl Into<String>) -> Self {
        self.body = body.into();
        self
    }

    /// Addressing this subresource.
    pub fn with_subresource(mut self, subresource: Option<Subresource>) -> Self {
        self.subresource = subresource;
        self
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.verb.rbac(), self.api_version, self.kind)?;
        if let Some(sub) = self.subresource {
            write!(
                f,
                " ({})",
                match sub {
                    Subresource::Status => "status",
                }
            )?;
        }
        match &self.namespace {
            Some(ns) => write!(f, " {ns}/{}", self.name),
            None => write!(f, " {}", self.name),
        }
    }
}

/// Who a request is made as (Kubernetes impersonation).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Identity {
    /// The user name, e.g. `system:serviceaccount:team-a:reloader`.
    pub user: String,
    /// The groups.
    pub groups: Vec<String>,
}

impl Identity {
    /// The identity of a service account, with the groups the API server gives it.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        Self {
            user: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".to_owned(),
            ],
        }
    }
}
