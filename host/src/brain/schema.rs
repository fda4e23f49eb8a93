//! The Second Brain's SQLite schema, versioned with `PRAGMA user_version`. Each
//! migration runs once, in its own transaction; a database newer than this binary is
//! refused rather than misread.

use rusqlite::Connection;

/// Every migration in order; index + 1 is the schema version it produces.
const MIGRATIONS: &[&str] = &[
    // 1: memories with their full-text index, persons, history, meta, conversations.
    r#"
    CREATE TABLE memories (
        id                  TEXT PRIMARY KEY,
        user_id             TEXT NOT NULL,
        memory_type         TEXT NOT NULL CHECK (memory_type IN ('identity','preference','goal','project','habit','decision','constraint','relationship','episode','reflection')),
        summary             TEXT NOT NULL CHECK (length(summary) > 0),
        detail              TEXT,
        scope               TEXT NOT NULL CHECK (scope IN ('durable','active','subconscious')),
        prior_scope         TEXT CHECK (prior_scope IN ('durable','active')),
        confidence          REAL NOT NULL CHECK (confidence BETWEEN 0.0 AND 1.0),
        importance          REAL NOT NULL CHECK (importance BETWEEN 0.0 AND 1.0),
        durability          REAL NOT NULL CHECK (durability BETWEEN 0.0 AND 1.0),
        evidence            TEXT NOT NULL CHECK (evidence IN ('direct','inferred','manual','system')),
        negated             INTEGER NOT NULL DEFAULT 0,
        validated           INTEGER NOT NULL DEFAULT 0,
        reinforcements      INTEGER NOT NULL DEFAULT 0,
        stale               INTEGER NOT NULL DEFAULT 0,
        dismissed_at        INTEGER,
        superseded_by       TEXT REFERENCES memories(id) ON DELETE SET NULL,
        created_at          INTEGER NOT NULL,
        updated_at          INTEGER NOT NULL,
        last_seen_at        INTEGER NOT NULL,
        last_used_at        INTEGER,
        -- When confidence was last set; inferred memories decay from here.
        confidence_at       INTEGER NOT NULL,
        source_conversation TEXT,
        source_turns        TEXT NOT NULL DEFAULT '[]'
    );
    CREATE INDEX memories_by_user_scope ON memories (user_id, scope, updated_at);
    CREATE INDEX memories_by_superseded ON memories (superseded_by);

    -- External-content FTS5 index over summary and detail, kept in sync by triggers.
    CREATE VIRTUAL TABLE memories_fts USING fts5(
        summary, detail, content = 'memories', content_rowid = 'rowid',
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, summary, detail) VALUES (new.rowid, new.summary, new.detail);
    END;
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, summary, detail) VALUES ('delete', old.rowid, old.summary, old.detail);
    END;
    CREATE TRIGGER memories_fts_update AFTER UPDATE OF summary, detail ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, summary, detail) VALUES ('delete', old.rowid, old.summary, old.detail);
        INSERT INTO memories_fts (rowid, summary, detail) VALUES (new.rowid, new.summary, new.detail);
    END;

    CREATE TABLE persons (
        id          TEXT PRIMARY KEY,
        user_id     TEXT NOT NULL,
        name        TEXT NOT NULL,
        aliases     TEXT NOT NULL DEFAULT '[]',
        created_at  INTEGER NOT NULL,
        last_seen   INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX persons_by_name ON persons (user_id, name COLLATE NOCASE);

    CREATE TABLE memory_persons (
        memory_id   TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
        person_id   TEXT NOT NULL REFERENCES persons(id) ON DELETE CASCADE,
        user_id     TEXT NOT NULL,
        relation    TEXT,
        PRIMARY KEY (memory_id, person_id)
    );
    CREATE INDEX memory_persons_by_person ON memory_persons (person_id);

    -- Every change to a memory. Text is kept only while the memory exists: an
    -- explicit deletion clears old/new values of its rows (the event stays).
    CREATE TABLE history (
        id          INTEGER PRIMARY KEY,
        user_id     TEXT NOT NULL,
        memory_id   TEXT NOT NULL,
        event       TEXT NOT NULL CHECK (event IN ('ADD','UPDATE','REINFORCE','SUPERSEDE','DISMISS','DELETE','PROMOTE','DEMOTE')),
        old_value   TEXT,
        new_value   TEXT,
        actor       TEXT NOT NULL,
        at          INTEGER NOT NULL
    );
    CREATE INDEX history_by_memory ON history (user_id, memory_id, id);

    CREATE TABLE meta (
        user_id     TEXT NOT NULL,
        key         TEXT NOT NULL,
        value       TEXT NOT NULL,
        PRIMARY KEY (user_id, key)
    );

    CREATE TABLE conversations (
        id              TEXT PRIMARY KEY,
        user_id         TEXT NOT NULL,
        started_at      INTEGER NOT NULL,
        last_message_at INTEGER NOT NULL,
        ended_at        INTEGER
    );
    CREATE INDEX conversations_open ON conversations (ended_at, last_message_at);

    CREATE TABLE turns (
        id              TEXT PRIMARY KEY,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        user_id         TEXT NOT NULL,
        seq             INTEGER NOT NULL,
        role            TEXT NOT NULL CHECK (role IN ('user','assistant','system')),
        content         TEXT NOT NULL,
        at              INTEGER NOT NULL
    );
    CREATE INDEX turns_by_conversation ON turns (conversation_id, seq);
    "#,
];

pub use crate::sqlite::SchemaError;

/// Brings the schema up to date.
pub fn migrate(conn: &mut Connection) -> Result<(), SchemaError> {
    crate::sqlite::migrate(conn, MIGRATIONS, "the Second Brain database")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_to_an_empty_database() {
        crate::sqlite::assert_migrations_apply_to_an_empty_database(
            MIGRATIONS,
            "the Second Brain database",
        );
    }
}
