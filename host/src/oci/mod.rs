//! Plugins as OCI artifacts: `wink push DIR REF`, `wink pull REF DIR`, and `wink run
//! --plugin-ref REF`, which deploys plugins straight from a registry.
//!
//! A plugin is published as an OCI image manifest (image-spec 1.1) whose `artifactType` is
//! [`ARTIFACT_TYPE`](artifact::ARTIFACT_TYPE); its config blob is the plugin's `plugin.yaml`,
//! verbatim ([`MANIFEST_MEDIA_TYPE`](artifact::MANIFEST_MEDIA_TYPE)), and its one layer is
//! the component ([`COMPONENT_MEDIA_TYPE`](artifact::COMPONENT_MEDIA_TYPE), `application/wasm`, as the CNCF Wasm OCI artifact layout uses), titled with the component's
//! file name (`org.opencontainers.image.title`, as ORAS does). Any OCI-conformant registry
//! stores it; `oras` and `crane` can copy it.
//!
//! Everything fetched is verified against its digest — the manifest against the digest it
//! was resolved to (or pinned at, `repo@sha256:…`), each blob against the manifest — and kept
//! in a content-addressed cache (`store`), so a pinned plugin starts without the network
//! once fetched, and a tag that still points at the same digest costs one `HEAD` request.
//! Credentials come from the Docker config conventions (`$DOCKER_CONFIG/config.json` or
//! `~/.docker/config.json`, `auths` entries and credential helpers), see `auth`.
//!
//! The client is the well-kept `oci-client` crate (the ORAS project's Rust client).

pub(crate) mod artifact;
pub(crate) mod auth;
pub(crate) mod client;
pub(crate) mod refresh;
pub(crate) mod store;

pub(crate) use artifact::PluginArtifact;
pub(crate) use client::OciClient;
pub use client::OciError;
pub use client::OciOptions;
pub(crate) use refresh::OciPlugins;
pub use refresh::RefreshOptions;
