//! The dashboard's login and session cookie over plain HTTP (no browser needed): what
//! the cookie allows, what it refuses without the CSRF header, logout, the login's
//! `next` target, and the headers every page and asset carries.

use engram_e2e::{Daemon, Response, TOKEN, engram, ok, problem};
use serde_json::json;

fn send(
    daemon: &Daemon,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Response {
    daemon
        .client()
        .try_request_with(method, path, headers, body.as_bytes())
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

fn log_in(daemon: &Daemon, token: &str, next: &str) -> Response {
    let form = format!("token={token}&next={next}");
    send(
        daemon,
        "POST",
        "/login",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &form,
    )
}

/// The session id the login response's Set-Cookie carries.
fn session_of(response: &Response) -> String {
    let cookie = response.header("set-cookie").expect("a session cookie");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(flag), "{cookie} lacks {flag}");
    }
    cookie
        .split(';')
        .next()
        .and_then(|pair| pair.strip_prefix("engram_session="))
        .expect("engram_session=...")
        .to_string()
}

#[test]
fn the_login_cookie_reads_freely_but_changes_only_with_the_csrf_header() {
    let data = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&mut engram(data.path()));

    // Without a session, a page sends the browser to the login page and back.
    let page = send(&daemon, "GET", "/second-brain/graph", &[], "");
    assert_eq!(page.status, 303);
    assert_eq!(
        page.header("location"),
        Some("/login?next=/second-brain/graph")
    );
    let login = send(&daemon, "GET", "/login?next=/skills", &[], "");
    assert_eq!(login.status, 200);
    assert!(login.text().contains(r#"name="next" value="/skills""#));

    // A wrong token: 401, no cookie.
    let refused = log_in(&daemon, "wrong-token-0123456789", "/skills");
    assert_eq!(refused.status, 401);
    assert!(refused.header("set-cookie").is_none());
    assert!(refused.text().contains("That token is not this daemon"));

    // The token: a session cookie and a redirect to `next`; a hostile `next` goes home.
    let accepted = log_in(&daemon, TOKEN, "/skills");
    assert_eq!(accepted.status, 303);
    assert_eq!(accepted.header("location"), Some("/skills"));
    let session = session_of(&accepted);
    let elsewhere = log_in(&daemon, TOKEN, "//evil.example/");
    assert_eq!(elsewhere.header("location"), Some("/second-brain/memory"));

    let cookie = format!("engram_session={session}");
    let with_cookie = [("Cookie", cookie.as_str())];
    let page = send(&daemon, "GET", "/skills", &with_cookie, "");
    assert_eq!(page.status, 200);
    assert_eq!(page.header("cache-control"), Some("no-store"));
    let csp = page.header("content-security-policy").expect("a CSP");
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
    ok(
        send(&daemon, "GET", "/api/brain/status", &with_cookie, ""),
        200,
    );

    // A change authenticated by the cookie alone is refused, and changes nothing.
    let body = json!({ "type": "preference", "summary": "Likes jazz" }).to_string();
    let json_cookie = [
        ("Cookie", cookie.as_str()),
        ("Content-Type", "application/json"),
    ];
    problem(
        send(&daemon, "POST", "/api/brain/memory", &json_cookie, &body),
        403,
        "csrf-header-missing",
    );
    assert_eq!(ok(daemon.get("/api/brain/memory"), 200)["items"], json!([]));
    let marked = [
        ("Cookie", cookie.as_str()),
        ("Content-Type", "application/json"),
        ("X-Engram-CSRF", "1"),
    ];
    ok(
        send(&daemon, "POST", "/api/brain/memory", &marked, &body),
        201,
    );

    // Logging out ends the session for pages and the API alike.
    let out = send(&daemon, "POST", "/logout", &with_cookie, "");
    assert_eq!(out.status, 303);
    assert!(
        out.header("set-cookie")
            .is_some_and(|c| c.contains("Max-Age=0"))
    );
    problem(
        send(&daemon, "GET", "/api/brain/status", &with_cookie, ""),
        401,
        "unauthorized",
    );
    assert_eq!(
        send(&daemon, "GET", "/skills", &with_cookie, "").status,
        303
    );
    // A made-up session is no session.
    let forged = [("Cookie", "engram_session=00000000000000000000000000000000")];
    problem(
        send(&daemon, "GET", "/api/brain/status", &forged, ""),
        401,
        "unauthorized",
    );
}

#[test]
fn assets_are_compiled_in_with_their_types_and_revalidate() {
    let data = tempfile::tempdir().unwrap();
    let daemon = Daemon::start(&mut engram(data.path()));
    for (path, content_type) in [
        ("/assets/app.css", "text/css; charset=utf-8"),
        ("/assets/api.js", "text/javascript; charset=utf-8"),
        ("/assets/pages/graph.js", "text/javascript; charset=utf-8"),
        ("/assets/favicon.svg", "image/svg+xml"),
    ] {
        let asset = send(&daemon, "GET", path, &[], "");
        assert_eq!(asset.status, 200, "{path}");
        assert_eq!(asset.header("content-type"), Some(content_type), "{path}");
        assert_eq!(asset.header("x-content-type-options"), Some("nosniff"));
        let etag = asset.header("etag").expect("an etag").to_string();
        let again = send(&daemon, "GET", path, &[("If-None-Match", &etag)], "");
        assert_eq!(again.status, 304, "{path}");
        assert!(again.body.is_empty());
    }
    assert_eq!(
        send(&daemon, "GET", "/assets/../Cargo.toml", &[], "").status,
        404
    );
    assert_eq!(send(&daemon, "GET", "/assets/nope.js", &[], "").status, 404);
    assert_eq!(
        send(&daemon, "GET", "/", &[], "").header("location"),
        Some("/second-brain/memory")
    );
}
