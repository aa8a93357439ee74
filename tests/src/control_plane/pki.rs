//! The throwaway keys and certificates of a test control plane, as a cluster installer
//! (kubeadm) makes them, but in memory and fresh for every control plane:
//! - a CA that signs the API server's serving certificate (for `127.0.0.1` and `localhost`)
//!   and the clients' certificates (`--client-ca-file`);
//! - an admin client certificate in the `system:masters` group, which RBAC lets do anything;
//! - the service-account token signing key pair (`--service-account-signing-key-file`,
//!   `--service-account-key-file`).
//!
//! Keys are ECDSA P-256, written as PEM (PKCS#8 private keys), which kube-apiserver, kubectl
//! and kube-rs's rustls all read.

use anyhow::Result;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

/// The user name of the admin client certificate (its common name).
pub const ADMIN_USER: &str = "wink-test-admin";

/// A certificate and its private key, both PEM.
pub struct CertPair {
    /// The certificate, PEM.
    pub cert: String,
    /// Its private key, PEM (PKCS#8).
    pub key: String,
}

/// Everything a control plane's TLS and tokens need.
pub struct Pki {
    /// The CA certificate, PEM: trusted by clients, and by the API server for client certificates.
    pub ca: String,
    /// The API server's serving certificate.
    pub serving: CertPair,
    /// The admin's client certificate (`CN=wink-test-admin, O=system:masters`).
    pub admin: CertPair,
    /// The service-account token signing key, PEM (PKCS#8).
    pub service_account_key: String,
    /// Its public half, PEM (`PUBLIC KEY`), which verifies the tokens.
    pub service_account_public_key: String,
}

impl Pki {
    /// Generates fresh keys and certificates.
    pub fn generate() -> Result<Self> {
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.distinguished_name.push(DnType::CommonName, "wink-test-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages =
            vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;

        let mut serving = CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])?;
        serving.distinguished_name.push(DnType::CommonName, "kube-apiserver");
        serving.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let serving_key = KeyPair::generate()?;
        let serving_cert = serving.signed_by(&serving_key, &ca)?;

        let mut admin = CertificateParams::new(Vec::<String>::new())?;
        admin.distinguished_name.push(DnType::CommonName, ADMIN_USER);
        admin.distinguished_name.push(DnType::OrganizationName, "system:masters");
        admin.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        admin.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let admin_key = KeyPair::generate()?;
        let admin_cert = admin.signed_by(&admin_key, &ca)?;

        let service_account = KeyPair::generate()?;
        Ok(Self {
            ca: ca.pem(),
            serving: CertPair { cert: serving_cert.pem(), key: serving_key.serialize_pem() },
            admin: CertPair { cert: admin_cert.pem(), key: admin_key.serialize_pem() },
            service_account_key: service_account.serialize_pem(),
            service_account_public_key: service_account.public_key_pem(),
        })
    }
}
