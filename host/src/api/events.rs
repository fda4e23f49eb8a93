//! `GET /api/events`: the event bus as server-sent events, one user's events (and the
//! host-wide skill events) per stream. Each SSE message has the event's kind as its
//! `event:` name and the event as JSON `data:`; a subscriber that fell behind gets an
//! `events.lagged` message saying how many it missed.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use tokio::sync::watch;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::{BroadcastStream, WatchStream};
use tokio_stream::{Stream, StreamExt};

use super::error::ApiError;
use super::extract::{Acting, ApiQuery, UserQuery};
use crate::app::App;

/// Turns `true` when the daemon is shutting down. Event streams never end on their
/// own, and a graceful shutdown waits for open responses, so each stream ends itself
/// when this turns.
#[derive(Clone)]
pub struct Shutdown(pub watch::Receiver<bool>);

/// Comment sent when nothing happened for this long, so that proxies and clients
/// keep the connection open and notice a dead daemon.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

#[utoipa::path(get, path = "/api/events", tag = "events",
    summary = "Server-sent events",
    description = "Event names: memory.created, memory.updated, memory.deleted, consolidation.completed, learning.paused, learning.resumed, skill.installed, skill.removed, skill.activated, skill.deactivated, schedule.fired, schedule.failed (and events.lagged when the stream fell behind). Data: `{\"kind\", \"user\", \"data\": {...}}`; memory events carry the memory id and the history event (ADD, UPDATE, REINFORCE, ...). Skill events are host-wide (`user` is `*`, every stream gets them) and carry the skill's slug, id, name, version and source kind.",
    params(UserQuery),
    responses((status = 200, content_type = "text/event-stream", body = String)))]
pub async fn events(
    State(app): State<Arc<App>>,
    acting: Acting,
    Extension(Shutdown(shutdown)): Extension<Shutdown>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let user = acting.user(query.user.as_deref())?;
    let events = BroadcastStream::new(app.events.subscribe()).filter_map(move |item| match item {
        Ok(event) if event.user == user || event.kind.is_host_wide() => Some(Some(
            SseEvent::default()
                .event(event.kind.as_str())
                .data(serde_json::to_string(&event).unwrap_or_default()),
        )),
        Ok(_) => None,
        Err(BroadcastStreamRecvError::Lagged(missed)) => Some(Some(
            SseEvent::default()
                .event("events.lagged")
                .data(serde_json::json!({ "missed": missed }).to_string()),
        )),
    });
    // `None` marks the shutdown; the stream ends at the first one.
    let stop = WatchStream::new(shutdown).filter_map(|down| down.then_some(None));
    let stream = events.merge(stop).map_while(|item| item.map(Ok));
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}
