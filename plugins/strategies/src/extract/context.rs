//! What earlier clauses of a conversation lend a later one that leaves something out:
//!
//! - an elided subject: "Sold the Vespa after the winter." is "I sold ...";
//! - an answer in kind: after "I'm allergic to penicillin", "Mine's latex" is "I'm
//!   allergic to latex" (in a group chat, said by someone else: the memory service
//!   gives each speaker their own facts);
//! - a relative's value in kind: after "My birthday is December 2", "my mom's is May 9"
//!   is "my mom's birthday is May 9";
//! - "it": after "I got a new phone number.", "It's 555-0202 now" is "my phone number
//!   is 555-0202 now";
//! - "there": after "... the squares in Savannah ...", "That's where I grew up" is "I
//!   grew up in Savannah".
//!
//! Each rewrite gives the clause the words it would have had; the rules in
//! `patterns.rs` then read it as any other clause, so nothing here decides what a fact
//! is.

use super::grammar::{is_past, past_to_base};
use super::sentence::Token;
use crate::about::{self, catalog};

/// Verbs whose past form may open a sentence without its subject ("Sold the car.",
/// "Moved to Denver last year."): events a person tells of themselves.
const ELIDED_SUBJECT_VERBS: &[&str] = &[
    "sell", "buy", "move", "start", "quit", "leave", "join", "adopt", "finish", "take", "get",
    "switch", "begin", "visit", "run", "lose", "win", "graduate", "retire",
];

#[derive(Debug, Default)]
pub(super) struct Context {
    /// The last first-person fact's clause without its value ("I am allergic to").
    fact_without_value: Option<Vec<Token>>,
    /// The noun of the last "my <noun> is ..." ("birthday").
    possessive_noun: Option<Vec<Token>>,
    /// The last "a new <noun>" naming an attribute in this message ("phone number").
    new_noun: Option<Vec<Token>>,
    /// The last place named in this message ("Savannah").
    place: Option<Vec<Token>>,
    /// The last person named with their relation ("my friend Hana"), for "she" and
    /// "he" in the same message.
    person: Option<Vec<Token>>,
}

impl Context {
    /// A new message: what "it" and "there" may point at starts over; what a reply in
    /// kind answers does not (the previous speaker said it).
    pub fn next_message(&mut self) {
        self.new_noun = None;
        self.place = None;
        self.person = None;
    }

    /// The clause with what it leaves out filled in from earlier clauses, or `None`
    /// when it leaves nothing out. `opens_sentence`: the clause is a sentence's first.
    pub fn complete(&self, clause: &[Token], opens_sentence: bool) -> Option<Vec<Token>> {
        let words: Vec<&str> = clause.iter().map(|t| t.lower.as_str()).collect();
        match &words[..] {
            // "Mine's latex", "Mine is the blue one".
            ["mine", rest @ ..] if !rest.is_empty() => {
                let prefix = self.fact_without_value.as_ref()?;
                let skip = 1 + usize::from(rest.first() == Some(&"is"));
                // The answer runs to a pause: "Mine's latex, put that down".
                let end = clause[skip..]
                    .iter()
                    .position(|t| t.comma_after)
                    .map_or(clause.len(), |i| skip + i + 1);
                Some(prefix.iter().chain(&clause[skip..end]).cloned().collect())
            }
            // "my mom's is May 9".
            ["my", _, "is", _, ..] if clause[1].text.ends_with("'s") => {
                let noun = self.possessive_noun.as_ref()?;
                crate::about::lexicon::relation_at(&words[1..2])?;
                let mut out = clause[..2].to_vec();
                out.extend(noun.iter().cloned());
                out.extend(clause[2..].iter().cloned());
                Some(out)
            }
            // "It's 555-0202 now" after "a new phone number".
            ["it", rest @ ..]
                if !rest.is_empty() && (rest[0] == "is" || clause[0].text.ends_with("'s")) =>
            {
                let noun = self.new_noun.as_ref()?;
                let mut out = vec![Token::word("my")];
                out.extend(noun.iter().cloned());
                if rest[0] != "is" {
                    out.push(Token::word("is"));
                }
                out.extend(clause[1..].iter().cloned());
                Some(out)
            }
            // "She's a paramedic" after "my friend Hana": the person last named.
            ["she" | "he", _, ..] => {
                let person = self.person.as_ref()?;
                let mut out = person.clone();
                if clause[0].text.ends_with("'s") {
                    out.push(Token::word("is"));
                }
                out.extend(clause[1..].iter().cloned());
                Some(out)
            }
            // "That's where I grew up" after a place.
            ["that" | "this", "is", "where", "i", _, ..]
            | ["that" | "this", "where", "i", _, ..] => {
                let place = self.place.as_ref()?;
                let i_at = words.iter().position(|w| *w == "i")?;
                let mut out = clause[i_at..].to_vec();
                out.push(Token::word("in"));
                out.extend(place.iter().cloned());
                Some(out)
            }
            [verb, ..] if opens_sentence && clause[0].is_capitalised() && is_past(verb) => {
                let base = past_to_base(verb);
                ELIDED_SUBJECT_VERBS.contains(&base.as_str()).then(|| {
                    std::iter::once(Token::word("I"))
                        .chain(clause.iter().cloned())
                        .collect()
                })
            }
            _ => None,
        }
    }

    /// Remembers what `clause` offers later ones.
    pub fn remember(&mut self, clause: &[Token], summary: Option<&str>) {
        let words: Vec<&str> = clause.iter().map(|t| t.lower.as_str()).collect();
        // "a new phone number", "my mobile number changed": what "it" stands for next.
        if let Some(at) = words.iter().position(|w| matches!(*w, "new" | "my")) {
            let noun_end = (at + 1..words.len().min(at + 4))
                .rev()
                .find(|&end| catalog::by_noun(&words[at + 1..=end]).is_some());
            if let Some(end) = noun_end {
                self.new_noun = Some(clause[at + 1..=end].to_vec());
            }
        }
        // "my friend Hana": who "she" is next.
        if let Some(at) = words.iter().position(|w| matches!(*w, "my" | "our"))
            && let Some((_, len)) = crate::about::lexicon::relation_at(&words[at + 1..])
        {
            let name_len = clause[at + 1 + len..]
                .iter()
                .take(3)
                .take_while(|t| t.is_capitalised())
                .count();
            if name_len > 0 {
                self.person = Some(clause[at..at + 1 + len + name_len].to_vec());
            }
        }
        let place = (1..clause.len()).rev().find_map(|at| {
            let preposition = matches!(words[at - 1], "in" | "to" | "at" | "from");
            let place: Vec<Token> = clause[at..]
                .iter()
                .take_while(|t| t.is_capitalised() && t.lower != "i")
                .take(3)
                .cloned()
                .collect();
            (preposition && !place.is_empty()).then_some(place)
        });
        if place.is_some() {
            self.place = place;
        }
        let Some(summary) = summary else {
            return;
        };
        if let ["my", ..] = &words[..]
            && let Some(is_at) = words.iter().position(|w| *w == "is")
            && is_at > 1
        {
            self.possessive_noun = Some(clause[1..is_at].to_vec());
        }
        let about = about::of_summary(summary);
        if words.first() == Some(&"i") && about.attribute.is_some() && about.holder.is_none() {
            let value_words = about.value.split_whitespace().count();
            if value_words > 0 && value_words < clause.len() {
                self.fact_without_value = Some(clause[..clause.len() - value_words].to_vec());
            }
        }
    }
}

/// Whether a fact read from `clause` stands on a pronoun only the conversation around
/// it explains: "I put so much into this", "I read it a while back", "I rely on them".
/// Stored alone, such a sentence tells a later reader nothing they can use, so it is
/// no fact. A demonstrative before its noun ("this amazing deal with an outdoor gear
/// company") names the thing and stays, as do "it" opening a clause of its own ("and
/// it was great") and demonstratives of time ("this week"). `summary` is what would
/// be stored, the speaker's "me", "we" and "us" turned into "them" and "they": a
/// "they" or "them" points elsewhere only beyond the clause's own first-person words.
pub(super) fn leans_on_context(summary: &str, clause: &[Token]) -> bool {
    let words = crate::analyser::words(summary);
    let pronoun = words.iter().enumerate().any(|(at, word)| {
        let next = words.get(at + 1).map(String::as_str);
        match word.as_str() {
            "it" => !next.is_some_and(|n| DUMMY_SUBJECT_VERBS.contains(&n)),
            "this" | "these" | "those" => {
                next.is_none_or(|n| crate::analyser::is_stop_word(n) && !is_time_word(n))
            }
            // "that" also opens a clause ("thinks that the ...") or a relative ("the
            // book that they read"): a pronoun only at the end or before a preposition.
            "that" => next.is_none_or(|n| PREPOSITIONS.contains(&n)),
            _ => false,
        }
    });
    let third_person = words
        .iter()
        .filter(|w| matches!(w.as_str(), "they" | "them"))
        .count();
    let first_person = clause
        .iter()
        .skip(1)
        .filter(|t| matches!(t.lower.as_str(), "i" | "me" | "we" | "us"))
        .count();
    pronoun || third_person > first_person
}

/// Verbs after which "it" opens a clause of its own ("and it was great").
const DUMMY_SUBJECT_VERBS: &[&str] = &[
    "is", "was", "s", "has", "had", "been", "will", "would", "feels", "felt", "looks", "seems",
    "makes", "made", "gets", "got",
];

/// Words after which "that" stands for a thing: "I did that for years".
const PREPOSITIONS: &[&str] = &[
    "for", "with", "in", "on", "at", "to", "from", "about", "again", "too", "before", "after",
];

fn is_time_word(word: &str) -> bool {
    super::time::is_time_unit(word)
}
