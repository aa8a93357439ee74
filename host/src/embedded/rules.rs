//! The API server's rules applied by the [`EmbeddedClient`](super::EmbeddedClient): one
//! request against one kind's store, decided by [`wink_apiserver`] (the write semantics the
//! embedded cluster, `--serve-api` and the tests' API server share) inside the store's lock.

use serde_json::Value;
use wink_apiserver as api;

use super::client::{Collection, key_of};
use crate::cluster::{Request, RequestError, Verb};
use crate::informer::{Object, ObjectError};

impl From<ObjectError> for RequestError {
    fn from(e: ObjectError) -> Self {
        match e {
            ObjectError::TooLarge { .. } => RequestError::TooLarge(format!("etcdserver: request is too large ({e})")),
            e => RequestError::Invalid { message: e.to_string(), causes: Vec::new() },
        }
    }
}

/// The resource definition the rules see: the collection's, at the version and kind the
/// request names.
fn definition(c: &Collection, api_version: &str, kind: &str) -> api::ResourceDef {
    let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
    api::ResourceDef { version: version.to_owned(), kind: kind.to_owned(), ..c.def.clone() }
}

fn parse(text: &str, what: &str) -> Result<Value, RequestError> {
    serde_json::from_str(text).map_err(|e| RequestError::BadRequest(format!("the {what} is not valid JSON: {e}")))
}

/// What a request did: the object as stored (or read), or its final state when the request
/// removed it.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The object.
    pub object: Object,
    /// Whether the request removed it from the store.
    pub removed: bool,
    /// Whether the request changed what is stored (false for reads, dry runs and writes
    /// that found nothing to change).
    pub changed: bool,
}

impl Outcome {
    /// What the API returns: the object, none when it was removed.
    pub fn returned(self) -> Option<Object> {
        (!self.removed).then_some(self.object)
    }
}

/// Runs one rule on the stored object with `key`; stores what it decided unless `dry_run`.
fn write(
    c: &Collection,
    def: &api::ResourceDef,
    key: &str,
    dry_run: bool,
    rule: impl FnOnce(Option<&Value>) -> Result<api::Write, RequestError>,
) -> Result<Outcome, RequestError> {
    // What the rule decided about `current`, checked as the store takes it.
    let decide = |current: Option<&Object>| -> Result<api::Write, RequestError> {
        let value = current.map(Object::to_value).transpose()?;
        let write = rule(value.as_ref())?;
        if let api::Write::Put(v) = &write
            && c.def.built_in
        {
            super::typed::check(&def.api_version(), &def.kind, v)?;
        }
        Ok(write)
    };
    if dry_run {
        // Decided on the object stored now, and answered as it would be stored (without a
        // new resourceVersion); nothing is written, so nobody sees a change.
        let current = c.source.get(key);
        let write = decide(current.as_ref())?;
        let removed = matches!(write, api::Write::Delete(_));
        let object = match (write, current) {
            (api::Write::Unchanged(_), Some(stored)) => stored,
            (write, _) => Object::from_string(write.into_object().to_string())?,
        };
        return Ok(Outcome { object, removed, changed: false });
    }
    let (mut removed, mut changed) = (false, true);
    let stored = c.source.write(key, |current| {
        let write = decide(current)?;
        removed = matches!(write, api::Write::Delete(_));
        changed = !(current.is_some() && matches!(write, api::Write::Unchanged(_)));
        Ok::<_, RequestError>(write)
    })?;
    Ok(Outcome { object: stored, removed, changed })
}

/// Executes `request` against `collection` in `namespace` (checked: present iff namespaced).
pub(super) fn execute(c: &Collection, namespace: Option<&str>, request: Request) -> Result<Outcome, RequestError> {
    let def = definition(c, &request.api_version, &request.kind);
    let ctx = api::SystemContext;
    let opts = api::WriteOptions { subresource: request.subresource, field_manager: request.field_manager.clone() };
    let (name, dry_run) = (request.name.clone(), request.dry_run);
    match request.verb {
        Verb::Get => {
            let object = c.source.get(&key_of(namespace, &name)).ok_or_else(|| api::Status::not_found(&def, &name))?;
            Ok(Outcome { object, removed: false, changed: false })
        }
        Verb::Create => {
            let mut obj = parse(&request.body, "object")?;
            api::assign_name(&mut obj, &ctx)?;
            let name = api::object::name(&obj).to_owned();
            write(c, &def, &key_of(namespace, &name), dry_run, |current| {
                Ok(api::create(&def, current, namespace, obj, &opts, &ctx)?)
            })
        }
        Verb::Update => {
            let obj = parse(&request.body, "object")?;
            write(c, &def, &key_of(namespace, &name), dry_run, |current| {
                Ok(api::update(&def, current, obj, &opts, &ctx)?)
            })
        }
        Verb::Patch(ref patch_type) => {
            // Decided under the store's lock: nothing can create the object in between.
            let refused = (request.is_apply() && !request.may_create).then(|| request.apply_may_not_create());
            let body = request.body.into_bytes();
            write(c, &def, &key_of(namespace, &name), dry_run, |current| match (current, refused) {
                (None, Some(refused)) => Err(refused),
                _ => Ok(api::patch(&def, &name, namespace, current, &body, patch_type, &opts, &ctx)?),
            })
        }
        Verb::Delete(options) => write(c, &def, &key_of(namespace, &name), dry_run, |current| {
            Ok(api::delete(&def, &name, current, &options, &ctx)?)
        }),
    }
}
