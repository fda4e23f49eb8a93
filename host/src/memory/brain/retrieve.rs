//! Retrieval before each message: the memories and transcript snippets to inject into
//! the agent's context, ranked together.
//!
//! 1. The query's terms are its content words (`meaning::query_words`, from `engram_strategies::analyser`,
//!    the analyser extraction and routing share); its meaning is the static MiniLM
//!    vector of those words (`meaning.rs`) and, with an installed encoder, the model's
//!    vector of the message without the names it asks about (`Focus::without_names`),
//!    embedded once per retrieval.
//! 2. Full-text candidates from both tiers: live memories (FTS5 bm25 over summary and
//!    detail) and the user's transcript (bm25 over each message and its speaker's
//!    name), both porter-stemmed; words common in an index are left out of its query
//!    unless that leaves fewer than 5 matches. Then every word counts: any of them
//!    while that matches few enough rows for bm25 to score, else the rows holding all
//!    of them (so that no query makes bm25 score a large part of a large index).
//! 3. Each candidate's relevance fuses its bm25, relative to the best match of its
//!    tier, with the cosine of its meaning and the query's (the model's vectors when the
//!    candidate has a stored one, `vectors.rs`, weighed by
//!    [`Tuning::encoded_meaning_weight`]; else the static table's) and with its coverage of
//!    the query (the share of the query's stems it holds, comparable across tiers):
//!    `(bm25 + w * cos + c * coverage) / (1 + w + c)` ([`Fusion::Blend`];
//!    reciprocal-rank fusion of the same signals, [`Fusion::Rrf`], is the
//!    alternative the benchmark measures beside it).
//!    Its score blends relevance with importance, confidence and recency; a snippet
//!    weighs as a memory of importance [`Tuning::transcript_importance`] stated
//!    directly (confidence 0.9). Stale memories count for less. A memory wins a tie
//!    with a snippet, so that a stated preference comes before a sentence that merely
//!    mentions it: the snippets' importance is kept at or below a preference's (0.6); a snippet of a message a chosen memory was learned from is
//!    left out (the memory says it already).
//! 4. When the conscious memories are weak (none, or none close to the best match) a
//!    subconscious memory that matches strongly is recalled: promoted back to the scope
//!    it had before (`prior_scope`, default active) and ranked with the others.
//! 5. The best lines are kept while the block fits the budget: at most 5 lines, at
//!    most 900 characters in all (newlines included). A memory's line is whole or
//!    skipped; a snippet needs at least [`MIN_SNIPPET`] characters of the message (or
//!    all of a shorter one), and once the lines are chosen, what is left of the budget
//!    lets snippets grow, evenly, up to [`MAX_SNIPPET`].
//! 6. Every returned memory gets `last_used_at = now` (and loses its stale mark).
//!
//! Line formats: `- [<type>] <summary>` for a memory (`- [preference] User likes green
//! tea`), `- [said <date>] <snippet>` for the transcript, the speaker's name (or the
//! role, for the assistant) before the snippet when the message has one
//! (`- [said 2024-05-01] Anna: I booked the flights to Lisbon.`).

use std::collections::{BTreeSet, HashSet};

use engram_strategies::analyser;
use engram_strategies::model::Scope;

use super::error::StoreError;
use super::focus::{self, Focus, StaleTurns};
use super::snippet::{self, snippet};
use super::store::q;
use super::text_index::TextMatch;
use super::text_index::{TextIndex, TextQuery};
use super::transcript::{self, MessageMatch};
use super::vectors::{Model, Stored};
use super::word_counts::WordCounts;
use super::{ACTOR_SYSTEM, Brain, meaning};
use crate::memory::record::{MemoryRecord, MessageRecord};
use crate::memory::{Injected, Retrieval, Source};
use crate::sql::{Actor, AsTx, Tx};
use crate::time::DAY_MS;

pub const MAX_INJECTED: usize = 5;
pub const BUDGET_CHARS: usize = 900;
/// Longest snippet of a message.
pub const MAX_SNIPPET: usize = 200;
/// Shortest snippet worth a line: a message shorter than this is shown whole.
pub const MIN_SNIPPET: usize = 60;
/// A snippet is ranked as a fact stated directly (the extractor's confidence for
/// one), so that it never outranks an equally relevant memory for being certain.
const SNIPPET_CONFIDENCE: f64 = 0.9;
/// A subconscious match is "strong" when its bm25 is within this fraction of the best.
const STRONG_RELATIVE: f64 = 0.9;
/// Conscious results are "weak" when the best of them is below this fraction of the best.
const WEAK_RELATIVE: f64 = 0.7;

/// The calibrated constants of retrieval (see the module docs). The defaults are
/// what `cargo bench --bench brain` chose by cross-validation; the benchmark passes
/// others to show how the choice generalises.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// Weight of the meaning's cosine against the bm25 in a relevance, for a
    /// candidate whose meaning is the static table's.
    pub meaning_weight: f64,
    /// The same for a candidate whose meaning is the installed encoder's (its stored
    /// vector against the message's): the model's cosines are spread otherwise than
    /// the table's (unrelated sentences score around 0.1 rather than 0), so they
    /// have their own weight. 4.0: with all-MiniLM-L6-v2 on LoCoMo's even questions
    /// (`cargo bench --bench brain -- e2e` with `ENGRAM_BENCH_MODEL`), the message
    /// embedded without the names it asks about, the mean of facts-only and both
    /// replays' recall was 55.9% at 1, 57.2% at 2 and at 4, 56.1% at 8; of 2 and 4, 4
    /// gains most where it gains least (over the static table: facts +2.1 points at
    /// 4, +1.8 at 2; the replay without names +2.4 and +1.9; with names +3.6 and +4.4).
    pub encoded_meaning_weight: f64,
    /// Weight of the query's coverage (the share of its stems a candidate holds):
    /// unlike bm25 relative to its tier's best, it compares across tiers.
    pub coverage_weight: f64,
    /// The importance a transcript snippet is ranked with: at most a preference's
    /// (0.6), so that memories win ties.
    pub transcript_importance: f64,
    /// How the signals become one relevance.
    pub fusion: Fusion,
    /// A word is common in an index, and left out of its full-text query, when it
    /// matches at least this many rows (and 1 in 50 of them).
    pub common_rows: usize,
    /// Full-text candidates ranked per tier.
    pub candidates: usize,
    /// The share of a candidate's score that is not its relevance: its importance,
    /// confidence and recency (3 : 3 : 2). Small, they break ties between equally
    /// relevant lines; large, a vivid old memory outranks the one that answers.
    pub prior_weight: f64,
    /// Added to the score of a message said by a person the message names.
    pub speaker_bonus: f64,
    /// Added to the score of any fact of a person the message names (the asked
    /// attribute's fact gets the focus's larger bonus instead). With none, a person
    /// named without an attribute adds no candidates of their own either.
    pub holder_bonus: f64,
}

/// How a candidate's bm25, meaning and coverage are fused into its relevance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// `(bm25 relative to its tier's best + w * cos + c * coverage) / (1 + w + c)`.
    Blend,
    /// Reciprocal-rank fusion with constant `k`: each signal contributes
    /// `weight / (k + rank)`, the rank of bm25 within its tier, of meaning and
    /// coverage among all the candidates; scaled so that first on all is 1.0.
    Rrf { k: u32 },
}

impl Default for Tuning {
    fn default() -> Tuning {
        Tuning {
            meaning_weight: 1.0,
            encoded_meaning_weight: 4.0,
            coverage_weight: 1.0,
            transcript_importance: 0.4,
            fusion: Fusion::Blend,
            common_rows: 200,
            candidates: 50,
            prior_weight: 0.15,
            speaker_bonus: 0.3,
            holder_bonus: 0.0,
        }
    }
}

/// `- [<type>, <when>] <summary>`: when the fact was last stated ("2 days ago").
pub fn render_line(record: &MemoryRecord, now: i64) -> String {
    format!(
        "- [{}, {}] {}",
        record.memory_type,
        crate::time::ago(record.last_seen_at, now),
        record.summary
    )
}

/// `- [said <date>, <when>] <speaker>: `, the part of a snippet's line before its
/// text.
pub fn said_prefix(message: &MessageRecord, now: i64) -> String {
    let speaker = match (&message.name, message.role.as_str()) {
        (Some(name), _) => format!("{name}: "),
        (None, "user") => String::new(),
        (None, role) => format!("{role}: "),
    };
    format!(
        "- [said {}, {}] {speaker}",
        crate::time::date(message.at),
        crate::time::ago(message.at, now)
    )
}

/// A query as retrieval and search read it.
pub struct Query {
    /// Content words, for the full-text indexes and the meaning.
    pub terms: String,
    /// Their stems, for choosing a snippet's sentence.
    pub stems: BTreeSet<String>,
    pub vector: Option<Vec<f32>>,
    /// The installed encoder's vector of the whole message, when there is one.
    pub encoded: Option<Vec<f32>>,
}

impl Query {
    pub fn new(text: &str) -> Query {
        let terms = meaning::query_words(text);
        Query {
            stems: snippet::stems(&terms),
            vector: meaning::vector(&terms),
            terms: terms.join(" "),
            encoded: None,
        }
    }

    /// The query with the encoder's vector of `text` as well: `given` when the caller
    /// embedded it already with the same model (a turn embeds its message once, for
    /// routing), else one run of the model. An encoder that fails leaves the static
    /// table's meaning, with a warning.
    pub fn encoded(text: &str, model: Option<&Model>, given: Option<&[f32]>) -> Query {
        Query::new(text).reading(text, model, given)
    }

    /// The query retrieval ranks with: the encoder reads the message without the
    /// names it asks about (`Focus::without_names`). `given`,
    /// the turn's vector of the whole message, serves only when it names none: a
    /// message that names one is embedded again.
    pub(super) fn asking(
        message: &str,
        focus: &Focus,
        model: Option<&Model>,
        given: Option<&[f32]>,
    ) -> Query {
        match focus.without_names(message) {
            Some(unnamed) => Query::new(message).reading(&unnamed, model, None),
            None => Query::new(message).reading(message, model, given),
        }
    }

    /// The query of `text` with the encoder's vector of `read` (the message without
    /// the names of the persons it asks about, `Focus::without_names`); `given`, the
    /// caller's vector of `read`, spares a run of the model.
    fn reading(mut self, read: &str, model: Option<&Model>, given: Option<&[f32]>) -> Query {
        if let Some(model) = model {
            match given.filter(|v| v.len() == model.encoder.dims()) {
                Some(vector) => self.encoded = Some(vector.to_vec()),
                None => match model.encoder.embed(read) {
                    Ok(vector) => self.encoded = Some(vector),
                    Err(e) => tracing::warn!("retrieval's meaning from the static table: {e}"),
                },
            }
        }
        self
    }

    /// A candidate's closeness in meaning to the query and the weight it has: the dot
    /// product of the encoder's vectors when both exist, else the static table's
    /// cosine of `text`.
    fn meaning(&self, text: &str, stored: Option<&[f32]>, tuning: &Tuning) -> (f64, f64) {
        if let (Some(query), Some(stored)) = (self.encoded.as_deref(), stored) {
            let cos = f64::from(crate::embed::dot(query, stored).max(0.0));
            return (cos, tuning.encoded_meaning_weight);
        }
        let cos = match self.vector.as_deref() {
            Some(v) if tuning.meaning_weight > 0.0 => meaning::closeness(v, text),
            _ => 0.0,
        };
        (cos, tuning.meaning_weight)
    }

    /// The share of the query's stems `text` holds, 0.0 to 1.0.
    fn coverage(&self, text: &str) -> f64 {
        if self.stems.is_empty() {
            return 0.0;
        }
        let held: BTreeSet<String> = analyser::words(text)
            .iter()
            .map(|w| analyser::stem(w))
            .filter(|s| self.stems.contains(s))
            .collect();
        held.len() as f64 / self.stems.len() as f64
    }
}

/// About how many rows one full-text query may make bm25 score in the transcript:
/// FTS5's bm25 reads each matching row's size, so on a large index a word matching
/// tens of thousands of rows costs tens of milliseconds (`cargo bench --bench brain --
/// latency`). Memories are ranked in memory (`text_index.rs`) under the same rule,
/// which decides what a query finds.
pub const MAX_SCORED_ROWS: usize = 2_000;

/// One tier's full-text index, as [`matches`] queries it for one user: every count is
/// of that user's rows alone.
trait FullText {
    type Hit;
    /// How many rows the user has in the index, to decide which words are common.
    fn size(&self) -> Result<i64, StoreError>;
    /// Whether a word matches at least `common_at` of the user's rows.
    fn is_common(&self, word: &str, size: i64, common_at: usize) -> Result<bool, StoreError>;
    /// Whether more than `cap` of the user's rows match `query`.
    fn more_than(&self, query: &TextQuery, cap: usize) -> Result<bool, StoreError>;
    /// The user's matches, best first.
    fn search(&self, query: &TextQuery) -> Result<Vec<Self::Hit>, StoreError>;
}

/// Live memories, ranked by the in-memory index.
struct Memories<'a> {
    conn: &'a Tx<'a>,
    text: &'a TextIndex,
    user: &'a str,
    limit: usize,
}

impl FullText for Memories<'_> {
    type Hit = TextMatch;

    fn size(&self) -> Result<i64, StoreError> {
        Ok(self.text.size(self.user))
    }

    fn is_common(&self, word: &str, _size: i64, common_at: usize) -> Result<bool, StoreError> {
        // Counting is a lookup here: nothing to remember.
        self.more_than(&TextQuery::word(word), common_at.saturating_sub(1))
    }

    fn more_than(&self, query: &TextQuery, cap: usize) -> Result<bool, StoreError> {
        self.text.more_than(self.user, query, cap)
    }

    fn search(&self, query: &TextQuery) -> Result<Vec<TextMatch>, StoreError> {
        self.text.search(self.conn, self.user, query, self.limit)
    }
}

/// The user's transcript, ranked by FTS5 (`messages_fts`).
struct Transcript<'a> {
    conn: &'a Tx<'a>,
    counts: &'a WordCounts,
    user: &'a str,
    limit: usize,
}

impl FullText for Transcript<'_> {
    type Hit = MessageMatch;

    fn size(&self) -> Result<i64, StoreError> {
        transcript::size(self.conn, self.user)
    }

    fn is_common(&self, word: &str, size: i64, common_at: usize) -> Result<bool, StoreError> {
        self.counts.is_common(self.user, word, size, common_at, || {
            self.more_than(&TextQuery::word(word), common_at.saturating_sub(1))
        })
    }

    fn more_than(&self, query: &TextQuery, cap: usize) -> Result<bool, StoreError> {
        Ok(transcript::match_count(self.conn, self.user, query, cap)? > cap)
    }

    fn search(&self, query: &TextQuery) -> Result<Vec<MessageMatch>, StoreError> {
        transcript::search(self.conn, self.user, query, self.limit)
    }
}

/// Full-text matches of memories for free text, best first, as retrieval and search
/// both want them: the words common in the index left out as long as the rarer ones
/// still find `enough` matches. Common words weigh little in bm25 but match thousands
/// of rows; when the rarer words find too little, every word counts ([`broad_query`]).
pub(super) fn text_matches(
    conn: &Tx,
    text: &TextIndex,
    user: &str,
    terms: &str,
    limit: usize,
    enough: usize,
    tuning: &Tuning,
) -> Result<Vec<TextMatch>, StoreError> {
    let index = Memories {
        conn,
        text,
        user,
        limit,
    };
    matches(&index, terms, enough, tuning)
}

/// The same for the transcript.
pub(super) fn said_matches(
    conn: &Tx,
    counts: &WordCounts,
    user: &str,
    terms: &str,
    limit: usize,
    enough: usize,
    tuning: &Tuning,
) -> Result<Vec<MessageMatch>, StoreError> {
    let index = Transcript {
        conn,
        counts,
        user,
        limit,
    };
    matches(&index, terms, enough, tuning)
}

/// [`text_matches`] and [`said_matches`] for one index.
fn matches<I: FullText>(
    index: &I,
    terms: &str,
    enough: usize,
    tuning: &Tuning,
) -> Result<Vec<I::Hit>, StoreError> {
    let mut found = Vec::new();
    if let Some(selective) = selective_words(index, terms, tuning.common_rows)? {
        found = match TextQuery::any(&selective) {
            Some(query) => index.search(&query)?,
            None => Vec::new(),
        };
        if found.len() >= enough || selective == terms {
            return Ok(found);
        }
    }
    let Some(broad) = broad_query(index, terms)? else {
        return Ok(found);
    };
    let broader = index.search(&broad)?;
    Ok(if broader.len() >= found.len() {
        broader
    } else {
        found
    })
}

/// The words of `text` that are not common in the index: a word matching at least
/// 1 in 50 indexed rows (and at least `common_rows`) adds little to bm25 but makes
/// it score thousands of rows; so does any word matching [`MAX_SCORED_ROWS`], on an
/// index large enough for that to be rarer than 1 in 50. Returns `None` when every
/// word is common.
fn selective_words<I: FullText>(
    index: &I,
    text: &str,
    common_rows: usize,
) -> Result<Option<String>, StoreError> {
    let size = index.size()?;
    let common_at = (size as usize / 50).min(MAX_SCORED_ROWS).max(common_rows);
    let mut kept = Vec::new();
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(32)
    {
        if !index.is_common(&word.to_lowercase(), size, common_at)? {
            kept.push(word);
        }
    }
    Ok((!kept.is_empty()).then(|| kept.join(" ")))
}

/// Every word of the query: any of them when that matches few enough rows to score
/// ([`MAX_SCORED_ROWS`] for each of the words, at most), else only the rows holding
/// all of them, which bm25 can score however common each word is.
fn broad_query<I: FullText>(index: &I, terms: &str) -> Result<Option<TextQuery>, StoreError> {
    let Some(any) = TextQuery::any(terms) else {
        return Ok(None);
    };
    let words = terms.split_whitespace().count().max(1);
    let cap = MAX_SCORED_ROWS * words;
    if !index.more_than(&any, cap)? {
        return Ok(Some(any));
    }
    Ok(TextQuery::all(terms))
}

/// Relevance of a match relative to the best one: 1.0 for the best, less for weaker.
fn relative(bm25: f64, best: f64) -> f64 {
    // bm25() is negative, more negative is better; 0 is a candidate found otherwise
    // (by what it is about, or by meaning), with no word in common.
    if bm25 >= 0.0 {
        0.0
    } else if best >= 0.0 {
        1.0
    } else {
        (bm25 / best).clamp(0.0, 1.0)
    }
}

/// Relevance, importance, confidence and recency (from the time last referenced),
/// the last three together weighing `prior_weight`.
fn blend(
    relevance: f64,
    importance: f64,
    confidence: f64,
    referenced: i64,
    now: i64,
    prior_weight: f64,
) -> f64 {
    let age_days = ((now - referenced).max(0) as f64) / DAY_MS as f64;
    let recency = (-age_days / 30.0).exp();
    let prior = 0.375 * importance + 0.375 * confidence + 0.25 * recency;
    (1.0 - prior_weight) * relevance + prior_weight * prior
}

fn memory_score(record: &MemoryRecord, relevance: f64, now: i64, tuning: &Tuning) -> f64 {
    let referenced = record
        .last_used_at
        .unwrap_or(0)
        .max(record.last_seen_at)
        .max(record.created_at);
    let score = blend(
        relevance,
        f64::from(record.importance),
        f64::from(record.confidence),
        referenced,
        now,
        tuning.prior_weight,
    );
    if record.stale { score * 0.8 } else { score }
}

/// A candidate line, before the budget.
#[derive(Debug, Clone)]
pub(super) struct Ranked {
    pub source: Source,
    pub score: f64,
}

impl Ranked {
    fn is_memory(&self) -> bool {
        matches!(self.source, Source::Memory { .. })
    }
}

/// Both tiers' candidates, ranked (steps 3 to 5 of the module docs).
pub(super) fn rank(
    candidates: Candidates,
    query: &Query,
    tuning: &Tuning,
    now: i64,
    focus: &Focused,
) -> Vec<Ranked> {
    rank_with(candidates, query, tuning, now, false, Some(focus))
}

/// What words (and meaning) found in both tiers, with the stored vectors of those of
/// them that have one.
#[derive(Debug, Default)]
pub(super) struct Candidates {
    pub memories: Vec<TextMatch>,
    pub said: Vec<MessageMatch>,
    pub vectors: Stored,
}

impl Candidates {
    /// Reads the stored vectors of the candidates, when the query has the model's.
    pub fn with_vectors(
        memories: Vec<TextMatch>,
        said: Vec<MessageMatch>,
        conn: &Tx,
        user: &str,
        query: &Query,
        model: Option<&Model>,
    ) -> Result<Candidates, StoreError> {
        let vectors = match model {
            Some(model) if query.encoded.is_some() => Stored::read(
                conn,
                user,
                model,
                memories.iter().map(|m| m.record.id.as_str()),
                said.iter().map(|m| m.message.id.as_str()),
            )?,
            _ => Stored::default(),
        };
        Ok(Candidates {
            memories,
            said,
            vectors,
        })
    }
}

/// What a message asks about and what its candidate messages say now (`focus.rs`).
#[derive(Debug, Clone, Default)]
pub(super) struct Focused {
    pub focus: Focus,
    pub stale: StaleTurns,
}

/// Added to the score of the asked holder's fact on an asked attribute: it answers the
/// question, whatever its words, so it comes first (the newest first among them).
const FOCUS_BONUS: f64 = 0.5;
/// A message learned into a memory since superseded, on another attribute, weighs this
/// much of its score.
const SUPERSEDED_WEIGHT: f64 = 0.5;

impl Focused {
    /// Whether a candidate may be injected at all.
    fn admits(&self, source: &Source) -> bool {
        match source {
            Source::Memory { record, .. } => !self.focus.other_holders(record),
            Source::Message(message) => {
                !self.stale.superseded_asked.contains(&message.id)
                    && !self.stale.other_holders.contains(&message.id)
                    && !self.stale.agent_dismissed.contains(&message.id)
            }
        }
    }

    /// A candidate's score with what the focus adds or takes.
    fn adjust(
        &self,
        source: &Source,
        score: f64,
        newest: &std::collections::HashMap<String, i64>,
        tuning: &Tuning,
    ) -> f64 {
        match source {
            Source::Memory { record, .. } => {
                let strength = self.focus.strength(record);
                if strength > 0.0 {
                    // Newer statements of the same attribute first: the newest of each
                    // attribute gets the whole bonus, older ones a little less.
                    let newest_at = record
                        .attribute
                        .as_ref()
                        .and_then(|a| newest.get(a))
                        .copied()
                        .unwrap_or(record.last_seen_at);
                    let older = if record.last_seen_at < newest_at {
                        0.05
                    } else {
                        0.0
                    };
                    score + FOCUS_BONUS * strength - older
                } else if self.focus.named && self.focus.holds(record) {
                    score + tuning.holder_bonus
                } else {
                    score
                }
            }
            Source::Message(message) => {
                let spoken_by_holder = self.focus.named
                    && message.name.as_ref().is_some_and(|name| {
                        self.focus.holders.contains(&Some(name.to_lowercase()))
                    });
                let score = if spoken_by_holder {
                    score + tuning.speaker_bonus
                } else {
                    score
                };
                if self.stale.superseded_other.contains(&message.id) {
                    score * SUPERSEDED_WEIGHT
                } else {
                    score
                }
            }
        }
    }
}

/// Every candidate ranked as retrieval ranks them, subconscious memories included
/// whatever the conscious ones (search shows every match and recalls nothing).
pub(super) fn rank_all(
    candidates: Candidates,
    query: &Query,
    tuning: &Tuning,
    now: i64,
) -> Vec<Source> {
    rank_with(candidates, query, tuning, now, true, None)
        .into_iter()
        .map(|r| r.source)
        .collect()
}

fn rank_with(
    candidates: Candidates,
    query: &Query,
    tuning: &Tuning,
    now: i64,
    every_match: bool,
    focused: Option<&Focused>,
) -> Vec<Ranked> {
    let Candidates {
        memories,
        said,
        vectors,
    } = candidates;
    let mut candidates: Vec<(Source, Signals)> = Vec::new();
    if let Some(best) = memories.iter().map(|m| m.bm25).reduce(f64::min) {
        let (conscious, subconscious): (Vec<TextMatch>, Vec<TextMatch>) = memories
            .into_iter()
            .partition(|m| m.record.scope.is_conscious());
        let best_conscious = conscious
            .iter()
            .map(|m| relative(m.bm25, best))
            .fold(0.0, f64::max);
        let weak = conscious.is_empty() || best_conscious < WEAK_RELATIVE;
        let recalled = subconscious
            .into_iter()
            .filter(|m| every_match || (weak && relative(m.bm25, best) >= STRONG_RELATIVE))
            .map(|m| (m, !every_match));
        let mut kept: Vec<(TextMatch, bool)> = conscious
            .into_iter()
            .map(|m| (m, false))
            .chain(recalled)
            .collect();
        kept.sort_by(|a, b| a.0.bm25.total_cmp(&b.0.bm25));
        for (rank, (m, recalled)) in kept.into_iter().enumerate() {
            let stored = vectors.memories.get(&m.record.id).map(Vec::as_slice);
            let text = meaning::about(&m.record.summary);
            let signals = Signals::of(m.bm25, best, rank, (text, stored), query, tuning);
            candidates.push((
                Source::Memory {
                    record: m.record,
                    recalled,
                },
                signals,
            ));
        }
    }
    if let Some(best) = said.iter().map(|m| m.bm25).reduce(f64::min) {
        let mut said = said;
        said.sort_by(|a, b| a.bm25.total_cmp(&b.bm25));
        for (rank, m) in said.into_iter().enumerate() {
            let stored = vectors.messages.get(&m.message.id).map(Vec::as_slice);
            let text = m.message.content.as_str();
            let signals = Signals::of(m.bm25, best, rank, (text, stored), query, tuning);
            candidates.push((Source::Message(m.message), signals));
        }
    }
    let relevances = fuse(
        &candidates.iter().map(|(_, s)| *s).collect::<Vec<_>>(),
        tuning,
    );
    let mut ranked: Vec<Ranked> = candidates
        .into_iter()
        .zip(relevances)
        .map(|((source, _), relevance)| {
            let score = match &source {
                Source::Memory { record, .. } => memory_score(record, relevance, now, tuning),
                Source::Message(message) => blend(
                    relevance,
                    tuning.transcript_importance,
                    SNIPPET_CONFIDENCE,
                    message.at,
                    now,
                    tuning.prior_weight,
                ),
            };
            Ranked { source, score }
        })
        .collect();
    if let Some(focused) = focused {
        let mut newest: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
        for candidate in &ranked {
            if let Source::Memory { record, .. } = &candidate.source
                && focused.focus.matches(record)
                && let Some(attribute) = &record.attribute
            {
                let at = newest
                    .entry(attribute.clone())
                    .or_insert(record.last_seen_at);
                *at = (*at).max(record.last_seen_at);
            }
        }
        ranked.retain(|r| focused.admits(&r.source));
        for candidate in &mut ranked {
            candidate.score = focused.adjust(&candidate.source, candidate.score, &newest, tuning);
        }
    }
    ranked.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.is_memory().cmp(&a.is_memory()))
            .then_with(|| id_of(&a.source).cmp(id_of(&b.source)))
    });
    ranked
}

/// What a candidate's relevance is made of.
#[derive(Debug, Clone, Copy)]
struct Signals {
    /// bm25 relative to its tier's best (1.0 for the best).
    relative: f64,
    /// Its place in its tier's bm25 order, from 0.
    rank: usize,
    cos: f64,
    /// The weight of `cos`: the table's or the encoder's (`Tuning`).
    weight: f64,
    coverage: f64,
}

impl Signals {
    fn of(
        bm25: f64,
        best: f64,
        rank: usize,
        (text, stored): (&str, Option<&[f32]>),
        query: &Query,
        tuning: &Tuning,
    ) -> Signals {
        let (cos, weight) = query.meaning(text, stored, tuning);
        Signals {
            relative: relative(bm25, best),
            rank,
            cos,
            weight,
            coverage: if tuning.coverage_weight > 0.0 {
                query.coverage(text)
            } else {
                0.0
            },
        }
    }
}

/// Each candidate's relevance, 0.0 to 1.0, by `tuning.fusion`.
fn fuse(signals: &[Signals], tuning: &Tuning) -> Vec<f64> {
    let c = tuning.coverage_weight;
    match tuning.fusion {
        Fusion::Blend => signals
            .iter()
            .map(|s| (s.relative + s.weight * s.cos + c * s.coverage) / (1.0 + s.weight + c))
            .collect(),
        Fusion::Rrf { k } => {
            let k = f64::from(k);
            let cos = ranks(signals, |s| s.cos);
            let coverage = ranks(signals, |s| s.coverage);
            signals
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let part = |weight: f64, rank: usize| weight / (k + 1.0 + rank as f64);
                    let first = (1.0 + s.weight + c) / (k + 1.0);
                    (part(1.0, s.rank) + part(s.weight, cos[i]) + part(c, coverage[i])) / first
                })
                .collect()
        }
    }
}

/// Each candidate's rank by `value`, highest first, from 0; equal values share the
/// better rank.
fn ranks(signals: &[Signals], value: impl Fn(&Signals) -> f64) -> Vec<usize> {
    signals
        .iter()
        .map(|s| {
            let v = value(s);
            signals.iter().filter(|o| value(o) > v).count()
        })
        .collect()
}

fn id_of(source: &Source) -> &str {
    match source {
        Source::Memory { record, .. } => &record.id,
        Source::Message(message) => &message.id,
    }
}

/// Chooses and renders the lines within the budget (step 5 of the module docs).
pub(super) fn fit(ranked: Vec<Ranked>, query: &Query, now: i64) -> Vec<Injected> {
    struct Chosen {
        ranked: Ranked,
        /// The memory's line, or a snippet's prefix.
        head: String,
        /// A snippet's characters so far and at most.
        snippet: usize,
        wanted: usize,
    }
    let mut chosen: Vec<Chosen> = Vec::new();
    let mut covered: HashSet<String> = HashSet::new();
    let mut used = 0;
    for candidate in ranked {
        if chosen.len() == MAX_INJECTED {
            break;
        }
        let separator = usize::from(!chosen.is_empty());
        let (head, snippet_chars, wanted) = match &candidate.source {
            Source::Memory { record, .. } => (render_line(record, now), 0, 0),
            Source::Message(message) => {
                let whole: usize = message
                    .content
                    .split_whitespace()
                    .map(|w| w.chars().count() + 1)
                    .sum();
                if covered.contains(&message.id) || whole == 0 {
                    continue;
                }
                let wanted = (whole - 1).min(MAX_SNIPPET);
                (said_prefix(message, now), wanted.min(MIN_SNIPPET), wanted)
            }
        };
        let cost = head.chars().count() + snippet_chars + separator;
        if used + cost > BUDGET_CHARS {
            continue;
        }
        used += cost;
        if let Source::Memory { record, .. } = &candidate.source {
            covered.extend(record.source_turns.iter().cloned());
        }
        chosen.push(Chosen {
            ranked: candidate,
            head,
            snippet: snippet_chars,
            wanted,
        });
    }
    // A memory chosen after a snippet may have been learned from that very message.
    chosen.retain(|c| match &c.ranked.source {
        Source::Message(message) => !covered.contains(&message.id),
        Source::Memory { .. } => true,
    });
    let mut left = BUDGET_CHARS.saturating_sub(
        chosen
            .iter()
            .enumerate()
            .map(|(i, c)| c.head.chars().count() + c.snippet + usize::from(i > 0))
            .sum(),
    );
    // Even shares of what is left, again and again, until every snippet has what it
    // wants or nothing is left.
    loop {
        let growing = chosen.iter().filter(|c| c.snippet < c.wanted).count();
        if growing == 0 || left == 0 {
            break;
        }
        let share = (left / growing).max(1);
        for c in chosen.iter_mut().filter(|c| c.snippet < c.wanted) {
            let more = share.min(c.wanted - c.snippet).min(left);
            c.snippet += more;
            left -= more;
        }
    }
    chosen
        .into_iter()
        .map(|c| {
            let line = match &c.ranked.source {
                Source::Message(message) => {
                    format!(
                        "{}{}",
                        c.head,
                        snippet(&message.content, &query.stems, c.snippet)
                    )
                }
                Source::Memory { .. } => c.head,
            };
            Injected {
                source: c.ranked.source,
                line,
                score: c.ranked.score,
            }
        })
        .collect()
}

/// How many of the user's latest memories, and of their latest messages, are read for
/// meaning when words find nothing.
pub const MEANING_WINDOW: usize = 200;
/// The cosine under which a text is no closer to the message than unrelated text is
/// (the static vectors of two unrelated sentences score about 0 to 0.1).
pub const MEANING_FLOOR: f64 = 0.1;
/// The same for the installed encoder's cosines. No floor tells related from unrelated
/// text here: on LoCoMo (`cargo bench --bench brain -- meaning-floor`), a question's
/// closest evidence turn and the closest of another conversation's latest 200 turns
/// reach 0.25 about as often (76% / 70% of the even questions; the best separation,
/// 0.4, finds 35% of answers). The static table's floor lets the closest unrelated turn
/// through for every question (100%), so the model's floor is the one that lets
/// through no more than that, chosen on the even questions: near none, as without a
/// model (the closest [`BY_MEANING`] are given when words find nothing).
pub const ENCODED_MEANING_FLOOR: f64 = 0.05;
/// Candidates found by meaning alone, per tier: the static vectors tell related from
/// unrelated text, not the best of several related ones.
const BY_MEANING: usize = 3;

/// When the words of a message find nothing (no word in common: "What's my vehicle?"
/// and "The Kia Soul needs new tires"), the user's latest live memories and messages
/// closest to it in meaning are the candidates, [`BY_MEANING`] of each at most.
/// Bounded to the latest [`MEANING_WINDOW`] of each, whatever the size of the store.
fn add_by_meaning(
    conn: &Tx,
    user: &str,
    query: &Query,
    model: Option<&Model>,
    memories: &mut Vec<TextMatch>,
    said: &mut Vec<MessageMatch>,
) -> Result<(), StoreError> {
    if query.vector.is_none() && query.encoded.is_none() {
        return Ok(());
    }
    // The encoder's cosine where the text has a stored vector, else the table's, each
    // against its own floor.
    let closeness = |text: &str, stored: Option<&Vec<f32>>| -> Option<f64> {
        let (cos, floor) = match (query.encoded.as_deref(), stored) {
            (Some(q), Some(v)) => (f64::from(crate::embed::dot(q, v)), ENCODED_MEANING_FLOOR),
            _ => (
                query
                    .vector
                    .as_deref()
                    .map_or(0.0, |v| meaning::closeness(v, text)),
                MEANING_FLOOR,
            ),
        };
        (cos >= floor).then_some(cos)
    };
    let recent = conn.as_tx().query(
        &format!(
            "SELECT {} FROM memories WHERE user_id = ?1 AND superseded_by IS NULL AND dismissed_at IS NULL
               AND scope <> 'subconscious' ORDER BY updated_at DESC LIMIT ?2",
            super::row::COLUMNS
        ),
        &[user.into(), (MEANING_WINDOW as i64).into()],
        super::row::record_from_row,
    )?;
    let latest = transcript::latest(conn, user, MEANING_WINDOW)?;
    let vectors = match model {
        Some(model) if query.encoded.is_some() => Stored::read(
            conn,
            user,
            model,
            recent.iter().map(|r| r.id.as_str()),
            latest.iter().map(|m| m.id.as_str()),
        )?,
        _ => Stored::default(),
    };
    let mut close: Vec<(f64, MemoryRecord)> = recent
        .into_iter()
        .filter_map(|record| {
            let cos = closeness(
                meaning::about(&record.summary),
                vectors.memories.get(&record.id),
            )?;
            Some((cos, record))
        })
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0));
    memories.extend(
        close
            .into_iter()
            .take(BY_MEANING)
            .map(|(_, record)| TextMatch { record, bm25: 0.0 }),
    );
    let mut close: Vec<(f64, MessageRecord)> = latest
        .into_iter()
        .filter_map(|message| {
            let cos = closeness(&message.content, vectors.messages.get(&message.id))?;
            Some((cos, message))
        })
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0));
    said.extend(
        close
            .into_iter()
            .take(BY_MEANING)
            .map(|(_, message)| MessageMatch { message, bm25: 0.0 }),
    );
    Ok(())
}

impl Brain {
    /// Chooses the lines to inject before a message (see the module docs).
    pub fn retrieve(&self, user: &str, message: &str) -> Result<Retrieval, StoreError> {
        self.retrieve_embedded(user, message, None)
    }

    /// [`Brain::retrieve`] with the installed encoder's vector of `message`, when the
    /// caller has it (the turn embedded the message to route it).
    pub fn retrieve_embedded(
        &self,
        user: &str,
        message: &str,
        vector: Option<&[f32]>,
    ) -> Result<Retrieval, StoreError> {
        self.retrieve_with(user, message, vector, &Tuning::default())
    }

    /// [`Brain::retrieve`] with other ranking constants (the benchmark's calibration).
    pub fn retrieve_tuned(
        &self,
        user: &str,
        message: &str,
        tuning: &Tuning,
    ) -> Result<Retrieval, StoreError> {
        self.retrieve_with(user, message, None, tuning)
    }

    fn retrieve_with(
        &self,
        user: &str,
        message: &str,
        vector: Option<&[f32]>,
        tuning: &Tuning,
    ) -> Result<Retrieval, StoreError> {
        let now = self.now();
        let model = self.model();
        let focus = self
            .store
            .read(Actor::User(user), |c| focus::focus(c, user, message))?;
        let query = Query::asking(message, &focus, model.as_deref(), vector);
        let counts = self.store.word_counts();
        let text = self.store.text_built()?;
        let (candidates, focused) = self.store.read(Actor::User(user), |c| {
            // A memory's attribute was read when it was written: the asked holder's
            // facts on the asked attribute join below whatever their words, and the
            // rest are ranked by the message's own words. A transcript message has no
            // such reading, so the words the asked attributes are stated with find
            // its statements ("where am I living" finds "we moved to Seattle").
            let mut said_terms = query.terms.clone();
            for word in &focus.expansion {
                said_terms.push(' ');
                said_terms.push_str(word);
            }
            let mut memories = text_matches(
                c,
                text,
                user,
                &query.terms,
                tuning.candidates,
                MAX_INJECTED,
                tuning,
            )?;
            let mut said = said_matches(
                c,
                counts,
                user,
                &said_terms,
                tuning.candidates,
                MAX_INJECTED,
                tuning,
            )?;
            for record in focus::candidates(c, user, &focus, tuning.holder_bonus > 0.0)? {
                if !memories.iter().any(|m| m.record.id == record.id) {
                    // Found by what it is about, not by its words: no bm25 of its own.
                    memories.push(TextMatch { record, bm25: 0.0 });
                }
            }
            if memories.is_empty() && said.is_empty() {
                add_by_meaning(c, user, &query, model.as_deref(), &mut memories, &mut said)?;
            }
            let messages: Vec<_> = said.iter().map(|m| &m.message).collect();
            let stale = focus::stale_turns(c, user, &messages, &focus)?;
            let candidates =
                Candidates::with_vectors(memories, said, c, user, &query, model.as_deref())?;
            Ok((candidates, Focused { focus, stale }))
        })?;
        let mut lines = fit(rank(candidates, &query, tuning, now, &focused), &query, now);
        self.mark_used(user, &mut lines, now)?;
        let block = lines
            .iter()
            .map(|i| i.line.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        Ok(Retrieval { lines, block })
    }

    /// Records the use of each chosen memory and promotes the recalled ones, in one
    /// transaction. A chosen memory whose row is gone (deleted by another process
    /// behind the index's back) is left out of the block: one line fewer, never an
    /// error for the whole turn.
    fn mark_used(
        &self,
        user: &str,
        chosen: &mut Vec<Injected>,
        now: i64,
    ) -> Result<(), StoreError> {
        if !chosen.iter().any(|i| i.memory().is_some()) {
            return Ok(());
        }
        // A promotion is a change of the memory and must be durable; a use alone is
        // bookkeeping.
        let promotes = chosen
            .iter()
            .any(|i| matches!(i.source, Source::Memory { recalled: true, .. }));
        let mut gone: Vec<String> = Vec::new();
        let apply = |tx: &Tx| {
            for injected in chosen.iter_mut() {
                let Source::Memory { record, recalled } = &mut injected.source else {
                    continue;
                };
                let old = match q::get(tx, &record.user_id, &record.id) {
                    Ok(old) => old,
                    Err(StoreError::NotFound(_)) => {
                        gone.push(record.id.clone());
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                let mut new = old.clone();
                new.last_used_at = Some(now);
                new.stale = false;
                if *recalled {
                    new.scope = old.prior_scope.unwrap_or(Scope::Active);
                    new.prior_scope = None;
                    new.updated_at = now;
                    q::update(tx, &old, &new, "PROMOTE", ACTOR_SYSTEM)?;
                } else {
                    // Being used is not a change of the fact: no history row.
                    q::touch(tx, &new)?;
                }
                *record = new;
            }
            Ok(())
        };
        if promotes {
            self.store.write(Actor::User(user), apply)?;
        } else {
            self.store.write_relaxed(Actor::User(user), apply)?;
        }
        if !gone.is_empty() {
            tracing::warn!(
                ids = ?gone,
                "memories in the search index have no row any more (deleted by another process?); left out"
            );
            chosen.retain(|i| !i.memory().is_some_and(|m| gone.contains(&m.id)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signals(rank: usize, cos: f64, coverage: f64) -> Signals {
        Signals {
            relative: 1.0 / (rank + 1) as f64,
            rank,
            cos,
            weight: Tuning::default().meaning_weight,
            coverage,
        }
    }

    #[test]
    fn reciprocal_rank_fusion_scores_first_on_every_signal_as_one_and_ties_share_a_rank() {
        let tuning = Tuning {
            fusion: Fusion::Rrf { k: 10 },
            ..Tuning::default()
        };
        let candidates = [
            signals(0, 0.9, 1.0),
            signals(1, 0.2, 0.5),
            signals(0, 0.2, 0.5),
        ];
        let fused = fuse(&candidates, &tuning);
        assert!((fused[0] - 1.0).abs() < 1e-12, "{fused:?}");
        // Second on meaning and coverage alike, tied with the third there; the third is
        // first of its own tier by bm25.
        assert!(fused[2] > fused[1], "{fused:?}");
        assert!(fused.iter().all(|r| (0.0..=1.0).contains(r)), "{fused:?}");
        let second = (1.0 / 12.0 + 0.5 / 12.0 + 0.5 / 12.0) / (2.0 / 11.0);
        assert!((fused[1] - second).abs() < 1e-12, "{fused:?}");
    }

    #[test]
    fn the_blend_weighs_relative_bm25_meaning_and_coverage() {
        let tuning = Tuning {
            meaning_weight: 0.5,
            coverage_weight: 0.25,
            ..Tuning::default()
        };
        // The meaning's weight is the candidate's own: the table's or the encoder's.
        let candidate = Signals {
            weight: 0.5,
            ..signals(1, 0.4, 1.0)
        };
        let fused = fuse(&[candidate], &tuning);
        assert!((fused[0] - (0.5 + 0.5 * 0.4 + 0.25) / 1.75).abs() < 1e-12);
    }
}
