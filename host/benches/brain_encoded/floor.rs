//! `-- meaning-floor`: the encoder's cosine a text must reach to be given when a
//! message shares no word with the store (`ENCODED_MEANING_FLOOR`: then the closest of
//! the user's latest texts are the candidates, if they reach it). Chosen on LoCoMo,
//! never on the truth suite: for each question, the cosine of its closest evidence turn
//! (its answer is in the store: reaching the floor finds it) and the closest of the
//! latest `MEANING_WINDOW` turns of another conversation (its answer is not there:
//! reaching the floor gives an unrelated line). The floor with the most finds minus
//! unrelated lines given (Youden's J) on the even questions is chosen and reported on
//! the odd ones, beside the shipped floor. Another conversation between friends
//! sometimes does hold a related line, so the unrelated rate is an upper bound.

use engram::memory::bench::{ENCODED_MEANING_FLOOR, MEANING_FLOOR, MEANING_WINDOW};
use engram_strategies::analyser::query_words;

use super::Model;
use crate::common::Table;
use crate::{Sample, percent};

/// The floors tried: 0.05 to 0.60.
const FLOORS: std::ops::RangeInclusive<u32> = 2..=24;
const STEP: f64 = 0.025;

/// One question's closest cosines.
struct Closest {
    /// To its evidence turns.
    answer: f64,
    /// To another conversation's latest turns.
    unrelated: f64,
    /// The same two with the static table (what serves without a model).
    static_answer: f64,
    static_unrelated: f64,
}

/// The share of `questions` whose answer reaches `floor`, and whose unrelated text does.
fn rates(questions: &[Closest], floor: f64) -> (f64, f64) {
    let share = |reach: &dyn Fn(&Closest) -> bool| {
        questions.iter().filter(|c| reach(c)).count() as f64 / questions.len().max(1) as f64
    };
    (
        share(&|c| c.answer >= floor),
        share(&|c| c.unrelated >= floor),
    )
}

/// The same for the static table at its floor.
fn static_rates(questions: &[Closest]) -> (f64, f64) {
    let share = |reach: &dyn Fn(&Closest) -> bool| {
        questions.iter().filter(|c| reach(c)).count() as f64 / questions.len().max(1) as f64
    };
    (
        share(&|c| c.static_answer >= MEANING_FLOOR),
        share(&|c| c.static_unrelated >= MEANING_FLOOR),
    )
}

/// The static table's vector of `text`'s content words, as retrieval reads it.
fn static_vector(text: &str) -> Option<Vec<f32>> {
    engram::embed::embeddings().embed(&query_words(text))
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| f64::from(x * y)).sum()
}

pub fn calibrate(samples: &[Sample], model: &Model, table: &mut Table) {
    table.section("meaning floor with the model (LoCoMo turns; chosen on even questions)");
    if samples.len() < 2 {
        table.row("skipped: another conversation is needed", "", "", "");
        return;
    }
    let statics: Vec<Vec<Option<Vec<f32>>>> = samples
        .iter()
        .map(|sample| {
            sample
                .sessions
                .iter()
                .flat_map(|s| &s.turns)
                .map(|t| static_vector(&t.text))
                .collect()
        })
        .collect();
    // Every turn of each conversation, embedded once, in order.
    let turns: Vec<Vec<(&str, Vec<f32>)>> = samples
        .iter()
        .map(|sample| {
            let turns: Vec<_> = sample.sessions.iter().flat_map(|s| &s.turns).collect();
            let texts: Vec<&str> = turns.iter().map(|t| t.text.as_str()).collect();
            let vectors = model.encoder.embed_batch(&texts).expect("embed turns");
            turns
                .iter()
                .map(|t| t.dia_id.as_str())
                .zip(vectors)
                .collect()
        })
        .collect();
    let mut halves: [Vec<Closest>; 2] = [Vec::new(), Vec::new()];
    for (i, sample) in samples.iter().enumerate() {
        let other = &turns[(i + 1) % samples.len()];
        let window = &other[other.len().saturating_sub(MEANING_WINDOW)..];
        let texts: Vec<&str> = sample.questions.iter().map(|q| q.text.as_str()).collect();
        let vectors = model.encoder.embed_batch(&texts).expect("embed questions");
        for (j, (question, q)) in sample.questions.iter().zip(&vectors).enumerate() {
            let closest = |turns: &mut dyn Iterator<Item = &(&str, Vec<f32>)>| {
                turns.map(|(_, v)| cosine(q, v)).reduce(f64::max)
            };
            let Some(answer) = closest(
                &mut turns[i]
                    .iter()
                    .filter(|(id, _)| question.evidence.contains(*id)),
            ) else {
                continue;
            };
            let unrelated = closest(&mut window.iter()).unwrap_or(f64::MIN);
            // The static table's cosine, negative ones as 0 (as retrieval reads it).
            let sq = static_vector(&question.text);
            let static_cos = |v: &Option<Vec<f32>>| match (&sq, v) {
                (Some(a), Some(b)) => cosine(a, b).max(0.0),
                _ => 0.0,
            };
            let own_static = &statics[i];
            let static_answer = turns[i]
                .iter()
                .zip(own_static)
                .filter(|((id, _), _)| question.evidence.contains(*id))
                .map(|(_, v)| static_cos(v))
                .fold(0.0, f64::max);
            let other_static = &statics[(i + 1) % samples.len()];
            let static_unrelated = other_static
                [other_static.len().saturating_sub(MEANING_WINDOW)..]
                .iter()
                .map(static_cos)
                .fold(0.0, f64::max);
            halves[j % 2].push(Closest {
                answer,
                unrelated,
                static_answer,
                static_unrelated,
            });
        }
    }
    let [even, odd] = &halves;
    let j = |questions: &[Closest], floor: f64| {
        let (found, unrelated) = rates(questions, floor);
        found - unrelated
    };
    let mut chosen = (0.0, f64::MIN);
    for step in FLOORS {
        let floor = f64::from(step) * STEP;
        let (found, unrelated) = rates(even, floor);
        eprintln!(
            "meaning floor {floor:.3}: even questions: answer reached {}, unrelated reached {}",
            percent(found),
            percent(unrelated)
        );
        if found - unrelated > chosen.1 {
            chosen = (floor, found - unrelated);
        }
    }
    let (floor, _) = chosen;
    // The floor that gives no more unrelated lines than the static table gives at its
    // own floor: the model's finds at the rate of false finds the default accepts.
    let (_, static_unrelated_even) = static_rates(even);
    let matched = FLOORS
        .map(|step| f64::from(step) * STEP)
        .find(|floor| rates(even, *floor).1 <= static_unrelated_even)
        .unwrap_or(floor);
    let (static_found, static_unrelated) = static_rates(odd);
    table.row(
        &format!("static table at its floor {MEANING_FLOOR}: odd questions, the same two shares"),
        &percent(static_found),
        &percent(static_unrelated),
        &format!("J {:.3}", static_found - static_unrelated),
    );
    for (what, floor) in [
        (format!("chosen on the even: {floor:.3}"), floor),
        (
            format!("matching the static table's unrelated rate on the even: {matched:.3}"),
            matched,
        ),
        (
            format!("shipped: {ENCODED_MEANING_FLOOR}"),
            ENCODED_MEANING_FLOOR,
        ),
    ] {
        let (found, unrelated) = rates(odd, floor);
        table.row(
            &format!(
                "floor {what}: odd questions ({}) whose answer reaches it / whose unrelated turns do",
                odd.len()
            ),
            &percent(found),
            &percent(unrelated),
            &format!("J {:.3} (even {:.3})", j(odd, floor), j(even, floor)),
        );
    }
}
