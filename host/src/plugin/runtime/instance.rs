//! One live instance of a plugin, and the [`Sandbox`] it is made from.
//!
//! A [`Sandbox`] holds everything needed to start an instance: the component pre-linked
//! against the host's imports (an `InstancePre`, so instantiating is a matter of
//! microseconds), the memory cap, the per-call deadline and the `init` configuration.
//! A [`PluginInstance`] is one `Store<HostState>` with its instance: the store's limiter caps
//! memory (every refused growth traps), and each call gets a fresh epoch deadline.
//!
//! Nothing but `wink:plugin/log` and `wink:plugin/cache` is linked: no WASI at all.
//!
//! Every string a guest hands back (a log message, a `retry`/`fatal` reason, an `init`
//! refusal) is lifted as a [`GuestText`]: escaped onto one line and read only up to
//! [`MAX_GUEST_TEXT`](crate::plugin::runtime::guest_text::MAX_GUEST_TEXT) bytes, so a guest returning
//! megabytes of text costs the host kilobytes.
//!
//! Calls are synchronous and may run as long as the deadline: callers run them on a
//! blocking thread (see [`runner`](crate::plugin::delivery::runner)), never on an async executor's thread.
//! After a call that traps, the instance is poisoned: drop it and start a new one.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{HasData, Instance, Linker, TypedFunc};
use wasmtime::{Store, StoreContextMut};

use crate::informer::{Notification, Object};
use crate::plugin::imports::{CacheAccess, CacheResolver, CacheScope, LogSink};
use crate::plugin::runtime::bindings::{
    GuestHandlerError, HANDLER_EXPORT, HandlerPlugin, HandlerPluginPre, LOG_IMPORT, ObjectRef, cache, log, object_ref,
    types,
};
use crate::plugin::runtime::engine::PluginEngine;
use crate::plugin::runtime::guest_text::GuestText;
use crate::plugin::runtime::limits::PluginLimiter;
use crate::plugin::runtime::outcome::{CallOutcome, TrapKind};

/// The data of a plugin's store: the state behind its imports, and its limiter.
#[derive(Debug)]
pub struct HostState {
    /// The `log` import.
    pub log: LogSink,
    /// The `cache` import.
    pub cache: CacheAccess,
    /// The memory cap.
    pub limiter: PluginLimiter,
}

struct CacheImport;
impl HasData for CacheImport {
    type Data<'a> = &'a mut CacheAccess;
}

struct TypesImport;
impl HasData for TypesImport {
    type Data<'a> = &'a mut HostState;
}

impl types::Host for HostState {}

/// A linker with the host's imports (`types`, `log`, `cache`) and nothing else.
///
/// `log` is defined by hand, not through bindgen's `Host` trait, so that its message is
/// lifted as a bounded [`GuestText`] instead of an owned copy of whatever the guest passed.
pub fn linker(engine: &PluginEngine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine.wasmtime());
    types::add_to_linker::<HostState, TypesImport>(&mut linker, |state| state)?;
    linker.instance(LOG_IMPORT)?.func_wrap(
        "log",
        |mut store: StoreContextMut<'_, HostState>, (level, message): (log::Level, GuestText)| {
            store.data_mut().log.log(level, message);
            Ok(())
        },
    )?;
    cache::add_to_linker::<HostState, CacheImport>(&mut linker, |state| &mut state.cache)?;
    Ok(linker)
}

/// Everything needed to start instances of one plugin. Cheap to share (`Arc` it).
pub struct Sandbox {
    name: Arc<str>,
    engine: PluginEngine,
    pre: HandlerPluginPre<HostState>,
    scope: Arc<CacheScope>,
    resolver: Arc<dyn CacheResolver>,
    memory_limit: u64,
    call_timeout: Duration,
    config_json: Arc<str>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("name", &self.name)
            .field("memory_limit", &self.memory_limit)
            .field("call_timeout", &self.call_timeout)
            .finish_non_exhaustive()
    }
}

/// The settings of a [`Sandbox`], usually taken from a manifest.
#[derive(Clone, Debug)]
pub struct SandboxSettings {
    /// The plugin's name (logs and metrics carry it).
    pub name: Arc<str>,
    /// The memory cap, in bytes.
    pub memory_limit: u64,
    /// The deadline of each call (and of instantiation plus `init`).
    pub call_timeout: Duration,
    /// The JSON handed to `init`.
    pub config_json: Arc<str>,
    /// What the plugin may read from the cache.
    pub scope: Arc<CacheScope>,
}

impl Sandbox {
    /// A sandbox for a pre-linked component.
    pub fn new(
        engine: PluginEngine,
        pre: HandlerPluginPre<HostState>,
        settings: SandboxSettings,
        resolver: Arc<dyn CacheResolver>,
    ) -> Self {
        Self {
            name: settings.name,
            engine,
            pre,
            scope: settings.scope,
            resolver,
            memory_limit: settings.memory_limit,
            call_timeout: settings.call_timeout,
            config_json: settings.config_json,
        }
    }

    /// The plugin's name.
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// The per-call deadline.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// Starts a new instance and calls its `init`. Fails with the outcome to report:
    /// [`CallOutcome::Trap`] (including [`TrapKind::Instantiation`]) or
    /// [`CallOutcome::InitRejected`].
    pub fn instantiate(&self) -> Result<PluginInstance, CallOutcome> {
        let _running = self.engine.guest_running();
        let state = HostState {
            log: LogSink::new(self.name.clone()),
            cache: CacheAccess::new(self.scope.clone(), self.resolver.clone()),
            limiter: PluginLimiter::new(self.memory_limit),
        };
        let mut store = Store::new(self.engine.wasmtime(), state);
        store.limiter(|state| &mut state.limiter);
        let ticks = self.engine.deadline_ticks(self.call_timeout);
        store.set_epoch_deadline(ticks);
        let instantiation = |e: wasmtime::Error| CallOutcome::Trap(TrapKind::of_instantiation(&e));
        let instance = self.pre.instance_pre().instantiate(&mut store).map_err(instantiation)?;
        let bindings = HandlerPlugin::new(&mut store, &instance).map_err(instantiation)?;
        let handlers = Handlers::new(&mut store, &instance).map_err(instantiation)?;
        let engine = self.engine.clone();
        let mut instance = PluginInstance { store, bindings, handlers, ticks, poisoned: false, calls: 0, engine };
        let init: TypedFunc<(&str,), InitResult> = instance.handlers.init;
        match instance.call(|_, s| init.call(s, (&*self.config_json,)).map(|(r,)| r)) {
            Ok(Ok(())) => Ok(instance),
            Ok(Err(reason)) => Err(CallOutcome::InitRejected(reason)),
            Err(outcome) => Err(outcome),
        }
    }
}

type HandlerResult = (Result<(), GuestHandlerError>,);
type InitResult = (Result<(), GuestText>,);

/// The handler exports, typed to take objects borrowed from the host's cache (see
/// [`ObjectRef`]): lowering copies each string once, straight into guest memory. The
/// `'static` in the types is only nominal: a `TypedFunc` is covariant in its parameters, so
/// each call passes objects borrowed for just that call. Results are lifted as
/// [`GuestHandlerError`] / [`GuestText`]: bounded reads of the guest's strings.
struct Handlers {
    init: TypedFunc<(&'static str,), InitResult>,
    on_add: TypedFunc<(ObjectRef<'static>, bool), HandlerResult>,
    on_update: TypedFunc<(ObjectRef<'static>, ObjectRef<'static>), HandlerResult>,
    on_delete: TypedFunc<(ObjectRef<'static>, bool), HandlerResult>,
}

impl Handlers {
    fn new(store: &mut Store<HostState>, instance: &Instance) -> wasmtime::Result<Self> {
        let iface = instance
            .get_export_index(&mut *store, None, HANDLER_EXPORT)
            .ok_or_else(|| wasmtime::format_err!("no `{HANDLER_EXPORT}` export"))?;
        let index = |store: &mut Store<HostState>, name: &str| {
            instance
                .get_export_index(&mut *store, Some(&iface), name)
                .ok_or_else(|| wasmtime::format_err!("no `{name}` in `{HANDLER_EXPORT}`"))
        };
        let (add, update, delete) = (index(store, "on-add")?, index(store, "on-update")?, index(store, "on-delete")?);
        let init = index(store, "init")?;
        Ok(Self {
            init: instance.get_typed_func(&mut *store, init)?,
            on_add: instance.get_typed_func(&mut *store, add)?,
            on_update: instance.get_typed_func(&mut *store, update)?,
            on_delete: instance.get_typed_func(&mut *store, delete)?,
        })
    }
}

/// One live instance of a plugin: a store, its limits, and the component's exports.
pub struct PluginInstance {
    store: Store<HostState>,
    bindings: HandlerPlugin,
    handlers: Handlers,
    ticks: u64,
    poisoned: bool,
    calls: u64,
    /// Keeps the epoch ticker going during calls.
    engine: PluginEngine,
}

impl std::fmt::Debug for PluginInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginInstance")
            .field("plugin", &self.store.data().log)
            .field("poisoned", &self.poisoned)
            .field("calls", &self.calls)
            .finish_non_exhaustive()
    }
}

fn outcome(result: Result<Result<(), GuestHandlerError>, CallOutcome>) -> CallOutcome {
    match result {
        Ok(Ok(())) => CallOutcome::Ok,
        Ok(Err(e)) => CallOutcome::HandlerError(e.into()),
        Err(outcome) => outcome,
    }
}

impl PluginInstance {
    /// Runs one export call with a fresh deadline; a trap poisons the instance.
    fn call<R>(
        &mut self,
        f: impl FnOnce(&HandlerPlugin, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallOutcome> {
        if self.poisoned {
            return Err(CallOutcome::Trap(TrapKind::Other("the instance trapped before and cannot be entered".into())));
        }
        self.calls += 1;
        let _running = self.engine.guest_running();
        self.store.set_epoch_deadline(self.ticks);
        self.store.data_mut().log.begin_call();
        let result = f(&self.bindings, &mut self.store);
        self.store.data_mut().log.end_call();
        result.map_err(|e| {
            self.poisoned = true;
            CallOutcome::Trap(TrapKind::of_call(&e))
        })
    }

    /// Calls `on-add`.
    pub fn on_add(&mut self, obj: &Object, initial_list: bool) -> CallOutcome {
        let func: TypedFunc<(ObjectRef<'_>, bool), HandlerResult> = self.handlers.on_add;
        let args = (object_ref(obj), initial_list);
        outcome(self.call(|_, s| func.call(s, args).map(|(r,)| r)))
    }

    /// Calls `on-update`.
    pub fn on_update(&mut self, old: &Object, new: &Object) -> CallOutcome {
        let func: TypedFunc<(ObjectRef<'_>, ObjectRef<'_>), HandlerResult> = self.handlers.on_update;
        let args = (object_ref(old), object_ref(new));
        outcome(self.call(|_, s| func.call(s, args).map(|(r,)| r)))
    }

    /// Calls `on-delete`.
    pub fn on_delete(&mut self, obj: &Object, final_state_unknown: bool) -> CallOutcome {
        let func: TypedFunc<(ObjectRef<'_>, bool), HandlerResult> = self.handlers.on_delete;
        let args = (object_ref(obj), final_state_unknown);
        outcome(self.call(|_, s| func.call(s, args).map(|(r,)| r)))
    }

    /// Delivers a notification through the matching export.
    pub fn deliver(&mut self, notification: &Notification) -> CallOutcome {
        match notification {
            Notification::Add { obj, initial } => self.on_add(obj, *initial),
            Notification::Update { old, new } => self.on_update(old, new),
            Notification::Delete { obj, final_state_unknown } => self.on_delete(obj, *final_state_unknown),
        }
    }

    /// Whether a call trapped: the instance can no longer be used.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Calls made into this instance, `init` included.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// The largest linear memory size this instance was allowed to reach, in bytes.
    pub fn peak_memory(&self) -> usize {
        self.store.data().limiter.peak_memory()
    }
}

#[cfg(test)]
#[path = "instance_tests.rs"]
mod tests;
