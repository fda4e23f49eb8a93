//! Plugins' outbound HTTP, pinned like every outbound request: the `http-probe` guest
//! (a real component) GETs a URL and reports the status or the `wasi:http` error code
//! it saw. A name that resolves to a loopback or private address is refused with
//! `destination-IP-prohibited` unless listed in `private-hosts`; the connection goes to
//! the address that was checked (one lookup, even when a second would answer
//! differently); redirects reach the plugin unfollowed.
//!
//! Names: `localhost` resolves to loopback through the system's resolver; the other
//! names here resolve through a resolver the test passes to the runtime (a STAND-IN
//! for DNS: there is no DNS server on the test machines), so nothing touches
//! `/etc/hosts`.

mod support;

use std::collections::VecDeque;
use std::future::Future;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use engram::config::PluginConfig;
use engram::net::Resolve;
use engram::runtime::{FixedSettings, Runtime};
use support::*;

/// A loopback server that answers every connection with `response`, counting them.
fn server(response: &'static str) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            counter.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (port, hits)
}

const OK: &str = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";

/// A STAND-IN resolver: answers each lookup with the next address of its list (the
/// last one repeats), and counts lookups.
struct Scripted {
    answers: Mutex<VecDeque<IpAddr>>,
    lookups: AtomicUsize,
}

impl Scripted {
    fn new(answers: &[&str]) -> Arc<Scripted> {
        Arc::new(Scripted {
            answers: Mutex::new(answers.iter().map(|a| a.parse().expect("ip")).collect()),
            lookups: AtomicUsize::new(0),
        })
    }
}

impl Resolve for Scripted {
    fn lookup<'a>(
        &'a self,
        _host: &'a str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + 'a>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        let mut answers = self.answers.lock().expect("lock");
        let ip = if answers.len() > 1 {
            answers.pop_front()
        } else {
            answers.front().copied()
        };
        let addrs = ip.map(|ip| SocketAddr::new(ip, port)).into_iter().collect();
        Box::pin(async move { Ok(addrs) })
    }
}

/// An http-probe package in `dir` with these permissions (and a 1 s deadline).
fn probe_package(dir: &Path, allowed: &[String], private: &[&str]) {
    let list = |items: Vec<String>| {
        items
            .iter()
            .map(|i| format!("{i:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    package_with_manifest(
        "http-probe",
        dir,
        &format!(
            "name = \"http-probe\"\nversion = \"0.1.0\"\nworld = \"extractor\"\n[permissions]\nallowed-hosts = [{}]\nprivate-hosts = [{}]\n[limits]\ntimeout-ms = 1000\n",
            list(allowed.to_vec()),
            list(private.iter().map(|p| p.to_string()).collect())
        ),
    );
}

/// What http-probe reports for a GET of `url`: `ok <status>` or `error <code>`.
fn get(runtime: &Runtime, package: &Path, url: &str) -> String {
    let plugin = runtime.load_dir(package).expect("load");
    let mut conversation = conversation();
    conversation.messages.truncate(1);
    conversation.messages[0].content = url.to_string();
    let out = runtime
        .extract(&plugin, &conversation, NOW)
        .expect("the probe reports errors as text");
    out[0].summary.clone()
}

#[test]
fn a_name_that_resolves_to_loopback_is_refused_unless_listed_as_private() {
    let runtime = runtime();
    let (port, hits) = server(OK);
    let url = format!("http://localhost:{port}/probe");
    let dir = tempfile::tempdir().expect("tempdir");

    let plain = dir.path().join("plain");
    probe_package(&plain, &[format!("localhost:{port}")], &[]);
    assert_eq!(
        get(&runtime, &plain, &url),
        "error ErrorCode::DestinationIpProhibited"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0, "no connection was made");

    // An IP literal elsewhere in the list does not make the name's addresses private.
    let other = dir.path().join("other");
    probe_package(
        &other,
        &[format!("localhost:{port}"), "10.0.0.1".into()],
        &[],
    );
    assert_eq!(
        get(&runtime, &other, &url),
        "error ErrorCode::DestinationIpProhibited"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);

    // Listing the name, or the addresses, as private lets it through.
    let by_name = dir.path().join("by-name");
    probe_package(&by_name, &[format!("localhost:{port}")], &["localhost"]);
    assert_eq!(get(&runtime, &by_name, &url), "ok 200");
    let by_address = dir.path().join("by-address");
    probe_package(
        &by_address,
        &[format!("localhost:{port}")],
        &["127.0.0.1", "::1"],
    );
    assert_eq!(get(&runtime, &by_address, &url), "ok 200");
    // So does an IP literal in allowed-hosts: the local model server case.
    let literal = dir.path().join("literal");
    probe_package(&literal, &[format!("127.0.0.1:{port}")], &[]);
    assert_eq!(
        get(
            &runtime,
            &literal,
            &format!("http://127.0.0.1:{port}/probe")
        ),
        "ok 200"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 3);
}

#[test]
fn the_operators_lists_in_config_replace_the_manifests() {
    let (port, hits) = server(OK);
    let url = format!("http://localhost:{port}/probe");
    let dir = tempfile::tempdir().expect("tempdir");
    let package = dir.path().join("probe");
    probe_package(&package, &["api.example.com".into()], &[]);
    let plain = runtime();
    assert_eq!(
        get(&plain, &package, &url),
        "error ErrorCode::HttpRequestDenied"
    );

    let settings = |private: Option<Vec<String>>| FixedSettings {
        plugins: [(
            "http-probe".to_string(),
            PluginConfig {
                settings: Default::default(),
                allowed_hosts: Some(vec![format!("localhost:{port}")]),
                private_hosts: private,
            },
        )]
        .into(),
        vars: Default::default(),
    };
    let allowed = runtime_with_services(services().with_settings(Arc::new(settings(None))));
    assert_eq!(
        get(&allowed, &package, &url),
        "error ErrorCode::DestinationIpProhibited"
    );
    let private = runtime_with_services(
        services().with_settings(Arc::new(settings(Some(vec!["localhost".into()])))),
    );
    assert_eq!(get(&private, &package, &url), "ok 200");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[test]
fn the_connection_goes_to_the_checked_address_without_a_second_lookup() {
    let (port, hits) = server(OK);
    let dir = tempfile::tempdir().expect("tempdir");
    let package = dir.path().join("probe");
    probe_package(&package, &[format!("llm.test:{port}")], &["llm.test"]);
    let url = format!("http://llm.test:{port}/probe");

    // The system cannot resolve llm.test: reaching the server proves the connection
    // went to the address the runtime's resolver gave and the check passed.
    let resolver = Scripted::new(&["127.0.0.1"]);
    let runtime = runtime_with_services(services().with_resolver(resolver.clone()));
    assert_eq!(get(&runtime, &package, &url), "ok 200");
    assert_eq!(resolver.lookups.load(Ordering::SeqCst), 1);
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    // A name that answers a public address, then (rebinding) loopback: the public one
    // passes the check and is the only one connected to. Nothing listens there on the
    // test machines, so the request fails, but not as a refusal, and the loopback
    // server never sees it.
    let public = dir.path().join("public");
    probe_package(&public, &[format!("rebind.test:{port}")], &[]);
    let rebinding = Scripted::new(&["93.184.216.34", "127.0.0.1"]);
    let runtime = runtime_with_services(services().with_resolver(rebinding.clone()));
    let outcome = get(
        &runtime,
        &public,
        &format!("http://rebind.test:{port}/probe"),
    );
    assert!(outcome.starts_with("error "), "{outcome}");
    assert!(!outcome.contains("DestinationIpProhibited"), "{outcome}");
    assert_eq!(rebinding.lookups.load(Ordering::SeqCst), 1, "one lookup");
    assert_eq!(hits.load(Ordering::SeqCst), 1, "loopback was never reached");

    // The same name answering loopback first is refused at the check.
    let loopback_first = Scripted::new(&["127.0.0.1", "93.184.216.34"]);
    let runtime = runtime_with_services(services().with_resolver(loopback_first));
    assert_eq!(
        get(
            &runtime,
            &public,
            &format!("http://rebind.test:{port}/probe")
        ),
        "error ErrorCode::DestinationIpProhibited"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}

#[test]
fn redirects_reach_the_plugin_unfollowed() {
    let (target, target_hits) = server(OK);
    let redirect: &'static str = Box::leak(
        format!(
            "HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:{target}/elsewhere\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        )
        .into_boxed_str(),
    );
    let (origin, origin_hits) = server(redirect);
    let dir = tempfile::tempdir().expect("tempdir");
    let package = dir.path().join("probe");
    probe_package(
        &package,
        &[format!("127.0.0.1:{origin}"), format!("127.0.0.1:{target}")],
        &[],
    );
    let runtime = runtime();
    assert_eq!(
        get(
            &runtime,
            &package,
            &format!("http://127.0.0.1:{origin}/start")
        ),
        "ok 302"
    );
    assert_eq!(origin_hits.load(Ordering::SeqCst), 1);
    assert_eq!(target_hits.load(Ordering::SeqCst), 0);
}
