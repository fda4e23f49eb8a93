//! Test guest `http-probe`: makes one outbound GET through
//! `wasi:http/outgoing-handler` to the URL given as the first message's
//! content (e.g. `http://127.0.0.1:PORT/probe`) and reports what happened in
//! the summary of its single candidate: `ok <status>` when a response came
//! back, `error <ErrorCode debug text>` (or `error <reason>`) otherwise. It
//! exists to test the host's `allowed-hosts` filter: a host outside the
//! manifest's list must fail with `HttpRequestDenied`, a listed one must get
//! through. No error path panics, so a denial is never mistaken for a trap.

wit_bindgen::generate!({ path: "../../../wit", world: "extractor" });

use engram::plugin::types::{Evidence, MemoryType};
use wasi::http::outgoing_handler;
use wasi::http::types::{Fields, Method, OutgoingRequest, Scheme};

struct HttpProbe;

impl Guest for HttpProbe {
    fn extract(conversation: Conversation, _now: i64) -> Vec<Candidate> {
        let summary = match conversation.messages.first() {
            Some(message) => match probe(message.content.trim()) {
                Ok(status) => format!("ok {status}"),
                Err(error) => format!("error {error}"),
            },
            None => "error no message to read a URL from".to_string(),
        };
        vec![Candidate {
            memory_type: MemoryType::Episode,
            summary,
            detail: None,
            confidence: 0.5,
            importance: 0.5,
            durability: 0.5,
            evidence: Evidence::Direct,
            negated: false,
            persons: Vec::new(),
            source_turns: Vec::new(),
        }]
    }
}

/// GETs `url` and returns the response status, or a description of why
/// there is none.
fn probe(url: &str) -> Result<u16, String> {
    let (scheme, rest) = if let Some(rest) = url.strip_prefix("http://") {
        (Scheme::Http, rest)
    } else if let Some(rest) = url.strip_prefix("https://") {
        (Scheme::Https, rest)
    } else {
        return Err(format!("not an http(s) URL: {url:?}"));
    };
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, "/"),
    };

    let request = OutgoingRequest::new(Fields::new());
    let set = request
        .set_method(&Method::Get)
        .and_then(|()| request.set_scheme(Some(&scheme)))
        .and_then(|()| request.set_authority(Some(authority)))
        .and_then(|()| request.set_path_with_query(Some(path)));
    if set.is_err() {
        return Err(format!("invalid request for {url:?}"));
    }

    // A GET has no body: the untouched outgoing body is sent empty.
    let future = outgoing_handler::handle(request, None).map_err(|code| format!("{code:?}"))?;
    future.subscribe().block();
    match future.get() {
        Some(Ok(Ok(response))) => Ok(response.status()),
        Some(Ok(Err(code))) => Err(format!("{code:?}")),
        Some(Err(())) => Err("response already taken".to_string()),
        None => Err("response not ready after waiting".to_string()),
    }
}

export!(HttpProbe);
