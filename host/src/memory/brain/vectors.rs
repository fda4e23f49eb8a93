//! The installed sentence encoder's vectors of memories and messages, for retrieval's
//! meaning (`retrieve.rs`). A write never waits for them: the background worker
//! ([`Brain::embed_pending`], run by `upkeep.rs` after each commit and at start) embeds
//! what has no vector of the current model, oldest first, in batches, and stores each
//! vector beside the model version it came from, so that a new model (or new weights
//! under the same name) makes every vector missing again.
//!
//! A vector is stored only while its text is still the one embedded (the worker reads,
//! embeds, then writes in another transaction: a memory forgotten or edited meanwhile
//! gets none), and the schema's triggers delete it with its row and whenever the text
//! changes (schema 8): nothing forgotten survives as a vector.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::sql::{Actor, AsTx, Row, Tx};

use super::error::StoreError;
use super::row::number_column;
use super::{Brain, meaning};
use crate::embed::encoder::{BATCH, Encoder};

/// A pass of the worker embeds at most this many of the model's batches' worth of
/// texts: a pass stays short, and the next one starts at once when this one was full.
const BATCHES_PER_PASS: usize = 16;

/// The encoder retrieval and the worker use, with its version key.
pub struct Model {
    pub encoder: Arc<Encoder>,
    /// [`Encoder::version`]: stored with every vector.
    pub version: String,
}

/// The Brain's model, if one is installed, and where the worker's scan stands.
#[derive(Default)]
pub(super) struct Slot {
    model: RwLock<Option<Arc<Model>>>,
    /// Boxed: the Brain is held by value beside the small fact store.
    cursor: Box<Mutex<Cursor>>,
}

impl Slot {
    pub fn get(&self) -> Option<Arc<Model>> {
        self.model.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, model: Model) {
        *self.model.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(model));
    }
}

/// A scan of every row costs seconds at a million messages, so a pass starts where the
/// last one stopped: rows written since have higher numbers, and memories changed
/// since (an edit deletes its vector) have a newer `updated_at`. What a cursor cannot
/// see (a row that took the number of a deleted one, a memory restored before it was
/// ever embedded) waits for the full scan every [`RESCAN_EVERY`], reading its meaning
/// from the static table meanwhile.
#[derive(Default)]
struct Cursor {
    /// The model version the scan is for: another one starts from the beginning.
    version: String,
    /// Per tier, the last row looked at.
    after: [i64; 2],
    /// When this scan started from the beginning.
    started: Option<Instant>,
    /// The Brain's time when the last pass started: memories updated since are looked
    /// at again.
    pass_at: i64,
}

/// How often the worker looks through every row again.
const RESCAN_EVERY: Duration = Duration::from_secs(3600);

/// What a pass of the worker did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    pub memories: usize,
    pub messages: usize,
    /// Whether texts may still lack a vector (the pass stopped at its bound).
    pub more: bool,
}

/// The tiers that have vectors.
#[derive(Debug, Clone, Copy)]
enum Tier {
    Memories,
    Messages,
}

impl Tier {
    /// Up to `limit` texts of this tier without a vector of `model`, after `after` in
    /// the order they were written: `(rowid, user, id, text)`. Memories are embedded
    /// as retrieval reads them (`meaning::about`); superseded and dismissed ones are
    /// never retrieved, so never embedded.
    fn missing(
        self,
        tx: &Tx,
        model: &str,
        after: i64,
        updated_since: i64,
        limit: usize,
    ) -> Result<Vec<(i64, String, String, String)>, StoreError> {
        let read = |r: &Row| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?));
        let sql = match self {
            Tier::Memories => format!(
                "SELECT m.{number}, m.user_id, m.id, m.summary FROM memories m
                 WHERE (m.{number} > ?2 OR m.updated_at >= ?4)
                   AND m.superseded_by IS NULL AND m.dismissed_at IS NULL
                   AND NOT EXISTS (SELECT 1 FROM memory_vectors v
                       WHERE v.user_id = m.user_id AND v.memory_id = m.id AND v.model = ?1)
                 ORDER BY m.{number} LIMIT ?3",
                number = number_column(tx)
            ),
            // Messages are not edited; a redacted one ("[forgotten]") needs no meaning.
            // Every parameter is named, so that PostgreSQL knows each one's type.
            Tier::Messages => "SELECT m.n, m.user_id, m.id, m.content FROM messages m
                 WHERE m.n > ?2 AND ?4 = ?4
                   AND NOT EXISTS (SELECT 1 FROM message_vectors v
                       WHERE v.user_id = m.user_id AND v.message_id = m.id AND v.model = ?1)
                 ORDER BY m.n LIMIT ?3"
                .to_string(),
        };
        Ok(tx.query(
            &sql,
            &[
                model.into(),
                after.into(),
                (limit as i64).into(),
                updated_since.into(),
            ],
            read,
        )?)
    }

    /// Stores `vector` for the row, if it still holds `text`.
    fn put(
        self,
        conn: &impl AsTx,
        (user, id, text): (&str, &str, &str),
        model: &str,
        vector: &[f32],
    ) -> Result<(), StoreError> {
        // The SELECT has a WHERE, so that SQLite cannot read `ON CONFLICT` as a join's.
        let sql = match self {
            Tier::Memories => {
                "INSERT INTO memory_vectors (user_id, memory_id, model, vector)
                 SELECT ?1, ?2, ?4, ?5 WHERE EXISTS (SELECT 1 FROM memories
                     WHERE id = ?2 AND user_id = ?1 AND summary = ?3
                       AND superseded_by IS NULL AND dismissed_at IS NULL)
                 ON CONFLICT (user_id, memory_id) DO UPDATE SET model = excluded.model, vector = excluded.vector"
            }
            Tier::Messages => {
                "INSERT INTO message_vectors (user_id, message_id, model, vector)
                 SELECT ?1, ?2, ?4, ?5 WHERE EXISTS (SELECT 1 FROM messages
                     WHERE id = ?2 AND user_id = ?1 AND content = ?3)
                 ON CONFLICT (user_id, message_id) DO UPDATE SET model = excluded.model, vector = excluded.vector"
            }
        };
        let bytes = to_bytes(vector);
        conn.as_tx().execute(
            sql,
            &[
                user.into(),
                id.into(),
                text.into(),
                model.into(),
                (&bytes).into(),
            ],
        )?;
        Ok(())
    }

    fn text_of(self, stored: &str) -> &str {
        match self {
            Tier::Memories => meaning::about(stored),
            Tier::Messages => stored,
        }
    }
}

fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector, if it has `dims` values.
fn from_bytes(bytes: &[u8], dims: usize) -> Option<Vec<f32>> {
    (bytes.len() == dims * 4).then(|| {
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    })
}

/// The stored vectors of `model` for some of a user's memories and messages, by id.
#[derive(Debug, Default)]
pub struct Stored {
    pub memories: HashMap<String, Vec<f32>>,
    pub messages: HashMap<String, Vec<f32>>,
}

impl Stored {
    /// Reads the vectors of the given memories and messages (those of another model,
    /// or of another length, are left out: the static table stands in for them).
    pub fn read<'a>(
        conn: &impl AsTx,
        user: &str,
        model: &Model,
        memories: impl IntoIterator<Item = &'a str>,
        messages: impl IntoIterator<Item = &'a str>,
    ) -> Result<Stored, StoreError> {
        let dims = model.encoder.dims();
        let conn = conn.as_tx();
        let read = |sql: &str, ids: &mut dyn Iterator<Item = &'a str>| {
            let mut found = HashMap::new();
            for id in ids {
                let bytes: Option<Vec<u8>> = conn.query_opt(
                    sql,
                    &[user.into(), id.into(), model.version.as_str().into()],
                    |r| r.get(0),
                )?;
                if let Some(vector) = bytes.and_then(|b| from_bytes(&b, dims)) {
                    found.insert(id.to_string(), vector);
                }
            }
            Ok::<_, StoreError>(found)
        };
        Ok(Stored {
            memories: read(
                "SELECT vector FROM memory_vectors WHERE user_id = ?1 AND memory_id = ?2 AND model = ?3",
                &mut memories.into_iter(),
            )?,
            messages: read(
                "SELECT vector FROM message_vectors WHERE user_id = ?1 AND message_id = ?2 AND model = ?3",
                &mut messages.into_iter(),
            )?,
        })
    }
}

impl Brain {
    /// Makes `encoder` the model retrieval reads meaning with and the worker embeds
    /// with (its version key is one embedding: call it off the async workers).
    pub fn set_encoder(&self, encoder: Arc<Encoder>) {
        let version = encoder.version();
        self.model.set(Model { encoder, version });
    }

    pub(super) fn model(&self) -> Option<Arc<Model>> {
        self.model.get()
    }

    /// The worker's pass: embeds up to [`BATCHES_PER_PASS`] batches of what has no
    /// vector of the current model, memories first, oldest first. Does nothing
    /// without a model.
    pub fn embed_pending(&self) -> Result<Pass, StoreError> {
        let mut pass = Pass::default();
        let Some(model) = self.model() else {
            return Ok(pass);
        };
        let mut cursor = self.model.cursor.lock().unwrap_or_else(|p| p.into_inner());
        let rescan = cursor.version != model.version
            || cursor.started.is_none_or(|t| t.elapsed() >= RESCAN_EVERY);
        if rescan {
            *cursor = Cursor {
                version: model.version.clone(),
                after: [0, 0],
                started: Some(Instant::now()),
                pass_at: 0,
            };
        }
        // Memories updated since the last pass started (a margin for the clock's
        // resolution): their vectors were deleted with their old text.
        let updated_since = cursor.pass_at.saturating_sub(1_000);
        let pass_at = self.now();
        // Texts this pass may still embed. A tier's texts are embedded in one call, which
        // runs them shortest first, [`BATCH`] at a time: each batch is padded only to the
        // longest of texts of about its length, where a batch of texts as written was
        // padded to the longest of as many random lengths.
        let mut room = BATCH * BATCHES_PER_PASS;
        for (index, tier) in [Tier::Memories, Tier::Messages].into_iter().enumerate() {
            if room == 0 {
                break;
            }
            let after = cursor.after[index];
            let rows = self.store.read(Actor::System, |c| {
                tier.missing(c, &model.version, after, updated_since, room)
            })?;
            let Some(last) = rows.last() else {
                continue;
            };
            // A memory updated behind the cursor does not move it back.
            cursor.after[index] = after.max(last.0);
            let texts: Vec<&str> = rows.iter().map(|r| tier.text_of(&r.3)).collect();
            let vectors = model.encoder.embed_batch(&texts)?;
            // Vectors are derived: one lost in a power cut is embedded again.
            self.store.write_relaxed(Actor::System, |tx| {
                for ((_, user, id, text), vector) in rows.iter().zip(&vectors) {
                    tier.put(tx, (user, id, text), &model.version, vector)?;
                }
                Ok(())
            })?;
            match tier {
                Tier::Memories => pass.memories += rows.len(),
                Tier::Messages => pass.messages += rows.len(),
            }
            room -= rows.len();
        }
        // The pass stopped at its bound: what is left waits for the next one, which
        // looks again at what this one started from.
        if room == 0 {
            pass.more = true;
            return Ok(pass);
        }
        cursor.pass_at = pass_at;
        Ok(pass)
    }

    /// Returns once a write has committed since the last call (at once if one has):
    /// what wakes the worker.
    pub async fn written(&self) {
        self.store.committed().notified().await;
    }
}

#[cfg(test)]
mod tests {
    use engram_strategies::model::{MemoryType, Role};

    use super::super::tests::{Fixture, fixture};
    use super::*;
    use crate::embed::tiny_bert;
    use crate::memory::NewMemory;
    use crate::test_rng::Rng;

    /// A tiny model on disk (`tiny_bert`), its weights drawn from `seed`.
    fn tiny(seed: u64) -> (tempfile::TempDir, Arc<Encoder>) {
        let dir = tempfile::tempdir().expect("model dir");
        let mut rng = Rng(seed);
        tiny_bert::write(dir.path(), &mut || rng.next());
        let encoder = Arc::new(Encoder::load(dir.path()).expect("tiny model"));
        (dir, encoder)
    }

    #[test]
    fn retrieval_reads_the_vector_a_turn_made_of_its_message_rather_than_embed_it_again() {
        let (_dir, encoder) = tiny(5);
        let model = Model {
            version: encoder.version(),
            encoder: encoder.clone(),
        };
        let message = "what do i drive";
        let mut given = vec![0.0f32; encoder.dims()];
        given[0] = 1.0;
        let query = super::super::retrieve::Query::encoded(message, Some(&model), Some(&given));
        assert_eq!(query.encoded.as_deref(), Some(given.as_slice()));
        // Another model's vector (another length) is not read: the message is embedded.
        let query = super::super::retrieve::Query::encoded(message, Some(&model), Some(&[1.0]));
        assert_eq!(query.encoded, Some(encoder.embed(message).expect("embed")));
        // Without a model the static table serves, whatever was given.
        let query = super::super::retrieve::Query::encoded(message, None, Some(&given));
        assert_eq!(query.encoded, None);
    }

    #[test]
    fn retrieval_embeds_a_message_that_names_someone_without_the_name() {
        use super::super::focus::Focus;
        use super::super::retrieve::Query;
        let (_dir, encoder) = tiny(5);
        let model = Model {
            version: encoder.version(),
            encoder: encoder.clone(),
        };
        let message = "What does Anna drive?";
        let given = encoder.embed(message).expect("embed");
        let naming = Focus {
            names: vec!["Anna".into()],
            ..Focus::default()
        };
        let query = Query::asking(message, &naming, Some(&model), Some(&given));
        assert_eq!(
            query.encoded,
            Some(encoder.embed("What does drive?").expect("embed"))
        );
        assert_ne!(query.encoded.as_deref(), Some(given.as_slice()));
        // The words still hold the name: bm25 and the focus read it.
        assert!(query.terms.contains("anna"), "{}", query.terms);
        // A message that names nobody is read whole, from the turn's vector.
        let query = Query::asking(message, &Focus::default(), Some(&model), Some(&given));
        assert_eq!(query.encoded.as_deref(), Some(given.as_slice()));
    }

    fn count(f: &Fixture, table: &str) -> i64 {
        f.brain
            .store()
            .read_sqlite(|c| {
                Ok(c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?)
            })
            .expect("count")
    }

    fn models(f: &Fixture, table: &str) -> Vec<String> {
        f.brain
            .store()
            .read_sqlite(|c| {
                Ok(c.prepare(&format!("SELECT DISTINCT model FROM {table}"))?
                    .query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?)
            })
            .expect("models")
    }

    fn add(f: &Fixture, summary: &str) -> String {
        f.brain
            .add("default", NewMemory::new(MemoryType::Preference, summary))
            .expect("add")
            .record
            .id
    }

    fn say(f: &Fixture, conversation: &str, content: &str) -> String {
        f.brain
            .record_message("default", conversation, Role::User, None, content)
            .expect("record")
            .expect("learning is on")
    }

    #[test]
    fn the_worker_embeds_what_was_written_after_the_write_returned() {
        let f = fixture();
        let (_model, encoder) = tiny(29);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        // Each commit wakes the worker (a permit waits for it); the guard only keeps a
        // broken wake-up from hanging the test.
        let woken = || {
            runtime.block_on(async {
                tokio::time::timeout(std::time::Duration::from_secs(60), f.brain.written())
                    .await
                    .expect("a commit wakes the worker")
            })
        };
        // Without a model the worker does nothing.
        add(&f, "User likes green tea");
        woken();
        assert_eq!(f.brain.embed_pending().expect("pass"), Pass::default());

        f.brain.set_encoder(encoder.clone());
        let id = add(&f, "User walks the dog every morning");
        say(&f, "c1", "The dog needs a new lead.");
        // The writes returned with no vector: the worker writes them.
        assert_eq!(count(&f, "memory_vectors"), 0);
        assert_eq!(count(&f, "message_vectors"), 0);
        woken();

        let pass = f.brain.embed_pending().expect("pass");
        assert_eq!((pass.memories, pass.messages, pass.more), (2, 1, false));
        assert_eq!(count(&f, "memory_vectors"), 2);
        assert_eq!(count(&f, "message_vectors"), 1);
        let model = f.brain.model().expect("model");
        let stored = f
            .brain
            .store()
            .read_sqlite(|c| Stored::read(c, "default", &model, [id.as_str()], []))
            .expect("read");
        // Embedded as retrieval reads a memory: without "User".
        let expected = encoder.embed("walks the dog every morning").expect("embed");
        let cos = crate::embed::dot(&stored.memories[&id], &expected);
        assert!(cos > 1.0 - 1e-5, "cosine {cos}");
        // Nothing is missing any more.
        assert_eq!(f.brain.embed_pending().expect("pass"), Pass::default());
    }

    #[test]
    fn a_pass_is_bounded_and_takes_the_oldest_first() {
        let f = fixture();
        let (_model, encoder) = tiny(3);
        let texts: Vec<String> = (0..BATCH * BATCHES_PER_PASS + 5)
            .map(|i| format!("Message number {i} about the garden."))
            .collect();
        f.brain
            .store()
            .write_sqlite(|tx| {
                tx.execute(
                    "INSERT INTO conversations (id, user_id, started_at, last_message_at) VALUES ('c', 'default', 1, 1)",
                    [],
                )?;
                for (i, text) in texts.iter().enumerate() {
                    tx.execute(
                        "INSERT INTO messages (id, conversation_id, user_id, seq, role, content, at)
                         VALUES (?1, 'c', 'default', ?2, 'user', ?3, ?2)",
                        rusqlite::params![format!("turn_{i:04}"), i as i64, text],
                    )?;
                }
                Ok(())
            })
            .expect("messages");
        f.brain.set_encoder(encoder);
        let first = f.brain.embed_pending().expect("pass");
        assert_eq!(
            (first.messages, first.more),
            (BATCH * BATCHES_PER_PASS, true)
        );
        let embedded: Vec<String> = f
            .brain
            .store()
            .read_sqlite(|c| {
                Ok(
                    c.prepare("SELECT message_id FROM message_vectors ORDER BY message_id")?
                        .query_map([], |r| r.get(0))?
                        .collect::<rusqlite::Result<_>>()?,
                )
            })
            .expect("ids");
        let oldest: Vec<String> = (0..BATCH * BATCHES_PER_PASS)
            .map(|i| format!("turn_{i:04}"))
            .collect();
        assert_eq!(embedded, oldest);
        let second = f.brain.embed_pending().expect("pass");
        assert_eq!((second.messages, second.more), (5, false));
    }

    fn edit_summary(f: &Fixture, id: &str, summary: &str) {
        f.brain
            .edit(
                "default",
                id,
                crate::memory::MemoryEdit {
                    summary: Some(summary.into()),
                    ..Default::default()
                },
            )
            .expect("edit");
    }

    #[test]
    fn a_pass_starts_where_the_last_stopped_and_still_sees_an_edit_behind_it() {
        let f = fixture();
        let (_model, encoder) = tiny(9);
        f.brain.set_encoder(encoder);
        let first = add(&f, "User likes jazz");
        add(&f, "User likes long walks");
        f.brain.embed_pending().expect("pass");
        assert_eq!(count(&f, "memory_vectors"), 2);

        // The edit deletes the first one's vector with its old text, behind the cursor.
        edit_summary(&f, &first, "User likes blues");
        assert_eq!(count(&f, "memory_vectors"), 1);
        say(&f, "c1", "A message written after the cursor.");
        let pass = f.brain.embed_pending().expect("pass");
        assert_eq!((pass.memories, pass.messages), (1, 1));
        assert_eq!(count(&f, "memory_vectors"), 2);
        // Nothing is left, and nothing embedded is embedded again.
        let pass = f.brain.embed_pending().expect("pass");
        assert_eq!((pass.memories, pass.messages), (0, 0));
    }

    #[test]
    fn nothing_forgotten_or_changed_keeps_its_vector() {
        let f = fixture();
        let (_model, encoder) = tiny(5);
        f.brain.set_encoder(encoder.clone());
        let deleted = add(&f, "User owns a red bicycle");
        let forgotten = add(&f, "User's locker code is in the blue notebook");
        let edited = add(&f, "User likes jazz");
        let kept = add(&f, "User likes long walks");
        let redacted = say(&f, "c1", "My bank is the one on Main Street.");
        say(&f, "c2", "This whole conversation goes.");
        f.brain.embed_pending().expect("pass");
        assert_eq!(
            (count(&f, "memory_vectors"), count(&f, "message_vectors")),
            (4, 2)
        );

        f.brain.delete("default", &deleted).expect("delete");
        f.brain
            .forget_memory(
                "default",
                &forgotten,
                true,
                super::super::forget::Forgetter::Person,
            )
            .expect("forget");
        edit_summary(&f, &edited, "User likes blues");
        // What forgetting does to a message it redacts (`forget.rs`).
        f.brain
            .store()
            .write_sqlite(|tx| {
                tx.execute(
                    "UPDATE messages SET content = '[forgotten]' WHERE id = ?1",
                    [&redacted],
                )?;
                Ok(())
            })
            .expect("redact");
        f.brain
            .delete_conversation("default", "c2")
            .expect("delete conversation");
        let left: Vec<String> = f
            .brain
            .store()
            .read_sqlite(|c| {
                Ok(c.prepare("SELECT memory_id FROM memory_vectors UNION ALL SELECT message_id FROM message_vectors")?
                    .query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?)
            })
            .expect("left");
        assert_eq!(left, std::slice::from_ref(&kept));

        // A vector computed before its memory was forgotten is not stored after.
        let model = f.brain.model().expect("model");
        let vector = encoder.embed("owns a red bicycle").expect("embed");
        f.brain
            .store()
            .write_sqlite(|tx| {
                Tier::Memories.put(
                    tx,
                    ("default", &deleted, "User owns a red bicycle"),
                    &model.version,
                    &vector,
                )?;
                // Nor one of a text that changed meanwhile.
                Tier::Memories.put(
                    tx,
                    ("default", &edited, "User likes jazz"),
                    &model.version,
                    &vector,
                )
            })
            .expect("late vectors");
        assert_eq!(count(&f, "memory_vectors"), 1);

        f.brain.embed_pending().expect("pass");
        f.brain.clear("default").expect("clear");
        assert_eq!(
            (count(&f, "memory_vectors"), count(&f, "message_vectors")),
            (0, 0)
        );
    }

    #[test]
    fn another_version_of_the_model_embeds_everything_again() {
        let f = fixture();
        let (model_dir, old) = tiny(7);
        f.brain.set_encoder(old);
        add(&f, "User likes green tea");
        say(&f, "c1", "Green tea again today.");
        f.brain.embed_pending().expect("pass");
        let old_version = models(&f, "memory_vectors");

        // New weights under the same name.
        let mut rng = Rng(8);
        let weights = tiny_bert::safetensors(&tiny_bert::tensors(&mut || rng.next()));
        std::fs::write(model_dir.path().join("model.safetensors"), weights).expect("new weights");
        f.brain.set_encoder(Arc::new(
            Encoder::load(model_dir.path()).expect("new model"),
        ));
        let pass = f.brain.embed_pending().expect("pass");
        assert_eq!((pass.memories, pass.messages), (1, 1));
        let new_version = models(&f, "memory_vectors");
        assert_ne!(new_version, old_version);
        assert_eq!(
            new_version,
            [f.brain.model().expect("model").version.clone()]
        );
        assert_eq!(models(&f, "message_vectors"), new_version);
    }

    #[test]
    fn retrieval_reads_meaning_from_the_stored_vectors() {
        let f = fixture();
        let question = "Which automobile should I wash?";
        // Neither memory shares a word with the question; the static table finds the
        // car closer to it.
        let car = add(&f, "User has a red car");
        let tea = add(&f, "User enjoys oolong tea");
        let first = |f: &Fixture| {
            f.brain
                .retrieve("default", question)
                .expect("retrieve")
                .lines
                .first()
                .and_then(|l| l.memory().map(|m| m.id.clone()))
        };
        assert_eq!(first(&f), Some(car.clone()));

        // The tiny model's weights are random: it cannot say what is close in meaning.
        // So the vectors are written here as a model that can would: the tea's is the
        // question's own (cosine 1), the car's its opposite (no closer than unrelated
        // text). Retrieval must then rank by them.
        let (_model, encoder) = tiny(11);
        f.brain.set_encoder(encoder.clone());
        let model = f.brain.model().expect("model");
        let close = encoder.embed(question).expect("embed");
        let far: Vec<f32> = close.iter().map(|x| -x).collect();
        f.brain
            .store()
            .write_sqlite(|tx| {
                Tier::Memories.put(
                    tx,
                    ("default", &tea, "User enjoys oolong tea"),
                    &model.version,
                    &close,
                )?;
                Tier::Memories.put(
                    tx,
                    ("default", &car, "User has a red car"),
                    &model.version,
                    &far,
                )
            })
            .expect("vectors");
        assert_eq!(first(&f), Some(tea));
    }
}
