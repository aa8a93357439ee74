//! A real OCI registry for tests: the CNCF distribution registry (Debian's
//! `docker-registry`, installed by `cargo xtask test` and named by `WINK_OCI_REGISTRY`),
//! started on a free loopback port with its storage in a temporary folder, optionally
//! behind htpasswd basic auth as registries usually are.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The registry binary: `WINK_OCI_REGISTRY`, else the one `cargo xtask test` installed.
pub fn registry_binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("WINK_OCI_REGISTRY").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let installed =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../.wink/toolchains/oci-registry/root/usr/bin/docker-registry");
    if installed.is_file() {
        return Ok(installed);
    }
    bail!("no OCI registry: run the tests with `cargo xtask test`, which installs Debian's docker-registry")
}

/// A running registry, stopped when dropped.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:<port>`: the host part of references, and the `--insecure-registry` value.
    pub host: String,
    _storage: tempfile::TempDir,
}

impl Registry {
    /// Starts a registry that needs no credentials.
    pub fn start() -> anyhow::Result<Self> {
        Self::start_with(None)
    }

    /// Starts a registry that requires `user`/`password` (basic auth, bcrypt htpasswd).
    pub fn start_with_auth(user: &str, password: &str) -> anyhow::Result<Self> {
        Self::start_with(Some((user, password)))
    }

    fn start_with(credentials: Option<(&str, &str)>) -> anyhow::Result<Self> {
        let binary = registry_binary()?;
        let storage = tempfile::tempdir()?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let host = format!("127.0.0.1:{port}");
        let mut config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {host}\n",
            storage.path().join("data").display()
        );
        if let Some((user, password)) = credentials {
            let hash = bcrypt::hash(password, 4).context("hashing the test password")?;
            let htpasswd = storage.path().join("htpasswd");
            std::fs::write(&htpasswd, format!("{user}:{hash}\n"))?;
            config.push_str(&format!("auth:\n  htpasswd:\n    realm: wink-test\n    path: {}\n", htpasswd.display()));
        }
        let config_path = storage.path().join("config.yml");
        std::fs::File::create(&config_path)?.write_all(config.as_bytes())?;
        let child = Command::new(&binary)
            .arg("serve")
            .arg(&config_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut registry = Self { child, host, _storage: storage };
        registry.wait_ready()?;
        Ok(registry)
    }

    /// Waits until `/v2/` answers (200, or 401 behind auth).
    fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!("the registry exited at start ({status})");
            }
            if let Ok(mut stream) = std::net::TcpStream::connect(&self.host) {
                let request = format!("GET /v2/ HTTP/1.0\r\nHost: {}\r\n\r\n", self.host);
                let mut answer = String::new();
                if stream.write_all(request.as_bytes()).is_ok()
                    && std::io::Read::read_to_string(&mut stream, &mut answer).is_ok()
                    && (answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.0 401"))
                {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                bail!("the registry on {} did not answer within 30 s", self.host);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A Docker config folder (for `DOCKER_CONFIG`) holding `user`/`password` for this
    /// registry, as `docker login` writes it.
    pub fn docker_config(&self, user: &str, password: &str) -> anyhow::Result<tempfile::TempDir> {
        use base64::Engine as _;
        let dir = tempfile::tempdir()?;
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let config = serde_json::json!({"auths": {(self.host.clone()): {"auth": auth}}});
        std::fs::write(dir.path().join("config.json"), config.to_string())?;
        Ok(dir)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
