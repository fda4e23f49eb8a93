//! The web dashboard (README, "The dashboard"): pages served by the daemon
//! from assets compiled into the binary (`host/dashboard/`), no Node toolchain.
//!
//! Pages are a shared HTML shell plus one ES module each; every piece of data comes
//! from the same `/api` routes a client uses, authenticated by the session the login
//! opens: its id in a cookie, its secret in the page's `sessionStorage`, sent as a
//! header (see [`crate::api::auth`]). The login takes the operator token: the
//! dashboard is the person's. The server only decides who is shown a page's shell
//! (which holds no data): without a session cookie every page redirects to `/login`.
//! Every response carries a strict Content-Security-Policy: scripts and styles from
//! `/assets` only, no inline code.

mod assets;

use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;

use crate::api::auth::{Auth, SESSION_COOKIE, SESSION_TTL, session_cookie};
use crate::app::App;
use crate::html::{escape, fill};
use crate::skills::RegistryUrl;

/// The largest login form taken: a token and a page to go back to fit in far less,
/// and a stranger must not hold a connection open with a body that never ends.
const LOGIN_MAX_BYTES: usize = 4 * 1024;

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
        .route(
            "/login",
            get(login_page)
                .post(login)
                .layer(tower_http::limit::RequestBodyLimitLayer::new(
                    LOGIN_MAX_BYTES,
                )),
        )
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
    if !state.auth.sessions.cookie_is_open(&headers) {
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
    let html = fill(
        assets::SHELL,
        &[
            ("title", &escape(title)),
            ("module", &escape(module)),
            ("registry", &escape(&registry)),
        ],
    );
    no_store(Html(html).into_response())
}

#[derive(Deserialize)]
struct LoginQuery {
    next: Option<String>,
}

/// Always the form, even with a session cookie: a page comes here when its tab has no
/// session secret (a new tab, say), and only a login gives one.
async fn login_page(Query(query): Query<LoginQuery>) -> Response {
    login_form(StatusCode::OK, safe_next(query.next.as_deref()), None)
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
    next: Option<String>,
}

async fn login(State(state): State<Dashboard>, Form(form): Form<LoginForm>) -> Response {
    let next = safe_next(form.next.as_deref());
    if !state.auth.tokens.operator.matches(form.token.trim()) {
        let message = if state.auth.tokens.agent.matches(form.token.trim()) {
            "That is the agent's token. The dashboard takes the operator token: it is in {data_dir}/operator-token (or ENGRAM_OPERATOR_TOKEN)."
        } else {
            "That token is not this daemon's operator token. It is in {data_dir}/operator-token (or ENGRAM_OPERATOR_TOKEN)."
        };
        return login_form(StatusCode::UNAUTHORIZED, next, Some(message));
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
        "{SESSION_COOKIE}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
        session.id,
        SESSION_TTL.as_secs()
    );
    // The secret goes to the page in this answer's body, never in a URL: the page's
    // script keeps it in sessionStorage and goes on to `next`.
    let html = fill(
        assets::SIGNED_IN,
        &[
            ("secret", &escape(&session.secret)),
            ("next", &escape(next)),
        ],
    );
    let mut response = no_store(Html(html).into_response());
    set_cookie(&mut response, &cookie);
    response
}

/// Ends the session when the request carries both its halves (the page's script
/// sends the secret); a bare form post from elsewhere changes nothing.
async fn logout(State(state): State<Dashboard>, headers: HeaderMap) -> Response {
    if !state.auth.sessions.authenticates(&headers) {
        return (
            StatusCode::FORBIDDEN,
            "logging out needs the session's secret, which the dashboard's pages send",
        )
            .into_response();
    }
    if let Some(session) = session_cookie(&headers)
        && let Err(e) = state.auth.sessions.end(session)
    {
        tracing::error!("cannot end the dashboard session: {e}");
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "the session could not be ended; try again",
        )
            .into_response();
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
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
    let html = fill(assets::LOGIN, &[("next", &escape(next)), ("error", &error)]);
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
