//! [`SourceSpec`]: where objects come from, as `wink run --source` names it, and
//! [`SourceSpec::open`], the one place a spec becomes a watched folder or an API server's
//! client (for `wink run`, `wink record` and whoever embeds the host).

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{DirSource, DirSourceError, DirSourceOptions, KubeSource, KubeSourceError, load_config};
use crate::informer::SourceProvider;

/// A `--source` that is neither `dir:PATH` nor `kube[:KUBECONFIG]`.
#[derive(Debug, thiserror::Error)]
#[error("unknown source `{0}`: use `dir:PATH` or `kube`")]
pub struct UnknownSource(pub String);

/// Where objects come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceSpec {
    /// A folder of manifests (`dir:PATH`).
    Dir(PathBuf),
    /// A Kubernetes API server (`kube`): this kubeconfig, else the default kubeconfig
    /// (`$KUBECONFIG`, `~/.kube/config`), else the in-cluster service account.
    Kube {
        /// The kubeconfig file.
        kubeconfig: Option<PathBuf>,
    },
}

impl Default for SourceSpec {
    /// The default Kubernetes API server: the default kubeconfig, else the in-cluster
    /// service account.
    fn default() -> Self {
        Self::Kube { kubeconfig: None }
    }
}

impl FromStr for SourceSpec {
    type Err = UnknownSource;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "kube" {
            return Ok(Self::Kube { kubeconfig: None });
        }
        match s.split_once(':') {
            Some(("dir", path)) if !path.is_empty() => Ok(Self::Dir(PathBuf::from(path))),
            Some(("kube", path)) if !path.is_empty() => Ok(Self::Kube { kubeconfig: Some(PathBuf::from(path)) }),
            _ => Err(UnknownSource(s.to_owned())),
        }
    }
}

/// How a [`SourceSpec`] is opened.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// A folder's namespace for namespaced objects that name none, as `kubectl apply -n`
    /// (`None`: `default`).
    pub namespace: Option<String>,
    /// The `User-Agent` of an API server's requests (`None`: the client's own).
    pub user_agent: Option<String>,
}

/// Why a source could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The folder could not be read or watched.
    #[error(transparent)]
    Dir(#[from] DirSourceError),
    /// The API server's configuration could not be read or its client built.
    #[error(transparent)]
    Kube(#[from] KubeSourceError),
}

/// An opened source.
#[derive(Clone)]
pub enum OpenedSource {
    /// A folder of manifests, watched until the token given to [`SourceSpec::open`] fires:
    /// its objects are an embedded cluster.
    Dir(Arc<DirSource>),
    /// A Kubernetes API server.
    Kube {
        /// Its lists and watches.
        source: KubeSource,
        /// The configuration it was opened with (for the host's other clients).
        config: Box<kube::Config>,
    },
}

impl OpenedSource {
    /// What informers list and watch.
    pub fn provider(&self) -> Arc<dyn SourceProvider> {
        match self {
            Self::Dir(dir) => dir.clone(),
            Self::Kube { source, .. } => Arc::new(source.clone()),
        }
    }
}

impl SourceSpec {
    /// Opens the source: a folder is read and watched until `cancel` fires; an API server's
    /// kubeconfig is read and its client built.
    pub async fn open(&self, options: &OpenOptions, cancel: &CancellationToken) -> Result<OpenedSource, OpenError> {
        match self {
            Self::Dir(path) => {
                let dir_options = DirSourceOptions { namespace: options.namespace.clone(), ..Default::default() };
                let dir = DirSource::open_with(path, dir_options)?;
                dir.watch(cancel.clone())?;
                Ok(OpenedSource::Dir(dir))
            }
            Self::Kube { kubeconfig } => {
                let mut config = load_config(kubeconfig.as_deref()).await?;
                if let Some(value) = options.user_agent.as_deref().and_then(|a| a.parse().ok()) {
                    config.headers.push((http::header::USER_AGENT, value));
                }
                let source = KubeSource::from_config(config.clone())?;
                Ok(OpenedSource::Kube { source, config: Box::new(config) })
            }
        }
    }
}
