//! A service the operator named in config.yaml: the model endpoint (`llm.baseUrl`) and
//! the Telegram Bot API (`channels.telegram.baseUrl`).
//!
//! Why these skip the address rules: the address is the operator's own choice, written
//! in their configuration, not something a message, a skill or a web page supplied, and
//! the usual places for it are exactly the ones the rules refuse (Ollama or llama.cpp's
//! server on 127.0.0.1, vLLM on the local network). What keeps that from opening private
//! addresses to anything else is that an [`Endpoint`] only ever talks to its one origin:
//! requests go to `{base}/{path}` with a path the code chose, redirects are refused
//! rather than followed (a redirect is another origin, which nobody configured), and no
//! proxy from the environment is used. Every URL from outside still goes through
//! [`super::get`] and its checks.
//!
//! Answers are bounded like every other fetch: one deadline per request, the body read
//! chunk by chunk (so a streamed answer can be used as it arrives) and cut off past a
//! size limit. A secret that is part of the URL (the Telegram token is) never appears in
//! an error: it is replaced by `<token>`.

use std::time::Duration;

use reqwest::Url;
use serde_json::Value;
use tokio::time::Instant;

use super::client::{FetchError, describe, parse_http_url};

/// The operator's service at one base URL.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Without a trailing slash, so `{base}/{path}` has exactly one.
    base: String,
    client: reqwest::Client,
    /// Text hidden from errors (a token that is part of the path).
    secret: Option<String>,
}

/// An answer being read: its status and headers are known, its body comes chunk by
/// chunk, within the request's deadline and size limit.
#[derive(Debug)]
pub struct Answer {
    shown: String,
    status: u16,
    content_type: Option<String>,
    response: reqwest::Response,
    deadline: Instant,
    timeout: Duration,
    max_bytes: usize,
    read: usize,
}

impl Endpoint {
    /// The service at `base_url` (http or https). `secret`, when given, is hidden from
    /// every error this endpoint reports.
    pub fn new(base_url: &str, secret: Option<String>) -> Result<Endpoint, FetchError> {
        let parsed = parse_http_url(base_url)?;
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(FetchError::BadUrl {
                url: base_url.to_string(),
                reason: "a base URL has no query or fragment".into(),
            });
        }
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(concat!("engram/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FetchError::Network {
                url: base_url.to_string(),
                reason: describe(&e.without_url()),
            })?;
        Ok(Endpoint {
            base: parsed.as_str().trim_end_matches('/').to_string(),
            client,
            secret: secret.filter(|s| !s.is_empty()),
        })
    }

    /// The base URL, as configured (without the secret, which belongs in paths).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// `text` with the secret replaced.
    pub fn hide(&self, text: &str) -> String {
        match &self.secret {
            Some(secret) => text.replace(secret.as_str(), "<token>"),
            None => text.to_string(),
        }
    }

    /// POSTs `body` as JSON to `{base}/{path}` with `headers`, and answers once the
    /// status and headers have arrived. The whole exchange, body included, must finish
    /// within `timeout`; the body may be at most `max_bytes`. Any status is an answer
    /// (the caller reads the service's error document), except a redirect, which is
    /// refused.
    pub async fn post_json(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: &Value,
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<Answer, FetchError> {
        let url = format!("{}/{}", self.base, path.trim_start_matches('/'));
        let shown = self.hide(&url);
        let parsed = Url::parse(&url).map_err(|e| FetchError::BadUrl {
            url: shown.clone(),
            reason: e.to_string(),
        })?;
        let deadline = Instant::now() + timeout;
        let mut request = self.client.post(parsed).json(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = match tokio::time::timeout_at(deadline, request.send()).await {
            Err(_) => {
                return Err(FetchError::Timeout {
                    url: shown,
                    timeout,
                });
            }
            Ok(Err(e)) => {
                return Err(FetchError::Network {
                    url: shown,
                    reason: self.hide(&describe(&e.without_url())),
                });
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_redirection() {
            let to = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(|location| self.hide(location))
                .unwrap_or_default();
            return Err(FetchError::BadRedirect {
                url: shown,
                reason: format!(
                    "HTTP {} to {to:?}: a configured endpoint's redirects are not followed; configure the final URL",
                    status.as_u16()
                ),
            });
        }
        if response
            .content_length()
            .is_some_and(|n| n > max_bytes as u64)
        {
            return Err(FetchError::TooLarge {
                url: shown,
                limit: max_bytes,
            });
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        Ok(Answer {
            shown,
            status: status.as_u16(),
            content_type,
            response,
            deadline,
            timeout,
            max_bytes,
            read: 0,
        })
    }
}

impl Answer {
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The `Content-Type`, if the service sent one.
    pub fn content_type(&self) -> Option<&str> {
        self.content_type.as_deref()
    }

    /// The URL asked, with the endpoint's secret hidden (for messages).
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// The next piece of the body; `None` at its end.
    pub async fn chunk(&mut self) -> Result<Option<Vec<u8>>, FetchError> {
        let next = match tokio::time::timeout_at(self.deadline, self.response.chunk()).await {
            Err(_) => {
                return Err(FetchError::Timeout {
                    url: self.shown.clone(),
                    timeout: self.timeout,
                });
            }
            Ok(next) => next.map_err(|e| FetchError::Network {
                url: self.shown.clone(),
                reason: describe(&e.without_url()),
            })?,
        };
        let Some(chunk) = next else {
            return Ok(None);
        };
        self.read += chunk.len();
        if self.read > self.max_bytes {
            return Err(FetchError::TooLarge {
                url: self.shown.clone(),
                limit: self.max_bytes,
            });
        }
        Ok(Some(chunk.to_vec()))
    }

    /// The rest of the body.
    pub async fn body(mut self) -> Result<Vec<u8>, FetchError> {
        let mut body = Vec::new();
        while let Some(chunk) = self.chunk().await? {
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::net::test_server::{answer, serve};

    const SECS: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn posts_to_its_own_origin_on_loopback_and_reads_the_body() {
        let addr = serve(vec![answer(
            "200 OK",
            "Content-Type: application/json\r\n",
            b"{\"ok\":true}",
        )])
        .await;
        let endpoint = Endpoint::new(&format!("http://{addr}/v1/"), None).unwrap();
        assert_eq!(endpoint.base(), format!("http://{addr}/v1"));
        let answer = endpoint
            .post_json("/chat/completions", &[], &json!({"a": 1}), SECS, 1024)
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        assert_eq!(answer.content_type(), Some("application/json"));
        assert_eq!(answer.url(), format!("http://{addr}/v1/chat/completions"));
        assert_eq!(answer.body().await.unwrap(), b"{\"ok\":true}");
    }

    #[tokio::test]
    async fn refuses_redirects_and_bounds_the_body() {
        let addr = serve(vec![
            answer("302 Found", "Location: http://10.0.0.1/x\r\n", b""),
            answer("200 OK", "", &[b'a'; 100]),
        ])
        .await;
        let endpoint = Endpoint::new(&format!("http://{addr}"), None).unwrap();
        let e = endpoint
            .post_json("x", &[], &json!({}), SECS, 50)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "bad-redirect", "{e}");
        let e = endpoint
            .post_json("x", &[], &json!({}), SECS, 50)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "too-large", "{e}");
    }

    #[tokio::test]
    async fn never_shows_its_secret() {
        // Nothing listens on the port of a listener that was just dropped.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let secret = "123456:SECRET-token";
        let endpoint =
            Endpoint::new(&format!("http://127.0.0.1:{port}"), Some(secret.into())).unwrap();
        let e = endpoint
            .post_json(&format!("bot{secret}/getMe"), &[], &json!({}), SECS, 1024)
            .await
            .unwrap_err();
        assert!(e.is_unreachable(), "{e}");
        let text = e.to_string();
        assert!(!text.contains("SECRET"), "{text}");
        assert!(text.contains("bot<token>/getMe"), "{text}");

        for bad in ["ftp://x/", "http://x/?q=1", "not a url"] {
            assert!(Endpoint::new(bad, None).is_err(), "{bad}");
        }
    }
}
