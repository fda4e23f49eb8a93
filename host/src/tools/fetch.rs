//! `fetch_url {url}`: a page or file over http(s), through the same fetcher as skill
//! installs (`crate::net`: resolved addresses checked and pinned, loopback and
//! private addresses refused unless `network.allowPrivate`), as text.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{HostTools, ToolContext, ToolError, tool_args};
use crate::net::{self, FetchError, NetPolicy};

/// The largest body fetched, and the most text returned of it.
pub const FETCH_MAX_BYTES: usize = 2 * 1024 * 1024;
pub const FETCH_MAX_TEXT_CHARS: usize = 100_000;
const MAX_URL_BYTES: usize = 4096;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FetchArgs {
    url: String,
}

pub(super) fn args_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "url": {
                "type": "string",
                "minLength": 1,
                "description": format!("An http:// or https:// URL (at most {MAX_URL_BYTES} bytes)."),
            },
        },
        "required": ["url"],
        "additionalProperties": false,
    })
}

pub(super) fn run(
    tools: &HostTools,
    _context: &ToolContext,
    args: Value,
    left: Option<Duration>,
) -> Result<Value, ToolError> {
    let allow_private = tools
        .config
        .current()
        .network
        .allow_private
        .unwrap_or(false);
    // The thread is the runtime's (a blocking-pool thread, as every caller of this
    // is); `block_on` waits here for the fetch, which is bounded by its own time limit
    // and by the caller's deadline.
    let runtime =
        tokio::runtime::Handle::try_current().map_err(|_| ToolError::NoRuntime("fetch_url"))?;
    runtime.block_on(fetch_url(args, allow_private, left))
}

/// Fetches `args.url`. `left`, when given, is the caller's time left: the whole
/// fetch gets no more than that (nor more than the fetcher's own limit).
async fn fetch_url(
    args: Value,
    allow_private: bool,
    left: Option<Duration>,
) -> Result<Value, ToolError> {
    let args: FetchArgs = tool_args(args)?;
    if args.url.len() > MAX_URL_BYTES {
        return Err(ToolError::invalid(
            "args.url",
            format!("longer than {MAX_URL_BYTES} bytes"),
        ));
    }
    let defaults = NetPolicy::for_url(allow_private, FETCH_MAX_BYTES);
    let policy = NetPolicy {
        timeout: left.map_or(defaults.timeout, |left| left.min(defaults.timeout)),
        ..defaults
    };
    let fetched = match net::get(&args.url, &policy).await {
        Ok(fetched) => fetched,
        // The server answered: the caller gets the status, not an error.
        Err(FetchError::Status { url, status }) => {
            return Ok(json!({
                "url": url, "status": status, "content_type": null,
                "text": "", "truncated": false, "bytes": 0,
            }));
        }
        Err(e) => return Err(e.into()),
    };
    let text = String::from_utf8_lossy(&fetched.bytes);
    let truncated = text.chars().nth(FETCH_MAX_TEXT_CHARS).is_some();
    let text: String = text.chars().take(FETCH_MAX_TEXT_CHARS).collect();
    Ok(json!({
        "url": fetched.url.to_string(),
        "status": fetched.status,
        "content_type": fetched.content_type,
        "text": text,
        "truncated": truncated,
        "bytes": fetched.bytes.len(),
    }))
}
