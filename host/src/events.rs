//! Engram's change notifications. Services publish what happened after it is committed
//! (`memory.created` once the row is in SQLite, never before); `GET /api/events`
//! streams them to dashboards and agents. Delivery is best effort: a subscriber that
//! falls more than [`CAPACITY`] events behind is told how many it missed and must
//! re-read what it shows.

use serde::Serialize;
use tokio::sync::broadcast;

/// Events kept for a slow subscriber before it starts missing some.
pub const CAPACITY: usize = 1024;

/// What happened. The wire name (`memory.created`, ...) is the SSE event name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EventKind {
    #[serde(rename = "memory.created")]
    MemoryCreated,
    #[serde(rename = "memory.updated")]
    MemoryUpdated,
    #[serde(rename = "memory.deleted")]
    MemoryDeleted,
    #[serde(rename = "consolidation.completed")]
    ConsolidationCompleted,
    #[serde(rename = "learning.paused")]
    LearningPaused,
    #[serde(rename = "learning.resumed")]
    LearningResumed,
    /// A skill was installed, updated or reinstalled, or a discovery scan found one.
    #[serde(rename = "skill.installed")]
    SkillInstalled,
    /// A skill was removed, or a discovery scan dropped one whose directory vanished.
    #[serde(rename = "skill.removed")]
    SkillRemoved,
    #[serde(rename = "skill.activated")]
    SkillActivated,
    #[serde(rename = "skill.deactivated")]
    SkillDeactivated,
    /// A schedule ran: a turn was opened with its skill invoked.
    #[serde(rename = "schedule.fired")]
    ScheduleFired,
    /// A schedule's run could not open its turn (skill missing or inactive, ...).
    #[serde(rename = "schedule.failed")]
    ScheduleFailed,
}

impl EventKind {
    pub const ALL: &'static [EventKind] = &[
        EventKind::MemoryCreated,
        EventKind::MemoryUpdated,
        EventKind::MemoryDeleted,
        EventKind::ConsolidationCompleted,
        EventKind::LearningPaused,
        EventKind::LearningResumed,
        EventKind::SkillInstalled,
        EventKind::SkillRemoved,
        EventKind::SkillActivated,
        EventKind::SkillDeactivated,
        EventKind::ScheduleFired,
        EventKind::ScheduleFailed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::MemoryCreated => "memory.created",
            EventKind::MemoryUpdated => "memory.updated",
            EventKind::MemoryDeleted => "memory.deleted",
            EventKind::ConsolidationCompleted => "consolidation.completed",
            EventKind::LearningPaused => "learning.paused",
            EventKind::LearningResumed => "learning.resumed",
            EventKind::SkillInstalled => "skill.installed",
            EventKind::SkillRemoved => "skill.removed",
            EventKind::SkillActivated => "skill.activated",
            EventKind::SkillDeactivated => "skill.deactivated",
            EventKind::ScheduleFired => "schedule.fired",
            EventKind::ScheduleFailed => "schedule.failed",
        }
    }

    /// Whether the event concerns the whole host rather than one user (skills are
    /// shared by every user): such events reach every user's stream.
    pub fn is_host_wide(self) -> bool {
        matches!(
            self,
            EventKind::SkillInstalled
                | EventKind::SkillRemoved
                | EventKind::SkillActivated
                | EventKind::SkillDeactivated
        )
    }
}

/// The `user` of host-wide events (see [`EventKind::is_host_wide`]).
pub const HOST_WIDE: &str = "*";

/// One notification: its kind, the user it concerns ([`HOST_WIDE`] for skill events),
/// and the ids or figures a subscriber needs to re-read the resource (never the
/// memory's text: subscribers fetch it with their own authorisation).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub kind: EventKind,
    pub user: String,
    pub data: serde_json::Value,
}

/// A cheap, cloneable handle: every clone publishes into the same stream.
#[derive(Debug, Clone)]
pub struct EventBus {
    sender: broadcast::Sender<Event>,
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus {
            sender: broadcast::channel(CAPACITY).0,
        }
    }
}

impl EventBus {
    pub fn publish(&self, event: Event) {
        // No subscriber is not an error: nobody is listening right now.
        let _ = self.sender.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.sender.subscribe()
    }

    /// Whether anyone listens; lets publishers skip the work of building events.
    pub fn has_subscribers(&self) -> bool {
        self.sender.receiver_count() > 0
    }
}
