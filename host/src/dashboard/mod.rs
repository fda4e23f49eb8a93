//! The web dashboard (second-brain.md §4, skills.md §4): pages served by the daemon
//! from assets compiled into the binary (`host/dashboard/`), no Node toolchain.
//!
//! Pages are a shared HTML shell plus one ES module each; every piece of data comes
//! from the same `/api` routes a client uses, authenticated by the session cookie the
//! login page sets (see [`crate::api::auth`]). The server only decides who sees a page:
//! without a session every page redirects to `/login`. Every response carries a strict
//! Content-Security-Policy: scripts and styles from `/assets` only, no inline code.

mod assets;

use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;

use crate::api::auth::{Auth, SESSION_COOKIE, SESSION_TTL};
use crate::app::App;
use crate::html::escape;
use crate::skills::RegistryUrl;

/// Where `/` and a login without `next` lead.
const HOME: &str = "/second-brain/memory";

/// Each page: its path pattern, its title and the module under `/assets/pages/` that
/// draws it.
const PAGES: &[(&str, &str, &str)] = &[
    ("/second-brain/memory", "Memory", "memory.js"),
    ("/second-brain/persons", "Persons", "persons.js"),
    ("/second-brain/persons/{id}", "Person", "person.js"),
    ("/second-brain/goals", "Goals and projects", "goals.js"),
    ("/second-brain/graph", "Graph", "graph.js"),
    ("/skills", "Skills", "skills.js"),
];

#[derive(Clone)]
struct Dashboard {
    app: Arc<App>,
    auth: Auth,
}

/// The dashboard's routes: `/`, `/login`, `/logout`, the pages and `/assets/*`.
pub fn router(app: Arc<App>, auth: Auth) -> Router {
    let state = Dashboard { app, auth };
    let mut router = Router::new()
        .route("/", get(|| async { Redirect::to(HOME) }))
        .route("/second-brain", get(|| async { Redirect::to(HOME) }))
        .route("/login", get(login_page).post(login))
        .route("/logout", post(logout))
        .route("/assets/{*path}", get(asset));
    for &(path, title, module) in PAGES {
        router = router.route(
            path,
            get(
                move |state: State<Dashboard>, headers: HeaderMap, request: Request| async move {
                    page(state, headers, request, title, module)
                },
            ),
        );
    }
    router
        .with_state(state)
        .layer(axum::middleware::from_fn(security_headers))
}

/// A page for a logged-in user, else a redirect to the login page that comes back here.
fn page(
    State(state): State<Dashboard>,
    headers: HeaderMap,
    request: Request,
    title: &str,
    module: &str,
) -> Response {
    if state.auth.sessions.from_headers(&headers).is_none() {
        let back = request.uri().path_and_query().map_or(HOME, |p| p.as_str());
        let target = format!("/login?next={}", encode_component(back));
        return Redirect::to(&target).into_response();
    }
    let registry = RegistryUrl::resolve(
        None,
        std::env::var(crate::skills::registry::client::REGISTRY_ENV)
            .ok()
            .as_deref(),
        state.app.config.current().skills.registry.as_deref(),
    )
    .map(|url| url.as_str().to_string())
    .unwrap_or_default();
    let html = assets::SHELL
        .replace("{{title}}", &escape(title))
        .replace("{{module}}", &escape(module))
        .replace("{{registry}}", &escape(&registry));
    no_store(Html(html).into_response())
}

#[derive(Deserialize)]
struct LoginQuery {
    next: Option<String>,
}

async fn login_page(
    State(state): State<Dashboard>,
    headers: HeaderMap,
    Query(query): Query<LoginQuery>,
) -> Response {
    let next = safe_next(query.next.as_deref());
    if state.auth.sessions.from_headers(&headers).is_some() {
        return Redirect::to(next).into_response();
    }
    login_form(StatusCode::OK, next, None)
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
    next: Option<String>,
}

async fn login(State(state): State<Dashboard>, Form(form): Form<LoginForm>) -> Response {
    let next = safe_next(form.next.as_deref());
    if !state.auth.token.matches(form.token.trim()) {
        return login_form(
            StatusCode::UNAUTHORIZED,
            next,
            Some(
                "That token is not this daemon's. It is in {data_dir}/auth-token (or ENGRAM_TOKEN).",
            ),
        );
    }
    let session = match state.auth.sessions.start() {
        Ok(session) => session,
        Err(e) => {
            tracing::error!("cannot start a dashboard session: {e}");
            return login_form(
                StatusCode::INTERNAL_SERVER_ERROR,
                next,
                Some("The daemon could not start a session; see its log."),
            );
        }
    };
    let cookie = format!(
        "{SESSION_COOKIE}={session}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
        SESSION_TTL.as_secs()
    );
    let mut response = Redirect::to(next).into_response();
    set_cookie(&mut response, &cookie);
    response
}

async fn logout(State(state): State<Dashboard>, headers: HeaderMap) -> Response {
    if let Some(session) = crate::api::auth::session_cookie(&headers) {
        state.auth.sessions.end(session);
    }
    let mut response = Redirect::to("/login").into_response();
    set_cookie(
        &mut response,
        &format!("{SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
    );
    response
}

fn login_form(status: StatusCode, next: &str, error: Option<&str>) -> Response {
    let error = error
        .map(|message| format!(r#"<p class="error" role="alert">{}</p>"#, escape(message)))
        .unwrap_or_default();
    let html = assets::LOGIN
        .replace("{{next}}", &escape(next))
        .replace("{{error}}", &error);
    no_store((status, Html(html)).into_response())
}

async fn asset(Path(path): Path<String>, headers: HeaderMap) -> Response {
    match assets::find(&path) {
        Some(_)
            if headers
                .get(header::IF_NONE_MATCH)
                .is_some_and(|tag| tag == assets::ETAG) =>
        {
            StatusCode::NOT_MODIFIED.into_response()
        }
        Some(asset) => {
            let mut response = asset.body.into_response();
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            );
            // Assets change with the binary, which a browser cannot know: revalidate.
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            headers.insert(header::ETAG, HeaderValue::from_static(assets::ETAG));
            response
        }
        None => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}

/// A login may only lead back to a path on this site: never to `//host` or a scheme.
fn safe_next(next: Option<&str>) -> &str {
    match next {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.starts_with("/\\")
                && path.len() <= 512
                && path.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            path
        }
        _ => HOME,
    }
}

fn set_cookie(response: &mut Response, cookie: &str) {
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
}

/// Pages carry the user's data through their scripts only; never cache the shell.
fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; \
             frame-ancestors 'none'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// Percent-encodes a path for a query parameter.
fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_only_returns_to_a_local_path() {
        assert_eq!(safe_next(Some("/skills")), "/skills");
        assert_eq!(
            safe_next(Some("/second-brain/memory?scope=subconscious")),
            "/second-brain/memory?scope=subconscious"
        );
        for hostile in [
            "//evil.example/",
            "/\\evil.example",
            "https://evil.example/",
            "javascript:alert(1)",
            "/a b",
            "",
        ] {
            assert_eq!(safe_next(Some(hostile)), HOME, "{hostile}");
        }
        assert_eq!(safe_next(None), HOME);
    }

    #[test]
    fn a_return_path_is_percent_encoded() {
        assert_eq!(
            encode_component("/second-brain/memory?scope=a&b"),
            "/second-brain/memory%3Fscope%3Da%26b"
        );
    }
}
