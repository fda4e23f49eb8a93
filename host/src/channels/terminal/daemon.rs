//! The daemon's side of `engram chat`: while `engram serve` holds the data directory,
//! `engram chat` opens a session here and sends each line, so every conversation, memory
//! and skill change goes through the daemon's own services (a memory cleared in chat is
//! gone from the daemon's search at once; one learned in chat is searchable at once).
//! The person's only: the operator token or a dashboard session (the agent's token is
//! 403 `person-required`).
//!
//! - `POST /chat/sessions {user}` opens a session: `{session, user, model, no_model}`.
//! - `POST /chat/sessions/{id}/messages {text}`: the answer as JSON lines ([`Event`]):
//!   pieces of text, tool lines, questions, a closing line. A question waits for
//!   `POST /chat/sessions/{id}/answers {ask, yes}`; closing the stream stops the answer
//!   (the terminal's Ctrl-C), and no answer within 5 minutes is a no.
//! - `POST .../memory {key, query?, id?, keep_messages, confirmed}`, `.../skills {line}`,
//!   `.../new`: the commands, answered `{text, confirm, picks?}`.
//! - `DELETE /chat/sessions/{id}`: the conversation ends (learned from).
//!
//! Sessions live in memory, at most [`MAX_SESSIONS`] (the least recently used goes:
//! its conversation ends on its own after the idle time, as any does).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::StreamExt;

use super::super::memory_command::{Action, Choice, MemoryReply, Pick};
use super::session::{Closing, Session};
use crate::agent::{Ask, ChatIo, ToolEvent};
use crate::api::auth::{Auth, require_auth};
use crate::app::App;
use crate::credentials::{PersonAct, Principal};

/// Where the routes are.
pub const PATH: &str = "/chat";
/// Sessions kept at once.
pub const MAX_SESSIONS: usize = 16;
/// How long a question waits for the person's answer.
const ANSWER_WAIT: Duration = Duration::from_secs(5 * 60);

/// One piece of an answer, a JSON line of the stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// Text of the answer as it streams in.
    Text(String),
    /// A tool call ran, was refused or failed (one line).
    Tool(String),
    /// The gate asks: the question to put, and the id its answer names.
    Ask { id: String, question: String },
    /// Shown after the answer, as the stream's last line.
    Closing(Closing),
}

/// `POST /chat/sessions`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Opened {
    pub session: String,
    pub user: String,
    /// The model's name; `null` with `no_model` saying why.
    pub model: Option<String>,
    pub no_model: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenSession {
    pub user: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageLine {
    pub text: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub ask: String,
    pub yes: bool,
}

/// A `/memory` entry: its key (`overview`, `recent`, ..., `search` with `query`,
/// `forget` with `query` to find the memory by or the picked memory's `id`),
/// `confirmed` for Clear and Forget once the person said yes.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryLine {
    pub key: String,
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub keep_messages: bool,
    #[serde(default)]
    pub confirmed: bool,
}

impl MemoryLine {
    /// The line that asks for `action`.
    pub fn of(action: Action) -> MemoryLine {
        let line = |key: Choice| MemoryLine {
            key: key.key().to_string(),
            query: None,
            id: None,
            keep_messages: false,
            confirmed: false,
        };
        match action {
            Action::Overview => line(Choice::Overview),
            Action::Recent => line(Choice::Recent),
            Action::Subconscious => line(Choice::Subconscious),
            Action::Search(query) => MemoryLine {
                query: Some(query),
                ..line(Choice::Search)
            },
            Action::Pause => line(Choice::Pause),
            Action::Resume => line(Choice::Resume),
            Action::Clear => line(Choice::Clear),
            Action::ClearConfirmed => MemoryLine {
                confirmed: true,
                ..line(Choice::Clear)
            },
            Action::Forget(query) => MemoryLine {
                query: Some(query),
                ..line(Choice::Forget)
            },
            Action::ForgetOne {
                id,
                keep_messages,
                confirmed,
            } => MemoryLine {
                id: Some(id),
                keep_messages,
                confirmed,
                ..line(Choice::Forget)
            },
        }
    }

    /// The action it asks for.
    fn action(self) -> Result<Action, String> {
        let choice = Choice::parse(&self.key)
            .ok_or_else(|| format!("key: no /memory entry `{}`", self.key))?;
        Ok(match (choice, self.id) {
            (Choice::Clear, _) if self.confirmed => Action::ClearConfirmed,
            (Choice::Search, _) => Action::Search(self.query.unwrap_or_default()),
            (Choice::Forget, Some(id)) => Action::ForgetOne {
                id,
                keep_messages: self.keep_messages,
                confirmed: self.confirmed,
            },
            (Choice::Forget, None) => Action::Forget(self.query.unwrap_or_default()),
            (choice, _) => choice
                .action()
                .ok_or_else(|| "key: this entry needs more".to_string())?,
        })
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsLine {
    pub line: String,
}

/// What a command answers.
#[derive(Debug, Serialize, Deserialize)]
pub struct Said {
    pub text: String,
    /// The person must say yes first (Clear, Forget): ask, then send it again confirmed.
    #[serde(default)]
    pub confirm: bool,
    /// Memories to pick one of (Forget).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub picks: Vec<Pick>,
}

impl Said {
    pub fn text(text: String) -> Said {
        Said {
            text,
            confirm: false,
            picks: Vec::new(),
        }
    }
}

impl From<MemoryReply> for Said {
    fn from(reply: MemoryReply) -> Said {
        Said {
            text: reply.text,
            confirm: reply.confirm,
            picks: reply.picks,
        }
    }
}

impl From<Said> for MemoryReply {
    fn from(said: Said) -> MemoryReply {
        MemoryReply {
            text: said.text,
            confirm: said.confirm,
            picks: said.picks,
        }
    }
}

/// The open sessions.
#[derive(Clone, Default)]
pub struct Sessions(Arc<Mutex<HashMap<String, Arc<Entry>>>>);

struct Entry {
    /// The conversation; one line at a time.
    session: tokio::sync::Mutex<Session>,
    /// Questions waiting for an answer, by id.
    pending: Mutex<HashMap<String, oneshot::Sender<bool>>>,
    used: Mutex<Instant>,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Entry>>> {
        // The map holds no invariant a panicking holder could break.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn open(&self, session: Session) -> String {
        let id = crate::ids::new_id("chat");
        let mut map = self.lock();
        if map.len() >= MAX_SESSIONS
            && let Some(oldest) = map
                .iter()
                .min_by_key(|(_, e)| *e.used.lock().unwrap_or_else(|p| p.into_inner()))
                .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(
            id.clone(),
            Arc::new(Entry {
                session: tokio::sync::Mutex::new(session),
                pending: Mutex::default(),
                used: Mutex::new(Instant::now()),
            }),
        );
        id
    }

    fn get(&self, id: &str) -> Result<Arc<Entry>, Refused> {
        let entry = self
            .lock()
            .get(id)
            .cloned()
            .ok_or(Refused::UnknownSession)?;
        *entry.used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        Ok(entry)
    }
}

#[derive(Clone)]
struct ChatState {
    app: Arc<App>,
    sessions: Sessions,
}

/// The `/chat` routes, behind the daemon's authentication and for the person only.
pub fn router(app: Arc<App>, auth: Auth, sessions: Sessions) -> Router {
    Router::new()
        .route(&format!("{PATH}/sessions"), post(open_session))
        .route(
            &format!("{PATH}/sessions/{{id}}"),
            axum::routing::delete(end_session),
        )
        .route(&format!("{PATH}/sessions/{{id}}/messages"), post(message))
        .route(&format!("{PATH}/sessions/{{id}}/answers"), post(answer))
        .route(&format!("{PATH}/sessions/{{id}}/memory"), post(memory))
        .route(&format!("{PATH}/sessions/{{id}}/skills"), post(skills))
        .route(
            &format!("{PATH}/sessions/{{id}}/new"),
            post(new_conversation),
        )
        .with_state(ChatState { app, sessions })
        .layer(axum::extract::DefaultBodyLimit::max(
            crate::api::extract::MAX_BODY_BYTES,
        ))
        .layer(axum::middleware::from_fn(person_only))
        .layer(axum::middleware::from_fn_with_state(auth, require_auth))
}

/// Only the person chats through the daemon: the agent's token is refused.
async fn person_only(request: Request, next: Next) -> Response {
    match request.extensions().get::<Principal>() {
        Some(principal) if principal.is_person() => next.run(request).await,
        _ => Refused::Person.into_response(),
    }
}

/// Why a `/chat` request is refused: `{code, detail}`.
enum Refused {
    Person,
    UnknownSession,
    Invalid(String),
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let (status, code, detail) = match self {
            Refused::Person => (
                StatusCode::FORBIDDEN,
                crate::credentials::PersonRequired::CODE,
                crate::credentials::PersonRequired {
                    act: PersonAct::Chat,
                }
                .to_string(),
            ),
            Refused::UnknownSession => (
                StatusCode::NOT_FOUND,
                "unknown-session",
                "no such chat session (the daemon restarted, or it was ended); start `engram chat` again".to_string(),
            ),
            Refused::Invalid(detail) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid-field", detail),
        };
        (
            status,
            Json(serde_json::json!({"code": code, "detail": detail})),
        )
            .into_response()
    }
}

async fn open_session(
    State(state): State<ChatState>,
    Json(body): Json<OpenSession>,
) -> Result<(StatusCode, Json<Opened>), Refused> {
    let user = crate::memory::user_or_default(body.user.as_deref())
        .map_err(|reason| Refused::Invalid(format!("user: {reason}")))?;
    let session = Session::new(state.app.clone(), user.clone());
    let (model, no_model) = match session.model() {
        Ok(name) => (Some(name), None),
        Err(why) => (None, Some(why)),
    };
    let id = state.sessions.open(session);
    Ok((
        StatusCode::CREATED,
        Json(Opened {
            session: id,
            user,
            model,
            no_model,
        }),
    ))
}

async fn end_session(
    State(state): State<ChatState>,
    Path(id): Path<String>,
) -> Result<Json<Said>, Refused> {
    let entry = state.sessions.get(&id)?;
    state.sessions.lock().remove(&id);
    let text = entry.session.lock().await.new_conversation("Bye.").await;
    Ok(Json(Said::text(text)))
}

async fn new_conversation(
    State(state): State<ChatState>,
    Path(id): Path<String>,
) -> Result<Json<Said>, Refused> {
    let entry = state.sessions.get(&id)?;
    let text = entry
        .session
        .lock()
        .await
        .new_conversation("New conversation.")
        .await;
    Ok(Json(Said::text(text)))
}

async fn memory(
    State(state): State<ChatState>,
    Path(id): Path<String>,
    Json(body): Json<MemoryLine>,
) -> Result<Json<Said>, Refused> {
    let entry = state.sessions.get(&id)?;
    let action = body.action().map_err(Refused::Invalid)?;
    let reply = entry.session.lock().await.memory(action).await;
    Ok(Json(reply.into()))
}

async fn skills(
    State(state): State<ChatState>,
    Path(id): Path<String>,
    Json(body): Json<SkillsLine>,
) -> Result<Json<Said>, Refused> {
    let entry = state.sessions.get(&id)?;
    let text = entry.session.lock().await.skills(&body.line).await;
    Ok(Json(Said::text(text)))
}

async fn answer(
    State(state): State<ChatState>,
    Path(id): Path<String>,
    Json(body): Json<Answer>,
) -> Result<StatusCode, Refused> {
    let entry = state.sessions.get(&id)?;
    let waiting = entry
        .pending
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&body.ask);
    match waiting {
        Some(answer) => {
            let _ = answer.send(body.yes);
            Ok(StatusCode::NO_CONTENT)
        }
        None => Err(Refused::Invalid(format!(
            "ask: no question `{}` is waiting",
            body.ask
        ))),
    }
}

/// A message: the answer streamed as JSON lines while the agent works on it, off the
/// request's own task so that the stream can end it.
async fn message(
    State(state): State<ChatState>,
    Path(id): Path<String>,
    Json(body): Json<MessageLine>,
) -> Result<Response, Refused> {
    let entry = state.sessions.get(&id)?;
    let (events, stream) = mpsc::unbounded_channel::<Event>();
    tokio::spawn(async move {
        let mut session = entry.session.lock().await;
        let mut io = Streamed {
            events: events.clone(),
            entry: entry.clone(),
        };
        // The person closing the stream (Ctrl-C) stops the answer.
        let closed = events.clone();
        let interrupt = async move { closed.closed().await };
        if let Some(closing) = session.message(&body.text, &mut io, interrupt).await {
            let _ = events.send(Event::Closing(closing));
        }
    });
    let lines = tokio_stream::wrappers::UnboundedReceiverStream::new(stream).map(|event| {
        let mut line = serde_json::to_vec(&event).unwrap_or_default();
        line.push(b'\n');
        Ok::<_, std::convert::Infallible>(axum::body::Bytes::from(line))
    });
    Ok((
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(lines),
    )
        .into_response())
}

/// The daemon's side of a remote terminal's turn: each piece sent as an [`Event`].
struct Streamed {
    events: mpsc::UnboundedSender<Event>,
    entry: Arc<Entry>,
}

impl ChatIo for Streamed {
    fn text(&mut self, piece: &str) {
        let _ = self.events.send(Event::Text(piece.to_string()));
    }

    fn tool(&mut self, event: &ToolEvent) {
        let _ = self.events.send(Event::Tool(event.line()));
    }

    async fn approve(&mut self, ask: &Ask) -> bool {
        let id = crate::ids::new_id("ap");
        let (answer, answered) = oneshot::channel();
        self.entry
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), answer);
        let question = format!("Allow {}? ({})", ask.summary(), ask.reason_shown());
        let asked = self.events.send(Event::Ask {
            id: id.clone(),
            question,
        });
        let yes = match asked {
            Ok(()) => tokio::select! {
                answer = tokio::time::timeout(ANSWER_WAIT, answered) => matches!(answer, Ok(Ok(true))),
                () = self.events.closed() => false,
            },
            Err(_) => false,
        };
        self.entry
            .pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        yes
    }
}
