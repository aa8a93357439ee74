//! The `wink` command: runs Kubernetes event handlers as sandboxed WebAssembly components.
//!
//! Run with `cargo run -p wink-host --bin wink -- run --plugins .wink/plugins --source dir:examples/cluster`
//! (after `cargo xtask build-plugins`), or `cargo xtask demo`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tokio_util::sync::CancellationToken;
use wink::app::{self, Bounds, RunOptions, SourceSpec};
use wink::crd::ControllerOptions;
use wink::logging::LogFormat;
use wink::oci::{OciOptions, RefreshOptions};
use wink::plugin::parse_byte_size;
use wink::plugin::{LoadLimits, PluginStart, RecyclePolicy};
use wink::replay::{RecordOptions, ReplayOptions};
use wink::shard::LeaseOptions;

/// Runs Kubernetes event handlers as sandboxed WebAssembly components.
#[derive(Parser)]
#[command(name = "wink", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant, reason = "parsed once at start; boxing would only obscure the options")]
enum Command {
    /// Deliver the events of the watched resources to every plugin of a folder.
    Run(RunArgs),
    /// Publish a plugin folder (plugin.yaml and its component) as an OCI artifact.
    Push {
        /// The plugin's folder.
        dir: PathBuf,
        /// Where to publish it: `registry/repository:tag`.
        reference: String,
        #[command(flatten)]
        oci: OciArgs,
    },
    /// Fetch a plugin published as an OCI artifact into a folder (replacing it).
    Pull {
        /// The plugin: `registry/repository:tag` or `…@sha256:…`.
        reference: String,
        /// The folder to write it into.
        dir: PathBuf,
        #[command(flatten)]
        oci: OciArgs,
    },
    /// Validate a plugin (folder or manifest) as `run` would start it: manifest, component,
    /// world, imports, memory, and `init` with its config.
    Check {
        /// The plugin's folder or its plugin.yaml.
        path: PathBuf,
        #[command(flatten)]
        bounds: BoundsArgs,
    },
    /// Print the `WinkPlugin` CustomResourceDefinition (YAML), for `kubectl apply -f -`.
    Crd,
    /// Record what informers deliver, as JSON Lines, for `wink replay`.
    Record {
        /// Where objects come from: `dir:PATH`, `kube` or `kube:KUBECONFIG`.
        #[arg(long, value_name = "SOURCE", default_value = "dir:examples/cluster")]
        source: SourceSpec,
        /// With a `dir:` source, the namespace of objects that name none.
        #[arg(long, short = 'n', value_name = "NS")]
        namespace: Option<String>,
        /// The resources to record, as `apiVersion/Kind` (comma-separated or repeated).
        #[arg(long, value_name = "apiVersion/Kind", value_delimiter = ',', required = true)]
        resources: Vec<String>,
        /// Stop after this long (e.g. `10m`) [default: at Ctrl-C or SIGTERM].
        #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
        duration: Option<std::time::Duration>,
        /// Stop after this many events.
        #[arg(long, value_name = "N")]
        max_events: Option<u64>,
        /// The recording written.
        out: PathBuf,
    },
    /// Feed a recording to a plugin offline: prints each call's outcome and the writes it
    /// asked for (a dry run); exits 1 if a call failed or trapped, 2 if the recording had
    /// unreadable lines.
    Replay {
        /// The plugin's folder or its plugin.yaml.
        plugin: PathBuf,
        /// The recording (`wink record`, `wink run --record`).
        recording: PathBuf,
        #[command(flatten)]
        bounds: BoundsArgs,
    },
}

/// The options of `wink run`.
#[derive(clap::Args)]
struct RunArgs {
    /// The plugins folder: each subfolder holding a plugin.yaml is a plugin.
    #[arg(long, value_name = "DIR", required_unless_present_any = ["plugin_refs", "winkplugins"])]
    plugins: Option<PathBuf>,
    /// Also take plugins from `WinkPlugin` objects (`wink.dev/v1alpha1`, see `wink crd`):
    /// each is deployed from its `image`, replaced when it changes, removed when it is
    /// deleted, and its status written back.
    #[arg(long)]
    winkplugins: bool,
    #[command(flatten)]
    shard: ShardArgs,
    /// Also record what the plugins' informers deliver into this file (JSON Lines), for
    /// `wink replay`.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Deploy the plugin published at this OCI reference (`registry/repo:tag` or
    /// `…@sha256:…`); repeatable. Tags are resolved again every `--plugin-ref-refresh`.
    #[arg(long = "plugin-ref", value_name = "REF")]
    plugin_refs: Vec<String>,
    /// How often plugin references' tags are resolved again.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = humantime::parse_duration)]
    plugin_ref_refresh: std::time::Duration,
    #[command(flatten)]
    oci: OciArgs,
    /// Where objects come from: `dir:PATH` (a folder of YAML/JSON manifests), `kube` (the
    /// default kubeconfig, or the in-cluster service account) or `kube:KUBECONFIG`.
    #[arg(long, value_name = "SOURCE", default_value = "dir:examples/cluster")]
    source: SourceSpec,
    /// With a `dir:` source, the namespace of namespaced objects that name none, as
    /// `kubectl apply -n`: objects naming another namespace are skipped [default: default].
    #[arg(long, short = 'n', value_name = "NS", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    namespace: Option<String>,
    /// Serve `/metrics` (Prometheus), `/healthz` and `/readyz` on this address, e.g.
    /// `0.0.0.0:9090` (port 0: any free port, logged).
    #[arg(long, value_name = "ADDR")]
    listen: Option<std::net::SocketAddr>,
    /// Serve the embedded cluster (`--source dir:`) over the Kubernetes API on this address,
    /// e.g. `127.0.0.1:8001`, for `kubectl --server http://ADDR`: plain HTTP, no
    /// authentication (keep it on loopback).
    #[arg(long, value_name = "ADDR")]
    serve_api: Option<std::net::SocketAddr>,
    /// The operator's policy: the most each plugin's manifest may claim (`permissions:`
    /// rules and `serviceAccount:`). Without it, manifests are trusted as written.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Watch the API server of this kubeconfig (same as `--source kube:PATH`).
    #[arg(long, value_name = "PATH", conflicts_with = "source")]
    kubeconfig: Option<PathBuf>,
    /// Where compiled components are cached [default: ~/.cache/wink/components].
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    cache_dir: Option<PathBuf>,
    /// Compile components on every start instead of caching them.
    #[arg(long)]
    no_cache: bool,
    /// Load the plugins once instead of watching the folder for changes.
    #[arg(long)]
    no_watch: bool,
    /// When plugins start (instantiate and `init`): `on-first-event` (plugins without work
    /// hold no instance; `init`'s errors surface with the first event, under the failure
    /// policy) or `on-deploy` (a plugin that cannot start is not deployed).
    #[arg(long, value_name = "WHEN", default_value_t = PluginStart::OnFirstEvent)]
    start_plugins: PluginStart,
    /// Drop a plugin's instance after this long without a call, e.g. `5m` (`0`: keep idle
    /// instances); the next call starts a new one and runs `init` again. The least recently
    /// used instance is also dropped when the instance pool is full and another plugin
    /// needs a place.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = humantime::parse_duration)]
    recycle_idle_after: std::time::Duration,
    /// Log every plugin's metrics this often, e.g. `30s` (`0`: only at shutdown).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = humantime::parse_duration)]
    metrics_interval: std::time::Duration,
    #[command(flatten)]
    bounds: BoundsArgs,
    /// How log lines are written to stderr: `text`, or `json` (one object per line).
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

impl RunArgs {
    /// What `wink run` runs, from its flags.
    fn options(self) -> anyhow::Result<RunOptions> {
        let shard = self.shard.options()?;
        let member = shard.as_ref().map(|s| s.identity.clone());
        let bounds = self.bounds.bounds();
        let oci = self.oci.options(bounds.load.max_component_size);
        let refresh = self.plugin_ref_refresh;
        let winkplugins = self.winkplugins.then(|| {
            let pull_dir = oci.cache_dir.join("winkplugins");
            (oci.clone(), ControllerOptions { pull_dir, refresh, member })
        });
        let references = self.plugin_refs;
        let plugin_refs = (!references.is_empty()).then(|| {
            let pull_dir = oci.cache_dir.join("plugins");
            (oci, RefreshOptions { references, interval: refresh, pull_dir })
        });
        let source = match self.kubeconfig {
            Some(path) => SourceSpec::Kube { kubeconfig: Some(path) },
            None => self.source,
        };
        Ok(RunOptions {
            plugins: self.plugins,
            plugin_refs,
            source,
            namespace: self.namespace,
            listen: self.listen,
            cache_dir: cache_dir(self.cache_dir, self.no_cache),
            watch_plugins: !self.no_watch,
            start_plugins: self.start_plugins,
            recycle: RecyclePolicy {
                idle_after: (!self.recycle_idle_after.is_zero()).then_some(self.recycle_idle_after),
            },
            metrics_interval: Some(self.metrics_interval),
            bounds,
            policy: self.policy,
            serve_api: self.serve_api,
            winkplugins,
            shard,
            record: self.record,
        })
    }
}

/// Scale-out: sharing the plugins with other replicas through Leases.
#[derive(clap::Args)]
struct ShardArgs {
    /// Join this shard group: the replicas of a group share the plugins (each runs those
    /// rendezvous hashing assigns it; shardable plugins are split by object). Needs a `kube`
    /// source.
    #[arg(long, value_name = "NAME")]
    shard_group: Option<String>,
    /// This replica's name in the group [default: $POD_NAME, else $HOSTNAME-PID].
    #[arg(long, value_name = "ID", requires = "shard_group")]
    shard_identity: Option<String>,
    /// The namespace of the group's Leases [default: the service account's namespace in a
    /// cluster, else `default`].
    #[arg(long, value_name = "NS", requires = "shard_group")]
    shard_namespace: Option<String>,
    /// How long a replica's Lease lasts without renewal (at least 4 renew periods).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = humantime::parse_duration)]
    lease_duration: std::time::Duration,
    /// How often replicas renew their Lease and look at the group.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = humantime::parse_duration)]
    lease_renew: std::time::Duration,
}

impl ShardArgs {
    fn options(self) -> anyhow::Result<Option<LeaseOptions>> {
        let Some(group) = self.shard_group else { return Ok(None) };
        anyhow::ensure!(
            self.lease_renew > std::time::Duration::ZERO && self.lease_duration >= self.lease_renew * 4,
            "--lease-duration must be at least 4 times --lease-renew (a replica fences itself two renew periods before its Lease can expire)"
        );
        let identity = self.shard_identity.unwrap_or_else(|| {
            std::env::var("POD_NAME").ok().filter(|p| !p.is_empty()).unwrap_or_else(|| {
                let host = std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()).unwrap_or_else(|| "wink".into());
                format!("{host}-{}", std::process::id())
            })
        });
        let namespace = self.shard_namespace.unwrap_or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                .ok()
                .map(|ns| ns.trim().to_owned())
                .filter(|ns| !ns.is_empty())
                .unwrap_or_else(|| "default".into())
        });
        Ok(Some(LeaseOptions { group, identity, namespace, duration: self.lease_duration, renew: self.lease_renew }))
    }
}

/// How OCI registries are reached.
#[derive(clap::Args)]
struct OciArgs {
    /// Speak plain HTTP to this registry (`host:port`, e.g. a local test registry); repeatable.
    #[arg(long = "insecure-registry", value_name = "HOST[:PORT]")]
    insecure_registries: Vec<String>,
    /// Where fetched plugin artifacts are cached by digest [default: ~/.cache/wink/oci].
    #[arg(long, value_name = "DIR")]
    oci_cache_dir: Option<PathBuf>,
}

impl OciArgs {
    fn options(self, max_component_size: u64) -> OciOptions {
        OciOptions {
            cache_dir: self.oci_cache_dir.unwrap_or_else(app::default_oci_dir),
            insecure_registries: self.insecure_registries,
            max_component_size,
        }
    }
}

/// What the host lets its plugins take.
#[derive(clap::Args)]
struct BoundsArgs {
    /// The memory plugins may reserve together: each live instance its limits.memory (each
    /// plugin, with --start-plugins on-deploy), e.g. `8Gi` [default: half of the machine's
    /// or the container's memory].
    #[arg(long, value_name = "SIZE", value_parser = parse_byte_size)]
    plugin_memory_budget: Option<u64>,
    /// The largest component file loaded.
    #[arg(long, value_name = "SIZE", default_value = "128Mi", value_parser = parse_byte_size)]
    max_component_size: u64,
    /// The size the compile cache folder is pruned to (components in use always stay).
    #[arg(long, value_name = "SIZE", default_value = "1Gi", value_parser = parse_byte_size)]
    cache_max_size: u64,
    /// The most plugin instances alive at once: the size of the instance pool reserved at
    /// start. When it is full, a plugin's start takes the least recently used idle
    /// instance's place.
    #[arg(long, value_name = "N", default_value_t = wink::plugin::DEFAULT_MAX_INSTANCES,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_instances: u32,
}

impl BoundsArgs {
    fn bounds(&self) -> Bounds {
        Bounds {
            plugin_memory_budget: self.plugin_memory_budget,
            load: LoadLimits { max_component_size: self.max_component_size },
            cache_max_size: self.cache_max_size,
            max_instances: self.max_instances,
        }
    }
}

/// A `--source dir:PATH` whose folder is missing, said in terms of the flag: its default,
/// `dir:examples/cluster`, is the demo's folder in a checkout of wink, relative to the
/// current folder, which a `wink` run anywhere else does not have.
fn source_folder_exists(source: &SourceSpec) -> anyhow::Result<()> {
    match source {
        SourceSpec::Dir(path) if !path.is_dir() => {
            let here = std::env::current_dir().map(|d| format!(" in {}", d.display())).unwrap_or_default();
            anyhow::bail!(
                "--source dir:{}: there is no such folder{here}; the default, dir:examples/cluster, is the demo's \
                 folder in a checkout of wink. Pass --source dir:FOLDER (a folder of YAML or JSON manifests) or \
                 --source kube (the cluster of your kubeconfig)",
                path.display()
            )
        }
        _ => Ok(()),
    }
}

fn cache_dir(cache_dir: Option<PathBuf>, no_cache: bool) -> Option<PathBuf> {
    if no_cache { None } else { cache_dir.or_else(app::default_cache_dir) }
}

fn main() -> ExitCode {
    match wink_main(Cli::parse()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", report(&err));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, each cause once: wink's errors already quote their
/// cause in their message, so a cause is printed only when it adds something.
fn report(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}

fn wink_main(cli: Cli) -> anyhow::Result<ExitCode> {
    let log_format = match &cli.command {
        Command::Run(args) => args.log_format,
        Command::Check { .. }
        | Command::Push { .. }
        | Command::Pull { .. }
        | Command::Crd
        | Command::Record { .. }
        | Command::Replay { .. } => LogFormat::Text,
    };
    wink::logging::init(log_format).context("installing the log subscriber")?;
    let runtime = wink::plugin::runtime_builder().build().context("starting the tokio runtime")?;
    match cli.command {
        Command::Run(args) => {
            let options = args.options()?;
            source_folder_exists(&options.source)?;
            let shutdown = CancellationToken::new();
            runtime.spawn(wait_for_signal(shutdown.clone()));
            let summaries = runtime.block_on(app::run(options, shutdown))?;
            for line in summaries {
                println!("{line}");
            }
        }
        Command::Push { dir, reference, oci } => {
            let digest = runtime.block_on(app::push(&dir, &reference, oci.options(u64::MAX)))?;
            println!("pushed {} as {reference}@{digest}", dir.display());
        }
        Command::Pull { reference, dir, oci } => {
            let limit = LoadLimits::default().max_component_size;
            let (name, digest) = runtime.block_on(app::pull(&reference, &dir, oci.options(limit)))?;
            println!("pulled plugin {name} ({digest}) into {}", dir.display());
        }
        Command::Check { path, bounds } => {
            let report = runtime
                .block_on(async { app::check(&path, app::default_cache_dir(), &bounds.bounds()) })
                .with_context(|| format!("{} is not a valid wink plugin", path.display()))?;
            for line in report.lines {
                println!("{line}");
            }
            for warning in report.warnings {
                eprintln!("warning: {warning}");
            }
        }
        Command::Crd => print!("{}", wink::crd::crd_yaml()),
        Command::Record { source, namespace, resources, duration, max_events, out } => {
            source_folder_exists(&source)?;
            let options = RecordOptions { source, namespace, resources, out: out.clone(), duration, max_events };
            let shutdown = CancellationToken::new();
            runtime.spawn(wait_for_signal(shutdown.clone()));
            let written = runtime.block_on(wink::replay::record(options, shutdown))?;
            eprintln!("recorded {written} events into {}", out.display());
        }
        Command::Replay { plugin, recording, bounds } => {
            let options =
                ReplayOptions { plugin, recording, cache_dir: app::default_cache_dir(), load: bounds.bounds().load };
            let report = runtime.block_on(wink::replay::replay(&options))?;
            for line in &report.lines {
                println!("{line}");
            }
            println!("{} calls, {} failed, {} unreadable lines", report.calls, report.failed, report.malformed);
            return Ok(ExitCode::from(report.exit_code()));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Cancels `shutdown` on Ctrl-C or SIGTERM.
async fn wait_for_signal(shutdown: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        () = terminate => {}
    }
    shutdown.cancel();
}
