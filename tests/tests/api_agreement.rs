//! The embedded cluster measured against a real kube-apiserver (see
//! `wink_tests::agreement`): the corpus sent to both, every difference explained by a stated
//! reason, and `docs/api-agreement.md` up to date.
//!
//! Regenerate the report after a change that moves the agreement:
//! `WINK_WRITE_AGREEMENT=1 cargo xtask test -- --test api_agreement`; with
//! `WINK_AGREEMENT_DUMP=<file>` every step's two normalised answers are written to `<file>`,
//! one JSON line each.

use anyhow::{Result, ensure};
use serde_json::json;
use wink_tests::agreement::compare::{differences, load_reasons};
use wink_tests::agreement::corpus::load;
use wink_tests::agreement::report::{Outcome, agreement, markdown};
use wink_tests::agreement::run::{Server, exchange, fixtures};
use wink_tests::binary::serve_api;
use wink_tests::control_plane::{ControlPlane, releases};
use wink_tests::process::Running;
use wink_tests::repo_root;

/// `wink run --serve-api` over an empty folder, and a client of it.
async fn embedded_cluster(work: &std::path::Path) -> Result<(Running, kube::Client)> {
    let (cluster, plugins) = (work.join("cluster"), work.join("plugins"));
    std::fs::create_dir_all(&cluster)?;
    std::fs::create_dir_all(&plugins)?;
    let (child, server) = serve_api(&cluster, &plugins).await;
    let config = kube::Config::new(server.parse()?);
    Ok((child, kube::Client::try_from(config)?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_and_the_embedded_cluster_answer_the_corpus_alike_or_say_why() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    let work = tempfile::tempdir()?;
    let (_wink, embedded_client) = embedded_cluster(work.path()).await?;
    let mut real = Server::new(cp.admin_client().await?);
    let mut embedded = Server::new(embedded_client);

    let dir = repo_root().join("tests/api-agreement");
    let mut exchanges = exchange(&mut real, &mut embedded, load(&dir.join("corpus.yaml"))?).await?;
    exchanges.extend(fixtures(&mut real, &mut embedded, &repo_root().join("tests/fixtures/manifests")).await?);
    let reasons = load_reasons(&dir.join("reasons.yaml"))?;
    if let Some(dump) = std::env::var_os("WINK_AGREEMENT_DUMP") {
        let lines: Vec<String> = exchanges
            .iter()
            .map(|x| json!({"step": x.step.name, "real": x.real.body, "embedded": x.embedded.body}).to_string())
            .collect();
        std::fs::write(dump, lines.join("\n"))?;
    }

    let mut used = vec![false; reasons.len()];
    let outcomes: Vec<Outcome<'_>> = exchanges
        .iter()
        .map(|x| {
            let items = differences(&x.step, &x.real, &x.embedded)
                .into_iter()
                .map(|item| {
                    let found = reasons.iter().position(|r| r.explains(&x.step.name, &item));
                    if let Some(i) = found {
                        used[i] = true;
                    }
                    (item, found.map(|i| &reasons[i]))
                })
                .collect();
            Outcome { step: &x.step, items }
        })
        .collect();

    let release = releases()?;
    let report = markdown(&outcomes, &format!("kube-apiserver {}", release.kubernetes));
    let target = repo_root().join("docs/api-agreement.md");
    if std::env::var_os("WINK_WRITE_AGREEMENT").is_some() {
        std::fs::write(&target, &report)?;
    }
    eprintln!("agreement: {}", agreement(&outcomes));

    let unexplained: Vec<String> = outcomes
        .iter()
        .flat_map(|o| o.items.iter().filter(|(_, r)| r.is_none()).map(move |(i, _)| format!("{}: {i}", o.step.name)))
        .collect();
    let stale: Vec<&str> = reasons.iter().zip(&used).filter(|(_, used)| !**used).map(|(r, _)| r.why.as_str()).collect();
    ensure!(unexplained.is_empty(), "differences without a stated reason:\n{}", unexplained.join("\n"));
    ensure!(stale.is_empty(), "reasons that explain no difference any more:\n{}", stale.join("\n"));
    let committed = std::fs::read_to_string(&target).unwrap_or_default();
    ensure!(
        committed == report,
        "docs/api-agreement.md is out of date: regenerate it with WINK_WRITE_AGREEMENT=1 (see this test's docs); \
         lines that changed:\n{}",
        changed_lines(&committed, &report)
    );
    Ok(())
}

/// The lines only `committed` has (`-`) and those only `report` has (`+`), so that a report
/// that moved says where without a rerun.
fn changed_lines(committed: &str, report: &str) -> String {
    let (old, new): (Vec<&str>, Vec<&str>) = (committed.lines().collect(), report.lines().collect());
    let gone = old.iter().filter(|l| !new.contains(l)).map(|l| format!("- {l}"));
    let added = new.iter().filter(|l| !old.contains(l)).map(|l| format!("+ {l}"));
    gone.chain(added).collect::<Vec<_>>().join("\n")
}
