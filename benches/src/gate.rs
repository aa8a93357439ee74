//! A kube client whose WATCH requests wait at a gate until the benchmark opens it.
//!
//! Throughput benchmarks must time the consumers, not the writes that produce the events:
//! the local API server spends more on an update (JSON merging, stamping, encoding) than a
//! client spends on receiving it. So a run goes: the consumer lists and syncs (timed); its
//! first WATCH request is held here; the benchmark writes the events into the server's
//! history (not timed); it opens the gate (the clock restarts) and the server replays the
//! history to the watch as fast as the consumer reads it.
//!
//! The gate is a tower layer on the kube client, so wink's kube source and kube-rs's watcher
//! go through the same client, the same HTTP connection code and the same server.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::{Request, Response};
use kube::client::{Body, ClientBuilder, DynBody};
use tokio::sync::watch;
use tower::buffer::Buffer;
use tower::util::BoxService;
use tower::{BoxError, Layer, Service, ServiceExt};

type Inner = BoxService<Request<Body>, Response<Box<DynBody>>, BoxError>;
type InnerFuture = <Inner as Service<Request<Body>>>::Future;

/// Holds WATCH requests until opened; counts the requests waiting.
#[derive(Debug)]
pub struct WatchGate {
    open: watch::Sender<bool>,
    waiting: watch::Sender<usize>,
}

impl WatchGate {
    /// A closed gate.
    pub fn closed() -> Arc<Self> {
        Arc::new(Self { open: watch::Sender::new(false), waiting: watch::Sender::new(0) })
    }

    /// An open gate (requests pass at once).
    pub fn opened() -> Arc<Self> {
        let gate = Self::closed();
        gate.open();
        gate
    }

    /// Lets every held and future WATCH request through.
    pub fn open(&self) {
        self.open.send_replace(true);
    }

    /// Waits until at least `n` WATCH requests are held.
    pub async fn held(&self, n: usize) {
        let mut rx = self.waiting.subscribe();
        let _ = rx.wait_for(|w| *w >= n).await;
    }

    async fn pass(&self) {
        let mut rx = self.open.subscribe();
        if *rx.borrow_and_update() {
            return;
        }
        self.waiting.send_modify(|w| *w += 1);
        let _ = rx.wait_for(|open| *open).await;
        self.waiting.send_modify(|w| *w -= 1);
    }
}

fn is_watch<B>(req: &Request<B>) -> bool {
    req.uri().query().is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"))
}

/// The tower layer that puts a [`WatchGate`] in front of a kube client's HTTP stack.
#[derive(Clone, Debug)]
pub struct GateLayer(Arc<WatchGate>);

impl Layer<Inner> for GateLayer {
    type Service = Gated;

    fn layer(&self, inner: Inner) -> Gated {
        Gated { inner: Buffer::new(inner, 1024), gate: self.0.clone() }
    }
}

/// The gated service (see [`GateLayer`]).
#[derive(Clone)]
pub struct Gated {
    inner: Buffer<Request<Body>, InnerFuture>,
    gate: Arc<WatchGate>,
}

impl Service<Request<Body>> for Gated {
    type Response = Response<Box<DynBody>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Readiness is awaited inside `call`, after the gate.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let mut inner = self.inner.clone();
        let gate = self.gate.clone();
        let watch = is_watch(&req);
        Box::pin(async move {
            if watch {
                gate.pass().await;
            }
            inner.ready().await?.call(req).await
        })
    }
}

/// A kube client for the local API server whose kubeconfig is at `kubeconfig`, with its
/// WATCH requests held by `gate`. Call inside a tokio runtime.
pub async fn gated_client(kubeconfig: &std::path::Path, gate: Arc<WatchGate>) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).expect("reading the server's kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
        .await
        .expect("using the server's kubeconfig");
    ClientBuilder::try_from(config).expect("building a kube client").with_layer(&GateLayer(gate)).build()
}
