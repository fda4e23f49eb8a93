//! `save_memory` and `search_memory`: the turn's user's memories, in the Second Brain
//! or the fact store, whichever is in use.

use std::time::Duration;

use engram_strategies::model::Evidence;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{HostTools, ToolContext, ToolError, to_value, tool_args};
use crate::memory::{NewMemory, SearchScope};

/// `search_memory`: the longest query, and the default and largest `limit`.
const SEARCH_MAX_QUERY_BYTES: usize = 1000;
const SEARCH_DEFAULT: usize = 10;
const SEARCH_MAX: usize = 50;

/// `{type, summary, detail?, ...}`: the body of `POST /api/brain/memory`, read by the
/// same type, so the schema is that type's own (less its description, which is the
/// route's; the tool's is in [`super::HOST_TOOLS`]).
pub(super) fn save_schema() -> Value {
    let schema = <NewMemory as utoipa::PartialSchema>::schema();
    let mut schema = serde_json::to_value(schema).expect("a derived schema serialises");
    if let Some(object) = schema.as_object_mut() {
        object.remove("description");
    }
    schema
}

pub(super) fn save(
    tools: &HostTools,
    context: &ToolContext,
    args: Value,
    _left: Option<Duration>,
) -> Result<Value, ToolError> {
    let record = tools.memory.add(context.user, save_args(args)?)?;
    to_value(record)
}

/// `save_memory`'s arguments read as the memory to add (every caller that saves what
/// an agent was told reads them here).
pub fn save_args(args: Value) -> Result<NewMemory, ToolError> {
    let mut new: NewMemory = tool_args(args)?;
    // What an agent saves, it was told by the user.
    new.evidence = Some(Evidence::Direct);
    Ok(new)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SearchArgs {
    q: String,
    limit: Option<usize>,
    /// Default `all`: the agent asks to recall, whichever tier has it.
    scope: Option<SearchScope>,
}

pub(super) fn search_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "q": {
                "type": "string",
                "minLength": 1,
                "description": format!("What to look for, in words (at most {SEARCH_MAX_QUERY_BYTES} bytes)."),
            },
            "limit": {
                "type": ["integer", "null"],
                "minimum": 1,
                "maximum": SEARCH_MAX,
                "description": format!("How many results to return at most (default {SEARCH_DEFAULT})."),
            },
            "scope": {
                "type": ["string", "null"],
                "enum": ["memories", "conversations", "all", null],
                "description": "Where to look: `memories` (what was learned), `conversations` (what was said) or `all` (both, ranked together; the default).",
            },
        },
        "required": ["q"],
        "additionalProperties": false,
    })
}

pub(super) fn search(
    tools: &HostTools,
    context: &ToolContext,
    args: Value,
    _left: Option<Duration>,
) -> Result<Value, ToolError> {
    let (q, limit, scope) = search_args(args)?;
    let items = tools.memory.search_hits(context.user, &q, limit, scope)?;
    Ok(json!({ "items": to_value(items)? }))
}

/// `search_memory`'s arguments, checked: the query, how many results at most, and
/// where to look.
pub fn search_args(args: Value) -> Result<(String, usize, SearchScope), ToolError> {
    let args: SearchArgs = tool_args(args)?;
    if args.q.trim().is_empty() || args.q.len() > SEARCH_MAX_QUERY_BYTES {
        return Err(ToolError::invalid(
            "args.q",
            format!("must be 1 to {SEARCH_MAX_QUERY_BYTES} bytes"),
        ));
    }
    let limit = match args.limit {
        None => SEARCH_DEFAULT,
        Some(n) if (1..=SEARCH_MAX).contains(&n) => n,
        Some(_) => {
            return Err(ToolError::invalid(
                "args.limit",
                format!("must be 1 to {SEARCH_MAX}"),
            ));
        }
    };
    Ok((args.q, limit, args.scope.unwrap_or(SearchScope::All)))
}
