//! Registry credentials by the Docker config conventions: `$DOCKER_CONFIG/config.json` (else
//! `~/.docker/config.json`), its `auths` entries (`auth` = base64 `user:password`, or an
//! `identitytoken`) and its credential helpers (`credsStore`, `credHelpers`), as docker,
//! podman, helm and oras read them. No entry means anonymous access.

use docker_credential::{CredentialRetrievalError, DockerCredential};
use oci_client::secrets::RegistryAuth;

/// The credentials for `registry` (`host[:port]`), anonymous when none are configured.
pub(crate) fn registry_auth(registry: &str) -> Result<RegistryAuth, CredentialRetrievalError> {
    // Docker Hub's credentials are stored under its legacy index URL.
    let server =
        if registry == "docker.io" || registry == "index.docker.io" { "https://index.docker.io/v1/" } else { registry };
    match docker_credential::get_credential(server) {
        Ok(DockerCredential::UsernamePassword(user, password)) => Ok(RegistryAuth::Basic(user, password)),
        Ok(DockerCredential::IdentityToken(token)) => Ok(RegistryAuth::Bearer(token)),
        Err(CredentialRetrievalError::ConfigNotFound)
        | Err(CredentialRetrievalError::ConfigReadError)
        | Err(CredentialRetrievalError::NoCredentialConfigured) => Ok(RegistryAuth::Anonymous),
        Err(other) => Err(other),
    }
}
