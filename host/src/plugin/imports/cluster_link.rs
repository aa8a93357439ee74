//! The `wink:plugin/cluster@0.2.0` functions in the linker: WIT arguments to a [`Request`],
//! through [`ClusterAccess`](super::cluster::ClusterAccess), and the outcome back to WIT.
//!
//! After each request the time spent waiting is given back to the call's CPU deadline
//! ([`HasImports::waited`]).

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, LinkerInstance};

use super::cluster::requests::with_body;
use super::state::HasImports;
use crate::cluster::{
    DeleteOptions, EventSpec, EventType, PatchType, Preconditions, PropagationPolicy, Regarding, Request, RequestError,
    Subresource, Verb,
};
use crate::informer::Object;
use crate::plugin::contract::bindings::{WitObject, WitVersion, cluster as wit, to_wit, types};

type Store<'a, T> = StoreContextMut<'a, T>;
type Answer = (Result<WitObject, wit::RequestError>,);

impl From<RequestError> for wit::RequestError {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::NotPermitted(m) => Self::NotPermitted(m),
            RequestError::Forbidden(m) => Self::Forbidden(m),
            RequestError::NotFound(m) => Self::NotFound(m),
            RequestError::AlreadyExists(m) => Self::AlreadyExists(m),
            RequestError::Conflict(m) => Self::Conflict(m),
            RequestError::Invalid { message, causes } => Self::Invalid(wit::InvalidError {
                message,
                causes: causes
                    .into_iter()
                    .map(|c| wit::Cause { field: c.field, reason: c.reason, message: c.message })
                    .collect(),
            }),
            // The contract has no `too-large`: it is a request the server will never take.
            RequestError::TooLarge(m) => Self::BadRequest(format!("too large: {m}")),
            RequestError::BadRequest(m) => Self::BadRequest(m),
            RequestError::RateLimited(m) => Self::RateLimited(m),
            RequestError::TimedOut(m) => Self::TimedOut(m),
            RequestError::Unavailable(m) => Self::Unavailable(m),
        }
    }
}

fn patch_request(
    resource: types::Resource,
    namespace: Option<String>,
    name: String,
    patch: wit::PatchDocument,
    plugin: &str,
    subresource: Option<Subresource>,
) -> Request {
    let (patch_type, body) = match patch {
        wit::PatchDocument::Merge(body) => (PatchType::Merge, body),
        wit::PatchDocument::Json(body) => (PatchType::Json, body),
        wit::PatchDocument::StrategicMerge(body) => (PatchType::StrategicMerge, body),
        wit::PatchDocument::Apply(apply) => {
            (PatchType::Apply { field_manager: plugin.to_owned(), force: apply.force }, apply.body)
        }
    };
    Request::new(Verb::Patch(patch_type), resource.api_version, resource.kind, namespace, name)
        .with_body(body)
        .with_subresource(subresource)
}

fn run<T: HasImports>(
    store: &mut Store<'_, T>,
    request: Result<Request, RequestError>,
) -> Result<Option<Object>, RequestError> {
    let result = request.and_then(|request| store.data_mut().imports_mut().cluster.execute(request));
    after_wait(store.data_mut());
    result
}

fn after_wait<T: HasImports>(state: &mut T) {
    let waited = state.imports_mut().cluster.take_waited();
    state.waited(waited);
}

fn object(result: Result<Option<Object>, RequestError>) -> Answer {
    let result = result
        .and_then(|obj| obj.ok_or_else(|| RequestError::Unavailable("the server answered without an object".into())));
    (result.map(|o| to_wit(&o)).map_err(Into::into),)
}

/// Defines the `cluster` functions in the interface of every contract version that has it
/// (0.2.0 on).
pub fn link<T: HasImports>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    for version in WitVersion::since(WitVersion::V0_2) {
        link_version(&mut linker.instance(&version.interface("cluster"))?)?;
    }
    Ok(())
}

fn link_version<T: HasImports>(instance: &mut LinkerInstance<'_, T>) -> wasmtime::Result<()> {
    instance.func_wrap(
        "get",
        |mut store: Store<'_, T>, (resource, namespace, name): (types::Resource, Option<String>, String)| {
            let request = Request::new(Verb::Get, resource.api_version, resource.kind, namespace, name);
            Ok(object(run(&mut store, Ok(request))))
        },
    )?;
    instance.func_wrap("create", |mut store: Store<'_, T>, (json,): (String,)| {
        Ok(object(run(&mut store, with_body(Verb::Create, json, None))))
    })?;
    instance.func_wrap("update", |mut store: Store<'_, T>, (json,): (String,)| {
        Ok(object(run(&mut store, with_body(Verb::Update, json, None))))
    })?;
    instance.func_wrap("update-status", |mut store: Store<'_, T>, (json,): (String,)| {
        Ok(object(run(&mut store, with_body(Verb::Update, json, Some(Subresource::Status)))))
    })?;
    for (function, subresource) in [("patch", None), ("patch-status", Some(Subresource::Status))] {
        instance.func_wrap(
            function,
            move |mut store: Store<'_, T>,
                  (resource, namespace, name, patch): (types::Resource, Option<String>, String, wit::PatchDocument)| {
                let plugin = store.data().imports().plugin().to_owned();
                let request = patch_request(resource, namespace, name, patch, &plugin, subresource);
                Ok(object(run(&mut store, Ok(request))))
            },
        )?;
    }
    instance.func_wrap(
        "delete",
        |mut store: Store<'_, T>,
         (resource, namespace, name, options): (types::Resource, Option<String>, String, wit::DeleteOptions)| {
            let propagation_policy = options.propagation.map(|p| match p {
                wit::Propagation::Orphan => PropagationPolicy::Orphan,
                wit::Propagation::Background => PropagationPolicy::Background,
                wit::Propagation::Foreground => PropagationPolicy::Foreground,
            });
            let options = DeleteOptions {
                preconditions: Preconditions { uid: options.uid, resource_version: options.resource_version },
                propagation_policy,
                grace_period_seconds: options.grace_period_seconds,
            };
            let request = Request::new(Verb::Delete(options), resource.api_version, resource.kind, namespace, name);
            let result = run(&mut store, Ok(request));
            Ok((result.map(|o| o.map(|o| to_wit(&o))).map_err(wit::RequestError::from),))
        },
    )?;
    instance.func_wrap("record-event", |mut store: Store<'_, T>, (event,): (wit::Event,)| {
        let r = event.regarding;
        let spec = EventSpec {
            regarding: Regarding {
                api_version: r.api_version,
                kind: r.kind,
                namespace: r.namespace,
                name: r.name,
                uid: r.uid,
            },
            event_type: match event.event_type {
                wit::EventType::Normal => EventType::Normal,
                wit::EventType::Warning => EventType::Warning,
            },
            reason: event.reason,
            action: event.action,
            note: event.note,
        };
        let result = store.data_mut().imports_mut().cluster.record_event(spec);
        after_wait(store.data_mut());
        Ok((result.map_err(wit::RequestError::from),))
    })?;
    Ok(())
}
