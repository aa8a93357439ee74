//! [`SourceSpec`]: where objects come from, as `wink run --source` names it.

use std::path::PathBuf;
use std::str::FromStr;

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
