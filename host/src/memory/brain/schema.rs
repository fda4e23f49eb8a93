//! The Second Brain's SQLite schema, versioned with `PRAGMA user_version`. Each
//! migration runs once, in its own transaction; a database newer than this binary is
//! refused rather than misread.

use rusqlite::Connection;

use crate::sqlite::{Migration, Schema};

/// The schema version this binary writes (`engram --version` prints it): a database
/// of a higher version is refused.
pub const VERSION: usize = MIGRATIONS.len();

/// Every migration in order; index + 1 is the schema version it produces.
const MIGRATIONS: &[Migration] = &[
    // 1: memories with their full-text index, persons, history, meta, conversations.
    Migration {
        description: "memories, persons, history, meta, conversations",
        sql: r#"
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
    },
    // 2: the transcript tier. Messages outlive extraction (kept `transcriptDays`), carry
    // their speaker's name and are full-text indexed. They move from `turns` to
    // `messages`, whose INTEGER PRIMARY KEY keeps the rowids the external-content index
    // points at stable (VACUUM may renumber the implicit rowids of `turns`).
    // `extracted_seq` marks how far extraction has read a conversation, so that a
    // reopened conversation is not learned from twice.
    Migration {
        description: "the transcript: messages kept after extraction, full-text indexed",
        sql: r#"
    CREATE TABLE messages (
        n               INTEGER PRIMARY KEY,
        id              TEXT NOT NULL UNIQUE,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        user_id         TEXT NOT NULL,
        seq             INTEGER NOT NULL,
        role            TEXT NOT NULL CHECK (role IN ('user','assistant','system')),
        name            TEXT,
        content         TEXT NOT NULL,
        at              INTEGER NOT NULL
    );
    INSERT INTO messages (id, conversation_id, user_id, seq, role, content, at)
        SELECT id, conversation_id, user_id, seq, role, content, at FROM turns ORDER BY at, seq;
    DROP TABLE turns;
    CREATE INDEX messages_by_conversation ON messages (conversation_id, seq);
    CREATE INDEX messages_by_time ON messages (at);

    ALTER TABLE conversations ADD COLUMN extracted_seq INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX conversations_by_user ON conversations (user_id, last_message_at);

    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, name, content = 'messages', content_rowid = 'n',
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, content, name) VALUES (new.n, new.content, new.name);
    END;
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, name) VALUES ('delete', old.n, old.content, old.name);
    END;
    CREATE TRIGGER messages_fts_update AFTER UPDATE OF content, name ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, name) VALUES ('delete', old.n, old.content, old.name);
        INSERT INTO messages_fts (rowid, content, name) VALUES (new.n, new.content, new.name);
    END;
    "#,
    },
    // 3: memory search ranks with an in-memory index of the memories' text
    // (`text_index.rs`, rebuilt from this table at each start). Nothing reads
    // `memories_fts` any more, and its triggers cost every write of a memory.
    Migration {
        description: "memory search through the in-memory index: the memories' FTS table dropped",
        sql: r#"
    DROP TRIGGER memories_fts_insert;
    DROP TRIGGER memories_fts_delete;
    DROP TRIGGER memories_fts_update;
    DROP TABLE memories_fts;
    "#,
    },
    // 4: what a memory is about (`engram_strategies::about`): its holder (NULL for the
    // user, else a person's name or relation) and the attribute it states, which the
    // store reads from every memory it writes and supersedes by. Rows written before
    // are read once when the store opens (`Store::open`, `about_backfilled` in meta).
    Migration {
        description: "what a memory is about: its holder and attribute",
        sql: r#"
    ALTER TABLE memories ADD COLUMN holder TEXT;
    ALTER TABLE memories ADD COLUMN attribute TEXT;
    CREATE INDEX memories_by_attribute ON memories (user_id, attribute, holder) WHERE attribute IS NOT NULL;
    -- A user's latest messages, which retrieval reads for meaning when words find
    -- too little.
    CREATE INDEX messages_by_user_time ON messages (user_id, at);

    -- Which messages each memory was learned from (`source_turns`), indexed by message:
    -- retrieval leaves out a message whose fact was superseded, and forgetting a
    -- memory finds the messages to redact. Kept by triggers, so that every path that
    -- writes `source_turns` keeps it.
    CREATE TABLE memory_turns (
        turn_id     TEXT NOT NULL,
        memory_id   TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
        user_id     TEXT NOT NULL,
        PRIMARY KEY (turn_id, memory_id)
    ) WITHOUT ROWID;
    CREATE INDEX memory_turns_by_memory ON memory_turns (memory_id);
    INSERT OR IGNORE INTO memory_turns (turn_id, memory_id, user_id)
        SELECT j.value, m.id, m.user_id FROM memories m, json_each(m.source_turns) j WHERE j.type = 'text';
    CREATE TRIGGER memory_turns_insert AFTER INSERT ON memories BEGIN
        INSERT OR IGNORE INTO memory_turns (turn_id, memory_id, user_id)
            SELECT value, new.id, new.user_id FROM json_each(new.source_turns) WHERE type = 'text';
    END;
    -- How many secrets of each kind were redacted from what a user's writes brought.
    CREATE TABLE redactions (
        user_id     TEXT NOT NULL,
        kind        TEXT NOT NULL,
        count       INTEGER NOT NULL,
        PRIMARY KEY (user_id, kind)
    ) WITHOUT ROWID;

    -- What was forgotten, when and by whom: ids and counts, never the text.
    CREATE TABLE forget_log (
        id          INTEGER PRIMARY KEY,
        user_id     TEXT NOT NULL,
        at          INTEGER NOT NULL,
        actor       TEXT NOT NULL,
        reason      TEXT NOT NULL,
        memories    TEXT NOT NULL,
        messages    TEXT NOT NULL
    );
    CREATE INDEX forget_log_by_user ON forget_log (user_id, id);
    CREATE TRIGGER memory_turns_update AFTER UPDATE OF source_turns ON memories
        WHEN old.source_turns IS NOT new.source_turns BEGIN
        DELETE FROM memory_turns WHERE memory_id = old.id;
        INSERT OR IGNORE INTO memory_turns (turn_id, memory_id, user_id)
            SELECT value, new.id, new.user_id FROM json_each(new.source_turns) WHERE type = 'text';
    END;
    "#,
    },
    // 5: a user's transcript ranking depends on that user's messages alone
    // (`transcript.rs`). Each user's messages take a block of the index's rowids,
    // `(number << 40) + n`, so that FTS5 reads one user's rows with a rowid range; the
    // index's content is a view giving each message that rowid. `transcript_users`
    // holds each user's number (theirs for good: the row stays when their messages go)
    // and the count and total tokens of their messages (bm25's N and average size),
    // which the triggers keep in the transaction of the change. `engram_tokens` counts
    // a text's tokens as FTS5 does; [`migrate`] registers it on the connection.
    Migration {
        description: "the transcript index in per-user rowid blocks",
        sql: r#"
    CREATE TABLE transcript_users (
        user_id     TEXT PRIMARY KEY,
        number      INTEGER NOT NULL UNIQUE,
        messages    INTEGER NOT NULL DEFAULT 0,
        tokens      INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO transcript_users (user_id, number, messages, tokens)
        SELECT user_id, row_number() OVER (ORDER BY min(n)), count(*),
               sum(engram_tokens(content) + engram_tokens(name))
        FROM messages GROUP BY user_id;

    DROP TRIGGER messages_fts_insert;
    DROP TRIGGER messages_fts_delete;
    DROP TRIGGER messages_fts_update;
    DROP TABLE messages_fts;
    CREATE VIEW messages_indexed AS
        SELECT (u.number << 40) + m.n AS row, m.content, m.name
        FROM messages m JOIN transcript_users u ON u.user_id = m.user_id;
    CREATE VIRTUAL TABLE messages_fts USING fts5(
        content, name, content = 'messages_indexed', content_rowid = 'row',
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    -- In rowid order: FTS5 writes out what it holds whenever a rowid goes down.
    INSERT INTO messages_fts (rowid, content, name)
        SELECT row, content, name FROM messages_indexed ORDER BY row;

    CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO transcript_users (user_id, number)
            VALUES (new.user_id, (SELECT coalesce(max(number), 0) + 1 FROM transcript_users))
            ON CONFLICT (user_id) DO NOTHING;
        UPDATE transcript_users
            SET messages = messages + 1,
                tokens = tokens + engram_tokens(new.content) + engram_tokens(new.name)
            WHERE user_id = new.user_id;
        INSERT INTO messages_fts (rowid, content, name)
            SELECT (number << 40) + new.n, new.content, new.name
            FROM transcript_users WHERE user_id = new.user_id;
    END;
    CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, name)
            SELECT 'delete', (number << 40) + old.n, old.content, old.name
            FROM transcript_users WHERE user_id = old.user_id;
        UPDATE transcript_users
            SET messages = messages - 1,
                tokens = tokens - engram_tokens(old.content) - engram_tokens(old.name)
            WHERE user_id = old.user_id;
    END;
    CREATE TRIGGER messages_fts_update AFTER UPDATE OF n, user_id, content, name ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, content, name)
            SELECT 'delete', (number << 40) + old.n, old.content, old.name
            FROM transcript_users WHERE user_id = old.user_id;
        UPDATE transcript_users
            SET messages = messages - 1,
                tokens = tokens - engram_tokens(old.content) - engram_tokens(old.name)
            WHERE user_id = old.user_id;
        INSERT INTO transcript_users (user_id, number)
            VALUES (new.user_id, (SELECT coalesce(max(number), 0) + 1 FROM transcript_users))
            ON CONFLICT (user_id) DO NOTHING;
        UPDATE transcript_users
            SET messages = messages + 1,
                tokens = tokens + engram_tokens(new.content) + engram_tokens(new.name)
            WHERE user_id = new.user_id;
        INSERT INTO messages_fts (rowid, content, name)
            SELECT (number << 40) + new.n, new.content, new.name
            FROM transcript_users WHERE user_id = new.user_id;
    END;
    "#,
    },
    // 6: the agent's deletes are undoable (`dismissal.rs`). A memory the agent deletes is
    // dismissed (`dismissed_at`, hidden as every dismissed memory is) and listed here
    // until the person restores it or the window ends and it is forgotten for good,
    // with the transcript text it came from unless `keep_messages`. The history gains
    // RESTORE (a table's CHECK cannot change in place, so the table is rebuilt).
    Migration {
        description: "the agent's deletes, undoable for a window",
        sql: r#"
    CREATE TABLE agent_dismissals (
        memory_id     TEXT PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
        user_id       TEXT NOT NULL,
        at            INTEGER NOT NULL,
        keep_messages INTEGER NOT NULL CHECK (keep_messages IN (0, 1))
    ) WITHOUT ROWID;
    CREATE INDEX agent_dismissals_by_user ON agent_dismissals (user_id, at, memory_id);
    CREATE INDEX agent_dismissals_by_time ON agent_dismissals (at);

    CREATE TABLE history_v6 (
        id          INTEGER PRIMARY KEY,
        user_id     TEXT NOT NULL,
        memory_id   TEXT NOT NULL,
        event       TEXT NOT NULL CHECK (event IN ('ADD','UPDATE','REINFORCE','SUPERSEDE','DISMISS','DELETE','PROMOTE','DEMOTE','RESTORE')),
        old_value   TEXT,
        new_value   TEXT,
        actor       TEXT NOT NULL,
        at          INTEGER NOT NULL
    );
    INSERT INTO history_v6 (id, user_id, memory_id, event, old_value, new_value, actor, at)
        SELECT id, user_id, memory_id, event, old_value, new_value, actor, at FROM history;
    DROP TABLE history;
    ALTER TABLE history_v6 RENAME TO history;
    CREATE INDEX history_by_memory ON history (user_id, memory_id, id);
    "#,
    },
    // 7: a message that names someone asks whether they hold any of the user's memories
    // (`focus.rs`) at every turn; without this index that question read every memory
    // of the user (retrieval p95 93 ms at 100k memories, against 10 ms before).
    Migration {
        description: "an index of memories by holder",
        sql: r#"
    CREATE INDEX memories_by_holder ON memories (user_id, holder) WHERE holder IS NOT NULL;
    "#,
    },
    // 8: the installed sentence encoder's vectors of memories and messages
    // (`vectors.rs`), written in the background after the text, each with the model
    // version it came from (a vector of another version counts as missing). A vector
    // goes with its text: deleted with the row, and when the text changes (an edit, a
    // redaction), so that nothing forgotten survives as a vector.
    Migration {
        description: "sentence-encoder vectors of memories and messages",
        sql: r#"
    CREATE TABLE memory_vectors (
        user_id     TEXT NOT NULL,
        memory_id   TEXT NOT NULL,
        model       TEXT NOT NULL,
        vector      BLOB NOT NULL,
        PRIMARY KEY (user_id, memory_id)
    ) WITHOUT ROWID;
    CREATE TABLE message_vectors (
        user_id     TEXT NOT NULL,
        message_id  TEXT NOT NULL,
        model       TEXT NOT NULL,
        vector      BLOB NOT NULL,
        PRIMARY KEY (user_id, message_id)
    ) WITHOUT ROWID;
    CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories BEGIN
        DELETE FROM memory_vectors WHERE user_id = old.user_id AND memory_id = old.id;
    END;
    CREATE TRIGGER memory_vectors_update AFTER UPDATE OF summary, user_id ON memories
        WHEN old.summary IS NOT new.summary OR old.user_id IS NOT new.user_id BEGIN
        DELETE FROM memory_vectors WHERE user_id = old.user_id AND memory_id = old.id;
    END;
    CREATE TRIGGER message_vectors_delete AFTER DELETE ON messages BEGIN
        DELETE FROM message_vectors WHERE user_id = old.user_id AND message_id = old.id;
    END;
    CREATE TRIGGER message_vectors_update AFTER UPDATE OF content, user_id ON messages
        WHEN old.content IS NOT new.content OR old.user_id IS NOT new.user_id BEGIN
        DELETE FROM message_vectors WHERE user_id = old.user_id AND message_id = old.id;
    END;
    "#,
    },
    // 9: the vector tables become rowid tables. A WITHOUT ROWID table keeps a whole row
    // in its B-tree, where at most about 1,000 bytes of a row stay on the page: a vector
    // of 384 floats (1,536 bytes) spilled to an overflow page of its own, 4.7 KB a row
    // on disk (1M messages: 4.7 GB). A rowid table's page holds two such rows; the
    // primary key becomes an index beside it. Rows are copied: vectors cost hours of
    // CPU to make again. The triggers are dropped first so that no rename rewrites
    // them, then made again as in 8.
    Migration {
        description: "vector tables as rowid tables (half the size)",
        sql: r#"
    DROP TRIGGER memory_vectors_delete;
    DROP TRIGGER memory_vectors_update;
    DROP TRIGGER message_vectors_delete;
    DROP TRIGGER message_vectors_update;
    ALTER TABLE memory_vectors RENAME TO memory_vectors_8;
    ALTER TABLE message_vectors RENAME TO message_vectors_8;
    CREATE TABLE memory_vectors (
        user_id     TEXT NOT NULL,
        memory_id   TEXT NOT NULL,
        model       TEXT NOT NULL,
        vector      BLOB NOT NULL,
        PRIMARY KEY (user_id, memory_id)
    );
    CREATE TABLE message_vectors (
        user_id     TEXT NOT NULL,
        message_id  TEXT NOT NULL,
        model       TEXT NOT NULL,
        vector      BLOB NOT NULL,
        PRIMARY KEY (user_id, message_id)
    );
    INSERT INTO memory_vectors (user_id, memory_id, model, vector)
        SELECT user_id, memory_id, model, vector FROM memory_vectors_8;
    INSERT INTO message_vectors (user_id, message_id, model, vector)
        SELECT user_id, message_id, model, vector FROM message_vectors_8;
    DROP TABLE memory_vectors_8;
    DROP TABLE message_vectors_8;
    CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories BEGIN
        DELETE FROM memory_vectors WHERE user_id = old.user_id AND memory_id = old.id;
    END;
    CREATE TRIGGER memory_vectors_update AFTER UPDATE OF summary, user_id ON memories
        WHEN old.summary IS NOT new.summary OR old.user_id IS NOT new.user_id BEGIN
        DELETE FROM memory_vectors WHERE user_id = old.user_id AND memory_id = old.id;
    END;
    CREATE TRIGGER message_vectors_delete AFTER DELETE ON messages BEGIN
        DELETE FROM message_vectors WHERE user_id = old.user_id AND message_id = old.id;
    END;
    CREATE TRIGGER message_vectors_update AFTER UPDATE OF content, user_id ON messages
        WHEN old.content IS NOT new.content OR old.user_id IS NOT new.user_id BEGIN
        DELETE FROM message_vectors WHERE user_id = old.user_id AND message_id = old.id;
    END;
    "#,
    },
    // 10: the transcript's full-text index on PostgreSQL (`schema_pg.rs`, postings
    // written by `transcript/terms.rs`). Nothing changes here: FTS5 and the triggers
    // of 5 index the transcript; the step keeps one numbering for both backends.
    Migration {
        description: "the transcript's full-text index on PostgreSQL (nothing changes on SQLite)",
        sql: "",
    },
    // 11: how each daemon's memory index follows the table on PostgreSQL
    // (`schema_pg.rs`: a number per memory row, and a log of the rows each transaction
    // changed). Nothing changes here: a memory's rowid is its number, and the one
    // writer's update hook is its log.
    Migration {
        description: "the memory index's change log on PostgreSQL (nothing changes on SQLite)",
        sql: "",
    },
];

pub use crate::sqlite::SchemaError;

/// Makes `conn` one that can write the Second Brain, and brings the schema up to
/// date: registers `engram_tokens` (`tokenizer.rs`), which the transcript's triggers
/// call (and the migration to version 5 too), then migrates.
pub fn migrate(conn: &mut Connection) -> Result<(), SchemaError> {
    SCHEMA.migrate(conn)
}

/// The Second Brain's schema (`engram db status` lists it); its connections register
/// `engram_tokens` before migrating.
pub static SCHEMA: Schema = Schema {
    what: "the Second Brain database",
    migrations: MIGRATIONS,
    prepare: super::tokenizer::register_token_count,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_to_an_empty_database() {
        let mut conn = Connection::open_in_memory().expect("open");
        migrate(&mut conn).expect("migrate");
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .expect("version");
        assert_eq!(version, MIGRATIONS.len() as i64);
    }

    /// A database of version 1 (before the transcript tier) with a memory and a
    /// conversation not yet learned from: it opens, keeps both, and the pending turns
    /// become searchable messages that extraction still reads.
    #[test]
    fn a_version_1_database_upgrades_and_keeps_its_data() {
        use crate::memory::brain::{Brain, SearchScope, Tier};
        use crate::time::ManualClock;
        use std::sync::Arc;

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("second-brain.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            crate::sqlite::migrate(&mut conn, &MIGRATIONS[..1], "test").expect("version 1");
            conn.execute_batch(
                "INSERT INTO memories (id, user_id, memory_type, summary, scope, confidence, importance, durability, evidence, created_at, updated_at, last_seen_at, confidence_at)
                 VALUES ('mem_old', 'default', 'preference', 'User likes oolong tea', 'durable', 0.9, 0.6, 0.8, 'direct', 1, 1, 1, 1);
                 INSERT INTO conversations (id, user_id, started_at, last_message_at) VALUES ('c1', 'default', 5, 6);
                 INSERT INTO turns (id, conversation_id, user_id, seq, role, content, at) VALUES
                    ('turn_a', 'c1', 'default', 1, 'user', 'I am allergic to peanuts.', 5),
                    ('turn_b', 'c1', 'default', 2, 'assistant', 'Noted, no peanuts.', 6);",
            )
            .expect("version 1 data");
        }
        let brain = Brain::open(
            &path,
            Arc::new(ManualClock::new(10)),
            crate::events::EventBus::default(),
        )
        .expect("upgrade");
        let version: i64 = brain
            .store()
            .read_sqlite(|c| Ok(c.pragma_query_value(None, "user_version", |r| r.get(0))?))
            .expect("version");
        assert_eq!(version, MIGRATIONS.len() as i64);
        assert_eq!(
            brain.get("default", "mem_old").expect("the memory").summary,
            "User likes oolong tea"
        );
        assert_eq!(
            brain.search("default", "oolong", 5).expect("search").len(),
            1
        );
        let (conversation, messages) = brain.conversation("default", "c1").expect("conversation");
        assert_eq!(
            (conversation.started_at, conversation.extracted_seq),
            (5, 0)
        );
        let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["turn_a", "turn_b"]);
        let found = brain
            .search_hits("default", "peanuts", 5, SearchScope::Conversations)
            .expect("search");
        assert_eq!(found.len(), 2);
        assert!(found.iter().all(|h| h.tier == Tier::Transcript));
    }

    /// A database of version 4 with two users' messages: the upgrade gives each user
    /// their counters and their block of the index, and each finds their own messages,
    /// scored over theirs alone.
    #[test]
    fn a_version_4_database_upgrades_to_per_user_statistics() {
        use crate::memory::brain::{Brain, SearchScope};
        use crate::time::ManualClock;
        use std::sync::Arc;

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("second-brain.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            crate::sqlite::migrate(&mut conn, &MIGRATIONS[..4], "test").expect("version 4");
            conn.execute_batch(
                "INSERT INTO conversations (id, user_id, started_at, last_message_at) VALUES ('a', 'ann', 5, 6), ('b', 'bob', 5, 6);
                 INSERT INTO messages (id, conversation_id, user_id, seq, role, content, at) VALUES
                    ('turn_a1', 'a', 'ann', 1, 'user', 'Peanuts again, peanuts everywhere.', 5),
                    ('turn_b1', 'b', 'bob', 1, 'user', 'I like peanuts.', 5),
                    ('turn_b2', 'b', 'bob', 2, 'user', 'No more peanuts for me, thanks.', 6),
                    ('turn_a2', 'a', 'ann', 2, 'user', 'Tea.', 6);",
            )
            .expect("version 4 data");
        }
        let brain = Brain::open(
            &path,
            Arc::new(ManualClock::new(10)),
            crate::events::EventBus::default(),
        )
        .expect("upgrade");
        let counters: Vec<(String, i64, i64)> = brain
            .store()
            .read_sqlite(|c| {
                let mut stmt = c.prepare(
                    "SELECT user_id, messages, tokens FROM transcript_users ORDER BY user_id",
                )?;
                let rows = stmt
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                Ok(rows)
            })
            .expect("counters");
        assert_eq!(
            counters,
            [("ann".to_string(), 2, 5), ("bob".to_string(), 2, 9)]
        );
        for (user, expected) in [
            ("ann", vec!["turn_a1"]),
            ("bob", vec!["turn_b1", "turn_b2"]),
        ] {
            let mut found: Vec<String> = brain
                .search_hits(user, "peanuts", 5, SearchScope::Conversations)
                .expect("search")
                .into_iter()
                .filter_map(|h| h.message.map(|m| m.id))
                .collect();
            found.sort();
            assert_eq!(found, expected, "{user}");
        }
        brain
            .store()
            .write_sqlite(|tx| {
                tx.execute(
                    "INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')",
                    [],
                )?;
                Ok(())
            })
            .expect("the index matches the messages");
    }

    /// A database of version 5 with a memory and its history: the history keeps its
    /// rows and ids through the rebuild, takes RESTORE, and the agent's dismissals work.
    #[test]
    fn a_version_5_database_upgrades_keeping_its_history() {
        use crate::memory::brain::Brain;
        use crate::time::ManualClock;
        use std::sync::Arc;

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("second-brain.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            super::super::tokenizer::register_token_count(&conn).expect("engram_tokens");
            crate::sqlite::migrate(&mut conn, &MIGRATIONS[..5], "test").expect("version 5");
            conn.execute_batch(
                "INSERT INTO memories (id, user_id, memory_type, summary, scope, confidence, importance, durability, evidence, created_at, updated_at, last_seen_at, confidence_at)
                 VALUES ('mem_old', 'default', 'preference', 'User likes oolong tea', 'durable', 0.9, 0.6, 0.8, 'direct', 1, 2, 1, 1);
                 INSERT INTO history (id, user_id, memory_id, event, old_value, new_value, actor, at) VALUES
                    (7, 'default', 'mem_old', 'ADD', NULL, '{}', 'user', 1),
                    (9, 'default', 'mem_old', 'UPDATE', '{}', '{}', 'user', 2);",
            )
            .expect("version 5 data");
        }
        let brain = Brain::open(
            &path,
            Arc::new(ManualClock::new(10)),
            crate::events::EventBus::default(),
        )
        .expect("upgrade");
        let version: i64 = brain
            .store()
            .read_sqlite(|c| Ok(c.pragma_query_value(None, "user_version", |r| r.get(0))?))
            .expect("version");
        assert_eq!(version, MIGRATIONS.len() as i64);
        let ids: Vec<i64> = brain
            .store()
            .read_sqlite(|c| {
                Ok(c.prepare("SELECT id FROM history ORDER BY id")?
                    .query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?)
            })
            .expect("history ids");
        assert_eq!(ids, [7, 9]);
        brain
            .dismiss_for_agent("default", "mem_old", false)
            .expect("dismiss");
        assert!(
            brain
                .search("default", "oolong", 5)
                .expect("search")
                .is_empty()
        );
        brain.restore("default", "mem_old").expect("restore");
        let events: Vec<String> = brain
            .history("default", "mem_old")
            .expect("history")
            .into_iter()
            .map(|h| h.event)
            .collect();
        assert_eq!(events, ["ADD", "UPDATE", "DISMISS", "RESTORE"]);
        assert_eq!(
            brain.search("default", "oolong", 5).expect("search").len(),
            1
        );
    }

    /// A database of version 7 with a memory and a message: both are embedded after
    /// the upgrade (the backfill), and deleting them deletes their vectors.
    #[test]
    fn a_version_7_database_upgrades_and_its_texts_are_embedded() {
        use crate::memory::brain::Brain;
        use crate::time::ManualClock;
        use std::sync::Arc;

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("second-brain.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            super::super::tokenizer::register_token_count(&conn).expect("engram_tokens");
            crate::sqlite::migrate(&mut conn, &MIGRATIONS[..7], "test").expect("version 7");
            conn.execute_batch(
                "INSERT INTO memories (id, user_id, memory_type, summary, scope, confidence, importance, durability, evidence, created_at, updated_at, last_seen_at, confidence_at)
                 VALUES ('mem_old', 'default', 'preference', 'User likes oolong tea', 'durable', 0.9, 0.6, 0.8, 'direct', 1, 2, 1, 1);
                 INSERT INTO conversations (id, user_id, started_at, last_message_at) VALUES ('c1', 'default', 5, 6);
                 INSERT INTO messages (id, conversation_id, user_id, seq, role, content, at)
                    VALUES ('turn_a', 'c1', 'default', 1, 'user', 'Oolong again.', 5);",
            )
            .expect("version 7 data");
        }
        let brain = Brain::open(
            &path,
            Arc::new(ManualClock::new(10)),
            crate::events::EventBus::default(),
        )
        .expect("upgrade");
        let model = tempfile::tempdir().expect("model dir");
        let mut rng = crate::test_rng::Rng(1);
        crate::embed::tiny_bert::write(model.path(), &mut || rng.next());
        let encoder = crate::embed::encoder::Encoder::load(model.path()).expect("tiny model");
        brain.set_encoder(Arc::new(encoder));
        let pass = brain.embed_pending().expect("backfill");
        assert_eq!((pass.memories, pass.messages), (1, 1));
        brain.clear("default").expect("clear");
        let left: i64 = brain
            .store()
            .read_sqlite(|c| {
                Ok(c.query_row(
                    "SELECT (SELECT count(*) FROM memory_vectors) + (SELECT count(*) FROM message_vectors)",
                    [],
                    |r| r.get(0),
                )?)
            })
            .expect("count");
        assert_eq!(left, 0);
    }

    /// A database of version 8 with a vector of a memory and of a message: after the
    /// upgrade both are kept, in rowid tables (a vector's row fits on the page), and
    /// deleting their texts still deletes them.
    #[test]
    fn a_version_8_database_upgrades_keeping_its_vectors_in_rowid_tables() {
        use crate::memory::brain::Brain;
        use crate::time::ManualClock;
        use std::sync::Arc;

        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("second-brain.db");
        let vector: Vec<u8> = (0..384u32).flat_map(|i| (i as f32).to_le_bytes()).collect();
        {
            let mut conn = Connection::open(&path).expect("open");
            super::super::tokenizer::register_token_count(&conn).expect("engram_tokens");
            crate::sqlite::migrate(&mut conn, &MIGRATIONS[..8], "test").expect("version 8");
            conn.execute_batch(
                "INSERT INTO memories (id, user_id, memory_type, summary, scope, confidence, importance, durability, evidence, created_at, updated_at, last_seen_at, confidence_at)
                 VALUES ('mem_old', 'default', 'preference', 'User likes oolong tea', 'durable', 0.9, 0.6, 0.8, 'direct', 1, 2, 1, 1);
                 INSERT INTO conversations (id, user_id, started_at, last_message_at) VALUES ('c1', 'default', 5, 6);
                 INSERT INTO messages (id, conversation_id, user_id, seq, role, content, at)
                    VALUES ('turn_a', 'c1', 'default', 1, 'user', 'Oolong again.', 5);",
            )
            .expect("version 8 data");
            conn.execute(
                "INSERT INTO memory_vectors VALUES ('default', 'mem_old', 'm1', ?1)",
                [&vector],
            )
            .expect("a memory's vector");
            conn.execute(
                "INSERT INTO message_vectors VALUES ('default', 'turn_a', 'm1', ?1)",
                [&vector],
            )
            .expect("a message's vector");
        }
        let brain = Brain::open(
            &path,
            Arc::new(ManualClock::new(10)),
            crate::events::EventBus::default(),
        )
        .expect("upgrade");
        let read = |sql: &str| -> Vec<(String, Vec<u8>)> {
            brain
                .store()
                .read_sqlite(|c| {
                    Ok(c.prepare(sql)?
                        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                        .collect::<rusqlite::Result<_>>()?)
                })
                .expect("read")
        };
        assert_eq!(
            read("SELECT memory_id, vector FROM memory_vectors"),
            [("mem_old".to_string(), vector.clone())]
        );
        assert_eq!(
            read("SELECT message_id, vector FROM message_vectors"),
            [("turn_a".to_string(), vector.clone())]
        );
        let without_rowid = read(
            "SELECT name, CAST(sql AS BLOB) FROM sqlite_schema WHERE name LIKE '%vectors%' AND sql LIKE '%WITHOUT ROWID%'",
        );
        assert!(without_rowid.is_empty(), "{without_rowid:?}");
        brain.clear("default").expect("clear");
        let left: i64 = brain
            .store()
            .read_sqlite(|c| {
                Ok(c.query_row(
                    "SELECT (SELECT count(*) FROM memory_vectors) + (SELECT count(*) FROM message_vectors)",
                    [],
                    |r| r.get(0),
                )?)
            })
            .expect("count");
        assert_eq!(left, 0);
    }
}
