//! Pushing and pulling plugin artifacts (see the [module docs](super)).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use super::artifact::{
    ARTIFACT_TYPE, ArtifactError, COMPONENT_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, PluginArtifact, TITLE_ANNOTATION,
};
use super::auth::registry_auth;
use super::store::{BadDigest, BlobStore, sha256_digest};
use crate::errors::Cause;

/// The largest `plugin.yaml` or OCI manifest accepted from a registry.
pub(crate) const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// How the client reaches registries.
#[derive(Clone, Debug)]
pub struct OciOptions {
    /// Where fetched manifests and blobs are cached by digest.
    pub cache_dir: PathBuf,
    /// Registries (`host[:port]`) spoken to over plain HTTP instead of HTTPS (a local test
    /// registry; never a registry on a network you do not control).
    pub insecure_registries: Vec<String>,
    /// The largest component accepted (the loader's `--max-component-size`).
    pub max_component_size: u64,
}

/// Why a push or pull failed.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The reference does not parse.
    #[error("invalid OCI reference {reference:?}")]
    Reference {
        /// The reference.
        reference: String,
        /// The parser's error.
        #[source]
        source: oci_client::ParseError,
    },
    /// The registry credentials could not be read.
    #[error("cannot read the registry credentials for {registry}")]
    Credentials {
        /// The registry.
        registry: String,
        /// The credential store's error.
        #[source]
        source: docker_credential::CredentialRetrievalError,
    },
    /// The registry refused or failed a request.
    #[error("registry request for {reference} failed{hint}")]
    Registry {
        /// The reference.
        reference: String,
        /// What to do about it, when the error says (e.g. ` (… pass --insecure-registry …)`),
        /// else empty.
        hint: String,
        /// The client's error.
        #[source]
        source: oci_client::errors::OciDistributionError,
    },
    /// What the registry served is not a wink plugin, or does not match its digest or size.
    #[error("{reference} is not a usable wink plugin artifact")]
    Invalid {
        /// The reference.
        reference: String,
        /// What is wrong.
        #[source]
        cause: Cause,
    },
    /// The plugin folder cannot be published, or the pulled plugin is unsafe.
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    /// A digest cannot name a cache entry.
    #[error(transparent)]
    Digest(#[from] BadDigest),
    /// The cache could not be written.
    #[error("cannot write the OCI cache in {}", dir.display())]
    Cache {
        /// The cache folder.
        dir: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// A pulled plugin and the manifest digest it was pulled at.
#[derive(Clone, Debug)]
pub(crate) struct Pulled {
    /// `sha256:…` of the OCI manifest.
    pub digest: String,
    /// The plugin's files.
    pub artifact: PluginArtifact,
}

/// An OCI registry client for plugin artifacts.
pub(crate) struct OciClient {
    client: Client,
    store: BlobStore,
    options: OciOptions,
}

impl std::fmt::Debug for OciClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OciClient").field("options", &self.options).finish()
    }
}

/// A hint when `error` is TLS meeting a server that answered in plain HTTP (rustls reads the
/// HTTP answer as a record of type `InvalidContentType`): the flag that speaks HTTP to it.
fn plain_http_hint(error: &(dyn std::error::Error + 'static), registry: &str) -> String {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if e.to_string().contains("InvalidContentType") {
            return format!(
                " (the registry answered in plain HTTP, not TLS: for a registry without TLS, pass \
                 --insecure-registry {registry})"
            );
        }
        cause = e.source();
    }
    String::new()
}

/// Parses `reference` (`registry/repository:tag` or `…@sha256:…`).
pub(crate) fn parse_reference(reference: &str) -> Result<Reference, OciError> {
    reference.parse().map_err(|source| OciError::Reference { reference: reference.to_owned(), source })
}

impl OciClient {
    /// A client caching in `options.cache_dir`.
    pub fn new(options: OciOptions) -> Self {
        // reqwest's rustls takes the process's provider; the first install wins.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let protocol = if options.insecure_registries.is_empty() {
            ClientProtocol::Https
        } else {
            ClientProtocol::HttpsExcept(options.insecure_registries.clone())
        };
        let client = Client::new(ClientConfig { protocol, ..ClientConfig::default() });
        Self { client, store: BlobStore::new(options.cache_dir.join("blobs")), options }
    }

    fn auth(reference: &Reference) -> Result<RegistryAuth, OciError> {
        let registry = reference.resolve_registry();
        registry_auth(registry).map_err(|source| OciError::Credentials { registry: registry.to_owned(), source })
    }

    fn registry_error(reference: &Reference) -> impl FnOnce(oci_client::errors::OciDistributionError) -> OciError {
        let registry = reference.resolve_registry().to_owned();
        let reference = reference.whole();
        move |source| OciError::Registry { reference, hint: plain_http_hint(&source, &registry), source }
    }

    fn invalid(reference: &Reference, cause: impl Into<Cause>) -> OciError {
        OciError::Invalid { reference: reference.whole(), cause: cause.into() }
    }

    /// Publishes the plugin in `dir` as `reference`; returns the manifest's digest.
    pub async fn push(&self, dir: &Path, reference: &str) -> Result<String, OciError> {
        let reference = parse_reference(reference)?;
        let artifact = PluginArtifact::from_dir(dir)?;
        let auth = Self::auth(&reference)?;
        let title = BTreeMap::from([(TITLE_ANNOTATION.to_owned(), artifact.component_name.clone())]);
        let layers = [ImageLayer::new(artifact.component.clone(), COMPONENT_MEDIA_TYPE.to_owned(), Some(title))];
        let config = Config::new(artifact.manifest.clone(), MANIFEST_MEDIA_TYPE.to_owned(), None);
        let mut manifest = OciImageManifest::build(&layers, &config, None);
        manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.to_owned());
        manifest.artifact_type = Some(ARTIFACT_TYPE.to_owned());
        let bytes = serde_json::to_vec(&manifest)
            .map_err(|e| Self::invalid(&reference, Cause::with_source("encoding the manifest", e)))?;
        self.client
            .push(&reference, &layers, config, &auth, Some(manifest))
            .await
            .map_err(Self::registry_error(&reference))?;
        // What the registry stored, byte for byte, is what oci-client serialized; its digest
        // is the registry's. Asking back keeps us honest if the two ever differ.
        let digest =
            self.client.fetch_manifest_digest(&reference, &auth).await.unwrap_or_else(|_| sha256_digest(&bytes));
        Ok(digest)
    }

    /// The manifest digest `reference` names now: itself when pinned, else the tag's.
    pub async fn resolve(&self, reference: &str) -> Result<String, OciError> {
        let reference = parse_reference(reference)?;
        if let Some(digest) = reference.digest() {
            return Ok(digest.to_owned());
        }
        let auth = Self::auth(&reference)?;
        self.client.fetch_manifest_digest(&reference, &auth).await.map_err(Self::registry_error(&reference))
    }

    /// Fetches the plugin `reference` names (from the cache where possible), verified.
    pub async fn pull(&self, reference: &str) -> Result<Pulled, OciError> {
        let digest = self.resolve(reference).await?;
        self.pull_digest(reference, &digest).await
    }

    /// Fetches the plugin at manifest `digest` in `reference`'s repository, verified.
    pub async fn pull_digest(&self, reference: &str, digest: &str) -> Result<Pulled, OciError> {
        let parsed = parse_reference(reference)?;
        let pinned = parsed.clone_with_digest(digest.to_owned());
        let manifest_bytes = match self.store.get(digest)? {
            Some(bytes) => bytes,
            None => {
                let auth = Self::auth(&parsed)?;
                let (bytes, _) = self
                    .client
                    .pull_manifest_raw(&pinned, &auth, &[OCI_IMAGE_MEDIA_TYPE])
                    .await
                    .map_err(Self::registry_error(&parsed))?;
                if bytes.len() as u64 > MAX_MANIFEST_BYTES {
                    return Err(Self::invalid(&parsed, format!("its manifest is {} bytes", bytes.len())));
                }
                if sha256_digest(&bytes) != digest {
                    return Err(Self::invalid(&parsed, format!("its manifest does not hash to {digest}")));
                }
                self.cache(digest, &bytes)?;
                bytes.to_vec()
            }
        };
        let manifest: OciImageManifest = serde_json::from_slice(&manifest_bytes)
            .map_err(|e| Self::invalid(&parsed, Cause::with_source("its manifest does not parse", e)))?;
        let (config, layer) = plugin_descriptors(&manifest).map_err(|why| Self::invalid(&parsed, why))?;
        if config.size < 0 || config.size as u64 > MAX_MANIFEST_BYTES {
            return Err(Self::invalid(&parsed, format!("its plugin.yaml is {} bytes", config.size)));
        }
        if layer.size < 0 || layer.size as u64 > self.options.max_component_size {
            return Err(Self::invalid(
                &parsed,
                format!("its component is {} bytes, over the limit of {}", layer.size, self.options.max_component_size),
            ));
        }
        let title = layer.annotations.as_ref().and_then(|a| a.get(TITLE_ANNOTATION)).cloned().unwrap_or_default();
        let plugin_yaml = self.blob(&pinned, config).await?;
        let component = self.blob(&pinned, layer).await?;
        let artifact = PluginArtifact::validate(plugin_yaml, title, component)?;
        Ok(Pulled { digest: digest.to_owned(), artifact })
    }

    /// One blob, from the cache or the registry; at most its descriptor's size is read, and
    /// it must hash to its descriptor's digest.
    async fn blob(&self, reference: &Reference, descriptor: &OciDescriptor) -> Result<Vec<u8>, OciError> {
        if let Some(bytes) = self.store.get(&descriptor.digest)? {
            return Ok(bytes);
        }
        let mut stream =
            self.client.pull_blob_stream(reference, descriptor).await.map_err(Self::registry_error(reference))?;
        let limit = descriptor.size.max(0) as u64;
        let mut bytes = Vec::with_capacity(limit.min(64 << 20) as usize);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| Self::invalid(reference, Cause::with_source("reading a blob", e)))?;
            if bytes.len() as u64 + chunk.len() as u64 > limit {
                return Err(Self::invalid(
                    reference,
                    format!("blob {} is larger than its {limit} bytes", descriptor.digest),
                ));
            }
            bytes.extend_from_slice(&chunk);
        }
        if sha256_digest(&bytes) != descriptor.digest {
            return Err(Self::invalid(reference, format!("blob {} does not hash to its digest", descriptor.digest)));
        }
        self.cache(&descriptor.digest, &bytes)?;
        Ok(bytes)
    }

    fn cache(&self, digest: &str, bytes: &[u8]) -> Result<(), OciError> {
        self.store.put(digest, bytes).map_err(|source| OciError::Cache { dir: self.store.dir().to_owned(), source })
    }
}

/// The config and component descriptors of a plugin manifest, or why it is not one.
fn plugin_descriptors(manifest: &OciImageManifest) -> Result<(&OciDescriptor, &OciDescriptor), String> {
    if manifest.config.media_type != MANIFEST_MEDIA_TYPE {
        return Err(format!(
            "its config is {:?}, not a wink plugin.yaml ({MANIFEST_MEDIA_TYPE})",
            manifest.config.media_type
        ));
    }
    match manifest.layers.as_slice() {
        [layer] if layer.media_type == COMPONENT_MEDIA_TYPE => Ok((&manifest.config, layer)),
        layers => Err(format!("it has {} layers; a plugin has one {COMPONENT_MEDIA_TYPE} layer", layers.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(media_type: &str) -> OciDescriptor {
        OciDescriptor { media_type: media_type.to_owned(), ..OciDescriptor::default() }
    }

    /// Only a wink plugin artifact is accepted: its plugin.yaml config and exactly one
    /// component layer; an ordinary container image or a multi-layer artifact is refused.
    #[test]
    fn only_plugin_manifests_are_accepted() {
        let plugin = OciImageManifest {
            config: descriptor(MANIFEST_MEDIA_TYPE),
            layers: vec![descriptor(COMPONENT_MEDIA_TYPE)],
            ..OciImageManifest::default()
        };
        assert!(plugin_descriptors(&plugin).is_ok());
        let image =
            OciImageManifest { config: descriptor("application/vnd.oci.image.config.v1+json"), ..plugin.clone() };
        assert!(plugin_descriptors(&image).unwrap_err().contains("not a wink plugin.yaml"));
        let two = OciImageManifest { layers: vec![descriptor(COMPONENT_MEDIA_TYPE); 2], ..plugin.clone() };
        assert!(plugin_descriptors(&two).unwrap_err().contains("2 layers"));
        let tar = OciImageManifest { layers: vec![descriptor("application/vnd.oci.image.layer.v1.tar")], ..plugin };
        assert!(plugin_descriptors(&tar).is_err());
    }
}
