//! A real Kubernetes control plane for the tests, as controller-runtime's envtest runs one:
//! `etcd` and `kube-apiserver` (built from their Go modules by `cargo xtask test`, see
//! `xtask/src/control_plane.rs`), no controllers, no nodes.
//!
//! - Both listen on free ports of 127.0.0.1 only, and keep their data, certificates and logs
//!   in a throwaway folder, removed when the control plane stops.
//! - kube-apiserver serves TLS with a certificate of a fresh CA, authenticates client
//!   certificates of that CA and a static token, authorizes with `Node,RBAC`, runs its
//!   default admission plugins, and signs service-account tokens with a fresh key.
//! - Tests get an admin kubeconfig ([`ControlPlane::kubeconfig`]), kube-rs clients built from
//!   it ([`ControlPlane::admin_client`]), namespaces of their own
//!   ([`ControlPlane::namespace`]), and service-account identities that real RBAC judges
//!   ([`ControlPlane::service_account`]).
//!
//! All tests of a test binary share one control plane ([`ControlPlane::shared`], started by
//! the first test that asks), each in its own namespaces; it stops when the binary exits. A
//! test that restarts or breaks its control plane starts a private one
//! ([`ControlPlane::start`]), stopped when dropped, also when the test panics.
//!
//! Nothing runs a kube-controller-manager: namespaces are not finalized once deleted, and no
//! controller creates the `default` ServiceAccount of a namespace ([`ControlPlane::namespace`]
//! creates it, since the ServiceAccount admission plugin refuses Pods without it).

mod pki;
mod process;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail, ensure};
use base64::Engine as _;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};

use self::pki::Pki;
use self::process::{Server, free_port};

/// How long etcd and kube-apiserver may take to become ready: far longer than on an idle
/// machine (a few seconds), for a loaded CI runner.
pub const START_TIMEOUT: Duration = Duration::from_secs(120);

/// How often readiness is polled.
const POLL: Duration = Duration::from_millis(100);

/// The service-account tokens' lifetime (the API server's minimum is 10 minutes).
const TOKEN_SECONDS: i64 = 3600;

/// The binaries a control plane runs.
#[derive(Clone, Debug)]
pub struct Binaries {
    /// `kube-apiserver`.
    pub kube_apiserver: PathBuf,
    /// `etcd`.
    pub etcd: PathBuf,
}

/// The binaries: `WINK_KUBE_APISERVER` and `WINK_ETCD` (set by `cargo xtask test`), else the
/// ones it built into `.wink/control-plane/<kubernetes>-<etcd>/` for the releases that
/// `tests/control-plane/go.mod` pins; or why there are none.
pub fn binaries() -> Result<Binaries> {
    let built = built_dir();
    let find = |env: &str, name: &str| -> Result<PathBuf> {
        if let Some(path) = std::env::var_os(env).filter(|p| !p.is_empty()) {
            return Ok(PathBuf::from(path));
        }
        let dir = built.as_ref().map_err(|e| anyhow!("{e:#}"))?;
        let path = dir.join(name);
        if path.is_file() {
            return Ok(path);
        }
        bail!(
            "no {name} (neither {env} nor {}): run the tests with `cargo xtask test`, which builds \
             kube-apiserver and etcd from their Go modules (it needs Go 1.26 or newer)",
            path.display()
        )
    };
    Ok(Binaries { kube_apiserver: find("WINK_KUBE_APISERVER", "kube-apiserver")?, etcd: find("WINK_ETCD", "etcd")? })
}

/// The releases `tests/control-plane/go.mod` pins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Releases {
    /// `k8s.io/kubernetes`'s version, e.g. `v1.37.2`: what kube-apiserver reports.
    pub kubernetes: String,
    /// `go.etcd.io/etcd/server/v3`'s version, e.g. `v3.7.0`.
    pub etcd: String,
}

/// The releases `tests/control-plane/go.mod` pins (the one place they are written).
pub fn releases() -> Result<Releases> {
    let go_mod = Path::new(env!("CARGO_MANIFEST_DIR")).join("control-plane/go.mod");
    let text = std::fs::read_to_string(&go_mod).with_context(|| format!("reading {}", go_mod.display()))?;
    let version = |module: &str| {
        text.lines()
            .find_map(|line| {
                let mut words = line.trim().trim_start_matches("require ").split_whitespace();
                (words.next()? == module).then_some(())?;
                words.next().filter(|v| v.starts_with('v')).map(str::to_owned)
            })
            .with_context(|| format!("{} requires no version of {module}", go_mod.display()))
    };
    Ok(Releases { kubernetes: version("k8s.io/kubernetes")?, etcd: version("go.etcd.io/etcd/server/v3")? })
}

/// Where `cargo xtask test` puts the binaries of the releases `go.mod` pins.
pub fn built_dir() -> Result<PathBuf> {
    let releases = releases()?;
    Ok(crate::repo_root().join(".wink/control-plane").join(format!("{}-{}", releases.kubernetes, releases.etcd)))
}

/// A running etcd and kube-apiserver. Dropping it stops both and removes its folder.
pub struct ControlPlane {
    url: String,
    etcd_url: String,
    kubeconfig: PathBuf,
    ca: String,
    admin_token: String,
    binary: PathBuf,
    apiserver_args: Vec<String>,
    // Fields drop in order: the API server stops before etcd, and the folder goes last.
    apiserver: Server,
    etcd: Server,
    dir: tempfile::TempDir,
}

impl ControlPlane {
    /// The control plane shared by every test of this test binary, started by the first
    /// caller; it stops when the binary exits. If it cannot start, every caller gets why.
    pub async fn shared() -> Result<&'static ControlPlane> {
        static SHARED: tokio::sync::OnceCell<Result<ControlPlane, String>> = tokio::sync::OnceCell::const_new();
        let started = SHARED
            .get_or_init(|| async {
                let control_plane = ControlPlane::start().await.map_err(|e| format!("{e:#}"))?;
                stop_at_exit(|| {
                    if let Some(Ok(control_plane)) = SHARED.get() {
                        control_plane.stop();
                    }
                });
                Ok(control_plane)
            })
            .await;
        started.as_ref().map_err(|e| anyhow!("the shared control plane did not start: {e}"))
    }

    /// Starts a control plane of the caller's own, stopped when dropped.
    pub async fn start() -> Result<Self> {
        Self::start_with(&[]).await
    }

    /// Starts a control plane of the caller's own whose kube-apiserver also gets
    /// `extra_apiserver_args` (e.g. `--watch-cache=false`, so that watches read etcd and an
    /// etcd compaction answers them `410 Gone`), stopped when dropped.
    pub async fn start_with(extra_apiserver_args: &[&str]) -> Result<Self> {
        let binaries = binaries()?;
        let dir = tempfile::Builder::new().prefix("wink-control-plane-").tempdir().context("creating its folder")?;
        let path = dir.path();
        let pki = Pki::generate().context("generating its certificates")?;
        let admin_token = format!("{:032x}", rand::random::<u128>());
        let files = [
            ("ca.crt", pki.ca.as_str()),
            ("apiserver.crt", &pki.serving.cert),
            ("apiserver.key", &pki.serving.key),
            ("sa.key", &pki.service_account_key),
            ("sa.pub", &pki.service_account_public_key),
            // token,user,uid,"groups"
            ("tokens.csv", &format!("{admin_token},wink-test-admin-token,wink-test-admin-token,\"system:masters\"\n")),
        ];
        for (name, text) in files {
            std::fs::write(path.join(name), text).with_context(|| format!("writing {name}"))?;
        }

        let etcd_url = format!("http://127.0.0.1:{}", free_port()?);
        let peer_url = format!("http://127.0.0.1:{}", free_port()?);
        let etcd_args = [
            "--name=wink-test".to_owned(),
            format!("--data-dir={}", path.join("etcd").display()),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=wink-test={peer_url}"),
            // A test's data need not survive a power cut: as envtest, skip fsync.
            "--unsafe-no-fsync=true".to_owned(),
            "--log-level=warn".to_owned(),
        ];
        let etcd = Server::start(&binaries.etcd, &etcd_args, path.join("etcd.log"))?;
        wait_for_etcd(&etcd, &etcd_url).await?;

        let port = free_port()?;
        let url = format!("https://127.0.0.1:{port}");
        let file = |name: &str| path.join(name).display().to_string();
        let apiserver_args = vec![
            format!("--etcd-servers={etcd_url}"),
            "--bind-address=127.0.0.1".to_owned(),
            "--advertise-address=127.0.0.1".to_owned(),
            // Endpoints may not name a loopback address, and nothing in a cluster without
            // nodes reaches the API server through the `kubernetes` Service.
            "--endpoint-reconciler-type=none".to_owned(),
            format!("--secure-port={port}"),
            format!("--cert-dir={}", file("certs")),
            format!("--tls-cert-file={}", file("apiserver.crt")),
            format!("--tls-private-key-file={}", file("apiserver.key")),
            format!("--client-ca-file={}", file("ca.crt")),
            format!("--token-auth-file={}", file("tokens.csv")),
            "--authorization-mode=Node,RBAC".to_owned(),
            format!("--service-account-issuer={url}"),
            format!("--service-account-key-file={}", file("sa.pub")),
            format!("--service-account-signing-key-file={}", file("sa.key")),
            "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
            "--allow-privileged=true".to_owned(),
            "--profiling=false".to_owned(),
        ]
        .into_iter()
        .chain(extra_apiserver_args.iter().map(|arg| (*arg).to_owned()))
        .collect::<Vec<_>>();
        let apiserver = Server::start(&binaries.kube_apiserver, &apiserver_args, path.join("kube-apiserver.log"))?;
        let kubeconfig = path.join("admin.kubeconfig");
        let admin = serde_json::json!({
            "client-certificate-data": base64(&pki.admin.cert),
            "client-key-data": base64(&pki.admin.key),
        });
        std::fs::write(&kubeconfig, kubeconfig_yaml(&url, &pki.ca, pki::ADMIN_USER, admin, None)?)
            .context("writing the admin kubeconfig")?;
        let control_plane = Self {
            url,
            etcd_url,
            kubeconfig,
            ca: pki.ca,
            admin_token,
            binary: binaries.kube_apiserver,
            apiserver_args,
            apiserver,
            etcd,
            dir,
        };
        control_plane.wait_until_ready().await?;
        Ok(control_plane)
    }

    /// The API server's URL, `https://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// etcd's client URL, `http://127.0.0.1:<port>` (its v3 JSON gateway answers there too).
    pub fn etcd_url(&self) -> &str {
        &self.etcd_url
    }

    /// A kubeconfig file for an admin (client certificate, group `system:masters`).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The CA certificate (PEM) that signed the API server's serving certificate.
    pub fn ca_pem(&self) -> &str {
        &self.ca
    }

    /// A bearer token of another admin (static token file, group `system:masters`).
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// A kube-rs configuration of the admin, from [`ControlPlane::kubeconfig`].
    pub async fn admin_config(&self) -> Result<Config> {
        config_from(&self.kubeconfig).await
    }

    /// A kube-rs client of the admin.
    pub async fn admin_client(&self) -> Result<Client> {
        Ok(Client::try_from(self.admin_config().await?)?)
    }

    /// The real `kubectl` (see [`crate::kubectl::kubectl`]) speaking to this control plane
    /// as the admin.
    pub fn kubectl(&self) -> Result<Command> {
        let mut command = Command::new(crate::kubectl::kubectl()?);
        command.arg("--kubeconfig").arg(&self.kubeconfig);
        Ok(command)
    }

    /// Creates a namespace named `<prefix>-<random>` and its `default` ServiceAccount;
    /// returns its name.
    pub async fn namespace(&self, prefix: &str) -> Result<String> {
        let client = self.admin_client().await?;
        let name = format!("{prefix}-{:08x}", rand::random::<u32>());
        let namespace = Namespace { metadata: meta(&name, None), ..Namespace::default() };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .with_context(|| format!("creating namespace {name}"))?;
        let default = ServiceAccount { metadata: meta("default", Some(&name)), ..ServiceAccount::default() };
        Api::<ServiceAccount>::namespaced(client, &name)
            .create(&PostParams::default(), &default)
            .await
            .with_context(|| format!("creating the default ServiceAccount of {name}"))?;
        Ok(name)
    }

    /// The identity of ServiceAccount `namespace/name`, created unless it exists, with a
    /// token from the TokenRequest API (as a Pod's projected token): what it may do is what
    /// RBAC grants it, nothing yet.
    pub async fn service_account(&self, namespace: &str, name: &str) -> Result<Identity> {
        let accounts = Api::<ServiceAccount>::namespaced(self.admin_client().await?, namespace);
        let account = ServiceAccount { metadata: meta(name, Some(namespace)), ..ServiceAccount::default() };
        match accounts.create(&PostParams::default(), &account).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(e) => return Err(e).with_context(|| format!("creating ServiceAccount {namespace}/{name}")),
        }
        let request = TokenRequest {
            spec: TokenRequestSpec { expiration_seconds: Some(TOKEN_SECONDS), ..TokenRequestSpec::default() },
            ..TokenRequest::default()
        };
        let answer = accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .with_context(|| format!("requesting a token of ServiceAccount {namespace}/{name}"))?;
        let token = answer.status.context("the TokenRequest came back without a status")?.token;
        let username = format!("system:serviceaccount:{namespace}:{name}");
        let kubeconfig = self.dir.path().join("identities").join(format!("{namespace}.{name}.kubeconfig"));
        std::fs::create_dir_all(kubeconfig.parent().expect("a folder")).context("creating identities/")?;
        let user = serde_json::json!({ "token": token });
        let yaml = kubeconfig_yaml(&self.url, &self.ca, &username, user, Some(namespace))?;
        std::fs::write(&kubeconfig, yaml).with_context(|| format!("writing {}", kubeconfig.display()))?;
        Ok(Identity { namespace: namespace.to_owned(), name: name.to_owned(), username, token, kubeconfig })
    }

    /// Stops kube-apiserver and starts it again on the same port and etcd (a private control
    /// plane's; the shared one is never restarted). Returns once it is ready.
    pub async fn restart_apiserver(&mut self) -> Result<()> {
        self.apiserver.kill();
        self.apiserver = Server::start(&self.binary, &self.apiserver_args, self.dir.path().join("kube-apiserver.log"))?;
        self.wait_until_ready().await
    }

    /// Waits until kube-apiserver answers `/readyz` with `ok` (its post-start hooks done:
    /// RBAC's bootstrap roles, the default namespaces), or fails with the end of its log.
    async fn wait_until_ready(&self) -> Result<()> {
        let client = self.admin_client().await?;
        let deadline = Instant::now() + START_TIMEOUT;
        let mut last;
        loop {
            if let Some(status) = self.apiserver.exited() {
                bail!("kube-apiserver exited at start ({status}):\n{}", self.apiserver.log_tail(40));
            }
            let readyz = http::Request::get("/readyz").body(Vec::new()).expect("a valid request");
            match client.request_text(readyz).await {
                Ok(text) if text.trim() == "ok" => return Ok(()),
                Ok(text) => last = text,
                Err(e) => last = e.to_string(),
            }
            if Instant::now() > deadline {
                bail!(
                    "kube-apiserver on {} was not ready after {START_TIMEOUT:?} (last answer: {last}):\n{}",
                    self.url,
                    self.apiserver.log_tail(40)
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Compacts etcd's history up to its current revision (as kube-apiserver does every five
    /// minutes), through etcd's v3 JSON gateway: a watch or list asked for at an older
    /// resourceVersion that reaches etcd is answered `410 Gone` from then on. Returns the
    /// revision compacted to.
    pub async fn compact_etcd(&self) -> Result<u64> {
        let address = self.etcd_url.trim_start_matches("http://");
        // Any key: the answer's header carries the store's current revision.
        let range =
            http_post(address, "/v3/kv/range", r#"{"key":"AA=="}"#).await.context("asking etcd for its revision")?;
        let answer: serde_json::Value = serde_json::from_str(http_body(&range)?)
            .with_context(|| format!("etcd's range answer is not JSON:\n{range}"))?;
        let revision: u64 = answer["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .with_context(|| format!("etcd's range answer has no revision:\n{range}"))?;
        let body = format!(r#"{{"revision":"{revision}","physical":true}}"#);
        let compacted = http_post(address, "/v3/kv/compaction", &body).await.context("compacting etcd")?;
        ensure!(
            compacted.starts_with("HTTP/1.1 200") || compacted.starts_with("HTTP/1.0 200"),
            "etcd refused to compact to {revision}:\n{compacted}"
        );
        Ok(revision)
    }

    /// Kills both processes and removes the folder (the shared control plane, at exit).
    fn stop(&self) {
        self.apiserver.kill();
        self.etcd.kill();
        let _ = std::fs::remove_dir_all(self.dir.path());
    }
}

/// A ServiceAccount's identity (see [`ControlPlane::service_account`]).
#[derive(Clone, Debug)]
pub struct Identity {
    /// The ServiceAccount's namespace.
    pub namespace: String,
    /// The ServiceAccount's name.
    pub name: String,
    /// The user RBAC sees: `system:serviceaccount:<namespace>:<name>`.
    pub username: String,
    /// Its bearer token.
    pub token: String,
    /// A kubeconfig file with that token, its namespace as the default.
    pub kubeconfig: PathBuf,
}

impl Identity {
    /// A kube-rs configuration from [`Identity::kubeconfig`].
    pub async fn config(&self) -> Result<Config> {
        config_from(&self.kubeconfig).await
    }

    /// A kube-rs client acting as this ServiceAccount.
    pub async fn client(&self) -> Result<Client> {
        Ok(Client::try_from(self.config().await?)?)
    }
}

/// Polls etcd's `/health` until it says `"health":"true"`, or fails with its log.
async fn wait_for_etcd(etcd: &Server, url: &str) -> Result<()> {
    let address = url.trim_start_matches("http://");
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(status) = etcd.exited() {
            bail!("etcd exited at start ({status}):\n{}", etcd.log_tail(40));
        }
        if http_get(address, "/health").await.is_some_and(|body| body.contains(r#""health":"true""#)) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("etcd on {url} was not healthy after {START_TIMEOUT:?}:\n{}", etcd.log_tail(40));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A plain HTTP/1.0 GET; the whole answer, or `None` if there is none.
async fn http_get(address: &str, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(address).await?;
        stream.write_all(format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").as_bytes()).await?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await?;
        std::io::Result::Ok(answer)
    };
    tokio::time::timeout(Duration::from_secs(5), exchange).await.ok()?.ok()
}

/// A plain HTTP/1.0 POST of a JSON `body`; the whole answer.
async fn http_post(address: &str, path: &str, body: &str) -> Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(address).await?;
        let head = format!(
            "POST {path} HTTP/1.0\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await?;
        std::io::Result::Ok(answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .with_context(|| format!("POST {path} to etcd timed out"))??;
    Ok(answer)
}

/// The body of an HTTP answer.
fn http_body(answer: &str) -> Result<&str> {
    answer.split_once("\r\n\r\n").map(|(_, body)| body).with_context(|| format!("not an HTTP answer:\n{answer}"))
}

/// A kube-rs configuration from a kubeconfig file, as a user's program reads one.
async fn config_from(kubeconfig: &Path) -> Result<Config> {
    let file = Kubeconfig::read_from(kubeconfig).with_context(|| format!("reading {}", kubeconfig.display()))?;
    Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("loading {}", kubeconfig.display()))
}

/// A kubeconfig with one cluster (`url`, trusting `ca`), one user and their context.
fn kubeconfig_yaml(
    url: &str,
    ca: &str,
    user_name: &str,
    user: serde_json::Value,
    namespace: Option<&str>,
) -> Result<String> {
    let mut context = serde_json::json!({ "cluster": "wink-test", "user": user_name });
    if let Some(namespace) = namespace {
        context["namespace"] = namespace.into();
    }
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{ "name": "wink-test", "cluster": { "server": url, "certificate-authority-data": base64(ca) } }],
        "users": [{ "name": user_name, "user": user }],
        "contexts": [{ "name": "wink-test", "context": context }],
        "current-context": "wink-test",
    });
    Ok(serde_norway::to_string(&config)?)
}

fn base64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta { name: Some(name.to_owned()), namespace: namespace.map(str::to_owned), ..ObjectMeta::default() }
}

/// Runs `stop` when the process exits normally (the test harness's `exit`), where no
/// destructor of a `static` runs. A killed test binary's children still die of
/// `PR_SET_PDEATHSIG` (see `process`); only their folder stays behind then.
fn stop_at_exit(stop: fn()) {
    static STOP: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();
    extern "C" fn at_exit() {
        if let Some(stop) = STOP.get() {
            stop();
        }
    }
    if STOP.set(stop).is_ok() {
        register_at_exit(at_exit);
    }
}

#[allow(unsafe_code, reason = "atexit(3) is the only hook that runs when the test harness exits")]
fn register_at_exit(hook: extern "C" fn()) {
    // SAFETY: `hook` is a plain function that neither unwinds nor calls `exit`.
    let registered = unsafe { libc::atexit(hook) };
    if registered != 0 {
        eprintln!("control plane: atexit failed; its folder will stay behind");
    }
}
