//! Where the kube source's client configuration comes from: a kubeconfig file, or what
//! kubectl would infer. The same configuration serves plugins' requests to the cluster.

use std::path::Path;

use kube::Config;
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::kube::KubeSourceError;

/// The client configuration of the kubeconfig file at `path` (its current context), or as
/// kubectl would infer it (`$KUBECONFIG`, `~/.kube/config`, the in-cluster service account).
pub async fn load_config(path: Option<&Path>) -> Result<Config, KubeSourceError> {
    match path {
        Some(path) => kubeconfig(path, None).await,
        None => Config::infer().await.map_err(KubeSourceError::Infer),
    }
}

pub(crate) async fn kubeconfig(path: &Path, context: Option<&str>) -> Result<Config, KubeSourceError> {
    let kubeconfig =
        Kubeconfig::read_from(path).map_err(|source| KubeSourceError::Kubeconfig { path: path.to_owned(), source })?;
    let options = KubeConfigOptions { context: context.map(str::to_owned), ..KubeConfigOptions::default() };
    Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|source| KubeSourceError::Context { path: path.to_owned(), source })
}
