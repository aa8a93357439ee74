//! One request to a cluster, in the terms of the Kubernetes API: a verb on a resource (or
//! its status subresource), with a body or a patch. Patch types, delete options and
//! subresources are [`wink_apiserver`]'s, whose rules the embedded cluster applies.

use std::fmt;

use wink_apiserver::validate;

use super::{Cause, RequestError};
pub use wink_apiserver::{DeleteOptions, PatchType, Preconditions, PropagationPolicy, Subresource};

/// The largest request body the API server reads (3 MiB); a larger one is answered `413`.
pub(crate) const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

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
    /// Whether a server-side apply may create the object when it does not exist. The API
    /// server allows that only to whom may `create` as well as `patch`; without, an apply
    /// of a missing object is refused (see [`Request::apply_may_not_create`]).
    pub may_create: bool,
    /// Who makes a write other than an apply, recorded in the object's `managedFields` (an
    /// apply names its own manager); none records nothing.
    pub field_manager: Option<String>,
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
            may_create: true,
            field_manager: None,
        }
    }

    /// Whether this is a server-side apply.
    pub fn is_apply(&self) -> bool {
        matches!(self.verb, Verb::Patch(PatchType::Apply { .. }))
    }

    /// The refusal of an apply that would create the object without leave to create.
    pub fn apply_may_not_create(&self) -> RequestError {
        RequestError::NotPermitted(format!(
            "server-side apply of {} {} would create it, and creating needs `create` as well as `patch`",
            self.kind,
            self.object_path()
        ))
    }

    /// `namespace/name`, or `name` for a cluster-scoped object.
    fn object_path(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }

    /// Checks a request before it reaches a URL, a store key or a log line: its body is at
    /// most [`MAX_BODY_BYTES`] (the API server's limit, answered `413`); and the names it
    /// addresses: the apiVersion's group must be a DNS-1123 subdomain and its version a
    /// DNS-1123 label, the kind a DNS-1035 label once lowercased; the namespace must be a DNS-1123 label; the name (required but for a
    /// create) must be a path segment (not `.` or `..`, no `/` or `%`), at most 253 bytes,
    /// with no control characters. The kind's own name rule (most are DNS-1123 subdomains)
    /// is the server's to check; nothing here can address another resource, a
    /// subresource or a collection.
    pub fn check(&self) -> Result<(), RequestError> {
        if self.body.len() > MAX_BODY_BYTES {
            return Err(RequestError::TooLarge(format!("Request entity too large: limit is {MAX_BODY_BYTES}")));
        }
        let mut causes = Vec::new();
        let (group, version) = self.api_version.rsplit_once('/').unwrap_or(("", &self.api_version));
        if !group.is_empty() {
            causes.extend(validate::dns1123_subdomain(group).into_iter().map(|m| invalid("apiVersion", m)));
        }
        causes.extend(validate::dns1123_label(version).into_iter().map(|m| invalid("apiVersion", m)));
        // A kind is a DNS-1035 label once lowercased, as a CustomResourceDefinition's must be.
        causes.extend(validate::dns1035_label(&self.kind.to_ascii_lowercase()).into_iter().map(|m| invalid("kind", m)));
        if let Some(namespace) = &self.namespace {
            causes.extend(validate::dns1123_label(namespace).into_iter().map(|m| invalid("metadata.namespace", m)));
        }
        if self.name.is_empty() {
            if self.verb != Verb::Create {
                causes.push(Cause {
                    field: "metadata.name".into(),
                    reason: "FieldValueRequired".into(),
                    message: "Required value: a name is required".into(),
                });
            }
        } else {
            let mut errors = validate::path_segment(&self.name);
            if self.name.len() > validate::DNS1123_SUBDOMAIN_MAX {
                errors.push(format!("must be no more than {} bytes", validate::DNS1123_SUBDOMAIN_MAX));
            }
            if self.name.chars().any(char::is_control) {
                errors.push("may not contain control characters".into());
            }
            causes.extend(errors.into_iter().map(|m| invalid("metadata.name", m)));
        }
        if causes.is_empty() {
            return Ok(());
        }
        let listed: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        let message = format!("{} \"{}\" is invalid: {}", shown(&self.kind), shown(&self.name), listed.join(", "));
        Err(RequestError::Invalid { message, causes })
    }

    /// Recorded in `managedFields` as written by `manager` (see [`Request::field_manager`]).
    pub fn with_field_manager(mut self, manager: impl Into<String>) -> Self {
        self.field_manager = Some(manager.into());
        self
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

/// A name as an error message shows it: escaped onto one line, at most 64 characters.
fn shown(name: &str) -> String {
    let mut shown: String = name.chars().take(64).flat_map(char::escape_debug).collect();
    if name.chars().nth(64).is_some() {
        shown.push('…');
    }
    shown
}

fn invalid(field: &str, message: String) -> Cause {
    Cause {
        field: field.to_owned(),
        reason: "FieldValueInvalid".to_owned(),
        message: format!("Invalid value: {message}"),
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

    /// Whether this is a service account's identity (`system:serviceaccount:NS:NAME`).
    pub fn is_service_account(&self) -> bool {
        self.user.strip_prefix("system:serviceaccount:").is_some_and(|rest| rest.split(':').count() == 2)
    }
}
