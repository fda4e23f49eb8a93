//! Learning from conversations: messages are recorded in the transcript tier
//! (`transcript.rs`); when a conversation ends (explicitly, or idle for 10 minutes) the
//! messages extraction has not read yet go to the configured extractor, the 3 most important candidates each go with their related memories to
//! the configured resolver, and all decisions are applied in one transaction.
//!
//! - Plugins are called before the transaction (a plugin reads memories through the
//!   store, so it must not run while the store is locked).
//! - Each decision is applied under its own savepoint: a malformed one (an id the
//!   resolver was not given, a score out of range) is rolled back, logged and reported,
//!   and the others still apply.
//! - Conflicts follow the host's rules (`settle.rs`) whatever the resolver said:
//!   opposite facts (negation mismatch, detected by the host too) keep the higher
//!   confidence, the newer on a tie; the loser is superseded (kept, linked, never
//!   retrieved).

use std::collections::{BTreeSet, HashMap};

use engram_strategies::model::{Candidate, Conversation, Message, Resolution, Role};
use engram_strategies::text;
use serde::Serialize;

use super::error::StoreError;
use super::lifecycle::reinforce;
use super::settle;
use super::store::q;
use super::text_index::TextIndex;
use super::{ACTOR_SYSTEM, Brain};
use crate::ids::new_id;
use crate::memory::record::MemoryRecord;
use crate::runtime::strategies::Strategies;
use crate::sql::{Actor, AsTx, Backend, Tx};

/// Candidates kept per conversation, at most.
pub const MAX_FACTS_PER_CONVERSATION: usize = 3;
/// Related memories given to the resolver.
pub const RELATED: usize = 5;
/// Most source turns a memory keeps (the latest).
const MAX_SOURCE_TURNS: usize = 64;
/// Most messages one extraction reads: the latest ones of the conversation.
pub const MAX_TURNS: i64 = 2_000;

/// What happened to one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Applied {
    Added {
        id: String,
    },
    Reinforced {
        id: String,
    },
    Updated {
        id: String,
    },
    /// The new fact won a conflict: `superseded` lost.
    Superseded {
        id: String,
        superseded: String,
    },
    /// The new fact lost a conflict and was stored superseded by `by`.
    Outvoted {
        id: String,
        by: String,
    },
    Rejected {
        reason: String,
    },
}

/// The result of ending a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Ingested {
    pub conversation_id: String,
    /// Why nothing was extracted, if so (learning paused, no user message).
    pub skipped: Option<String>,
    /// The plugin that extracted (after any fallback).
    pub extractor: Option<String>,
    pub candidates: usize,
    pub applied: Vec<Applied>,
}

impl Brain {
    /// Conversations with no message for `idle_ms`, not yet ended: `(user, id)`.
    pub fn idle_conversations(&self, idle_ms: i64) -> Result<Vec<(String, String)>, StoreError> {
        let before = self.now() - idle_ms;
        self.store.read(Actor::System, |c| {
            Ok(c.as_tx().query(
                "SELECT user_id, id FROM conversations WHERE ended_at IS NULL AND last_message_at <= ?1 ORDER BY last_message_at",
                &[before.into()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
    }

    /// Ends every conversation idle for `idle_ms` (the background task's job).
    pub fn end_idle_conversations(
        &self,
        idle_ms: i64,
        strategies: &Strategies,
    ) -> Vec<Result<Ingested, StoreError>> {
        match self.idle_conversations(idle_ms) {
            Ok(idle) => idle
                .into_iter()
                .map(|(user, id)| self.end_conversation(&user, &id, strategies))
                .collect(),
            Err(e) => vec![Err(e)],
        }
    }

    /// Ends a conversation and learns from the messages not read before (unless
    /// learning is paused). They stay in the transcript tier, marked as read, until
    /// the retention prunes them.
    pub fn end_conversation(
        &self,
        user: &str,
        conversation_id: &str,
        strategies: &Strategies,
    ) -> Result<Ingested, StoreError> {
        self.end_conversation_at(user, conversation_id, strategies, self.now())
    }

    /// [`Brain::end_conversation`] as of `now`, the time of the conversation's last
    /// message when an import replays it: what is learned is dated when it was said,
    /// so an old conversation does not replace what the user said since (`settle.rs`
    /// compares when facts were stated).
    pub fn end_conversation_at(
        &self,
        user: &str,
        conversation_id: &str,
        strategies: &Strategies,
        now: i64,
    ) -> Result<Ingested, StoreError> {
        let conversation = self.store.write(Actor::User(user), |tx| {
            let found = tx.as_tx().execute(
                "UPDATE conversations SET ended_at = ?3 WHERE id = ?1 AND user_id = ?2",
                &[conversation_id.into(), user.into(), now.into()],
            )?;
            if found == 0 {
                return Err(StoreError::NoConversation(conversation_id.to_string()));
            }
            let conversation = unread(tx, user, conversation_id)?;
            let speakers = speakers(tx, user, conversation_id)?;
            // Read now, whatever extraction makes of it: a failed or paused extraction
            // is not retried on these messages when the conversation reopens.
            tx.as_tx().execute(
                "UPDATE conversations SET extracted_seq = (SELECT coalesce(max(seq), extracted_seq) FROM messages WHERE conversation_id = ?1) WHERE id = ?1",
                &[conversation_id.into()],
            )?;
            Ok((conversation, speakers))
        })?;
        let (conversation, speakers) = conversation;
        let mut ingested = Ingested {
            conversation_id: conversation_id.to_string(),
            skipped: None,
            extractor: None,
            candidates: 0,
            applied: Vec::new(),
        };
        if self.learning_paused(user)? {
            ingested.skipped = Some("learning is paused".into());
        } else if !conversation.messages.iter().any(|m| m.role == Role::User) {
            ingested.skipped = Some("no message from the user".into());
        } else {
            let extracted =
                strategies
                    .extract(&conversation, now)
                    .map_err(|e| StoreError::Invalid {
                        field: "extractor",
                        reason: e.to_string(),
                    })?;
            ingested.extractor = Some(extracted.plugin);
            let mut candidates = extracted.value;
            for candidate in &mut candidates {
                attribute_to_speaker(candidate, &speakers);
            }
            candidates.sort_by(|a, b| b.importance.total_cmp(&a.importance));
            candidates.truncate(MAX_FACTS_PER_CONVERSATION);
            ingested.candidates = candidates.len();
            let decisions: Vec<(Candidate, Result<Resolution, String>, Vec<MemoryRecord>)> =
                candidates
                    .into_iter()
                    .map(|candidate| {
                        let related = self.related(user, &candidate);
                        let models: Vec<_> =
                            related.iter().map(|r| r.to_model(Vec::new())).collect();
                        let decision = strategies
                            .resolve(user, &candidate, &models)
                            .map(|outcome| outcome.value)
                            .map_err(|e| e.to_string());
                        (candidate, decision, related)
                    })
                    .collect();
            let text = self.store.text();
            ingested.applied = self.store.write(Actor::User(user), |tx| {
                let mut applied = Vec::new();
                for (candidate, decision, related) in &decisions {
                    applied.push(apply_one(
                        tx,
                        text,
                        user,
                        conversation_id,
                        candidate,
                        decision,
                        related,
                        now,
                    ));
                }
                Ok(applied)
            })?;
        }
        Ok(ingested)
    }

    fn related(&self, user: &str, candidate: &Candidate) -> Vec<MemoryRecord> {
        let query = super::meaning::query_words(&candidate.summary).join(" ");
        self.store
            .text_built()
            .and_then(|text| {
                self.store.read(Actor::User(user), |c| {
                    q::search(c, text, user, &query, RELATED)
                })
            })
            .map(|hits| hits.into_iter().map(|h| h.record).collect())
            .unwrap_or_else(|e| {
                tracing::error!("related memories for a candidate: {e}");
                Vec::new()
            })
    }
}

/// The messages of a conversation extraction has not read yet, the latest
/// [`MAX_TURNS`] of them, in order.
fn unread(tx: &impl AsTx, user: &str, conversation_id: &str) -> Result<Conversation, StoreError> {
    let messages = tx.as_tx().query(
        "SELECT id, role, content, at FROM (
            SELECT m.id, m.role, m.content, m.at, m.seq FROM messages m JOIN conversations c ON c.id = m.conversation_id
            WHERE m.conversation_id = ?1 AND m.user_id = ?2 AND m.seq > c.extracted_seq
            ORDER BY m.seq DESC LIMIT ?3
        ) AS latest ORDER BY seq",
        &[conversation_id.into(), user.into(), MAX_TURNS.into()],
        |r| {
            let role: String = r.get(1)?;
            Ok(Message {
                turn_id: r.get(0)?,
                role: Role::parse(&role).unwrap_or(Role::System),
                content: r.get(2)?,
                timestamp: r.get(3)?,
            })
        },
    )?;
    Ok(Conversation {
        id: conversation_id.to_string(),
        user_id: user.to_string(),
        messages,
    })
}

/// The speaker's name of each named user message of a conversation, when it has two
/// or more speakers (a group chat): there "I" is whoever speaks, and each keeps their
/// own facts. With one speaker or none, "I" is the user, whatever the name.
fn speakers(
    tx: &impl AsTx,
    user: &str,
    conversation_id: &str,
) -> Result<HashMap<String, String>, StoreError> {
    let named: HashMap<String, String> = tx
        .as_tx()
        .query(
            "SELECT id, name FROM messages WHERE conversation_id = ?1 AND user_id = ?2 AND role = 'user' AND name IS NOT NULL",
            &[conversation_id.into(), user.into()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
        .into_iter()
        .collect();
    let distinct: BTreeSet<String> = named.values().map(|n| n.to_lowercase()).collect();
    Ok(if distinct.len() >= 2 {
        named
    } else {
        HashMap::new()
    })
}

/// A fact read from one speaker's words in a group chat is theirs: "User is allergic
/// to latex" from Greg's message becomes "Greg is allergic to latex", linked to Greg.
fn attribute_to_speaker(candidate: &mut Candidate, speakers: &HashMap<String, String>) {
    let mut names = candidate.source_turns.iter().map(|t| speakers.get(t));
    let Some(Some(speaker)) = names.next() else {
        return;
    };
    if !names.all(|n| n == Some(speaker)) {
        return;
    }
    let rest = if let Some(rest) = candidate.summary.strip_prefix("User's ") {
        format!("{speaker}'s {rest}")
    } else if let Some(rest) = candidate.summary.strip_prefix("User ") {
        format!("{speaker} {rest}")
    } else {
        return;
    };
    candidate.summary = rest;
    if !candidate
        .persons
        .iter()
        .any(|p| p.name.eq_ignore_ascii_case(speaker))
    {
        candidate.persons.push(engram_strategies::model::PersonRef {
            name: speaker.clone(),
            relation: None,
        });
    }
}

/// Applies one decision under a savepoint; any failure rolls back that decision only.
#[allow(clippy::too_many_arguments)]
pub(super) fn apply_one(
    tx: &Tx,
    text: &TextIndex,
    user: &str,
    conversation_id: &str,
    candidate: &Candidate,
    decision: &Result<Resolution, String>,
    related: &[MemoryRecord],
    now: i64,
) -> Applied {
    let resolution = match decision {
        Ok(resolution) => resolution,
        Err(reason) => {
            tracing::warn!("resolver failed, candidate dropped: {reason}");
            return Applied::Rejected {
                reason: reason.clone(),
            };
        }
    };
    if let Err(e) = tx.as_tx().batch("SAVEPOINT decision") {
        return Applied::Rejected {
            reason: e.to_string(),
        };
    }
    let result = apply(
        tx,
        text,
        user,
        conversation_id,
        candidate,
        resolution,
        related,
        now,
    );
    let closing = if result.is_ok() {
        "RELEASE decision"
    } else {
        "ROLLBACK TO decision; RELEASE decision"
    };
    if let Err(e) = tx.as_tx().batch(closing) {
        return Applied::Rejected {
            reason: e.to_string(),
        };
    }
    result.unwrap_or_else(|e| {
        tracing::warn!(decision = ?resolution, "decision rejected: {e}");
        Applied::Rejected {
            reason: e.to_string(),
        }
    })
}

fn known<'a>(related: &'a [MemoryRecord], id: &str) -> Result<&'a MemoryRecord, StoreError> {
    related
        .iter()
        .find(|r| r.id == id)
        .ok_or_else(|| StoreError::Invalid {
            field: "resolution",
            reason: format!("id `{id}` is not one of the related memories"),
        })
}

#[allow(clippy::too_many_arguments)]
fn apply(
    tx: &Tx,
    text: &TextIndex,
    user: &str,
    conversation_id: &str,
    candidate: &Candidate,
    resolution: &Resolution,
    related: &[MemoryRecord],
    now: i64,
) -> Result<Applied, StoreError> {
    // A resolver may take a new value for the old one said again; the store decides
    // what a fact restates (`settle.rs`): a new value of the same attribute is added
    // and supersedes the old one.
    let resolution = &match resolution {
        Resolution::Reinforce(id) | Resolution::Update { id, .. }
            if settle::new_value(&known(related, id)?.summary, &candidate.summary) =>
        {
            Resolution::Add
        }
        other => other.clone(),
    };
    match resolution {
        Resolution::Reject(reason) => Ok(Applied::Rejected {
            reason: reason.clone(),
        }),
        Resolution::Reinforce(id) => {
            known(related, id)?;
            reinforce_with(tx, user, id, candidate, now)
        }
        Resolution::Update { id, patch } => {
            known(related, id)?;
            let old = q::get(tx, user, id)?;
            let mut new = old.clone();
            if let Some(s) = &patch.summary {
                new.summary = s.clone();
                new.negated = text::is_negated(s);
            }
            if patch.detail.is_some() {
                new.detail = patch.detail.clone();
            }
            if let Some(t) = patch.memory_type {
                new.memory_type = t;
            }
            if let Some(c) = patch.confidence {
                new.confidence = c;
                new.confidence_at = now;
            }
            if let Some(i) = patch.importance {
                new.importance = i;
            }
            if let Some(d) = patch.durability {
                new.durability = d;
            }
            new.last_seen_at = now;
            new.updated_at = now;
            let mut new = new.with_about_read();
            settle::resolve_attribute(tx, &mut new)?;
            q::update(tx, &old, &new, "UPDATE", ACTOR_SYSTEM)?;
            link_persons(tx, user, id, candidate, now)?;
            settle::settle(tx, text, &new, now, ACTOR_SYSTEM)?;
            Ok(Applied::Updated { id: id.clone() })
        }
        Resolution::Add | Resolution::Supersede(_) | Resolution::SupersededBy(_) => {
            let loser = match resolution {
                Resolution::Supersede(id) | Resolution::SupersededBy(id) => {
                    Some(known(related, id)?.id.clone())
                }
                _ => None,
            };
            let mut record = new_record(user, conversation_id, candidate, now);
            settle::resolve_attribute(tx, &mut record)?;
            // The store decides what restates a live memory, whatever the resolver
            // said (`settle.rs`).
            if loser.is_none()
                && let Some(existing) = settle::restated(tx, text, &record)?
            {
                return reinforce_with(tx, user, &existing.id, candidate, now);
            }
            q::insert(tx, &record, ACTOR_SYSTEM)?;
            link_persons(tx, user, &record.id, candidate, now)?;
            if let Some(other) = loser {
                let existing = q::get(tx, user, &other)?;
                let (winner, loser) = if matches!(resolution, Resolution::Supersede(_)) {
                    (record.clone(), existing)
                } else {
                    (existing, record.clone())
                };
                settle::supersede(tx, &winner.id, &loser, now, ACTOR_SYSTEM)?;
            }
            let stored = q::get(tx, user, &record.id)?;
            if stored.superseded_by.is_none() {
                settle::settle(tx, text, &stored, now, ACTOR_SYSTEM)?;
            }
            let stored = q::get(tx, user, &record.id)?;
            Ok(match stored.superseded_by {
                Some(by) => Applied::Outvoted { id: stored.id, by },
                None => match resolution {
                    Resolution::Supersede(old) => Applied::Superseded {
                        id: stored.id,
                        superseded: old.clone(),
                    },
                    _ => Applied::Added { id: stored.id },
                },
            })
        }
    }
}

fn new_record(user: &str, conversation_id: &str, c: &Candidate, now: i64) -> MemoryRecord {
    let fresh = MemoryRecord::fresh(
        user,
        c.memory_type,
        &c.summary,
        c.evidence,
        c.confidence,
        now,
    );
    MemoryRecord {
        detail: c.detail.clone(),
        importance: c.importance,
        durability: c.durability,
        // The host judges negation from the text as well as the plugin's flag.
        negated: c.negated || fresh.negated,
        source_conversation: Some(conversation_id.to_string()),
        source_turns: c.source_turns.clone(),
        ..fresh
    }
}

/// Reinforces memory `id` with what `candidate` says again.
fn reinforce_with(
    tx: &Tx,
    user: &str,
    id: &str,
    candidate: &Candidate,
    now: i64,
) -> Result<Applied, StoreError> {
    let old = q::get(tx, user, id)?;
    let mut new = reinforce(&old, now);
    for turn in &candidate.source_turns {
        if !new.source_turns.contains(turn) {
            new.source_turns.push(turn.clone());
        }
    }
    // The latest statements are what a forget or a redaction must find; a fact said a
    // hundred times need not name every message.
    let excess = new.source_turns.len().saturating_sub(MAX_SOURCE_TURNS);
    new.source_turns.drain(..excess);
    q::update(tx, &old, &new, "REINFORCE", ACTOR_SYSTEM)?;
    link_persons(tx, user, id, candidate, now)?;
    Ok(Applied::Reinforced { id: id.to_string() })
}

/// Creates or refreshes the persons a fact names and links them to the memory.
fn link_persons(
    tx: &impl AsTx,
    user: &str,
    memory_id: &str,
    candidate: &Candidate,
    now: i64,
) -> Result<(), StoreError> {
    let tx = tx.as_tx();
    // Each backend's index of names: SQLite's NOCASE, PostgreSQL's lower(name).
    let same_name = match tx.backend() {
        Backend::Sqlite => "SELECT id FROM persons WHERE user_id = ?1 AND name = ?2 COLLATE NOCASE",
        Backend::Postgres => {
            "SELECT id FROM persons WHERE user_id = ?1 AND lower(name) = lower(?2)"
        }
    };
    for person in &candidate.persons {
        let name = person.name.trim();
        if name.is_empty() {
            continue;
        }
        let existing: Option<String> =
            tx.query_opt(same_name, &[user.into(), name.into()], |r| r.get(0))?;
        let person_id = match existing {
            Some(id) => {
                tx.execute(
                    "UPDATE persons SET last_seen = ?2 WHERE id = ?1",
                    &[id.as_str().into(), now.into()],
                )?;
                id
            }
            None => {
                let id = new_id("per");
                tx.execute(
                    "INSERT INTO persons (id, user_id, name, aliases, created_at, last_seen) VALUES (?1, ?2, ?3, '[]', ?4, ?4)",
                    &[id.as_str().into(), user.into(), name.into(), now.into()],
                )?;
                id
            }
        };
        tx.execute(
            "INSERT INTO memory_persons (memory_id, person_id, user_id, relation) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (memory_id, person_id) DO UPDATE SET relation = coalesce(excluded.relation, memory_persons.relation)",
            &[
                memory_id.into(),
                person_id.as_str().into(),
                user.into(),
                person.relation.as_deref().into(),
            ],
        )?;
    }
    Ok(())
}
