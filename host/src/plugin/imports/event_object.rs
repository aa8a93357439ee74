//! The `event-object` resource (contract 0.3.0): the objects a handler call receives, lent to
//! the guest as handles and read on demand.
//!
//! A 0.1.0 or 0.2.0 handler gets each object as a record copied whole into its memory: the
//! component model calls the guest's allocator once per string and list (some sixty times for
//! a typical Pod update) before the handler runs a single instruction, whatever it reads.
//! A 0.3.0 handler gets `borrow<event-object>` handles instead; each method copies one part of
//! the object (its name, one label, the whole metadata, the JSON) when the guest asks for it.
//!
//! [`LentObjects`] holds the objects of the call in progress, in the store: a handle's `rep`
//! is the index of its slot. The handles are borrows the host lends for one call (the
//! canonical ABI ends every borrow when the call returns, so a guest cannot keep one), and the
//! slots are emptied when the call ends.

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, LinkerInstance, Resource, ResourceType};

use super::state::HasImports;
use crate::informer::Object;
use crate::plugin::contract::bindings::{WitVersion, object_ref, types};

/// The host's type behind `event-object` handles (bindgen's placeholder for the resource).
pub type EventObject = types::EventObject;

/// The objects lent to the handler call in progress: at most two (an update's old and new).
#[derive(Debug, Default)]
pub struct LentObjects {
    slots: [Option<Object>; 2],
}

impl LentObjects {
    /// Lends `obj` in slot `slot` (0 or 1) for the call about to start, as a borrow handle.
    pub fn lend(&mut self, slot: u32, obj: &Object) -> Resource<EventObject> {
        self.slots[slot as usize] = Some(obj.clone());
        Resource::new_borrow(slot)
    }

    /// Ends the call's loans.
    pub fn clear(&mut self) {
        self.slots = [None, None];
    }

    /// The object behind a handle the guest passed back.
    pub fn get(&self, handle: &Resource<EventObject>) -> wasmtime::Result<&Object> {
        self.slots
            .get(handle.rep() as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| wasmtime::format_err!("event-object handle {} is not lent to this call", handle.rep()))
    }
}

/// Defines the `event-object` resource and its methods in `types` of every contract version
/// that has it (0.3.0 on).
pub fn link<T: HasImports>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    for version in WitVersion::since(WitVersion::V0_3) {
        link_types(&mut linker.instance(&version.interface("types"))?)?;
    }
    Ok(())
}

fn link_types<T: HasImports>(types: &mut LinkerInstance<'_, T>) -> wasmtime::Result<()> {
    // The guest only ever holds borrows of host-owned objects: there is nothing to destroy.
    types.resource("event-object", ResourceType::host::<EventObject>(), |_, _| Ok(()))?;
    method(types, "api-version", |obj| obj.meta().api_version.to_owned())?;
    method(types, "kind", |obj| obj.meta().kind.to_owned())?;
    method(types, "namespace", |obj| obj.namespace().map(str::to_owned))?;
    method(types, "name", |obj| obj.name().to_owned())?;
    method(types, "uid", |obj| obj.uid().to_owned())?;
    method(types, "resource-version", |obj| obj.resource_version().to_owned())?;
    method(types, "generation", |obj| obj.meta().generation)?;
    method(types, "meta", |obj| object_ref(obj).meta.into_owned())?;
    method(types, "json", |obj| obj.json().to_owned())?;
    keyed(types, "label", |obj, key| obj.labels().get(key).map(str::to_owned))?;
    keyed(types, "annotation", |obj, key| obj.meta().annotations.get(key).map(str::to_owned))?;
    Ok(())
}

/// Links `[method]event-object.<name>`, which reads one part of the object.
fn method<T: HasImports, R>(
    types: &mut LinkerInstance<'_, T>,
    name: &str,
    read: impl Fn(&Object) -> R + Send + Sync + 'static,
) -> wasmtime::Result<()>
where
    R: wasmtime::component::ComponentType + wasmtime::component::Lower + Send + Sync + 'static,
{
    types.func_wrap(
        &format!("[method]event-object.{name}"),
        move |store: StoreContextMut<'_, T>, (this,): (Resource<EventObject>,)| {
            Ok((read(store.data().imports().lent.get(&this)?),))
        },
    )
}

/// Links `[method]event-object.<name>(key)`, a lookup by key.
fn keyed<T: HasImports>(
    types: &mut LinkerInstance<'_, T>,
    name: &str,
    read: impl Fn(&Object, &str) -> Option<String> + Send + Sync + 'static,
) -> wasmtime::Result<()> {
    types.func_wrap(
        &format!("[method]event-object.{name}"),
        move |store: StoreContextMut<'_, T>, (this, key): (Resource<EventObject>, wasmtime::component::WasmStr)| {
            let key = key.to_str(&store)?;
            Ok((read(store.data().imports().lent.get(&this)?, &key),))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str) -> Object {
        Object::from_str(&format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}","namespace":"d"}}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn a_handle_reaches_its_object_only_while_it_is_lent() {
        let mut lent = LentObjects::default();
        let (old, new) = (lent.lend(0, &pod("old")), lent.lend(1, &pod("new")));
        assert_eq!(lent.get(&old).unwrap().name(), "old");
        assert_eq!(lent.get(&new).unwrap().name(), "new");
        assert!(lent.get(&Resource::new_borrow(2)).is_err(), "no third slot");
        lent.clear();
        let err = lent.get(&new).unwrap_err().to_string();
        assert!(err.contains("not lent to this call"), "{err}");
    }
}
