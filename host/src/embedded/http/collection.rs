//! DELETE of a collection (`deletecollection`), as kube-apiserver's generic store does it:
//! the objects the request's selection picks (label and field selectors, the namespace of
//! the path or every namespace, a page when it has a `limit`) are each deleted with the
//! request's `DeleteOptions` (a dry run deletes none), an object gone in between is no
//! error, and the answer is the list of the objects as they were listed.

use axum::response::Response;

use super::delete_options::Deletion;
use super::discovery::Served;
use super::query::Query;
use super::read;
use super::selection::Selection;
use super::status::failure;
use crate::cluster::{Request, RequestError, Verb};
use crate::embedded::{Collection, EmbeddedClient};

/// Deletes what `selection` picks of `collection`; answers the list of what it deleted.
pub(super) fn delete_collection(
    client: &EmbeddedClient,
    collection: &Collection,
    kind: &Served,
    selection: &Selection,
    query: &Query,
    deletion: &Deletion,
) -> Response {
    let page = match read::page(collection, selection, query) {
        Ok(page) => page,
        Err(refused) => return *refused,
    };
    for object in &page.list.items {
        let namespace = object.namespace().map(str::to_owned);
        let request = Request::new(
            Verb::Delete(deletion.options.clone()),
            kind.def.api_version(),
            &kind.def.kind,
            namespace,
            object.name(),
        )
        .with_dry_run(deletion.dry_run);
        match client.execute_now(request) {
            Ok(_) | Err(RequestError::NotFound(_)) => {}
            Err(e) => return failure(&e),
        }
    }
    read::list_response(collection, &kind.def.api_version(), &kind.def.kind, selection, &page)
}

#[cfg(test)]
#[path = "collection_tests.rs"]
mod tests;
