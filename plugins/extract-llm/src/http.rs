//! One POST through `wasi:http`, bounded in time (the settings' timeout for connect,
//! first byte and between bytes; the host adds the call's deadline) and in size (the
//! read stops past [`MAX_ANSWER_BYTES`]).

use wasi::http::outgoing_handler;
use wasi::http::types::{
    ErrorCode, Fields, IncomingBody, Method, OutgoingBody, OutgoingRequest, RequestOptions,
    Scheme,
};
use wasi::io::streams::StreamError;

use crate::Failure;
use crate::settings::Endpoint;

/// The largest answer read; a chat completion with three short facts is a few KiB.
pub const MAX_ANSWER_BYTES: usize = 1024 * 1024;
/// Bytes written to the request stream at a time (wasi:http accepts at least 4 KiB).
const WRITE_CHUNK: usize = 4096;

/// POSTs `body` as JSON to `endpoint` and returns the response body of a 2xx answer.
pub fn post_json(
    endpoint: &Endpoint,
    api_key: Option<&str>,
    body: &str,
    timeout_ms: u64,
) -> Result<Vec<u8>, Failure> {
    let mut headers = vec![
        ("content-type".to_string(), b"application/json".to_vec()),
        ("accept".to_string(), b"application/json".to_vec()),
        ("content-length".to_string(), body.len().to_string().into_bytes()),
    ];
    if let Some(key) = api_key {
        headers.push(("authorization".to_string(), format!("Bearer {key}").into_bytes()));
    }
    let fields = Fields::from_list(&headers)
        .map_err(|e| Failure::Http(format!("cannot build the request headers: {e:?}")))?;
    let request = OutgoingRequest::new(fields);
    let scheme = if endpoint.https { Scheme::Https } else { Scheme::Http };
    let set = request
        .set_method(&Method::Post)
        .and_then(|()| request.set_scheme(Some(&scheme)))
        .and_then(|()| request.set_authority(Some(&endpoint.authority)))
        .and_then(|()| request.set_path_with_query(Some(&endpoint.path)));
    if set.is_err() {
        return Err(Failure::Settings(format!(
            "`baseUrl` gives an invalid request target {}{}",
            endpoint.authority, endpoint.path
        )));
    }
    let options = RequestOptions::new();
    let nanos = timeout_ms * 1_000_000;
    // Setting a timeout only fails when the host does not support it; the host's own
    // deadline still bounds the call then.
    let _ = options.set_connect_timeout(Some(nanos));
    let _ = options.set_first_byte_timeout(Some(nanos));
    let _ = options.set_between_bytes_timeout(Some(nanos));

    let outgoing = request
        .body()
        .map_err(|()| Failure::Http("the request body was already taken".into()))?;
    let future = outgoing_handler::handle(request, Some(options))
        .map_err(|code| describe(code, timeout_ms))?;
    // A request the host refuses closes the body stream; the reason is in the
    // response future, so a failed write is only reported if the future has none.
    let written = write_body(outgoing, body, timeout_ms);
    future.subscribe().block();
    let response = match future.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(describe(code, timeout_ms)),
        Some(Err(())) | None => return Err(Failure::Http("no response after waiting".into())),
    };
    written?;
    let status = response.status();
    let declared = response
        .headers()
        .get("content-length")
        .first()
        .and_then(|v| std::str::from_utf8(v).ok()?.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_ANSWER_BYTES as u64) {
        return Err(Failure::TooLarge(MAX_ANSWER_BYTES));
    }
    let incoming = response
        .consume()
        .map_err(|()| Failure::Http("the response body was already taken".into()))?;
    let bytes = read_bounded(&incoming, timeout_ms)?;
    drop(incoming);
    if !(200..300).contains(&status) {
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
        return Err(Failure::Status(status, text));
    }
    Ok(bytes)
}

fn write_body(outgoing: OutgoingBody, body: &str, timeout_ms: u64) -> Result<(), Failure> {
    {
        let stream = outgoing
            .write()
            .map_err(|()| Failure::Http("the request body stream was already taken".into()))?;
        for chunk in body.as_bytes().chunks(WRITE_CHUNK) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| stream_failure(e, timeout_ms))?;
        }
    }
    OutgoingBody::finish(outgoing, None).map_err(|code| describe(code, timeout_ms))
}

fn read_bounded(body: &IncomingBody, timeout_ms: u64) -> Result<Vec<u8>, Failure> {
    let stream = body
        .stream()
        .map_err(|()| Failure::Http("the response stream was already taken".into()))?;
    let mut bytes = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err(Failure::TooLarge(MAX_ANSWER_BYTES));
                }
                bytes.extend_from_slice(&chunk);
            }
            Err(StreamError::Closed) => return Ok(bytes),
            Err(e) => return Err(stream_failure(e, timeout_ms)),
        }
    }
}

fn stream_failure(error: StreamError, timeout_ms: u64) -> Failure {
    match error {
        StreamError::Closed => Failure::Http("the connection closed early".into()),
        StreamError::LastOperationFailed(e) => match wasi::http::types::http_error_code(&e) {
            Some(code) => describe(code, timeout_ms),
            None => Failure::Http(e.to_debug_string()),
        },
    }
}

/// The host's error code as a failure; the timeouts and the host's refusals get their
/// own wording, since they are what an operator has to act on.
fn describe(code: ErrorCode, timeout_ms: u64) -> Failure {
    match code {
        ErrorCode::ConnectionTimeout
        | ErrorCode::ConnectionReadTimeout
        | ErrorCode::ConnectionWriteTimeout
        | ErrorCode::DnsTimeout
        | ErrorCode::HttpResponseTimeout => Failure::Timeout(timeout_ms),
        ErrorCode::HttpRequestDenied => Failure::Http(
            "the host refused the request: the endpoint is not in the plugin's allowed hosts (plugins.extract-llm.allowedHosts)".into(),
        ),
        ErrorCode::DestinationIpProhibited => Failure::Http(
            "the host refused the request: the endpoint resolves to a private address (list it in plugins.extract-llm.privateHosts, or use its IP address in allowedHosts)".into(),
        ),
        other => Failure::Http(format!("{other:?}")),
    }
}
