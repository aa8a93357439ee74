//! One live instance of a plugin, and the [`Sandbox`] it is made from.
//!
//! A [`Sandbox`] holds everything needed to start an instance: the component pre-linked
//! against the host's imports (an `InstancePre`, so instantiating is a matter of
//! microseconds), the memory cap, the per-call deadline and the `init` configuration.
//! A [`PluginInstance`] is one `Store<HostState>` with its instance: the store's limiter caps
//! memory (every refused growth traps), and each call gets a fresh epoch deadline.
//!
//! Linked: `wink:plugin/log`, `cache`, (from 0.2.0) `cluster` and (0.3.0) the `event-object`
//! resource of `types`, under the names of every contract version a plugin may implement
//! ([`WitVersion`]), and the WASI wall and monotonic clocks. No other WASI interface.
//!
//! Every string a guest hands back (a log message, a `retry`/`fatal` reason, an `init`
//! refusal) is lifted as a [`GuestText`]: escaped onto one line and read only up to
//! [`MAX_GUEST_TEXT`](crate::plugin::contract::guest_text::MAX_GUEST_TEXT) bytes, so a guest returning
//! megabytes of text costs the host kilobytes.
//!
//! Calls are synchronous and may run as long as the deadline: callers run them on a
//! blocking thread (see [`runner`](crate::plugin::delivery::runner)), never on an async executor's thread.
//! After a call that traps, the instance is poisoned: drop it and start a new one.

use std::sync::Arc;
use std::time::Duration;

use quanta::Instant;
use wasmtime::Store;
use wasmtime::component::{Instance, InstancePre, Linker, Resource, TypedFunc};

use crate::informer::{Action, HandlerError, Notification, Object};
use crate::plugin::contract::bindings::{
    GuestAction, GuestHandlerError, ObjectRef, WitObjectKey, WitVersion, World, object_ref,
};
use crate::plugin::contract::guest_text::GuestText;
use crate::plugin::contract::outcome::{CallOutcome, TrapKind};
use crate::plugin::imports::event_object::EventObject;
use crate::plugin::imports::{CacheResolver, CacheScope, ClusterLink, HasImports, ImportContext, ImportState};
use crate::plugin::runtime::budget::{InstanceReservation, MemoryBudget};
use crate::plugin::runtime::deadline::CallDeadline;
use crate::plugin::runtime::engine::PluginEngine;
use crate::plugin::runtime::limits::PluginLimiter;
use crate::workqueue::WorkQueue;

/// The data of a plugin's store: the state behind its imports, its limiter and the deadline
/// of the call in progress.
#[derive(Debug)]
pub struct HostState {
    /// The imports' state (see [`ImportState`]).
    imports: ImportState,
    /// The memory cap.
    limiter: PluginLimiter,
    /// The deadline of the call in progress.
    deadline: CallDeadline,
}

/// A pre-linked component, and the contract version it implements.
#[derive(Clone)]
pub struct PluginPre {
    pre: InstancePre<HostState>,
    version: WitVersion,
    world: World,
    refused: Arc<[String]>,
}

impl PluginPre {
    /// Wraps a pre-linked component implementing `world` of `version`, whose `refused` WASI
    /// imports trap when called.
    pub fn new(pre: InstancePre<HostState>, version: WitVersion, world: World, refused: Vec<String>) -> Self {
        Self { pre, version, world, refused: refused.into() }
    }

    /// The world the component implements.
    pub fn world(&self) -> World {
        self.world
    }

    /// The WASI interfaces the component imports that the host refuses (calls trap).
    pub fn refused_wasi(&self) -> &[String] {
        &self.refused
    }

    /// The contract version the component implements.
    pub fn version(&self) -> WitVersion {
        self.version
    }
}

/// A linker with the host's imports ([`imports::link`](crate::plugin::imports::link)): for
/// each contract version, `types` (with 0.3.0's `event-object`), `log`, `cache` (and `cluster`
/// from 0.2.0). The WASI a component imports is linked per component
/// ([`wasi::link`](crate::plugin::imports::wasi::link)).
pub fn linker(engine: &PluginEngine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine.wasmtime());
    crate::plugin::imports::link(&mut linker)?;
    Ok(linker)
}

impl HasImports for HostState {
    fn imports(&self) -> &ImportState {
        &self.imports
    }

    fn imports_mut(&mut self) -> &mut ImportState {
        &mut self.imports
    }

    fn waited(&mut self, waited: Duration) {
        self.deadline.after_wait(waited);
    }
}

/// Everything needed to start instances of one plugin. Cheap to share (`Arc` it).
pub struct Sandbox {
    engine: PluginEngine,
    pre: PluginPre,
    /// What each instance's imports are made from.
    imports: ImportContext,
    memory_limit: u64,
    call_timeout: Duration,
    config_json: Arc<str>,
    /// The budget each instance reserves its memory limit from while it lives (`None`: the
    /// plugin reserved at deploy, or nothing bounds it).
    budget: Option<MemoryBudget>,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("name", &self.imports.name)
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
    /// Where its `cluster` requests go (none: every request is `unavailable`).
    pub cluster: Option<Arc<ClusterLink>>,
}

impl Sandbox {
    /// A sandbox for a pre-linked component.
    pub fn new(
        engine: PluginEngine,
        pre: PluginPre,
        settings: SandboxSettings,
        resolver: Arc<dyn CacheResolver>,
    ) -> Self {
        let imports = ImportContext {
            name: settings.name,
            scope: settings.scope,
            resolver,
            cluster: settings.cluster,
            queue: None,
        };
        Self {
            engine,
            pre,
            imports,
            memory_limit: settings.memory_limit,
            call_timeout: settings.call_timeout,
            config_json: settings.config_json,
            budget: None,
        }
    }

    /// Each instance reserves the plugin's memory limit from `budget` while it lives, and
    /// is not created when the budget is full ([`TrapKind::BudgetFull`]).
    #[must_use]
    pub fn with_budget(mut self, budget: MemoryBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Gives the plugin's instances `queue` behind their `queue` import (a reconciler's).
    #[must_use]
    pub fn with_queue(mut self, queue: WorkQueue<String>) -> Self {
        self.imports.queue = Some(queue);
        self
    }

    /// The world the plugin implements.
    pub fn world(&self) -> World {
        self.pre.world
    }

    /// The engine its instances run on.
    pub fn engine(&self) -> &PluginEngine {
        &self.engine
    }

    /// The plugin's name.
    pub fn name(&self) -> &Arc<str> {
        &self.imports.name
    }

    /// The per-call deadline.
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// The contract version the plugin implements.
    pub fn version(&self) -> WitVersion {
        self.pre.version
    }

    /// Starts a new instance and calls its `init`. Fails with the outcome to report:
    /// [`CallOutcome::Trap`] (including [`TrapKind::Instantiation`]) or
    /// [`CallOutcome::InitRejected`].
    pub fn instantiate(&self) -> Result<PluginInstance, CallOutcome> {
        let memory = match &self.budget {
            Some(budget) => Some(
                budget
                    .reserve_instance(&self.imports.name, self.memory_limit)
                    .map_err(|full| CallOutcome::Trap(TrapKind::BudgetFull(full.to_string())))?,
            ),
            None => None,
        };
        let _running = self.engine.guest_running();
        let state = HostState {
            imports: self.imports.instance_state(),
            limiter: PluginLimiter::new(self.memory_limit),
            deadline: CallDeadline::new(self.engine.clone(), self.call_timeout),
        };
        let mut store = Store::new(self.engine.wasmtime(), state);
        store.limiter(|state| &mut state.limiter);
        store.epoch_deadline_callback(|mut store| store.data_mut().deadline.on_tick());
        store.set_epoch_deadline(1);
        let instantiation = |e: wasmtime::Error| CallOutcome::Trap(TrapKind::of_instantiation(&e));
        let instance = self.pre.pre.instantiate(&mut store).map_err(instantiation)?;
        let handlers = Handlers::new(&mut store, &instance, self.pre.version, self.pre.world).map_err(instantiation)?;
        let engine = self.engine.clone();
        let mut instance = PluginInstance { store, handlers, poisoned: false, calls: 0, engine, _memory: memory };
        let init: TypedFunc<(&str,), InitResult> = instance.handlers.init;
        match instance.call(false, Instant::now(), |s| init.call(s, (&*self.config_json,)).map(|(r,)| r)) {
            Ok(Ok(())) => Ok(instance),
            Ok(Err(reason)) => Err(CallOutcome::InitRejected(reason)),
            Err(outcome) => Err(outcome),
        }
    }
}

type InitResult = (Result<(), GuestText>,);

/// The handler exports of one contract version, typed to take objects borrowed from the
/// host's cache (see [`ObjectRef`]): lowering copies each string once, straight into guest
/// memory. The `'static` in the types is only nominal: a `TypedFunc` is covariant in its
/// parameters, so each call passes objects borrowed for just that call. Results are lifted
/// as [`GuestHandlerError`] / [`GuestText`]: bounded reads of the guest's strings.
/// `A` is how an object is passed: a borrowed record (0.1.0, 0.2.0) or a lent handle
/// ([`Lent`], 0.3.0).
struct EventFuncs<R: 'static, A: 'static = ObjectRef<'static>> {
    on_add: TypedFunc<(A, bool), (Result<R, GuestHandlerError>,)>,
    on_update: TypedFunc<(A, A), (Result<R, GuestHandlerError>,)>,
    on_delete: TypedFunc<(A, bool), (Result<R, GuestHandlerError>,)>,
}

impl<R, A> Clone for EventFuncs<R, A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R, A> Copy for EventFuncs<R, A> {}

/// An object lent to a 0.3.0 handler call as an `event-object` handle (see
/// [`LentObjects`]), read by the guest on demand.
type Lent = Resource<EventObject>;

/// The handler exports: 0.1.0 handlers return nothing, 0.2.0 handlers an `action`, 0.3.0
/// (and 0.4.0) handlers take handles; a reconciler (0.4.0) has `reconcile` instead.
enum Events {
    V0_1(EventFuncs<()>),
    V0_2(EventFuncs<GuestAction>),
    V0_3(EventFuncs<GuestAction, Lent>),
    Reconcile(ReconcileFuncs),
}

/// A reconciler's exports: `reconcile(key)` and `map-to-keys(obj)`.
#[derive(Clone, Copy)]
struct ReconcileFuncs {
    reconcile: TypedFunc<(WitObjectKey,), (Result<GuestAction, GuestHandlerError>,)>,
    map: TypedFunc<(Lent,), (Vec<WitObjectKey>,)>,
}

/// The most keys one `map-to-keys` call is taken at (the rest are dropped with a warning).
pub(crate) const MAX_MAPPED_KEYS: usize = 1000;

struct Handlers {
    init: TypedFunc<(&'static str,), InitResult>,
    events: Events,
}

impl Handlers {
    fn new(
        store: &mut Store<HostState>,
        instance: &Instance,
        version: WitVersion,
        world: World,
    ) -> wasmtime::Result<Self> {
        let export = version
            .export(world)
            .ok_or_else(|| wasmtime::format_err!("wink:plugin@{} has no {} world", version.as_str(), world.as_str()))?;
        let iface = instance
            .get_export_index(&mut *store, None, export)
            .ok_or_else(|| wasmtime::format_err!("no `{export}` export"))?;
        let index = |store: &mut Store<HostState>, name: &str| {
            instance
                .get_export_index(&mut *store, Some(&iface), name)
                .ok_or_else(|| wasmtime::format_err!("no `{name}` in `{export}`"))
        };
        let init = index(store, "init")?;
        if world == World::Reconciler {
            let (reconcile, map) = (index(store, "reconcile")?, index(store, "map-to-keys")?);
            let funcs = ReconcileFuncs {
                reconcile: instance.get_typed_func(&mut *store, reconcile)?,
                map: instance.get_typed_func(&mut *store, map)?,
            };
            return Ok(Self { init: instance.get_typed_func(&mut *store, init)?, events: Events::Reconcile(funcs) });
        }
        let (add, update, delete) = (index(store, "on-add")?, index(store, "on-update")?, index(store, "on-delete")?);
        fn funcs<R, A>(
            store: &mut Store<HostState>,
            instance: &Instance,
            (add, update, delete): (
                wasmtime::component::ComponentExportIndex,
                wasmtime::component::ComponentExportIndex,
                wasmtime::component::ComponentExportIndex,
            ),
        ) -> wasmtime::Result<EventFuncs<R, A>>
        where
            R: wasmtime::component::ComponentType + wasmtime::component::Lift + 'static,
            A: wasmtime::component::ComponentType + wasmtime::component::Lower + 'static,
        {
            Ok(EventFuncs {
                on_add: instance.get_typed_func(&mut *store, add)?,
                on_update: instance.get_typed_func(&mut *store, update)?,
                on_delete: instance.get_typed_func(&mut *store, delete)?,
            })
        }
        let events = match version {
            WitVersion::V0_1 => Events::V0_1(funcs(store, instance, (add, update, delete))?),
            WitVersion::V0_2 => Events::V0_2(funcs(store, instance, (add, update, delete))?),
            WitVersion::V0_3 | WitVersion::V0_4 => Events::V0_3(funcs(store, instance, (add, update, delete))?),
        };
        Ok(Self { init: instance.get_typed_func(&mut *store, init)?, events })
    }
}

/// One live instance of a plugin: a store, its limits, and the component's exports.
pub struct PluginInstance {
    store: Store<HostState>,
    handlers: Handlers,
    poisoned: bool,
    calls: u64,
    /// Keeps the epoch ticker going during calls.
    engine: PluginEngine,
    /// Its share of the memory budget, if it reserves one: released after the store (the
    /// fields drop in order).
    _memory: Option<InstanceReservation>,
}

impl std::fmt::Debug for PluginInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginInstance")
            .field("plugin", &self.store.data().imports.plugin())
            .field("poisoned", &self.poisoned)
            .field("calls", &self.calls)
            .finish_non_exhaustive()
    }
}

fn outcome<R: Into<Action>>(result: Result<Result<R, GuestHandlerError>, CallOutcome>) -> CallOutcome {
    match result {
        Ok(Ok(action)) => match action.into() {
            Action::AwaitChange => CallOutcome::Ok,
            Action::RequeueAfter(delay) => CallOutcome::Requeue(delay),
        },
        Ok(Err(e)) => CallOutcome::HandlerError(e.into()),
        Err(outcome) => outcome,
    }
}

impl From<()> for Action {
    fn from((): ()) -> Self {
        Action::AwaitChange
    }
}

/// One event call, with its arguments borrowed from the host's cache.
enum EventCall<'a> {
    Add(&'a Object, bool),
    Update(&'a Object, &'a Object),
    Delete(&'a Object, bool),
}

impl PluginInstance {
    /// Runs one export call with a fresh deadline counted from `started` (`throttled`: paused
    /// once it runs long, see [`CallDeadline`]); a trap poisons the instance.
    fn call<R>(
        &mut self,
        throttled: bool,
        started: Instant,
        f: impl FnOnce(&mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallOutcome> {
        if self.poisoned {
            return Err(CallOutcome::Trap(TrapKind::Other("the instance trapped before and cannot be entered".into())));
        }
        self.calls += 1;
        let _running = self.engine.guest_running();
        self.store.set_epoch_deadline(1);
        let state = self.store.data_mut();
        state.imports.begin_call();
        state.deadline.begin(throttled, started);
        let result = f(&mut self.store);
        let state = self.store.data_mut();
        state.imports.end_call();
        state.deadline.end();
        result.map_err(|e| {
            self.poisoned = true;
            CallOutcome::Trap(TrapKind::of_call(&e))
        })
    }

    fn event<R>(&mut self, funcs: EventFuncs<R>, call: EventCall<'_>, started: Instant) -> CallOutcome
    where
        R: Into<Action> + wasmtime::component::ComponentType + wasmtime::component::Lift + Send + Sync + 'static,
    {
        let EventFuncs { on_add, on_update, on_delete } = funcs;
        outcome(self.call(true, started, |s| match call {
            EventCall::Add(obj, initial) => {
                let func: TypedFunc<(ObjectRef<'_>, bool), (Result<R, GuestHandlerError>,)> = on_add;
                func.call(s, (object_ref(obj), initial)).map(|(r,)| r)
            }
            EventCall::Update(old, new) => {
                let func: TypedFunc<(ObjectRef<'_>, ObjectRef<'_>), (Result<R, GuestHandlerError>,)> = on_update;
                func.call(s, (object_ref(old), object_ref(new))).map(|(r,)| r)
            }
            EventCall::Delete(obj, unknown) => {
                let func: TypedFunc<(ObjectRef<'_>, bool), (Result<R, GuestHandlerError>,)> = on_delete;
                func.call(s, (object_ref(obj), unknown)).map(|(r,)| r)
            }
        }))
    }

    /// A 0.3.0 event call: the objects are lent for the call, then taken back.
    fn lent_event(
        &mut self,
        funcs: EventFuncs<GuestAction, Lent>,
        call: EventCall<'_>,
        started: Instant,
    ) -> CallOutcome {
        outcome(self.call(true, started, |s| {
            let result = match call {
                EventCall::Add(obj, initial) => {
                    let obj = s.data_mut().imports.lent.lend(0, obj);
                    funcs.on_add.call(&mut *s, (obj, initial))
                }
                EventCall::Update(old, new) => {
                    let lent = &mut s.data_mut().imports.lent;
                    let (old, new) = (lent.lend(0, old), lent.lend(1, new));
                    funcs.on_update.call(&mut *s, (old, new))
                }
                EventCall::Delete(obj, unknown) => {
                    let obj = s.data_mut().imports.lent.lend(0, obj);
                    funcs.on_delete.call(&mut *s, (obj, unknown))
                }
            };
            s.data_mut().imports.lent.clear();
            result.map(|(r,)| r)
        }))
    }

    fn dispatch(&mut self, call: EventCall<'_>, started: Instant) -> CallOutcome {
        match self.handlers.events {
            Events::V0_1(funcs) => self.event(funcs, call, started),
            Events::V0_2(funcs) => self.event(funcs, call, started),
            Events::V0_3(funcs) => self.lent_event(funcs, call, started),
            Events::Reconcile(_) => CallOutcome::HandlerError(HandlerError::Fatal(
                "a reconciler is called with keys, not events (a host bug delivered it an event)".into(),
            )),
        }
    }

    /// Calls a reconciler's `reconcile(key)`, `key` a cache key (`namespace/name` or
    /// `name`).
    pub fn reconcile(&mut self, key: &str) -> CallOutcome {
        let Events::Reconcile(func) = self.handlers.events else {
            return CallOutcome::HandlerError(HandlerError::Fatal("the plugin is not a reconciler".into()));
        };
        let key = WitObjectKey::of_cache_key(key);
        outcome(self.call(true, Instant::now(), |s| func.reconcile.call(s, (key,)).map(|(r,)| r)))
    }

    /// Calls a reconciler's `map-to-keys(obj)`, lending `obj`: the cache keys of the primaries it
    /// names (at most [`MAX_MAPPED_KEYS`]), or the outcome of a call that failed.
    pub fn map(&mut self, obj: &Object) -> Result<Vec<String>, CallOutcome> {
        let Events::Reconcile(func) = self.handlers.events else {
            return Err(CallOutcome::HandlerError(HandlerError::Fatal("the plugin is not a reconciler".into())));
        };
        let keys = self.call(true, Instant::now(), |s| {
            let lent = s.data_mut().imports.lent.lend(0, obj);
            let result = func.map.call(&mut *s, (lent,));
            s.data_mut().imports.lent.clear();
            result.map(|(keys,)| keys)
        })?;
        if keys.len() > MAX_MAPPED_KEYS {
            tracing::warn!(plugin = %self.store.data().imports.plugin(), mapped = keys.len(), "map-to-keys returned more than {MAX_MAPPED_KEYS} keys; the rest are dropped");
        }
        Ok(keys.iter().take(MAX_MAPPED_KEYS).filter(|k| !k.name.is_empty()).map(WitObjectKey::cache_key).collect())
    }

    /// Calls `on-add`.
    pub fn on_add(&mut self, obj: &Object, initial_list: bool) -> CallOutcome {
        self.dispatch(EventCall::Add(obj, initial_list), Instant::now())
    }

    /// Calls `on-update`.
    pub fn on_update(&mut self, old: &Object, new: &Object) -> CallOutcome {
        self.dispatch(EventCall::Update(old, new), Instant::now())
    }

    /// Calls `on-delete`.
    pub fn on_delete(&mut self, obj: &Object, final_state_unknown: bool) -> CallOutcome {
        self.dispatch(EventCall::Delete(obj, final_state_unknown), Instant::now())
    }

    /// Delivers a notification through the matching export.
    pub fn deliver(&mut self, notification: &Notification) -> CallOutcome {
        self.deliver_from(notification, Instant::now())
    }

    /// Delivers a notification through the matching export, its deadline counted from
    /// `started` (a clock reading the caller took anyway: reading the clock is a sizeable
    /// part of a short call).
    pub(crate) fn deliver_from(&mut self, notification: &Notification, started: Instant) -> CallOutcome {
        let call = match notification {
            Notification::Add { obj, initial } => EventCall::Add(obj, *initial),
            Notification::Update { old, new } => EventCall::Update(old, new),
            Notification::Delete { obj, final_state_unknown } => EventCall::Delete(obj, *final_state_unknown),
        };
        self.dispatch(call, started)
    }

    /// Whether a call trapped: the instance can no longer be used.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Calls made into this instance, `init` included.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// How many times its last call was paused for running long (see [`CallDeadline`]).
    pub fn pauses(&self) -> u32 {
        self.store.data().deadline.pauses()
    }

    /// The largest linear memory size this instance was allowed to reach, in bytes.
    pub fn peak_memory(&self) -> usize {
        self.store.data().limiter.peak_memory()
    }
}

#[cfg(test)]
#[path = "instance_tests.rs"]
mod tests;
