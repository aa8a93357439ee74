//! Run with cargo bench -p wink-benches --bench call_overhead
//!
//! Benchmark 3 — the cost of one wink delivery vs a bare wasmtime call. The `bench-noop`
//! component's `on-update` is called with two ~4 KB Pods (old and new), for each contract
//! (0.3.0: `bench-noop`, objects lent as handles; 0.2.0: `bench-noop-v02`, objects copied
//! whole), five ways:
//!
//! 1. `raw`: a bare wasmtime typed call (`TypedFunc::call`) of the export, on an instance
//!    made with a plain `Linker` ([`RawCall`]), arguments already built — the floor
//!    (lowering the arguments into guest memory and running the guest included);
//! 2. `view` (0.2.0): building the two WIT record views of wink's objects (`object_ref`:
//!    borrowed strings, lists of pointers — what wink prepares per call before lowering);
//! 3. `instance`: `PluginInstance::on_update` — copy + call + the sandbox's per-call work
//!    (fresh epoch deadline, log bookkeeping);
//! 4. `handler`: `PluginHandler::deliver` awaited from async code — plus the instance's
//!    lock, the hop to a guest thread and back, metrics;
//! 5. `delivery (from a task)`: a notification queued on a listener by a task of the
//!    runtime — as the informer's processor queues every event — until the handler returned
//!    (stamped as it returns; the producer's own wake-up to see that is not counted): plus
//!    the listener's queue and task wake-up, one wink delivery end to end;
//! 6. `delivery`: the same, queued from the benchmark's own thread, outside the runtime — plus
//!    waking an executor thread, which no informer event pays (they are queued from within).
//!
//! and `delivery (streamed)`: 1,000 updates of distinct Pods queued at once, time per
//! delivery until all are delivered (the informer's steady state under load), against its
//! own floor, `raw (streamed)`: bare typed calls with the same 1,000 pairs in turn (distinct
//! objects do not all stay in the CPU's caches, which one pair called again and again does).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::Criterion;
use futures::task::AtomicWaker;
use tokio_util::sync::CancellationToken;
use wink::informer::{EntryResults, EventHandler, HandlerResult, Listener, ListenerOptions, Notification, Object};
use wink::plugin::bindings::{WitVersion, object_ref};
use wink::plugin::{GuestPool, LoadedPlugin, MetricsRegistry, PluginEngine, PluginHandler};
use wink_benches::plugins::{self, PluginSettings};
use wink_benches::raw_call::RawCall;
use wink_benches::results::{Goal, Report, Table, human_duration, median, verdict};
use wink_benches::workload::{self, PodSize};

const STREAMED: usize = 1_000;

/// Counts deliveries; wakes the benchmark once a target count is reached (so that waiting
/// costs one wake-up per measurement, not one per delivery), and notes when the last one
/// returned (so that the benchmark's own wake-up is not part of what it measures). One task
/// waits at a time, registered in an `AtomicWaker`: the producer's own preparation to be
/// woken, which falls inside the measured time, costs two atomic operations, not a lock.
#[derive(Default)]
struct Done {
    count: AtomicU64,
    target: AtomicU64,
    waiter: AtomicWaker,
    returned: parking_lot::Mutex<Option<Instant>>,
}

impl Done {
    fn add(&self, n: u64) {
        *self.returned.lock() = Some(Instant::now());
        let now = self.count.fetch_add(n, Ordering::AcqRel) + n;
        if now >= self.target.load(Ordering::Acquire) {
            self.waiter.wake();
        }
    }

    /// Waits until `more` deliveries after the current count.
    async fn wait(&self, start: u64, more: u64) {
        let target = start + more;
        self.target.store(target, Ordering::Release);
        std::future::poll_fn(|cx| {
            if self.count.load(Ordering::Acquire) >= target {
                return Poll::Ready(());
            }
            self.waiter.register(cx.waker());
            if self.count.load(Ordering::Acquire) >= target { Poll::Ready(()) } else { Poll::Pending }
        })
        .await;
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
        // The handler's own method, not its `EventHandler` one: the listener calls a plugin
        // handler through one boxed future, this wrapper's, not through two.
        let results = self.inner.deliver_many(batch).await;
        self.done.add(results.iter().map(|r| r.len() as u64).sum());
        results
    }

    fn deliver_now(&self, batch: &[Vec<Notification>]) -> Option<Vec<EntryResults>> {
        let results = self.inner.deliver_now(batch)?;
        self.done.add(results.iter().map(|r| r.len() as u64).sum());
        Some(results)
    }
}

/// Queues `iters` updates one at a time, each once the previous one was delivered; returns
/// each one's time from queueing to the handler's return.
async fn deliveries(
    listener: Arc<Listener>,
    done: Arc<Done>,
    (old, new): (Object, Object),
    iters: u64,
) -> Vec<Duration> {
    let mut times = Vec::new();
    for _ in 0..iters {
        let start = done.count.load(Ordering::Acquire);
        let started = Instant::now();
        listener.add(Notification::Update { old: old.clone(), new: new.clone() });
        done.wait(start, 1).await;
        let returned = done.returned.lock().unwrap_or(started);
        times.push(returned.saturating_duration_since(started));
    }
    times
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

/// What one contract's run measured.
struct Measured {
    version: WitVersion,
    raw: Duration,
    inst: Duration,
    handler: Duration,
    delivery: Duration,
    delivery_in_runtime: Duration,
    raw_streamed: Duration,
    streamed: Duration,
}

fn main() {
    let rt = wink_benches::runtime();
    let mut criterion = Criterion::default().configure_from_args();
    let engine = rt.block_on(async { plugins::engine(64) });
    let pool = GuestPool::per_core();
    let metrics = MetricsRegistry::new();
    let pairs: Vec<(Object, Object)> = (0..STREAMED).map(pod_pair).collect();
    let (old, new) = pairs[0].clone();

    let mut group = criterion.benchmark_group("call_overhead");
    group.bench_function("view", |b| b.iter(|| black_box((object_ref(black_box(&old)), object_ref(black_box(&new))))));
    group.finish();
    let view = time(&mut || {
        black_box((object_ref(&old), object_ref(&new)));
    });
    let mut measured = Vec::new();
    for dir in [plugins::bench_noop(), plugins::bench_noop_v02()] {
        let plugin = plugins::load(&dir, &engine);
        measured.push(measure(&rt, &mut criterion, &engine, &pool, &metrics, &plugin, &pairs));
    }
    criterion.final_summary();
    write_report(&measured, view);
}

/// Times one median of 20,000 runs of `f`.
fn time(f: &mut dyn FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..20_000)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect();
    times.sort_unstable();
    median(&times)
}

/// Every row, for one component.
fn measure(
    rt: &tokio::runtime::Runtime,
    criterion: &mut Criterion,
    engine: &PluginEngine,
    pool: &GuestPool,
    metrics: &MetricsRegistry,
    plugin: &LoadedPlugin,
    pairs: &[(Object, Object)],
) -> Measured {
    let version = plugin.pre.version();
    let name = |row: &str| format!("{}/{row}", version.as_str());
    let (old, new) = pairs[0].clone();
    let mut group = criterion.benchmark_group("call_overhead");

    let mut raw_call = RawCall::new(engine.wasmtime(), &plugin.component, version, pairs);
    group.bench_function(name("raw"), |b| b.iter(|| raw_call.call(0)));

    let sandbox = plugins::sandbox(plugin, engine, &PluginSettings::named("noop-instance"));
    let mut instance = sandbox.instantiate().expect("bench-noop starts");
    group.bench_function(name("instance"), |b| {
        b.iter(|| black_box(instance.on_update(black_box(&old), black_box(&new))))
    });

    let handler = Arc::new(plugins::handler(plugin, engine, &PluginSettings::named("noop-handler"), metrics, pool));
    rt.block_on(handler.warm_up());
    group.bench_function(name("handler"), |b| {
        b.to_async(rt).iter(|| {
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
    let mut raw_streamed_times = Vec::new();
    group.bench_function(name("raw (streamed)"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters as usize;
            while left > 0 {
                let batch = left.min(STREAMED);
                let started = Instant::now();
                for index in 0..batch {
                    raw_call.call(index);
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
    group.bench_function(name("delivery"), |b| {
        b.iter_custom(|iters| {
            let times = rt.block_on(deliveries(listener.clone(), done.clone(), (old.clone(), new.clone()), iters));
            let total = times.iter().sum();
            delivery_times.extend(times);
            total
        })
    });
    let mut in_runtime_times = Vec::new();
    group.bench_function(name("delivery (from a task)"), |b| {
        b.iter_custom(|iters| {
            let producer = deliveries(listener.clone(), done.clone(), (old.clone(), new.clone()), iters);
            let times = rt.block_on(async { tokio::spawn(producer).await.expect("the producer task") });
            let total = times.iter().sum();
            in_runtime_times.extend(times);
            total
        })
    });
    group.bench_function(name("delivery (streamed)"), |b| {
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
    let raw = time(&mut || raw_call.call(0));
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
    Measured {
        version,
        raw,
        inst,
        handler: handler_time,
        delivery: median(&delivery_times),
        delivery_in_runtime: median(&in_runtime_times),
        raw_streamed: median(&raw_streamed_times),
        streamed: median(&streamed_times),
    }
}

fn ratio(t: Duration, base: Duration) -> String {
    if base.is_zero() { "-".into() } else { format!("{:.2}×", t.as_secs_f64() / base.as_secs_f64()) }
}

fn write_report(measured: &[Measured], view: Duration) {
    let mut report = Report::new(
        "call_overhead",
        "3. Call overhead vs raw wasmtime",
        "`on-update` of the `bench-noop` component with two ~4 KB Pods (managedFields included), for each \
         contract: 0.3.0 (`bench-noop`: the objects lent as `event-object` handles, the guest fetching the \
         name) and 0.2.0 (`bench-noop-v02`, the same work against the earlier contract: both objects copied \
         whole into guest memory, one guest allocation per string). `raw` is a bare wasmtime \
         `TypedFunc::call` with the arguments already built (WIT records for 0.2.0; for 0.3.0 the objects \
         in the store, lent by index, and a linker defining the `name` method: lowering and the guest's \
         work included); each further row adds one layer of wink's path. Medians of 20,000 calls \
         (delivery: of criterion's samples, each from queueing the event to the handler's return, stamped \
         as it returns); `delivery (streamed)` is the time per delivery when 1,000 \
         updates of distinct Pods are queued at once, and `raw (streamed)` its floor: bare typed calls \
         with the same 1,000 pairs in turn (medians of criterion's samples).",
    );
    for m in measured {
        let v = m.version.as_str();
        let mut table = Table::new(format!("Contract {v}"), &["path", "median", "÷ raw", "this layer adds"]);
        let mut rows = vec![("raw wasmtime typed call".to_owned(), m.raw, Duration::ZERO)];
        let call = if m.version < WitVersion::V0_3 {
            rows.push(("view: objects → borrowed WIT records".to_owned(), view, view));
            m.raw + view
        } else {
            m.raw
        };
        rows.extend([
            (
                "instance: `PluginInstance::on_update` (view or loans + call + deadline, log)".to_owned(),
                m.inst,
                m.inst.saturating_sub(call),
            ),
            (
                "handler: `PluginHandler::deliver` (+ lock, hop to a guest thread and back, metrics)".to_owned(),
                m.handler,
                m.handler.saturating_sub(m.inst),
            ),
            (
                "delivery (from a task): queued by a runtime task, as the informer queues events → handler (+ queue, task wake-up)".to_owned(),
                m.delivery_in_runtime,
                m.delivery_in_runtime.saturating_sub(m.handler),
            ),
            (
                "delivery (from outside): queued from the benchmark's thread → handler (+ waking an executor thread)"
                    .to_owned(),
                m.delivery,
                m.delivery.saturating_sub(m.delivery_in_runtime),
            ),
        ]);
        for (name, t, adds) in rows {
            table.row(vec![
                name,
                human_duration(t),
                ratio(t, m.raw),
                if adds.is_zero() { String::new() } else { human_duration(adds) },
            ]);
        }
        report.tables.push(table);
        let mut streamed =
            Table::new(format!("Contract {v}, under load"), &["path", "per update (median)", "÷ raw (streamed)"]);
        for (name, t) in [
            ("raw (streamed): bare typed calls, the same 1,000 pairs in turn", m.raw_streamed),
            ("delivery (streamed): 1,000 updates queued on the listener at once", m.streamed),
        ] {
            streamed.row(vec![name.into(), human_duration(t), ratio(t, m.raw_streamed)]);
        }
        report.tables.push(streamed);
        let single = m.delivery_in_runtime.as_secs_f64() / m.raw.as_secs_f64();
        let outside = m.delivery.as_secs_f64() / m.raw.as_secs_f64();
        let stream = m.streamed.as_secs_f64() / m.raw_streamed.as_secs_f64();
        report.notes.push(format!(
            "{v}: one delivery (from a task) {} ÷ raw {} = {single:.2}× (target ≤ 1.5×: {}); from outside the runtime {outside:.2}×; under load, delivery ÷ raw = {stream:.2}× (≤ 1.5×: {})",
            human_duration(m.delivery_in_runtime),
            human_duration(m.raw),
            verdict(single <= 1.5),
            verdict(stream <= 1.5)
        ));
        if m.version >= WitVersion::V0_3 {
            report.goals.push(
                Goal::new(
                    format!("one delivery from a task ≤ 1.5× the raw call ({v})"),
                    human_duration(m.delivery_in_runtime),
                    Some(single <= 1.5),
                )
                .against(format!("raw wasmtime call {}", human_duration(m.raw)), format!("{single:.2}×")),
            );
            report.goals.push(
                Goal::new("the same under load ≤ 1.5×", human_duration(m.streamed), Some(stream <= 1.5))
                    .against(format!("raw, streamed {}", human_duration(m.raw_streamed)), format!("{stream:.2}×")),
            );
        }
    }
    if let [new, old] = measured {
        report.notes.push(format!(
            "{} ÷ {}: raw call {}, one delivery {}, under load {}",
            new.version.as_str(),
            old.version.as_str(),
            ratio(new.raw, old.raw),
            ratio(new.delivery_in_runtime, old.delivery_in_runtime),
            ratio(new.streamed, old.streamed)
        ));
    }
    report.write();
}
