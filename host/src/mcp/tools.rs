//! The MCP tools, each specified once here: name, description (written for a model),
//! JSON Schema of its arguments, annotations, and the service call it makes. Where a
//! tool does what a host tool does (`memory_search` is `search_memory`, `memory_add`
//! is `save_memory`, `skill_read`'s file is `read_skill_file`), its description and
//! schema are the host tool's (`crate::tools::HOST_TOOLS`) with the MCP additions,
//! and its arguments are read by the same function.
//!
//! Every tool may name a `user` where the REST API takes one; otherwise the session's
//! user (`mcp.user`, default `default`) is used. Calls block (SQLite, files, plugins),
//! so the server runs them on the blocking pool; a search waits there for its turn on
//! the memory service's search lanes, as REST's do.

use std::sync::Arc;

use engram_strategies::model::{MemoryType, Role};
use rmcp::model::{Tool, ToolAnnotations};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::failure::Failure;
use crate::app::App;
use crate::gate::Caller;
use crate::memory::ListFilter;
use crate::memory::MAX_MESSAGE_BYTES;
use crate::memory::MemoryError;
use crate::memory::record::wire_opt;
use crate::strict_json::ShapeError;
use crate::turns::input::{Channel, ConversationId, Text, User};
use crate::turns::{Invoke, Message};

/// The channel turns opened over MCP are recorded with.
pub const CHANNEL: &str = "mcp";

/// `memory_recent`: default and largest page.
const RECENT_DEFAULT: usize = 10;
const RECENT_MAX: usize = 500;
/// `conversation_log`: the most messages one call records.
const LOG_MAX_MESSAGES: usize = 100;

type RunFn = fn(&App, &str, Map<String, Value>) -> Result<Value, Failure>;

/// One MCP tool.
pub struct McpTool {
    pub name: &'static str,
    description: fn() -> String,
    schema: fn() -> Value,
    /// Read-only, destructive, idempotent hints for clients deciding whether to ask.
    hints: (bool, bool, bool),
    /// Whether the tool takes `user` (where the REST API does: memory and turns).
    takes_user: bool,
    run: RunFn,
}

impl McpTool {
    /// The tool as `tools/list` shows it.
    pub fn describe(&self) -> Tool {
        let mut schema = (self.schema)();
        if self.takes_user
            && let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut)
        {
            properties.insert("user".into(), user_property());
        }
        let schema = match schema {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let (read_only, destructive, idempotent) = self.hints;
        Tool::new(self.name, (self.description)(), Arc::new(schema)).with_annotations(
            ToolAnnotations::new()
                .read_only(read_only)
                .destructive(destructive)
                .idempotent(idempotent)
                .open_world(false),
        )
    }

    /// The user the call acts for and the rest of its arguments (`None` when it gave
    /// none): the `user` it names, when the tool takes one, else the session's
    /// `session_user`.
    pub fn user(
        &self,
        session_user: &str,
        args: Option<Map<String, Value>>,
    ) -> Result<(String, Map<String, Value>), Failure> {
        let mut args = args.unwrap_or_default();
        if !self.takes_user {
            return Ok((session_user.to_string(), args));
        }
        let user = match args.remove("user") {
            None | Some(Value::Null) => session_user.to_string(),
            Some(Value::String(named)) => crate::memory::user_or_default(Some(&named))
                .map_err(|reason| Failure::invalid("user", reason))?,
            Some(_) => return Err(Failure::invalid("user", "must be a string")),
        };
        Ok((user, args))
    }

    /// Runs the tool for `user` (see [`McpTool::user`]) with the rest of its
    /// arguments. Blocks.
    pub fn run(&self, app: &App, user: &str, args: Map<String, Value>) -> Result<Value, Failure> {
        (self.run)(app, user, args)
    }
}

/// Every MCP tool, in the order `tools/list` gives them.
pub const TOOLS: &[McpTool] = &[
    McpTool {
        name: "memory_context",
        description: || {
            "Call this first for every new user message. It routes the message to a skill, \
             retrieves what Engram remembers that is relevant (`memory_block`: put it in your \
             context before answering), opens a turn and returns its `turn_id`. When a skill \
             is invoked, `invoked.body` is its guidance: follow it; `grants` says which tools \
             the skill may use in this turn (check others with `tool_authorize`). Pass \
             `conversation_id` to have the message recorded so the Second Brain learns from \
             it, and end the turn with `turn_end` (with your reply) when you are done."
                .to_string()
        },
        schema: || {
            object(
                json!({
                    "message": {"type": "string", "minLength": 1, "description": format!("The user's message, as they wrote it (at most {MAX_MESSAGE_BYTES} bytes). `/slug rest` invokes the skill `slug`.")},
                    "conversation_id": {"type": "string", "minLength": 1, "description": "Your id for this conversation; when given, the message is recorded in it (and the reply at `turn_end`)."},
                    "skill": {"type": "string", "minLength": 1, "description": "Invoke this skill (its slug) whatever the router would pick."},
                }),
                &["message"],
            )
        },
        hints: (false, false, false),
        takes_user: true,
        run: memory_context,
    },
    McpTool {
        name: "memory_search",
        description: || {
            host_description(
                "search_memory",
                "Use it when the user refers to something they told you before, or before \
                 asking them something you may already know.",
            )
        },
        schema: || host_schema("search_memory"),
        hints: (true, false, true),
        takes_user: true,
        run: memory_search,
    },
    McpTool {
        name: "memory_add",
        description: || {
            host_description(
                "save_memory",
                "Only what the user said or confirmed about themselves (facts, preferences, \
                 goals, projects, relationships), one fact per call, in a short sentence.",
            )
        },
        schema: || host_schema("save_memory"),
        hints: (false, false, false),
        takes_user: true,
        run: memory_add,
    },
    McpTool {
        name: "memory_recent",
        description: || {
            "The user's most recently changed memories, newest first, with their ids (for \
             `memory_forget`). Use `memory_search` to find something specific."
                .to_string()
        },
        schema: || {
            object(
                json!({
                    "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": RECENT_MAX, "description": format!("How many at most (default {RECENT_DEFAULT}).")},
                    "type": {"type": ["string", "null"], "enum": memory_types(), "description": "Only memories of this type."},
                    "cursor": {"type": ["string", "null"], "description": "`next_cursor` of the previous page."},
                }),
                &[],
            )
        },
        hints: (true, false, true),
        takes_user: true,
        run: memory_recent,
    },
    McpTool {
        name: "memory_update",
        description: || {
            "Correct or update one memory, by its id (`mem_...`), when the user says it is \
             wrong or has changed. Give only the fields that change. A new summary is read \
             like any new fact: if it states a new value of something that has one value at a \
             time (a phone number, an employer, a city, a favourite), it replaces the other \
             live memory that states the old one. The answer is the memory as stored."
                .to_string()
        },
        schema: || {
            let mut schema = serde_json::to_value(
                <crate::api::memory::EditMemory as utoipa::PartialSchema>::schema(),
            )
            .unwrap_or_else(|_| json!({"type": "object", "properties": {}}));
            if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
                properties.insert(
                    "id".into(),
                    json!({"type": "string", "minLength": 1, "description": "The memory's id (`mem_...`)."}),
                );
            }
            schema["required"] = json!(["id"]);
            schema
        },
        hints: (false, false, true),
        takes_user: true,
        run: memory_update,
    },
    McpTool {
        name: "memory_forget",
        description: || {
            "Delete one memory, by its id (`mem_...`, from `memory_search`, \
             `memory_recent` or `memory_context`), only when the user asks you to forget it \
             or says it is wrong. It is gone from search and context at once; the user can \
             restore it for a few days (`restorable_until` in the answer), after which it is \
             forgotten for good, with what the user said that it was learned from unless \
             `keep_messages` is true. You may delete only a few memories per hour \
             (`agent-delete-limit` past that); never delete memories in bulk."
                .to_string()
        },
        schema: || {
            object(
                json!({
                    "id": {"type": "string", "minLength": 1, "description": "The memory's id (`mem_...`)."},
                    "keep_messages": {"type": ["boolean", "null"], "description": "Keep the messages it was learned from (default false: they are redacted with it)."},
                }),
                &["id"],
            )
        },
        hints: (false, true, false),
        takes_user: true,
        run: memory_forget,
    },
    McpTool {
        name: "conversation_forget",
        description: || {
            "Delete a whole conversation and every message of it, by the `conversation_id` \
             you gave it. For when the user asks you to forget a conversation; memories \
             already learned from it stay (forget them with `memory_forget`). It cannot be \
             undone."
                .to_string()
        },
        schema: || {
            object(
                json!({"conversation_id": {"type": "string", "minLength": 1, "description": "The conversation's id."}}),
                &["conversation_id"],
            )
        },
        hints: (false, true, false),
        takes_user: true,
        run: conversation_forget,
    },
    McpTool {
        name: "conversation_log",
        description: || {
            "Record messages of a conversation so the Second Brain learns from them; with \
             `end: true` the conversation ends now and what it taught is extracted (it also \
             ends by itself after 10 idle minutes). Not needed for messages already given to \
             `memory_context` or replies given to `turn_end` with the same `conversation_id`."
                .to_string()
        },
        schema: || {
            object(
                json!({
                    "conversation_id": {"type": "string", "minLength": 1, "description": "Your id for this conversation."},
                    "messages": {
                        "type": "array",
                        "maxItems": LOG_MAX_MESSAGES,
                        "description": "The messages in order, oldest first.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "role": {"type": "string", "enum": ["user", "assistant", "system"]},
                                "content": {"type": "string", "minLength": 1, "description": format!("At most {MAX_MESSAGE_BYTES} bytes.")},
                            },
                            "required": ["role", "content"],
                            "additionalProperties": false,
                        },
                    },
                    "end": {"type": ["boolean", "null"], "description": "End the conversation after recording, and learn from it now."},
                }),
                &["conversation_id"],
            )
        },
        hints: (false, false, false),
        takes_user: true,
        run: conversation_log,
    },
    McpTool {
        name: "skills_list",
        description: || {
            "The active skills: slug, name, one-line summary, description, tags and the \
             tools each may use. `memory_context` already picks the skill a message needs; \
             use this to browse, and `skill_read` to read one."
                .to_string()
        },
        schema: || object(json!({}), &[]),
        hints: (true, false, true),
        takes_user: false,
        run: skills_list,
    },
    McpTool {
        name: "skill_read",
        description: || {
            // Not the host tool's description: that one reads the turn's invoked skill,
            // this one any active skill by its slug.
            "Read an active skill by its slug: its instructions (the SKILL.md body) and the \
             list of its files; with `path`, one of those files (under scripts/ or \
             references/) as text."
                .to_string()
        },
        schema: || {
            let mut path = host_schema("read_skill_file")["properties"]["path"].clone();
            if let Some(description) = path.get("description").and_then(Value::as_str) {
                path["description"] = json!(format!("{description} Omit it for the body."));
            }
            object(
                json!({
                    "slug": {"type": "string", "minLength": 1, "description": "The skill's slug."},
                    "path": path,
                }),
                &["slug"],
            )
        },
        hints: (true, false, true),
        takes_user: false,
        run: skill_read,
    },
    McpTool {
        name: "tool_authorize",
        description: || {
            "Ask Engram's permission gate before you run one of your own tools (a shell \
             command, a file edit, sending a message...) in a turn opened by \
             `memory_context`. Answers `allow`, `ask` (ask the user first) or `deny`, with a \
             reason code; every decision is written to the audit log."
                .to_string()
        },
        schema: || {
            object(
                json!({
                    "turn_id": {"type": "string", "minLength": 1, "description": "The turn (`turn_...`) from `memory_context`."},
                    "tool": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The tool's name as you call it (`Bash`, `Read`, `WebFetch`, `mcp__server__tool`, `run_command`, `send_message`, `cd`, ...)."},
                    "args": {"type": ["object", "null"], "description": "The call's arguments as you pass them (`Bash`: `{\"command\": ...}`, `WebFetch`: `{\"url\": ...}`): a skill's rule such as `Bash(git log:*)` is checked against them. Only a short summary is kept in the audit log."},
                }),
                &["turn_id", "tool"],
            )
        },
        hints: (false, false, false),
        takes_user: true,
        run: tool_authorize,
    },
    McpTool {
        name: "turn_end",
        description: || {
            "End the turn opened by `memory_context` once you have answered: its grants end, \
             and your reply is recorded in the conversation (when the turn has one) so the \
             Second Brain learns from it."
                .to_string()
        },
        schema: || {
            object(
                json!({
                    "turn_id": {"type": "string", "minLength": 1, "description": "The turn (`turn_...`)."},
                    "reply": {"type": ["string", "null"], "description": format!("Your reply to the user (at most {MAX_MESSAGE_BYTES} bytes).")},
                }),
                &["turn_id"],
            )
        },
        hints: (false, false, false),
        takes_user: true,
        run: turn_end,
    },
];

/// The tool `name`.
pub fn tool(name: &str) -> Option<&'static McpTool> {
    TOOLS.iter().find(|tool| tool.name == name)
}

// ---- schemas ------------------------------------------------------------------------

/// An object schema with `properties`, `required`, nothing else.
fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn user_property() -> Value {
    json!({
        "type": ["string", "null"],
        "minLength": 1,
        "maxLength": crate::memory::MAX_USER_LEN,
        "description": "Whose memory (default: this server's configured user, `mcp.user`, else `default`).",
    })
}

/// The host tool's argument schema.
fn host_schema(name: &str) -> Value {
    crate::tools::host_tool(name)
        .map(|tool| tool.args_schema())
        .unwrap_or_else(|| object(json!({}), &[]))
}

/// The host tool's description, then what an MCP client should know besides.
fn host_description(name: &str, more: &str) -> String {
    let base = crate::tools::host_tool(name)
        .map(|tool| tool.description)
        .unwrap_or_default();
    format!("{base} {more}")
}

fn memory_types() -> Vec<Value> {
    let mut types: Vec<Value> = MemoryType::ALL.iter().map(|t| json!(t.as_str())).collect();
    types.push(Value::Null);
    types
}

// ---- arguments ----------------------------------------------------------------------

/// Reads the arguments into `T` (unknown fields refused); errors name the field.
fn parse<T: DeserializeOwned>(args: Map<String, Value>) -> Result<T, Failure> {
    crate::strict_json::from_value(Value::Object(args)).map_err(|e| match e {
        ShapeError::UnknownField(field) => Failure::unknown_field(&field),
        ShapeError::Invalid { field, message } => Failure::invalid(&field, message),
    })
}

/// A required text argument that must not be blank.
fn not_blank(field: &str, value: &str) -> Result<(), Failure> {
    if value.trim().is_empty() {
        return Err(Failure::invalid(field, "must not be empty"));
    }
    Ok(())
}

// ---- the tools ----------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextArgs {
    message: String,
    conversation_id: Option<String>,
    skill: Option<String>,
}

fn memory_context(app: &App, user: &str, args: Map<String, Value>) -> Result<Value, Failure> {
    let args: ContextArgs = parse(args)?;
    let message = Message {
        user: User::parse(user)?,
        text: Text::parse("message", args.message)?,
        conversation_id: args
            .conversation_id
            .map(ConversationId::parse)
            .transpose()?,
        channel: Some(Channel::parse(CHANNEL)?),
        name: None,
        recall: true,
        opened_by: CHANNEL.to_string(),
    };
    let invoke = match &args.skill {
        Some(slug) => Invoke::Skill(slug),
        None => Invoke::Routed,
    };
    to_json(app.turns.open(message, invoke)?)
}

fn memory_search(app: &App, user: &str, args: Map<String, Value>) -> Result<Value, Failure> {
    let (q, limit, scope) =
        crate::tools::search_args(Value::Object(args)).map_err(Failure::from_host_args)?;
    let items = app.memory.search_hits(user, &q, limit, scope)?;
    Ok(json!({ "items": to_json(items)? }))
}

fn memory_add(app: &App, user: &str, args: Map<String, Value>) -> Result<Value, Failure> {
    let new = crate::tools::save_args(Value::Object(args)).map_err(Failure::from_host_args)?;
    to_json(app.memory.add(user, new)?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecentArgs {
    limit: Option<usize>,
    #[serde(default, rename = "type", with = "wire_opt")]
    memory_type: Option<MemoryType>,
    cursor: Option<String>,
}

fn memory_recent(app: &App, user: &str, args: Map<String, Value>) -> Result<Value, Failure> {
    let args: RecentArgs = parse(args)?;
    let limit = match args.limit {
        None => RECENT_DEFAULT,
        Some(n) if (1..=RECENT_MAX).contains(&n) => n,
        Some(_) => {
            return Err(Failure::invalid(
                "limit",
                format!("must be 1 to {RECENT_MAX}"),
            ));
        }
    };
    let page = app.memory.list(
        user,
        &ListFilter {
            conscious: None,
            memory_type: args.memory_type,
            limit,
            cursor: args.cursor,
        },
    )?;
    Ok(json!({ "items": to_json(page.items)?, "next_cursor": page.next_cursor }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgetArgs {
    id: String,
    keep_messages: Option<bool>,
}

fn memory_forget(app: &App, user: &str, args: Map<String, Value>) -> Result<Value, Failure> {
    let args: ForgetArgs = parse(args)?;
    not_blank("id", &args.id)?;
    to_json(app.turns.forget_for_agent(
        Caller::Mcp { user },
        &args.id,
        args.keep_messages.unwrap_or(false),
    )?)
}

fn memory_update(app: &App, user: &str, mut args: Map<String, Value>) -> Result<Value, Failure> {
    let id = match args.remove("id") {
        Some(Value::String(id)) => id,
        Some(_) => return Err(Failure::invalid("id", "must be a string")),
        None => return Err(Failure::invalid("id", "is required")),
    };
    not_blank("id", &id)?;
    let edit: crate::api::memory::EditMemory = parse(args)?;
    to_json(
        app.memory
            .brain()?
            .edit(user, &id, edit.into())
            .map_err(MemoryError::from)?,
    )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConversationArgs {
    conversation_id: String,
}

fn conversation_forget(app: &App, user: &str, args: Map<String, Value>) -> Result<Value, Failure> {
    let args: ConversationArgs = parse(args)?;
    not_blank("conversation_id", &args.conversation_id)?;
    let messages = app
        .memory
        .brain()?
        .delete_conversation(user, &args.conversation_id)
        .map_err(MemoryError::from)?;
    Ok(json!({ "conversation_id": args.conversation_id, "messages_deleted": messages }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LogArgs {
    conversation_id: String,
    #[serde(default)]
    messages: Vec<LoggedMessage>,
    end: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoggedMessage {
    role: String,
    content: String,
}

fn conversation_log(app: &App, user: &str, args: Map<String, Value>) -> Result<Value, Failure> {
    let args: LogArgs = parse(args)?;
    not_blank("conversation_id", &args.conversation_id)?;
    let end = args.end.unwrap_or(false);
    if args.messages.is_empty() && !end {
        return Err(Failure::invalid(
            "messages",
            "give at least one message, or `end: true`",
        ));
    }
    if args.messages.len() > LOG_MAX_MESSAGES {
        return Err(Failure::invalid(
            "messages",
            format!("at most {LOG_MAX_MESSAGES} messages per call"),
        ));
    }
    // Every message is checked before any is recorded: a bad one records nothing.
    let mut messages = Vec::with_capacity(args.messages.len());
    for (i, message) in args.messages.iter().enumerate() {
        let role = Role::parse(&message.role).ok_or_else(|| {
            Failure::invalid(
                &format!("messages[{i}].role"),
                format!(
                    "unknown role `{}`; expected user, assistant or system",
                    message.role
                ),
            )
        })?;
        not_blank(&format!("messages[{i}].content"), &message.content)?;
        if message.content.len() > MAX_MESSAGE_BYTES {
            return Err(Failure::invalid(
                &format!("messages[{i}].content"),
                format!("over the {MAX_MESSAGE_BYTES}-byte limit"),
            ));
        }
        messages.push((role, message.content.as_str()));
    }
    let brain = app.memory.brain()?;
    let mut recorded = Vec::with_capacity(messages.len());
    for (role, content) in messages {
        let id = brain
            .record_message(user, &args.conversation_id, role, None, content)
            .map_err(crate::memory::MemoryError::from)?;
        recorded.push(id);
    }
    let ended = if end {
        let ingested = brain
            .end_conversation(user, &args.conversation_id, &app.strategies)
            .map_err(crate::memory::MemoryError::from)?;
        Some(to_json(ingested)?)
    } else {
        None
    };
    Ok(json!({
        "conversation_id": args.conversation_id,
        "recorded": recorded,
        "ended": ended,
    }))
}

fn skills_list(app: &App, _user: &str, args: Map<String, Value>) -> Result<Value, Failure> {
    let _: Empty = parse(args)?;
    let (entries, _problems) = app.skills.catalog()?;
    let mut active: Vec<_> = entries.into_iter().filter(|e| e.active).collect();
    active.sort_by(|a, b| a.slug.cmp(&b.slug));
    Ok(json!({ "items": to_json(active)? }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillReadArgs {
    slug: String,
    path: Option<String>,
}

fn skill_read(app: &App, _user: &str, args: Map<String, Value>) -> Result<Value, Failure> {
    let args: SkillReadArgs = parse(args)?;
    not_blank("slug", &args.slug)?;
    // Only what the session may use: an inactive skill is refused like an unknown one
    // is (prompts and resources list active skills only).
    let skill = app.skills.invoke(&args.slug)?;
    match args.path {
        Some(path) => {
            let file = crate::tools::read_skill_file(&app.skills, &args.slug, &path).map_err(
                |e| match e {
                    // The shared reader names its argument `args.path`; here it is `path`.
                    crate::tools::ToolError::InvalidArg { reason, .. } => {
                        Failure::invalid("path", reason)
                    }
                    other => other.into(),
                },
            )?;
            Ok(json!({ "slug": args.slug, "file": file }))
        }
        None => Ok(json!({
            "slug": args.slug,
            "id": skill.id.to_string(),
            "name": skill.name,
            "body": skill.body,
            "allowed_tools": skill.allowed_tools,
            "files": skill.resources,
        })),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthorizeArgs {
    turn_id: String,
    tool: String,
    #[serde(default)]
    args: Value,
}

fn tool_authorize(app: &App, user: &str, args: Map<String, Value>) -> Result<Value, Failure> {
    let args: AuthorizeArgs = parse(args)?;
    not_blank("turn_id", &args.turn_id)?;
    if !matches!(args.args, Value::Null | Value::Object(_)) {
        return Err(Failure::invalid("args", "must be an object"));
    }
    let decision =
        app.turns
            .authorize(Caller::Mcp { user }, &args.turn_id, &args.tool, &args.args)?;
    to_json(decision)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EndArgs {
    turn_id: String,
    reply: Option<String>,
}

fn turn_end(app: &App, user: &str, args: Map<String, Value>) -> Result<Value, Failure> {
    let args: EndArgs = parse(args)?;
    not_blank("turn_id", &args.turn_id)?;
    to_json(app.turns.end(&args.turn_id, user, args.reply.as_deref())?)
}

/// A result as JSON, numbers as the REST API writes them: through the serialiser,
/// which writes an f32 by its shortest form (`0.8`), where `to_value` would widen it to
/// f64 first (`0.800000011920929`).
fn to_json(value: impl serde::Serialize) -> Result<Value, Failure> {
    serde_json::to_vec(&value)
        .and_then(|bytes| serde_json::from_slice(&bytes))
        .map_err(|e| Failure::internal("serialising a result", &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A confidence of 0.8 reads 0.8 here as over REST, not 0.800000011920929.
    #[test]
    fn results_carry_numbers_as_the_rest_api_writes_them() {
        #[derive(serde::Serialize)]
        struct Scored {
            confidence: f32,
        }
        let value = to_json(Scored { confidence: 0.8 }).expect("json");
        assert_eq!(value.to_string(), r#"{"confidence":0.8}"#);
        assert_eq!(
            value.to_string(),
            serde_json::to_string(&Scored { confidence: 0.8 }).expect("rest")
        );
    }

    /// skill_read reads any active skill by slug: its description must not say it
    /// reads only the invoked skill's files (the host tool's words).
    #[test]
    fn skill_read_says_one_thing() {
        let tool = TOOLS
            .iter()
            .find(|t| t.name == "skill_read")
            .expect("skill_read");
        let description = (tool.description)();
        assert!(
            description.contains("active skill by its slug"),
            "{description}"
        );
        assert!(!description.contains("invoked"), "{description}");
    }
}
