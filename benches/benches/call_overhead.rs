//! Run with cargo bench -p wink-benches --bench call_overhead
//!
//! Benchmark 3 — the cost of one wink delivery vs a bare wasmtime call. The `bench-noop`
//! component's `on-update` is called with two ~4 KB Pods (old and new), five ways:
//!
//! 1. `raw`: a bare wasmtime typed call (`TypedFunc::call`) of the export, on an instance
//!    made with a plain `Linker` and `Store<()>`, arguments already built as WIT records —
//!    the floor (lowering the arguments into guest memory and running the guest included);
//! 2. `view`: building the two WIT record views of wink's objects (`object_ref`: borrowed
//!    strings, lists of pointers — what wink prepares per call before lowering);
//! 3. `instance`: `PluginInstance::on_update` — copy + call + the sandbox's per-call work
//!    (fresh epoch deadline, log bookkeeping);
//! 4. `handler`: `PluginHandler::deliver` awaited from async code — plus the instance's
//!    lock, the hop to a guest thread and back, metrics;
//! 5. `delivery`: a notification queued on a listener (from the benchmark's thread) until
//!    the handler returned (stamped as it returns; the benchmark's own wake-up to see that
//!    is not counted) — plus the listener's queue and task wake-up: one wink delivery, end
//!    to end.
//!
//! and `delivery (streamed)`: 1,000 updates of distinct Pods queued at once, time per
//! delivery until all are delivered (the informer's steady state under load), against its
//! own floor, `raw (streamed)`: bare typed calls with the same 1,000 pairs in turn (distinct
//! objects do not all stay in the CPU's caches, which one pair called again and again does).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::Criterion;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use wasmtime::Store;
use wasmtime::component::{Linker, TypedFunc};
use wink::informer::{EntryResults, EventHandler, HandlerResult, Listener, ListenerOptions, Notification, Object};
use wink::plugin::bindings::{WitObject, object_ref, to_wit, types};
use wink::plugin::{GuestPool, MetricsRegistry, PluginHandler};
use wink_benches::plugins::{self, PluginSettings};
use wink_benches::results::{Report, Table, human_duration, median, verdict};
use wink_benches::workload::{self, PodSize};

const STREAMED: usize = 1_000;

/// Counts deliveries; wakes the benchmark once a target count is reached (so that waiting
/// costs one wake-up per measurement, not one per delivery), and notes when the last one
/// returned (so that the benchmark's own wake-up is not part of what it measures).
#[derive(Default)]
struct Done {
    count: AtomicU64,
    target: AtomicU64,
    reached: Notify,
    returned: parking_lot::Mutex<Option<Instant>>,
}

impl Done {
    fn add(&self, n: u64) {
        *self.returned.lock() = Some(Instant::now());
        let now = self.count.fetch_add(n, Ordering::AcqRel) + n;
        if now >= self.target.load(Ordering::Acquire) {
            self.reached.notify_one();
        }
    }

    /// Waits until `more` deliveries after the current count.
    async fn wait(&self, start: u64, more: u64) {
        self.target.store(start + more, Ordering::Release);
        while self.count.load(Ordering::Acquire) < start + more {
            self.reached.notified().await;
        }
    }
}

/// Forwards to a plugin handler, then counts what was delivered.
struct Signal {
    inner: Arc<PluginHandler>,
    done: Arc<Done>,
}

#[async_trait]
impl EventHandler for Signal {
    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        let result = self.inner.on_update(old, new).await;
        self.done.add(1);
        result
    }

    async fn deliver_batch(&self, batch: &[Vec<Notification>]) -> Vec<EntryResults> {
        let results = self.inner.deliver_batch(batch).await;
        self.done.add(results.iter().map(|r| r.len() as u64).sum());
        results
    }
}

fn pod_pair(index: usize) -> (Object, Object) {
    let mut value = workload::pod(PodSize::Small, "bench-00", index);
    value["metadata"]["uid"] = serde_json::json!(format!("uid-{index}"));
    value["metadata"]["resourceVersion"] = serde_json::json!("100");
    let old = Object::from_string(value.to_string()).expect("a valid Pod");
    workload::touch(&mut value, 1);
    value["metadata"]["resourceVersion"] = serde_json::json!("101");
    let new = Object::from_string(value.to_string()).expect("a valid Pod");
    (old, new)
}

type OnUpdate<'a> = TypedFunc<(&'a WitObject, &'a WitObject), (Result<types::Action, types::HandlerError>,)>;

/// A bare instance of the component: no wink state, imports that trap (bench-noop calls none).
fn raw_instance<'a>(
    engine: &wasmtime::Engine,
    component: &wasmtime::component::Component,
) -> (Store<()>, OnUpdate<'a>) {
    let mut linker: Linker<()> = Linker::new(engine);
    linker.define_unknown_imports_as_traps(component).expect("stubbing imports");
    let mut store = Store::new(engine, ());
    store.set_epoch_deadline(u64::MAX / 2);
    let instance = linker.instantiate(&mut store, component).expect("instantiating");
    let iface = instance.get_export_index(&mut store, None, "wink:plugin/handler@0.2.0").expect("handler export");
    let init_index = instance.get_export_index(&mut store, Some(&iface), "init").expect("init");
    let init = instance.get_typed_func::<(&str,), (Result<(), String>,)>(&mut store, init_index).expect("init type");
    init.call(&mut store, ("null",)).expect("init call").0.expect("init ok");
    let index = instance.get_export_index(&mut store, Some(&iface), "on-update").expect("on-update");
    let func = instance.get_typed_func(&mut store, index).expect("on-update type");
    (store, func)
}

fn main() {
    let rt = wink_benches::runtime();
    let mut criterion = Criterion::default().configure_from_args();
    let engine = rt.block_on(async { plugins::engine(64) });
    let plugin = plugins::load(&plugins::bench_noop(), &engine);
    let (old, new) = pod_pair(0);
    let (wit_old, wit_new) = (to_wit(&old), to_wit(&new));
    let mut group = criterion.benchmark_group("call_overhead");

    let (mut store, func) = raw_instance(engine.wasmtime(), &plugin.component);
    group.bench_function("raw", |b| {
        b.iter(|| black_box(func.call(&mut store, (black_box(&wit_old), black_box(&wit_new))).expect("raw call")))
    });

    group.bench_function("view", |b| b.iter(|| black_box((object_ref(black_box(&old)), object_ref(black_box(&new))))));

    let sandbox = plugins::sandbox(&plugin, &engine, &PluginSettings::named("noop-instance"));
    let mut instance = sandbox.instantiate().expect("bench-noop starts");
    group.bench_function("instance", |b| b.iter(|| black_box(instance.on_update(black_box(&old), black_box(&new)))));

    let metrics = MetricsRegistry::new();
    let pool = GuestPool::per_core();
    let handler = Arc::new(plugins::handler(&plugin, &engine, &PluginSettings::named("noop-handler"), &metrics, &pool));
    rt.block_on(handler.warm_up());
    group.bench_function("handler", |b| {
        b.to_async(&rt).iter(|| {
            let handler = handler.clone();
            let n = Notification::Update { old: old.clone(), new: new.clone() };
            async move { black_box(handler.deliver(n).await) }
        })
    });

    let done = Arc::new(Done::default());
    let listener = Arc::new(Listener::new(
        1,
        ListenerOptions::new("noop-listener", Duration::ZERO),
        Duration::ZERO,
        Arc::new(|| true),
    ));
    let cancel = CancellationToken::new();
    let signal: Arc<dyn EventHandler> = Arc::new(Signal { inner: handler.clone(), done: done.clone() });
    rt.spawn(listener.clone().run(signal, cancel.clone()));
    let pairs: Vec<(Object, Object)> = (0..STREAMED).map(pod_pair).collect();
    let wit_pairs: Vec<(WitObject, WitObject)> = pairs.iter().map(|(o, n)| (to_wit(o), to_wit(n))).collect();
    let mut raw_streamed_times = Vec::new();
    group.bench_function("raw (streamed)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters as usize;
            while left > 0 {
                let batch = left.min(STREAMED);
                let started = Instant::now();
                for (old, new) in &wit_pairs[..batch] {
                    let _ = black_box(func.call(&mut store, (black_box(old), black_box(new))).expect("raw call"));
                }
                let elapsed = started.elapsed();
                raw_streamed_times.push(elapsed / batch as u32);
                total += elapsed;
                left -= batch;
            }
            total
        })
    });
    let mut delivery_times = Vec::new();
    let mut streamed_times = Vec::new();
    group.bench_function("delivery", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let start = done.count.load(Ordering::Acquire);
                    let started = Instant::now();
                    listener.add(Notification::Update { old: old.clone(), new: new.clone() });
                    done.wait(start, 1).await;
                    let returned = done.returned.lock().unwrap_or(started);
                    let elapsed = returned.saturating_duration_since(started);
                    delivery_times.push(elapsed);
                    total += elapsed;
                }
                total
            })
        })
    });
    group.bench_function("delivery (streamed)", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                let mut left = iters as usize;
                while left > 0 {
                    let batch = left.min(STREAMED);
                    let start = done.count.load(Ordering::Acquire);
                    let started = Instant::now();
                    for (old, new) in &pairs[..batch] {
                        listener.add(Notification::Update { old: old.clone(), new: new.clone() });
                    }
                    done.wait(start, batch as u64).await;
                    let elapsed = started.elapsed();
                    streamed_times.push(elapsed / batch as u32);
                    total += elapsed;
                    left -= batch;
                }
                total
            })
        })
    });
    group.finish();
    cancel.cancel();

    // The report: medians timed here (criterion prints its own estimates above).
    let time = |f: &mut dyn FnMut()| {
        let mut times: Vec<Duration> = (0..20_000)
            .map(|_| {
                let started = Instant::now();
                f();
                started.elapsed()
            })
            .collect();
        times.sort_unstable();
        median(&times)
    };
    let raw = time(&mut || {
        let _ = black_box(func.call(&mut store, (&wit_old, &wit_new)).expect("raw call"));
    });
    let copy = time(&mut || {
        black_box((object_ref(&old), object_ref(&new)));
    });
    let inst = time(&mut || {
        black_box(instance.on_update(&old, &new));
    });
    let handler_time = rt.block_on(async {
        let mut times = Vec::new();
        for _ in 0..20_000 {
            let started = Instant::now();
            black_box(handler.deliver(Notification::Update { old: old.clone(), new: new.clone() }).await.ok());
            times.push(started.elapsed());
        }
        median(&times)
    });
    let delivery = median(&delivery_times);
    let streamed = median(&streamed_times);
    let raw_streamed = median(&raw_streamed_times);
    criterion.final_summary();

    let mut report = Report::new(
        "call_overhead",
        "3. Call overhead vs raw wasmtime",
        "`on-update` of the `bench-noop` component with two ~4 KB Pods (managedFields included). `raw` is a \
         bare wasmtime `TypedFunc::call` with the WIT records already built (lowering into guest memory and \
         the guest's work included); each further row adds one layer of wink's path. Medians of 20,000 calls \
         (delivery: of criterion's samples, each from queueing the event to the handler's return, stamped \
         as it returns); `delivery (streamed)` is the time per delivery when 1,000 \
         updates of distinct Pods are queued at once, and `raw (streamed)` its floor: bare typed calls \
         with the same 1,000 pairs in turn (medians of criterion's samples).",
    );
    let mut table = Table::new("", &["path", "median", "÷ raw", "this layer adds"]);
    let rows = [
        ("raw wasmtime typed call", raw, Duration::ZERO),
        ("view: objects → borrowed WIT records", copy, copy),
        ("instance: `PluginInstance::on_update` (view + call + deadline, log)", inst, inst.saturating_sub(raw + copy)),
        (
            "handler: `PluginHandler::deliver` (+ lock, hop to a guest thread and back, metrics)",
            handler_time,
            handler_time.saturating_sub(inst),
        ),
        ("delivery: listener queue → handler (+ queue, task wake-up)", delivery, delivery.saturating_sub(handler_time)),
    ];
    for (name, t, adds) in rows {
        table.row(vec![
            name.into(),
            human_duration(t),
            if raw.is_zero() { "-".into() } else { format!("{:.2}×", t.as_secs_f64() / raw.as_secs_f64()) },
            if adds.is_zero() { String::new() } else { human_duration(adds) },
        ]);
    }
    report.tables.push(table);
    let mut streamed_table = Table::new("Under load", &["path", "per update (median)", "÷ raw (streamed)"]);
    for (name, t) in [
        ("raw (streamed): bare typed calls, the same 1,000 pairs in turn", raw_streamed),
        ("delivery (streamed): 1,000 updates queued on the listener at once", streamed),
    ] {
        streamed_table.row(vec![
            name.into(),
            human_duration(t),
            format!("{:.2}×", t.as_secs_f64() / raw_streamed.as_secs_f64().max(f64::MIN_POSITIVE)),
        ]);
    }
    report.tables.push(streamed_table);
    let single = delivery.as_secs_f64() / raw.as_secs_f64();
    let stream = streamed.as_secs_f64() / raw_streamed.as_secs_f64();
    report.notes.push(format!(
        "one delivery ÷ raw = {single:.2}× (target ≤ 2×: {}); under load, delivery ÷ raw = {stream:.2}× (≤ 1.5×: {})",
        verdict(single <= 2.0),
        verdict(stream <= 1.5)
    ));
    report.write();
}
