//! [`RawCall`]: the floor of a plugin call — a bare wasmtime typed call of a component's
//! `on-update`, made the way a plain embedder would, with no wink state around it.
//!
//! For a 0.2.0 component (objects as records) the arguments are built as WIT records before
//! the calls; for a 0.3.0 component (objects lent as `event-object` handles) the objects sit
//! in the store's data and each call lends two of them by index, the store's linker defining
//! the resource and the one method a name-reading guest calls (`name`). Every other import
//! traps.

use wasmtime::component::{Component, Linker, Resource, ResourceType, TypedFunc};
use wasmtime::{Engine, Store, StoreContextMut};
use wink::informer::Object;
use wink::plugin::bindings::{WitObject, WitVersion, to_wit, types};

type Outcome = (Result<types::Action, types::HandlerError>,);
type OnUpdateRecords = TypedFunc<(&'static WitObject, &'static WitObject), Outcome>;
type OnUpdateHandles = TypedFunc<(Resource<types::EventObject>, Resource<types::EventObject>), Outcome>;

/// A bare instance of a component whose `on-update` is called with prepared pairs of objects.
pub struct RawCall(Inner);

enum Inner {
    /// 0.1.0 / 0.2.0: each pair already built as WIT records.
    Records { store: Store<()>, func: OnUpdateRecords, pairs: Vec<(WitObject, WitObject)> },
    /// 0.3.0: the objects of every pair, lent by index (`2i` and `2i + 1`).
    Handles { store: Store<Vec<Object>>, func: OnUpdateHandles },
}

impl RawCall {
    /// An instance of `component` (implementing `version`), initialized with `null`, ready to
    /// be called with `pairs`.
    pub fn new(engine: &Engine, component: &Component, version: WitVersion, pairs: &[(Object, Object)]) -> Self {
        if version < WitVersion::V0_3 {
            let mut store = Store::new(engine, ());
            let linker: Linker<()> = Linker::new(engine);
            let func = instantiate(&mut store, linker, component, version);
            let pairs = pairs.iter().map(|(old, new)| (to_wit(old), to_wit(new))).collect();
            return Self(Inner::Records { store, func, pairs });
        }
        let objects = pairs.iter().flat_map(|(old, new)| [old.clone(), new.clone()]).collect();
        let mut store = Store::new(engine, objects);
        let mut linker: Linker<Vec<Object>> = Linker::new(engine);
        let mut types = linker.instance(&version.interface("types")).expect("types instance");
        types.resource("event-object", ResourceType::host::<types::EventObject>(), |_, _| Ok(())).expect("resource");
        types
            .func_wrap(
                "[method]event-object.name",
                |store: StoreContextMut<'_, Vec<Object>>, (this,): (Resource<types::EventObject>,)| {
                    Ok((store.data()[this.rep() as usize].name().to_owned(),))
                },
            )
            .expect("name method");
        let func = instantiate(&mut store, linker, component, version);
        Self(Inner::Handles { store, func })
    }

    /// Calls `on-update` with pair `index`.
    pub fn call(&mut self, index: usize) {
        match &mut self.0 {
            Inner::Records { store, func, pairs } => {
                let (old, new) = &pairs[index];
                // A `TypedFunc` is covariant in its parameters: `'static` narrows to this borrow.
                let func: &TypedFunc<(&WitObject, &WitObject), Outcome> = func;
                let _ = std::hint::black_box(func.call(&mut *store, (old, new)).expect("raw call"));
            }
            Inner::Handles { store, func } => {
                let rep = u32::try_from(index * 2).expect("few pairs");
                let args = (Resource::new_borrow(rep), Resource::new_borrow(rep + 1));
                let _ = std::hint::black_box(func.call(&mut *store, args).expect("raw call"));
            }
        }
    }
}

/// Instantiates `component` with `linker` (unknown imports trap), calls `init("null")` and
/// returns its typed `on-update`.
fn instantiate<T: 'static, P, R>(
    store: &mut Store<T>,
    mut linker: Linker<T>,
    component: &Component,
    version: WitVersion,
) -> TypedFunc<P, R>
where
    P: wasmtime::component::ComponentNamedList + wasmtime::component::Lower,
    R: wasmtime::component::ComponentNamedList + wasmtime::component::Lift,
{
    linker.define_unknown_imports_as_traps(component).expect("stubbing imports");
    store.set_epoch_deadline(u64::MAX / 2);
    let instance = linker.instantiate(&mut *store, component).expect("instantiating");
    let iface = instance.get_export_index(&mut *store, None, version.handler_export()).expect("handler export");
    let init_index = instance.get_export_index(&mut *store, Some(&iface), "init").expect("init");
    let init = instance.get_typed_func::<(&str,), (Result<(), String>,)>(&mut *store, init_index).expect("init type");
    init.call(&mut *store, ("null",)).expect("init call").0.expect("init ok");
    let index = instance.get_export_index(&mut *store, Some(&iface), "on-update").expect("on-update");
    instance.get_typed_func(&mut *store, index).expect("on-update type")
}
