//! Plugins as OCI artifacts, against a real registry (the CNCF distribution registry on
//! loopback, see `wink_tests::oci_registry`): `wink push` and `wink pull` round trip a plugin
//! byte for byte, credentials come from the Docker config, and `wink run --plugin-ref`
//! deploys from a tag and follows it to a new digest.

use std::path::Path;
use std::process::{Command, Output};

use wink_tests::binary::wink_binary;
use wink_tests::oci_registry::Registry;
use wink_tests::process::{Running, field};
use wink_tests::{install_plugin, write_atomic};

/// `wink <subcommand>` speaking plain HTTP to the test registry, caching in `oci_cache`,
/// with no Docker credentials unless the test sets `DOCKER_CONFIG`.
fn wink(subcommand: &str, oci_cache: &Path, registry: &Registry) -> Command {
    let mut command = Command::new(wink_binary());
    command.env("RUST_LOG", "info").env("DOCKER_CONFIG", oci_cache.join("no-docker-config"));
    command.arg(subcommand).args(["--insecure-registry", &registry.host, "--oci-cache-dir"]).arg(oci_cache);
    command
}

fn run(command: &mut Command) -> Output {
    command.output().expect("running wink")
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "wink failed:\nstdout: {}\nstderr: {}", text(&out.stdout), text(&out.stderr));
    text(&out.stdout)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `wink push DIR REF` then `wink pull REF DIR`: the same plugin.yaml and component, byte
/// for byte; the pull names the manifest digest, which pins the same artifact.
#[test]
fn push_then_pull_round_trips_a_plugin() {
    let registry = Registry::start().unwrap();
    let work = tempfile::tempdir().unwrap();
    let src = install_plugin("event-recorder", work.path(), "shipped", None);
    let reference = format!("{}/team/shipped:v1", registry.host);
    let cache = work.path().join("cache");

    let pushed = ok(&run(wink("push", &cache, &registry).arg(&src).arg(&reference)));
    let digest = pushed.split('@').nth(1).expect("push prints the digest").trim().to_owned();
    assert!(digest.starts_with("sha256:") && digest.len() == 71, "{pushed}");

    let out = work.path().join("pulled");
    let pulled = ok(&run(wink("pull", &cache, &registry).args([&reference]).arg(&out)));
    assert!(pulled.contains("plugin shipped") && pulled.contains(&digest), "{pulled}");
    for file in ["plugin.yaml", "event-recorder.wasm"] {
        assert_eq!(std::fs::read(src.join(file)).unwrap(), std::fs::read(out.join(file)).unwrap(), "{file}");
    }
    // By digest, into a fresh cache: the same artifact.
    let pinned = format!("{}/team/shipped@{digest}", registry.host);
    let fresh = work.path().join("fresh-cache");
    let again = work.path().join("again");
    ok(&run(wink("pull", &fresh, &registry).args([&pinned]).arg(&again)));
    assert_eq!(std::fs::read(out.join("plugin.yaml")).unwrap(), std::fs::read(again.join("plugin.yaml")).unwrap());
    // The pulled folder is a valid plugin.
    ok(&run(Command::new(wink_binary()).arg("check").arg(&again)));
}

/// A registry behind basic auth: refused without credentials, with a clear error; accepted
/// with the credentials `docker login` would have written to `$DOCKER_CONFIG/config.json`.
/// A registry without TLS, pushed to without `--insecure-registry`: the error says which flag
/// speaks plain HTTP to it, rather than only TLS's `InvalidContentType`.
#[test]
fn a_plain_http_registry_without_the_flag_gets_a_hint() {
    let registry = Registry::start().unwrap();
    let work = tempfile::tempdir().unwrap();
    let src = install_plugin("event-recorder", work.path(), "shipped", None);
    let reference = format!("{}/team/shipped:v1", registry.host);
    let mut push = Command::new(wink_binary());
    push.env("DOCKER_CONFIG", work.path().join("no-docker-config")).arg("push").arg(&src).arg(&reference);
    push.arg("--oci-cache-dir").arg(work.path().join("cache"));
    let out = run(&mut push);
    assert!(!out.status.success(), "TLS to a plain-HTTP registry cannot succeed");
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("pass --insecure-registry {}", registry.host)), "{stderr}");
}

#[test]
fn credentials_come_from_the_docker_config() {
    let registry = Registry::start_with_auth("tenant", "s3cret").unwrap();
    let work = tempfile::tempdir().unwrap();
    let src = install_plugin("event-recorder", work.path(), "private", None);
    let reference = format!("{}/tenant/private:v1", registry.host);
    let cache = work.path().join("cache");

    let refused = run(wink("push", &cache, &registry).arg(&src).arg(&reference));
    assert!(!refused.status.success(), "an anonymous push must be refused");
    let stderr = text(&refused.stderr);
    assert!(stderr.contains(&reference) && stderr.contains("error:"), "{stderr}");

    let docker_config = registry.docker_config("tenant", "s3cret").unwrap();
    let with_login = |command: &mut Command| -> Output { run(command.env("DOCKER_CONFIG", docker_config.path())) };
    ok(&with_login(wink("push", &cache, &registry).arg(&src).arg(&reference)));
    let out = work.path().join("pulled");
    ok(&with_login(wink("pull", &cache, &registry).args([&reference]).arg(&out)));
    assert!(out.join("event-recorder.wasm").is_file());
}

/// `wink run --plugin-ref REF`: the plugin is deployed from the registry and receives the
/// cluster's objects; pushing a new version to the same tag replaces it at the next refresh.
#[tokio::test]
async fn run_deploys_from_a_reference_and_follows_its_tag() {
    let registry = Registry::start().unwrap();
    let work = tempfile::tempdir().unwrap();
    let cluster = work.path().join("cluster");
    std::fs::create_dir(&cluster).unwrap();
    write_atomic(
        &cluster.join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  containers: []\n",
    );
    let v1 = install_plugin("event-recorder", &work.path().join("v1"), "from-registry", None);
    let reference = format!("{}/team/from-registry:stable", registry.host);
    let cache = work.path().join("cache");
    ok(&run(wink("push", &cache, &registry).arg(&v1).arg(&reference)));

    let mut child = Running::spawn(
        wink("run", &cache, &registry)
            .args(["--no-cache", "--plugin-ref", &reference, "--plugin-ref-refresh", "1s"])
            .arg("--source")
            .arg(format!("dir:{}", cluster.display()))
            .env_remove("NO_COLOR"),
    );
    let stderr = child.stderr.clone();
    let deployed = |line: &str| (line.contains("plugin deployed from its reference")).then(|| line.to_owned());
    let first = stderr.wait_for("the plugin deployed from the registry", deployed).await;
    let first_digest = field(&first, "digest").unwrap().to_owned();
    stderr
        .wait_for("the initial add", |l| {
            (l.contains("from-registry") && field(l, "event") == Some("add") && field(l, "key") == Some("shop/web"))
                .then_some(())
        })
        .await;

    // A new version under the same tag (its config differs, so its digest does).
    let v2 = install_plugin("event-recorder", &work.path().join("v2"), "from-registry", None);
    let manifest = std::fs::read_to_string(v2.join("plugin.yaml")).unwrap();
    write_atomic(&v2.join("plugin.yaml"), &format!("{manifest}# v2\n"));
    ok(&run(wink("push", &cache, &registry).arg(&v2).arg(&reference)));
    let second = stderr
        .wait_for("the new digest deployed", |l| {
            deployed(l).filter(|l| field(l, "digest").is_some_and(|d| d != first_digest))
        })
        .await;
    assert!(second.contains("plugin=from-registry"), "{second}");

    child.sigterm();
    let exit = child.wait_exit().await;
    assert!(exit.success(), "wink exited with {exit}; stderr:\n{}", stderr.snapshot().join("\n"));
}
