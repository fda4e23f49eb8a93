//! `notifications/prompts/list_changed` and `notifications/resources/list_changed`
//! when the skills change. The skills library announces every change on the event bus
//! (`skill.*`, host-wide), whoever made it; this turns those into MCP notifications:
//!
//! - handshake-era sessions (protocol versions up to 2025-11-25, stdio or HTTP with
//!   `Mcp-Session-Id`): from `notifications/initialized` on, for as long as the
//!   session's transport is open;
//! - 2026-07-28 clients: on the `subscriptions/listen` stream they open, with the
//!   categories they asked for, until they cancel it.
//!
//! A burst of events (a scan adding ten skills) is sent as one notification: clients
//! re-list anyway.

use std::time::Duration;

use rmcp::model::SubscriptionFilter;
use rmcp::service::{Peer, RoleServer, SubscriptionContext};
use tokio::sync::broadcast::error::RecvError;

use crate::events::{Event, EventBus, EventKind};

/// How often a session's forwarder checks that its transport is still open (it is
/// otherwise woken only by events).
const CHECK_CLOSED_EVERY: Duration = Duration::from_secs(10);

/// Events within this much of the first are sent as one notification.
const COALESCE: Duration = Duration::from_millis(50);

/// What this server notifies about: the skills' prompts and resources.
pub fn offered() -> SubscriptionFilter {
    SubscriptionFilter::builder()
        .prompts_list_changed()
        .resources_list_changed()
        .build()
}

fn changes_skills(event: &Event) -> bool {
    matches!(
        event.kind,
        EventKind::SkillInstalled
            | EventKind::SkillRemoved
            | EventKind::SkillActivated
            | EventKind::SkillDeactivated
    )
}

/// Waits for the next change of the skills; `false` once the bus is gone.
async fn next_change(events: &mut tokio::sync::broadcast::Receiver<Event>) -> bool {
    loop {
        match events.recv().await {
            Ok(event) if changes_skills(&event) => break,
            Ok(_) => {}
            // Some were missed: any of them may have been a skill change.
            Err(RecvError::Lagged(_)) => break,
            Err(RecvError::Closed) => return false,
        }
    }
    let quiet = tokio::time::sleep(COALESCE);
    tokio::pin!(quiet);
    loop {
        tokio::select! {
            _ = &mut quiet => return true,
            next = events.recv() => if let Err(RecvError::Closed) = next { return true },
        }
    }
}

/// Sends list changes to a handshake-era session until its transport closes.
pub fn forward_to_session(bus: &EventBus, peer: Peer<RoleServer>) {
    let mut events = bus.subscribe();
    tokio::spawn(async move {
        let mut check = tokio::time::interval(CHECK_CLOSED_EVERY);
        loop {
            tokio::select! {
                changed = next_change(&mut events) => {
                    if !changed {
                        return;
                    }
                    let sent = async {
                        peer.notify_prompt_list_changed().await?;
                        peer.notify_resource_list_changed().await
                    };
                    if sent.await.is_err() {
                        return;
                    }
                }
                _ = check.tick() => if peer.is_transport_closed() { return },
            }
        }
    });
}

/// Runs one `subscriptions/listen` stream until the client cancels it.
pub async fn listen(bus: &EventBus, context: SubscriptionContext) {
    let mut events = bus.subscribe();
    let accepted = context.accepted().clone();
    loop {
        tokio::select! {
            _ = context.cancelled() => return,
            changed = next_change(&mut events) => {
                if !changed {
                    return;
                }
                let sink = context.sink();
                if accepted.prompts_list_changed == Some(true)
                    && sink.notify_prompt_list_changed().await.is_err()
                {
                    return;
                }
                if accepted.resources_list_changed == Some(true)
                    && sink.notify_resource_list_changed().await.is_err()
                {
                    return;
                }
            }
        }
    }
}
