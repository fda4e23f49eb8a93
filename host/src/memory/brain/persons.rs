//! Persons and the graph. A person comes from the facts that name them (relationship
//! facts above all); two persons are linked when one fact names both. The graph has a
//! node per live memory (goals as their own kind), per person, and edges person-memory,
//! person-person and memory-goal; node ids are the records' ids, so they are stable.

use std::collections::{BTreeMap, BTreeSet};

use crate::sql::{Actor, AsTx};
use engram_strategies::model::MemoryType;
use serde::Serialize;

use super::Brain;
use super::error::StoreError;
use super::store::q;
use crate::memory::ListFilter;
use crate::memory::record::MemoryRecord;
use crate::time::rfc3339;

/// Content-word similarity from which a memory is drawn as serving a goal.
const GOAL_LINK_SIMILARITY: f32 = 0.25;
/// Most memories the graph draws (most recently updated first).
pub const MAX_GRAPH_MEMORIES: usize = 5_000;

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PersonSummary {
    pub id: String,
    pub name: String,
    pub aliases: Vec<String>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub last_seen: i64,
    /// Live memories linked to the person.
    pub memory_count: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct LinkedPerson {
    pub id: String,
    pub name: String,
    /// The fact that links the two.
    pub via_memory: String,
    pub relation: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct PersonDetail {
    #[serde(flatten)]
    pub person: PersonSummary,
    /// Facts about the person: how they relate to the user, and the facts they hold
    /// (`holder`).
    pub facts: Vec<MemoryRecord>,
    /// Every other live memory that names them.
    pub related_memories: Vec<MemoryRecord>,
    pub linked_persons: Vec<LinkedPerson>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    Memory,
    Person,
    Goal,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Node {
    pub id: String,
    pub kind: NodeKind,
    pub label: String,
    /// The memory type, for memory and goal nodes.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub memory_type: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    PersonMemory,
    PersonPerson,
    MemoryGoal,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Edge {
    /// `source->target`, stable for the same pair and kind.
    pub id: String,
    pub source: String,
    pub target: String,
    pub kind: EdgeKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
}

/// `(person id, memory id, relation)` for a user's live memories.
fn live_links(
    conn: &impl AsTx,
    user: &str,
) -> Result<Vec<(String, String, Option<String>)>, StoreError> {
    Ok(conn.as_tx().query(
        "SELECT l.person_id, l.memory_id, l.relation FROM memory_persons l JOIN memories m ON m.id = l.memory_id
         WHERE l.user_id = ?1 AND m.superseded_by IS NULL AND m.dismissed_at IS NULL ORDER BY l.person_id, l.memory_id",
        &[user.into()],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?)
}

/// Persons of the user, most recently seen first: one (`only`), or a page of at most
/// `limit` after `cursor` (no limit when `None`).
fn summaries(
    conn: &impl AsTx,
    user: &str,
    only: Option<&str>,
    limit: Option<usize>,
    cursor: Option<&str>,
) -> Result<Vec<PersonSummary>, StoreError> {
    let (after_at, after_id) = match cursor {
        Some(cursor) => {
            let (at, id) = q::parse_cursor(cursor)?;
            (Some(at), Some(id))
        }
        None => (None, None),
    };
    // A person only the agent's deleted memories name is hidden with them.
    let only_dismissed = super::store::ONLY_DISMISSED_PERSON;
    // No limit is the largest one (PostgreSQL refuses SQLite's -1). A parameter is
    // compared with a column before `IS NULL` reads it: PostgreSQL takes its type
    // from its first use.
    let limit = limit.map_or(i64::MAX, |n| n as i64);
    Ok(conn.as_tx().query(
        &format!(
            "SELECT p.id, p.name, p.aliases, p.last_seen,
                (SELECT count(*) FROM memory_persons l JOIN memories m ON m.id = l.memory_id
                 WHERE l.person_id = p.id AND m.superseded_by IS NULL AND m.dismissed_at IS NULL)
             FROM persons p WHERE p.user_id = ?1 AND (p.id = ?2 OR ?2 IS NULL) AND NOT {only_dismissed}
               AND (p.last_seen < ?3 OR ?3 IS NULL OR (p.last_seen = ?3 AND p.id > ?4))
             ORDER BY p.last_seen DESC, p.id LIMIT ?5"
        ),
        &[
            user.into(),
            only.into(),
            after_at.into(),
            after_id.as_deref().into(),
            limit.into(),
        ],
        |r| {
            let aliases: String = r.get(2)?;
            Ok(PersonSummary {
                id: r.get(0)?,
                name: r.get(1)?,
                aliases: serde_json::from_str(&aliases).unwrap_or_default(),
                last_seen: r.get(3)?,
                memory_count: r.get::<i64>(4)? as usize,
            })
        },
    )?)
}

/// A page of persons and the cursor of the next one.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonsPage {
    pub items: Vec<PersonSummary>,
    pub next_cursor: Option<String>,
}

impl Brain {
    /// Every person of the user, most recently seen first.
    pub fn persons(&self, user: &str) -> Result<Vec<PersonSummary>, StoreError> {
        self.store
            .read(Actor::User(user), |c| summaries(c, user, None, None, None))
    }

    /// At most `limit` persons after `cursor` (a previous page's `next_cursor`).
    pub fn persons_page(
        &self,
        user: &str,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<PersonsPage, StoreError> {
        let mut items = self.store.read(Actor::User(user), |c| {
            summaries(c, user, None, Some(limit + 1), cursor)
        })?;
        let next_cursor = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|p| q::cursor_after(p.last_seen, &p.id))
        } else {
            None
        };
        Ok(PersonsPage { items, next_cursor })
    }

    pub fn person(&self, user: &str, id: &str) -> Result<PersonDetail, StoreError> {
        self.store.read(Actor::User(user), |c| {
            let person = summaries(c, user, Some(id), None, None)?
                .into_iter()
                .next()
                .ok_or_else(|| StoreError::NotFound(id.to_string()))?;
            let links = live_links(c, user)?;
            let mine: Vec<&(String, String, Option<String>)> =
                links.iter().filter(|(p, _, _)| p == id).collect();
            let mut facts = Vec::new();
            let mut related_memories = Vec::new();
            let mut linked_persons = Vec::new();
            for (_, memory_id, _) in &mine {
                let memory = q::get(c, user, memory_id)?;
                for (other, _, relation) in
                    links.iter().filter(|(p, m, _)| m == memory_id && p != id)
                {
                    let name = summaries(c, user, Some(other), None, None)?
                        .into_iter()
                        .next()
                        .map(|s| s.name)
                        .unwrap_or_default();
                    linked_persons.push(LinkedPerson {
                        id: other.clone(),
                        name,
                        via_memory: memory_id.clone(),
                        relation: relation.clone(),
                    });
                }
                // The person's facts: how they relate to the user, and what is theirs
                // ("User's sister Maria lives in Lisbon" holds Maria's city).
                let theirs = memory
                    .holder
                    .as_deref()
                    .is_some_and(|h| h.eq_ignore_ascii_case(&person.name));
                if memory.memory_type == MemoryType::Relationship || theirs {
                    facts.push(memory);
                } else {
                    related_memories.push(memory);
                }
            }
            Ok(PersonDetail {
                person,
                facts,
                related_memories,
                linked_persons,
            })
        })
    }

    /// Live memories that name the person.
    pub fn person_memories(&self, user: &str, id: &str) -> Result<Vec<MemoryRecord>, StoreError> {
        let detail = self.person(user, id)?;
        Ok(detail
            .facts
            .into_iter()
            .chain(detail.related_memories)
            .collect())
    }

    pub fn graph(&self, user: &str) -> Result<Graph, StoreError> {
        // The store pages lists; the graph reads pages until it has its maximum.
        let mut memories = Vec::new();
        let mut cursor = None;
        while memories.len() < MAX_GRAPH_MEMORIES {
            let page = self.list(
                user,
                &ListFilter {
                    limit: MAX_GRAPH_MEMORIES - memories.len(),
                    cursor,
                    ..ListFilter::default()
                },
            )?;
            memories.extend(page.items);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let persons = self.persons(user)?;
        let links = self
            .store
            .read(Actor::User(user), |c| live_links(c, user))?;
        let mut graph = Graph::default();
        for m in &memories {
            graph.nodes.push(Node {
                id: m.id.clone(),
                kind: if m.memory_type == MemoryType::Goal {
                    NodeKind::Goal
                } else {
                    NodeKind::Memory
                },
                label: m.summary.clone(),
                memory_type: Some(m.memory_type.to_string()),
            });
        }
        for p in &persons {
            graph.nodes.push(Node {
                id: p.id.clone(),
                kind: NodeKind::Person,
                label: p.name.clone(),
                memory_type: None,
            });
        }
        let drawn: BTreeSet<&str> = memories.iter().map(|m| m.id.as_str()).collect();
        let mut by_memory: BTreeMap<&str, Vec<(&str, Option<&str>)>> = BTreeMap::new();
        for (person, memory, relation) in &links {
            if !drawn.contains(memory.as_str()) {
                continue;
            }
            by_memory
                .entry(memory)
                .or_default()
                .push((person, relation.as_deref()));
            graph.edges.push(edge(
                person,
                memory,
                EdgeKind::PersonMemory,
                relation.clone(),
            ));
        }
        let mut person_pairs = BTreeSet::new();
        for (memory, persons) in &by_memory {
            for (i, (a, _)) in persons.iter().enumerate() {
                for (b, relation) in &persons[i + 1..] {
                    if person_pairs.insert((*a, *b)) {
                        let label = relation
                            .map(str::to_owned)
                            .or_else(|| Some((*memory).to_owned()));
                        graph.edges.push(edge(a, b, EdgeKind::PersonPerson, label));
                    }
                }
            }
        }
        let goals: Vec<&MemoryRecord> = memories
            .iter()
            .filter(|m| m.memory_type == MemoryType::Goal)
            .collect();
        for goal in &goals {
            for m in memories
                .iter()
                .filter(|m| m.memory_type != MemoryType::Goal)
            {
                if engram_strategies::text::similarity(&m.summary, &goal.summary)
                    >= GOAL_LINK_SIMILARITY
                {
                    graph
                        .edges
                        .push(edge(&m.id, &goal.id, EdgeKind::MemoryGoal, None));
                }
            }
        }
        Ok(graph)
    }
}

fn edge(source: &str, target: &str, kind: EdgeKind, label: Option<String>) -> Edge {
    Edge {
        id: format!("{source}->{target}"),
        source: source.to_string(),
        target: target.to_string(),
        kind,
        label,
    }
}
