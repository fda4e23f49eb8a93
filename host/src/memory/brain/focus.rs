//! What a message asks about, resolved against its user's store: whose fact (the user,
//! or persons the store knows by name, relation or class) and which attributes
//! (`engram_strategies::about::asked`). Retrieval ranks the facts of that holder and
//! attribute first, newest first, and leaves out other holders' facts on the same
//! attribute and the messages whose fact was superseded (`retrieve.rs`).

use std::collections::{BTreeSet, HashSet};

use engram_strategies::about::{self, AskedHolder, catalog, lexicon};

use super::error::StoreError;
use super::row::{COLUMNS, record_from_row};
use crate::memory::record::{MemoryRecord, MessageRecord};
use crate::sql::{AsTx, Backend, Value};

/// Facts of the asked holder and attribute fetched whatever their words.
const FOCUS_CANDIDATES: usize = 20;

/// What a message asks about.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Focus {
    /// The holders asked about (`None`: the user); empty when the message asks about
    /// nobody in particular.
    pub holders: Vec<Option<String>>,
    /// Whether the message named someone other than the user.
    pub named: bool,
    /// The names the message asks about, as it writes them, whether the store knows
    /// those persons or not.
    pub names: Vec<String>,
    /// The attributes asked for, with the attributes of their groups ("how do I get
    /// around": the vehicle and the commute).
    pub attributes: BTreeSet<String>,
    /// Words the asked attributes' statements are made with.
    pub expansion: Vec<String>,
}

impl Focus {
    /// Whether `record` is the asked holder's fact on an asked attribute.
    pub fn matches(&self, record: &MemoryRecord) -> bool {
        self.strength(record) > 0.0
    }

    /// How well `record` answers: 1 for the asked holder's fact on an asked attribute,
    /// half of that for another favourite of theirs ("my favorite artist" and "the
    /// favorite band") or for a fact that denies a value ("no longer works at"), 0
    /// otherwise.
    pub fn strength(&self, record: &MemoryRecord) -> f64 {
        let Some(attribute) = record.attribute.as_deref() else {
            return 0.0;
        };
        if !self.holds(record) {
            return 0.0;
        }
        let favorite = engram_strategies::about::catalog::FAVORITE;
        let strength = if self.attributes.contains(attribute) {
            1.0
        } else if attribute.starts_with(favorite)
            && self.attributes.iter().any(|a| a.starts_with(favorite))
        {
            0.5
        } else {
            return 0.0;
        };
        if record.negated {
            strength / 2.0
        } else {
            strength
        }
    }

    /// `message` without the names it asks about, for the encoder: a name pulls the
    /// message's vector toward text that mentions it (what others say to a person),
    /// while who said or holds what, and the name itself, are read otherwise (bm25
    /// keeps every word, the speaker's name in the transcript's index, the speaker's
    /// bonus, the holder). A person the store does not know yet counts too: the
    /// transcript may name them where no fact does. `None` when it names none.
    pub fn without_names(&self, message: &str) -> Option<String> {
        if self.names.is_empty() {
            return None;
        }
        let named: HashSet<String> = self
            .names
            .iter()
            .flat_map(|n| n.split_whitespace())
            .map(str::to_lowercase)
            .collect();
        let kept: Vec<&str> = message
            .split_whitespace()
            .filter(|token| {
                let bare = token
                    .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '\u{2019}');
                let bare = bare
                    .strip_suffix("'s")
                    .or_else(|| bare.strip_suffix("\u{2019}s"))
                    .unwrap_or(bare);
                !named.contains(&bare.to_lowercase())
            })
            .collect();
        Some(kept.join(" "))
    }

    /// Whether `record` is a fact of an asked holder.
    pub fn holds(&self, record: &MemoryRecord) -> bool {
        self.holders.contains(&record.holder)
    }

    /// Whether `record` states an asked attribute of someone not asked about: never
    /// an answer ("What does Ben do?" is not answered by the user's job).
    pub fn other_holders(&self, record: &MemoryRecord) -> bool {
        !self.holders.is_empty()
            && !self.holds(record)
            && record
                .attribute
                .as_deref()
                .is_some_and(|a| self.attributes.contains(a))
    }
}

/// Reads `message` and resolves whom it names against `user`'s persons and holders.
pub fn focus(conn: &impl AsTx, user: &str, message: &str) -> Result<Focus, StoreError> {
    let asked = about::asked(message);
    let mut attributes = BTreeSet::new();
    for name in &asked.attributes {
        attributes.insert(name.clone());
        let group = catalog::group_of(name);
        for sibling in catalog::CATALOG.iter().filter(|a| a.group == group) {
            attributes.insert(sibling.name.to_string());
        }
    }
    let mut focus = Focus {
        attributes,
        expansion: asked.expansion,
        ..Focus::default()
    };
    let known = |keys: Vec<String>| -> Result<Vec<Option<String>>, StoreError> {
        known_holders(conn, user, keys)
    };
    match asked.holder {
        AskedHolder::Names(names) => {
            let keys: Vec<String> = names.iter().map(|n| n.to_lowercase()).collect();
            let holders = known(keys)?;
            focus.names = names;
            if holders.is_empty() {
                // Nobody the store knows ("What did I do in Paris?"): the user's, when
                // the message speaks in the first person.
                if first_person(message) {
                    focus.holders = vec![None];
                }
            } else {
                focus.named = true;
                focus.holders = holders;
            }
        }
        AskedHolder::Relation(relation) => {
            let mut keys =
                persons_related(conn, user, |r| lexicon::canonical_relation(r) == relation)?;
            keys.push(relation);
            focus.holders = known(keys)?;
            focus.named = !focus.holders.is_empty();
        }
        AskedHolder::Class(class) => {
            let keys = persons_related(conn, user, |r| lexicon::in_class(&class, r))?;
            focus.holders = known(keys)?;
            focus.named = !focus.holders.is_empty();
        }
        AskedHolder::User => focus.holders = vec![None],
        AskedHolder::Unspecified => {}
    }
    Ok(focus)
}

fn first_person(message: &str) -> bool {
    engram_strategies::analyser::words(message)
        .iter()
        .any(|w| matches!(w.as_str(), "i" | "me" | "my" | "mine" | "myself"))
}

/// Whether a key holds a memory of the user or names one of their persons: asked at
/// every turn for each name the message holds, so each side is one index lookup.
const HOLDS: &str = "SELECT EXISTS (SELECT 1 FROM memories WHERE user_id = ?1 AND holder = ?2)
    OR EXISTS (SELECT 1 FROM persons WHERE user_id = ?1 AND name = ?2 COLLATE NOCASE)";
/// [`HOLDS`] on PostgreSQL, whose index of names is on `lower(name)` (a key is lower
/// case already).
const HOLDS_PG: &str = "SELECT EXISTS (SELECT 1 FROM memories WHERE user_id = ?1 AND holder = ?2)
    OR EXISTS (SELECT 1 FROM persons WHERE user_id = ?1 AND lower(name) = ?2)";

/// The keys among `keys` that hold a memory of `user` or name one of their persons.
fn known_holders(
    conn: &impl AsTx,
    user: &str,
    keys: Vec<String>,
) -> Result<Vec<Option<String>>, StoreError> {
    let conn = conn.as_tx();
    let holds_sql = match conn.backend() {
        Backend::Sqlite => HOLDS,
        Backend::Postgres => HOLDS_PG,
    };
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    for key in keys {
        if key.is_empty() || !seen.insert(key.clone()) {
            continue;
        }
        let holds: bool =
            conn.query_one(holds_sql, &[user.into(), key.as_str().into()], |r| r.get(0))?;
        if holds {
            found.push(Some(key));
        }
    }
    Ok(found)
}

/// The names (lower case) of `user`'s persons linked with a relation that passes
/// `wanted`.
fn persons_related(
    conn: &impl AsTx,
    user: &str,
    wanted: impl Fn(&str) -> bool,
) -> Result<Vec<String>, StoreError> {
    let rows = conn.as_tx().query(
        "SELECT DISTINCT lower(p.name), l.relation FROM memory_persons l JOIN persons p ON p.id = l.person_id
         WHERE l.user_id = ?1 AND l.relation IS NOT NULL",
        &[user.into()],
        |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
    )?;
    Ok(rows
        .into_iter()
        .filter(|(_, relation)| wanted(relation))
        .map(|(name, _)| name)
        .collect())
}

/// The live memories of the focus's holders on its attributes (or, for a person
/// named without an attribute and `whole_person`, all of theirs), newest first:
/// candidates whatever their words.
pub fn candidates(
    conn: &impl AsTx,
    user: &str,
    focus: &Focus,
    whole_person: bool,
) -> Result<Vec<MemoryRecord>, StoreError> {
    if focus.holders.is_empty() || (focus.attributes.is_empty() && !(focus.named && whole_person)) {
        return Ok(Vec::new());
    }
    let mut sql = format!(
        "SELECT {COLUMNS} FROM memories WHERE user_id = ? AND superseded_by IS NULL AND dismissed_at IS NULL AND scope <> 'subconscious' AND ("
    );
    let mut values: Vec<Value> = vec![user.into()];
    let holders: Vec<String> = focus
        .holders
        .iter()
        .map(|h| match h {
            Some(key) => {
                values.push(key.as_str().into());
                "holder = ?".to_string()
            }
            None => "holder IS NULL".to_string(),
        })
        .collect();
    sql.push_str(&holders.join(" OR "));
    sql.push(')');
    if !focus.attributes.is_empty() {
        let marks = vec!["?"; focus.attributes.len()].join(", ");
        let favorite = engram_strategies::about::catalog::FAVORITE;
        let any_favorite = if focus.attributes.iter().any(|a| a.starts_with(favorite)) {
            " OR attribute LIKE 'favorite%'"
        } else {
            ""
        };
        sql.push_str(&format!(" AND (attribute IN ({marks}){any_favorite})"));
        values.extend(focus.attributes.iter().map(|a| Value::from(a.as_str())));
    }
    sql.push_str(&format!(
        " ORDER BY last_seen_at DESC, id LIMIT {FOCUS_CANDIDATES}"
    ));
    Ok(conn.as_tx().query(&sql, &values, record_from_row)?)
}

/// What the messages among a retrieval's candidates say that is no longer, or not
/// the asked holder's, fact: each set holds message ids.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StaleTurns {
    /// Learned into a memory on an asked attribute that is now superseded: never
    /// ahead of the current fact, so left out.
    pub superseded_asked: HashSet<String>,
    /// Learned into a memory on another attribute that is now superseded: ranked
    /// lower.
    pub superseded_other: HashSet<String>,
    /// Learned into another holder's fact on an asked attribute: left out.
    pub other_holders: HashSet<String>,
    /// Learned into a memory the agent deleted, which waits for the person
    /// (`dismissal.rs`): left out.
    pub agent_dismissed: HashSet<String>,
}

/// Sorts `said` (messages of `user`) by what the memories learned from them say
/// now (see [`StaleTurns`]). A message that also states a live fact of the asked
/// holder on an asked attribute stays.
pub fn stale_turns(
    conn: &impl AsTx,
    user: &str,
    said: &[&MessageRecord],
    focus: &Focus,
) -> Result<StaleTurns, StoreError> {
    let mut stale = StaleTurns {
        agent_dismissed: super::dismissal::hidden_messages(conn, user, said)?,
        ..StaleTurns::default()
    };
    let turns: Vec<&str> = said.iter().map(|m| m.id.as_str()).collect();
    if turns.is_empty() {
        return Ok(stale);
    }
    let marks = vec!["?"; turns.len()].join(", ");
    let sql = format!(
        "SELECT t.turn_id, m.superseded_by IS NOT NULL, m.attribute, m.holder FROM memory_turns t
         JOIN memories m ON m.id = t.memory_id
         WHERE t.user_id = ? AND t.turn_id IN ({marks}) AND m.dismissed_at IS NULL"
    );
    let mut values: Vec<Value> = vec![user.into()];
    values.extend(turns.iter().map(|t| Value::from(*t)));
    let rows = conn.as_tx().query(&sql, &values, |r| {
        Ok((
            r.get::<String>(0)?,
            r.get::<bool>(1)?,
            r.get::<Option<String>>(2)?,
            r.get::<Option<String>>(3)?,
        ))
    })?;
    let mut current = HashSet::new();
    for (turn, is_superseded, attribute, holder) in rows {
        let asked = attribute
            .as_deref()
            .is_some_and(|a| focus.attributes.contains(a));
        let askeds_holder = focus.holders.is_empty() || focus.holders.contains(&holder);
        match (is_superseded, asked) {
            (true, true) if askeds_holder => {
                stale.superseded_asked.insert(turn);
            }
            (true, _) => {
                stale.superseded_other.insert(turn);
            }
            (false, true) if askeds_holder => {
                current.insert(turn);
            }
            (false, true) => {
                stale.other_holders.insert(turn);
            }
            (false, false) => {}
        }
    }
    for set in [
        &mut stale.superseded_asked,
        &mut stale.superseded_other,
        &mut stale.other_holders,
    ] {
        set.retain(|turn| !current.contains(turn));
    }
    Ok(stale)
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;

    #[test]
    fn the_encoder_reads_a_message_without_the_names_it_asks_about() {
        let mut conn = Connection::open_in_memory().expect("open");
        super::super::schema::migrate(&mut conn).expect("migrate");
        conn.execute(
            "INSERT INTO persons (id, user_id, name, created_at, last_seen) VALUES ('p1', 'u', 'Anna', 0, 0)",
            [],
        )
        .expect("a person");
        let read = |message: &str| {
            focus(&conn, "u", message)
                .expect("focus")
                .without_names(message)
        };
        // A place is a name too: bm25 still reads "Lisbon", the encoder reads what is
        // asked about it.
        assert_eq!(
            read("What did Anna's brother say about Lisbon?").as_deref(),
            Some("What did brother say about")
        );
        assert_eq!(
            read("Where does ANNA live, Anna?").as_deref(),
            Some("Where does live,")
        );
        // A person the store does not know yet is a name all the same.
        assert_eq!(read("What does Ben do?").as_deref(), Some("What does do?"));
        // Only names: a message that asks about nobody reads as it is.
        assert_eq!(read("what do I drive?"), None);
    }

    /// Retrieval asks [`HOLDS`] for every name in a message: a plan that scans the
    /// user's memories made a turn 10x slower at 100k memories.
    #[test]
    fn the_holder_question_is_answered_by_indexes() {
        let mut conn = Connection::open_in_memory().expect("open");
        super::super::schema::migrate(&mut conn).expect("migrate");
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {HOLDS}"))
            .expect("plan");
        let plan: Vec<String> = stmt
            .query_map(rusqlite::params!["u", "maria"], |r| r.get::<_, String>(3))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        let on = |table: &str| {
            plan.iter()
                .filter(|d| d.contains(table))
                .collect::<Vec<_>>()
        };
        for (table, index) in [
            ("memories", "memories_by_holder"),
            ("persons", "persons_by_name"),
        ] {
            let steps = on(table);
            assert!(
                !steps.is_empty() && steps.iter().all(|d| d.contains(index)),
                "{table} is read without {index}: {plan:#?}"
            );
        }
    }
}
