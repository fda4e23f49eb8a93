//! The `/skills` bot command with the real registry client behind it, against a real
//! registry server (the mirror in tests/fixtures, served on loopback in-process).

use std::path::PathBuf;
use std::time::Duration;

use engram::channels::roles::Role;
use engram::channels::skills_command::{ReplyStatus, handle_skills_command};
use engram::skills::registry::RegistrySource;
use engram::skills::{Library, RegistryClient, RegistryUrl};

mod support;

fn mirror() -> PathBuf {
    support::fixtures().join("registry-mirror")
}

/// Serves the mirror on a free loopback port; returns the registry URL.
async fn registry() -> String {
    let router = engram::skills::registry::server::router(&mirror()).expect("mirror");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_command_searches_views_and_installs_through_the_real_registry() {
    let url = registry().await;
    let data = tempfile::tempdir().expect("tempdir");
    let library = Library::open(data.path().join("skills")).expect("library");
    let client = RegistryClient::new(
        RegistryUrl::parse(&url, RegistrySource::Flag).expect("registry url"),
        &data.path().join("cache/registry"),
        Duration::from_secs(3600),
        // The registry runs on loopback here.
        true,
    );

    let found = handle_skills_command(
        "/skills search audit logging",
        Role::Approved,
        &library,
        &client,
    )
    .await;
    assert_eq!(found.status, ReplyStatus::Ok, "{}", found.text);
    assert!(
        !found.items.is_empty() && found.items.len() <= 5,
        "{found:?}"
    );
    assert_eq!(found.items[0].id, "ai-ml/agent-audit-logging");
    for item in &found.items {
        assert_eq!(
            item.url.as_deref(),
            Some(format!("{url}/skills/{}", item.id).as_str()),
            "every result carries its registry page"
        );
    }

    let viewed = handle_skills_command(
        "/skills view ai-ml/agent-audit-logging",
        Role::Approved,
        &library,
        &client,
    )
    .await;
    assert_eq!(viewed.status, ReplyStatus::Ok, "{}", viewed.text);
    assert!(
        viewed
            .text
            .contains(&format!("{url}/skills/ai-ml/agent-audit-logging"))
    );

    let refused = handle_skills_command(
        "/skills install ai-ml/agent-audit-logging",
        Role::Approved,
        &library,
        &client,
    )
    .await;
    assert_eq!(refused.status, ReplyStatus::Denied);
    assert!(library.list().expect("index").skills.is_empty());

    let installed = handle_skills_command(
        "/skills install ai-ml/agent-audit-logging",
        Role::Admin,
        &library,
        &client,
    )
    .await;
    assert_eq!(installed.status, ReplyStatus::Ok, "{}", installed.text);
    assert!(
        library
            .list()
            .expect("index")
            .skills
            .contains_key("agent-audit-logging")
    );

    let unknown = handle_skills_command(
        "/skills view ai-ml/no-such-skill",
        Role::Approved,
        &library,
        &client,
    )
    .await;
    assert_eq!(unknown.status, ReplyStatus::NotFound, "{}", unknown.text);
}
