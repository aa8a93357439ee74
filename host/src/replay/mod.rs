//! Record and replay, for plugin authors: what informers deliver, written as JSON Lines
//! ([`format`], by a [`recorder::Recorder`] per resource: `wink record`, or `wink run
//! --record`), and a plugin fed such a recording offline ([`player`]: `wink replay`), its
//! writes shown as a dry run ([`dry_run`]) — how a plugin author tests a change against last
//! week's real traffic.

pub(crate) mod dry_run;
pub(crate) mod format;
mod keys;
pub(crate) mod player;
pub(crate) mod recorder;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::informer::{InformerFactory, Registration, ResourceKey, SourceError};
use crate::plugin::{EngineError, LoadError};
use crate::source::{OpenError, OpenOptions, SourceSpec};

pub use format::FormatError;
pub use format::Recording;
pub use player::{ReplayOptions, replay};
pub use recorder::Recorder;
pub use recorder::Sink;

/// Why recording or replaying failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The recording cannot be read or written.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// The recording cannot be written.
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The plugin does not load.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The wasm engine could not start.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The source could not be opened or read: its folder, or the API server's
    /// configuration and client.
    #[error(transparent)]
    Source(#[from] OpenError),
    /// A resource cannot be watched.
    #[error("cannot watch {resource}")]
    Watch {
        /// The resource.
        resource: String,
        /// The cause.
        #[source]
        source: SourceError,
    },
    /// A resource is not written `apiVersion/Kind`.
    #[error("`{0}` is not a resource: write it apiVersion/Kind, e.g. apps/v1/Deployment")]
    BadResource(String),
}

/// What `wink record` records.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// Where objects come from.
    pub source: SourceSpec,
    /// With a `dir:` source, the namespace of objects that name none.
    pub namespace: Option<String>,
    /// The resources, as `apiVersion/Kind`.
    pub resources: Vec<String>,
    /// The file written.
    pub out: PathBuf,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop after this many events.
    pub max_events: Option<u64>,
}

fn source_name(source: &SourceSpec) -> String {
    match source {
        SourceSpec::Dir(path) => format!("dir:{}", path.display()),
        SourceSpec::Kube { kubeconfig: Some(path) } => format!("kube:{}", path.display()),
        SourceSpec::Kube { kubeconfig: None } => "kube".into(),
    }
}

/// Registers a [`Recorder`] writing into `sink` on each of `resources`' informers.
pub(crate) fn record_into(
    factory: &InformerFactory,
    resources: &[ResourceKey],
    sink: &Arc<Sink>,
) -> Result<Vec<Registration>, ReplayError> {
    resources
        .iter()
        .map(|key| {
            let watch = |source| ReplayError::Watch { resource: key.to_string(), source };
            let informer = factory.informer_for(key).map_err(watch)?;
            let recorder = Arc::new(Recorder::new(format!("{}/{}", key.api_version, key.kind), sink.clone()));
            informer.add_event_handler(recorder).map_err(|e| watch(SourceError::Unsupported(e.to_string())))
        })
        .collect()
}

/// Creates the recording file and its sink.
pub(crate) fn open_sink(
    path: &std::path::Path,
    source: &str,
    resources: Vec<String>,
    max_events: Option<u64>,
    full: CancellationToken,
) -> Result<Arc<Sink>, ReplayError> {
    let write = |source| ReplayError::Write { path: path.to_owned(), source };
    let file = std::fs::File::create(path).map_err(write)?;
    Sink::new(Box::new(std::io::BufWriter::new(file)), source, resources, max_events, full).map_err(write)
}

/// `wink record`: records what `options.resources`' informers deliver until `shutdown`
/// fires, the duration passes or the events are counted; returns the events written.
pub async fn record(options: RecordOptions, shutdown: CancellationToken) -> Result<u64, ReplayError> {
    let keys = options
        .resources
        .iter()
        .map(|r| {
            r.rsplit_once('/').map(|(v, k)| ResourceKey::new(v, k)).ok_or_else(|| ReplayError::BadResource(r.clone()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let cancel = shutdown.child_token();
    let open = OpenOptions { namespace: options.namespace.clone(), ..OpenOptions::default() };
    let provider = options.source.open(&open, &cancel).await?.provider();
    let factory = InformerFactory::new(provider);
    let full = CancellationToken::new();
    let sink = open_sink(
        &options.out,
        &source_name(&options.source),
        options.resources.clone(),
        options.max_events,
        full.clone(),
    )?;
    let _registrations = record_into(&factory, &keys, &sink)?;
    factory.start();
    let deadline = async {
        match options.duration {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = cancel.cancelled() => {}
        () = full.cancelled() => {}
        () = deadline => {}
    }
    cancel.cancel();
    factory.shutdown().await;
    Ok(sink.written())
}
