//! `engram registry serve <dir>`: serves a directory laid out like a registry mirror
//! over `mercury-skills-registry@1`, so a team can host a private registry (and the
//! tests have a real one):
//!
//! | Route | File under `<dir>` |
//! |---|---|
//! | `GET /api/feed.json` | `api/feed.json` |
//! | `GET /api/skills/<category>/<slug>` | `api/skills/<category>/<slug>/index.json` |
//! | `GET /api/skills/<category>/<slug>/install` | `api/skills/<category>/<slug>/install.tar.gz` |
//! | `GET /categories/<category>/<slug>/SKILL.md` | the raw SKILL.md |
//! | `GET /skills/<category>/<slug>` | an HTML page built from the feed and the detail |
//! | `GET /` | an HTML list of every skill |
//!
//! Files are read on every request, so a changed mirror is served at once. Path
//! segments must be slugs (`[a-z0-9-]`), so no request names anything outside the
//! directory, and a file that resolves (through a symlink) outside it is not served.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::feed::Feed;
use crate::html::escape;
use crate::skills::format::id::Slug;
use crate::skills::library::durable::read_bounded;

/// The largest file served.
const MAX_SERVED_BYTES: usize = 32 * 1024 * 1024;

#[derive(Debug)]
struct Mirror {
    root: PathBuf,
}

/// The routes over `dir` (canonicalized; it must exist).
pub fn router(dir: &Path) -> std::io::Result<Router> {
    let root = dir.canonicalize()?;
    if !root.is_dir() {
        return Err(std::io::Error::other(format!(
            "{} is not a directory",
            root.display()
        )));
    }
    let mirror = Arc::new(Mirror { root });
    Ok(Router::new()
        .route("/", get(index_page))
        .route("/api/feed.json", get(feed))
        .route("/api/skills/{category}/{slug}", get(detail))
        .route("/api/skills/{category}/{slug}/install", get(install))
        .route("/categories/{category}/{slug}/SKILL.md", get(raw))
        .route("/skills/{category}/{slug}", get(page))
        .fallback(|| async { not_found() })
        .with_state(mirror))
}

/// Serves until SIGINT or SIGTERM; prints `listening on http://ADDR` first.
pub async fn serve(dir: &Path, listen: SocketAddr) -> anyhow::Result<()> {
    let app = router(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    if !listen.ip().is_loopback() {
        tracing::warn!("serving the registry on {listen}, which is reachable from other machines");
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let bound = listener.local_addr()?;
    println!("listening on http://{bound}");
    tracing::info!(dir = %dir.display(), "registry listening on http://{bound}");
    let limits = crate::connections::prepare(crate::connections::Limits::default());
    crate::connections::serve(listener, app, limits, shutdown_signal()).await;
    Ok(())
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = int.recv() => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

impl Mirror {
    /// The bytes of `rel` under the root, if it is a file inside it.
    async fn read(self: &Arc<Self>, rel: PathBuf) -> Option<Vec<u8>> {
        let mirror = self.clone();
        crate::background::run(move || {
            let path = mirror.root.join(rel).canonicalize().ok()?;
            if !path.starts_with(&mirror.root) || !path.is_file() {
                return None;
            }
            read_bounded(&path, MAX_SERVED_BYTES).ok()?.ok()
        })
        .await
        .ok()
        .flatten()
    }

    async fn feed(self: &Arc<Self>) -> Option<Feed> {
        let bytes = self.read(PathBuf::from("api/feed.json")).await?;
        Feed::parse(&bytes).ok().map(|(feed, _)| feed)
    }
}

/// Both segments as slugs, else `None` (answered 404).
fn skill_path(category: &str, slug: &str) -> Option<(Slug, Slug)> {
    Some((Slug::parse(category).ok()?, Slug::parse(slug).ok()?))
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "application/json")],
        r#"{"error":"not-found"}"#,
    )
        .into_response()
}

fn file(content_type: &'static str, bytes: Option<Vec<u8>>) -> Response {
    match bytes {
        Some(bytes) => ([(header::CONTENT_TYPE, content_type)], bytes).into_response(),
        None => not_found(),
    }
}

async fn feed(State(mirror): State<Arc<Mirror>>) -> Response {
    file(
        "application/json",
        mirror.read(PathBuf::from("api/feed.json")).await,
    )
}

async fn detail(
    State(mirror): State<Arc<Mirror>>,
    UrlPath((category, slug)): UrlPath<(String, String)>,
) -> Response {
    let Some((c, s)) = skill_path(&category, &slug) else {
        return not_found();
    };
    let rel = PathBuf::from(format!("api/skills/{c}/{s}/index.json"));
    file("application/json", mirror.read(rel).await)
}

async fn install(
    State(mirror): State<Arc<Mirror>>,
    UrlPath((category, slug)): UrlPath<(String, String)>,
) -> Response {
    let Some((c, s)) = skill_path(&category, &slug) else {
        return not_found();
    };
    let rel = PathBuf::from(format!("api/skills/{c}/{s}/install.tar.gz"));
    file("application/gzip", mirror.read(rel).await)
}

async fn raw(
    State(mirror): State<Arc<Mirror>>,
    UrlPath((category, slug)): UrlPath<(String, String)>,
) -> Response {
    let Some((c, s)) = skill_path(&category, &slug) else {
        return not_found();
    };
    let rel = PathBuf::from(format!("categories/{c}/{s}/SKILL.md"));
    file("text/markdown; charset=utf-8", mirror.read(rel).await)
}

async fn page(
    State(mirror): State<Arc<Mirror>>,
    UrlPath((category, slug)): UrlPath<(String, String)>,
) -> Response {
    let Some((c, s)) = skill_path(&category, &slug) else {
        return not_found();
    };
    let id = format!("{c}/{s}");
    let Some(feed) = mirror.feed().await else {
        return not_found();
    };
    let Some(skill) = feed.skills.iter().find(|k| k.id == id) else {
        return not_found();
    };
    let body = mirror
        .read(PathBuf::from(format!("api/skills/{id}/index.json")))
        .await
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("body").and_then(|b| b.as_str()).map(str::to_string))
        .unwrap_or_default();
    let title = skill.display_name();
    let html = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title></head><body>\n\
         <h1>{t}</h1>\n<p>{d}</p>\n<dl><dt>id</dt><dd>{id}</dd><dt>version</dt><dd>{v}</dd>\
         <dt>category</dt><dd>{c}</dd><dt>tags</dt><dd>{tags}</dd><dt>sha256</dt><dd>{sha}</dd></dl>\n\
         <p>Install: <code>engram skills install {id}</code></p>\n<pre>{body}</pre>\n</body></html>\n",
        t = escape(title),
        d = escape(&skill.description),
        id = escape(&skill.id),
        v = escape(skill.version.as_deref().unwrap_or("-")),
        c = escape(skill.category.as_deref().unwrap_or(skill.category_slug())),
        tags = escape(&skill.tags.join(", ")),
        sha = escape(&skill.sha),
        body = escape(&body),
    );
    html_response(html)
}

async fn index_page(State(mirror): State<Arc<Mirror>>) -> Response {
    let Some(feed) = mirror.feed().await else {
        return not_found();
    };
    let mut html = String::from(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Skills registry</title></head><body>\n<h1>Skills registry</h1>\n",
    );
    for category in &feed.categories {
        html.push_str(&format!(
            "<h2>{} ({})</h2>\n<ul>\n",
            escape(&category.name),
            category.count
        ));
        for skill in feed.in_category(&category.slug) {
            html.push_str(&format!(
                "<li><a href=\"/skills/{id}\">{t}</a>: {d}</li>\n",
                id = escape(&skill.id),
                t = escape(skill.display_name()),
                d = escape(&skill.description)
            ));
        }
        html.push_str("</ul>\n");
    }
    html.push_str("</body></html>\n");
    html_response(html)
}

fn html_response(html: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'",
            ),
        ],
        html,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_registry_server_escapes_html_and_checks_segments() {
        assert_eq!(
            escape("<script>\"x\" & 'y'</script>"),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        );
        assert!(skill_path("dev", "a").is_some());
        for (c, s) in [
            ("..", "a"),
            ("dev", ".."),
            ("dev", "a%2f"),
            ("Dev", "a"),
            ("dev", "a/b"),
        ] {
            assert!(skill_path(c, s).is_none(), "{c}/{s}");
        }
    }
}
