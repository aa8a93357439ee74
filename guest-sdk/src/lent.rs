//! [`Lent`]: an object the host lends to one handler call, read on demand.
//!
//! A handler receives its objects as `event-object` handles: every part of the object stays in
//! the host until the handler reads it. Each part is fetched at most once per call and kept
//! here, so an [`Object`](crate::Object) accessor returns a `&str` into this cache. Scalar
//! fields come one host call each, and so do the first [`KEYED`] labels and annotations looked
//! up by key; the lists (labels, annotations, owner references) come with the whole metadata
//! record, in one call, the first time any of them is read (after which every field is read
//! from it); the JSON comes in one call when it is read.

use std::cell::OnceCell;
use std::mem::ManuallyDrop;

use crate::bindings::wink::plugin::types::{self, EventObject};

/// How many labels (and annotations) are looked up one by one before the whole metadata is
/// fetched instead.
pub(crate) const KEYED: usize = 4;

/// A label or annotation looked up by key, and its value.
type Asked = OnceCell<(String, Option<String>)>;

/// The parts of a lent object read so far, and its handle.
pub(crate) struct Lent {
    /// The handle the host lent; owned by the export glue, which drops it when the call ends.
    handle: ManuallyDrop<EventObject>,
    api_version: OnceCell<String>,
    kind: OnceCell<String>,
    namespace: OnceCell<Option<String>>,
    name: OnceCell<String>,
    uid: OnceCell<String>,
    resource_version: OnceCell<String>,
    generation: OnceCell<Option<i64>>,
    labels: [Asked; KEYED],
    annotations: [Asked; KEYED],
    // Boxed: fetched by few handlers, and a lent object lives on the stack.
    meta: OnceCell<Box<types::ObjectMeta>>,
    json: OnceCell<String>,
    whole: OnceCell<Box<types::Object>>,
}

/// Reads one string field, from the metadata when it was fetched already.
type Pick = fn(&types::ObjectMeta) -> &String;

impl Lent {
    /// Wraps the handle the export glue received for this call. The glue keeps ownership: the
    /// [`Object`](crate::Object) built on this never outlives the call (handlers get it by
    /// reference, and cloning it copies the object out, see [`Lent::to_owned_object`]).
    pub(crate) fn new(handle: &EventObject) -> Self {
        #[allow(unsafe_code, reason = "a second, never-dropped view of a handle the caller owns for the call")]
        // SAFETY: `from_handle` makes a value that would drop the handle; `ManuallyDrop` never
        // does, and the glue's own value outlives this one (see `new`'s doc).
        let handle = ManuallyDrop::new(unsafe { EventObject::from_handle(handle.handle()) });
        Self {
            handle,
            api_version: OnceCell::new(),
            kind: OnceCell::new(),
            namespace: OnceCell::new(),
            name: OnceCell::new(),
            uid: OnceCell::new(),
            resource_version: OnceCell::new(),
            generation: OnceCell::new(),
            labels: Default::default(),
            annotations: Default::default(),
            meta: OnceCell::new(),
            json: OnceCell::new(),
            whole: OnceCell::new(),
        }
    }

    fn string<'a>(&'a self, cell: &'a OnceCell<String>, pick: Pick, fetch: fn(&EventObject) -> String) -> &'a str {
        match self.meta.get() {
            Some(meta) => pick(meta),
            None => cell.get_or_init(|| fetch(&self.handle)),
        }
    }

    pub(crate) fn api_version(&self) -> &str {
        self.string(&self.api_version, |m| &m.api_version, EventObject::api_version)
    }

    pub(crate) fn kind(&self) -> &str {
        self.string(&self.kind, |m| &m.kind, EventObject::kind)
    }

    pub(crate) fn name(&self) -> &str {
        self.string(&self.name, |m| &m.name, EventObject::name)
    }

    pub(crate) fn uid(&self) -> &str {
        self.string(&self.uid, |m| &m.uid, EventObject::uid)
    }

    pub(crate) fn resource_version(&self) -> &str {
        self.string(&self.resource_version, |m| &m.resource_version, EventObject::resource_version)
    }

    pub(crate) fn namespace(&self) -> Option<&str> {
        match self.meta.get() {
            Some(meta) => meta.namespace.as_deref(),
            None => self.namespace.get_or_init(|| self.handle.namespace()).as_deref(),
        }
    }

    pub(crate) fn generation(&self) -> Option<i64> {
        match self.meta.get() {
            Some(meta) => meta.generation,
            None => *self.generation.get_or_init(|| self.handle.generation()),
        }
    }

    /// The value of label `key`.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.keyed(&self.labels, key, |m| &m.labels, EventObject::label)
    }

    /// The value of annotation `key`.
    pub(crate) fn annotation(&self, key: &str) -> Option<&str> {
        self.keyed(&self.annotations, key, |m| &m.annotations, EventObject::annotation)
    }

    fn keyed<'a>(
        &'a self,
        asked: &'a [Asked],
        key: &str,
        pairs: fn(&types::ObjectMeta) -> &[(String, String)],
        fetch: fn(&EventObject, &str) -> Option<String>,
    ) -> Option<&'a str> {
        if self.meta.get().is_none() {
            for cell in asked {
                let (k, value) = cell.get_or_init(|| (key.to_owned(), fetch(&self.handle, key)));
                if k == key {
                    return value.as_deref();
                }
            }
        }
        crate::object::lookup(pairs(self.meta()), key)
    }

    /// The whole metadata record (labels, annotations, owner references, …).
    pub(crate) fn meta(&self) -> &types::ObjectMeta {
        self.meta.get_or_init(|| Box::new(self.handle.meta()))
    }

    pub(crate) fn json(&self) -> &str {
        self.json.get_or_init(|| self.handle.json())
    }

    /// The object as a record, fetched whole (for [`Object::as_raw`](crate::Object::as_raw)).
    pub(crate) fn whole(&self) -> &types::Object {
        self.whole.get_or_init(|| Box::new(self.to_owned_object()))
    }

    /// A copy of the object that does not depend on the handle: what a clone of a lent
    /// [`Object`](crate::Object) holds.
    pub(crate) fn to_owned_object(&self) -> types::Object {
        types::Object { meta: self.meta().clone(), json: self.json().to_owned() }
    }
}
