//! a and b with the sentence encoder (issue 29, point 4), when `ENGRAM_BENCH_MODEL`
//! names a model: the same store with every memory and message embedded by the
//! worker (`Brain::embed_pending`), retrieval reading the stored vectors as meaning.
//! `Tuning::encoded_meaning_weight` is chosen on the even questions of each
//! conversation (by evidence recall@5) and reported on the odd ones, beside the static
//! table's figure on the same questions, each retrieval on a fresh copy of the store.

pub mod cost;
pub mod floor;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use engram::embed::encoder::Encoder;
use engram::memory::bench::Tuning;

use super::{Mean, Sample, TestBrain, injected_turns, percent, recall};
use crate::common::Table;

/// The weights tried on the even questions.
const WEIGHTS: [f64; 5] = [0.5, 1.0, 2.0, 4.0, 8.0];

/// The model, loaded once for both sections.
pub struct Model {
    encoder: Arc<Encoder>,
    dir: std::path::PathBuf,
}

impl Model {
    pub fn load() -> Option<Model> {
        let dir = crate::common::bench_model("retrieval with the sentence encoder")?;
        let encoder = Arc::new(Encoder::load(&dir).expect("the model of ENGRAM_BENCH_MODEL"));
        Some(Model { encoder, dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Gives the encoder to `subject` and embeds everything it holds.
    pub fn embed_all(&self, subject: &TestBrain) {
        let started = Instant::now();
        subject.brain.set_encoder(self.encoder.clone());
        let mut texts = 0;
        loop {
            let pass = subject.brain.embed_pending().expect("embed");
            texts += pass.memories + pass.messages;
            if !pass.more {
                break;
            }
        }
        eprintln!(
            "embedded {texts} texts in {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
}

/// Which questions of each conversation.
#[derive(Clone, Copy)]
enum Half {
    Even,
    Odd,
}

/// Recall@5 over one half of the questions, on a fresh copy of `embedded` (which holds
/// the vectors): with the model and `weight`, or without a model.
fn half_recall(
    samples: &[Sample],
    embedded: &TestBrain,
    model: Option<(&Model, f64)>,
    half: Half,
    asked_at: &dyn Fn(&Sample) -> i64,
    turns: &dyn Fn(&BTreeSet<String>) -> BTreeSet<String>,
) -> Mean {
    let subject = embedded.copy(super::NOW);
    let tuning = match model {
        Some((model, weight)) => {
            subject.brain.set_encoder(model.encoder.clone());
            Tuning {
                encoded_meaning_weight: weight,
                ..Tuning::default()
            }
        }
        None => Tuning::default(),
    };
    let mut mean = Mean::default();
    for sample in samples {
        subject.clock.set(asked_at(sample));
        for (i, question) in sample.questions.iter().enumerate() {
            let wanted = match half {
                Half::Even => i % 2 == 0,
                Half::Odd => i % 2 == 1,
            };
            if !wanted {
                continue;
            }
            let retrieval = subject
                .brain
                .retrieve_tuned(&sample.id, &question.text, &tuning)
                .expect("retrieve");
            mean.add(recall(
                &question.evidence,
                &turns(&injected_turns(&retrieval)),
            ));
        }
    }
    mean
}

/// Chooses the weight on the even questions and reports the odd ones, with the model
/// and with the static table, as rows of `table` under `what`.
pub fn compare(
    what: &str,
    samples: &[Sample],
    embedded: &TestBrain,
    model: &Model,
    asked_at: &dyn Fn(&Sample) -> i64,
    turns: &dyn Fn(&BTreeSet<String>) -> BTreeSet<String>,
    table: &mut Table,
) {
    let mut best = (WEIGHTS[0], -1.0);
    for weight in WEIGHTS {
        let even = half_recall(
            samples,
            embedded,
            Some((model, weight)),
            Half::Even,
            asked_at,
            turns,
        )
        .value();
        eprintln!(
            "{what}: encoded meaning weight {weight}: even questions {}",
            percent(even)
        );
        if even > best.1 {
            best = (weight, even);
        }
    }
    let (weight, even) = best;
    let static_even = half_recall(samples, embedded, None, Half::Even, asked_at, turns).value();
    let odd = half_recall(
        samples,
        embedded,
        Some((model, weight)),
        Half::Odd,
        asked_at,
        turns,
    );
    let static_odd = half_recall(samples, embedded, None, Half::Odd, asked_at, turns);
    table.recall_row(
        &format!(
            "{what}: recall@5 with the model, odd questions (weight {weight} chosen on the even)"
        ),
        odd.value(),
        "static table, same questions",
        static_odd.value(),
    );
    // The shipped weight is one for every section (the even questions pooled): on the
    // odd questions too, to compare.
    let shipped = Tuning::default().encoded_meaning_weight;
    let shipped_odd = half_recall(
        samples,
        embedded,
        Some((model, shipped)),
        Half::Odd,
        asked_at,
        turns,
    );
    table.recall_row(
        &format!("{what}: recall@5 with the model, odd questions (shipped weight {shipped})"),
        shipped_odd.value(),
        "static table, same questions",
        static_odd.value(),
    );
    table.recall_row(
        &format!("{what}: recall@5 with the model, even questions (where it was chosen)"),
        even,
        "static table, same questions",
        static_even,
    );
}
