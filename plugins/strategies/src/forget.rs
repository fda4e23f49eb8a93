//! Requests to forget, as people make them in a conversation: "forget that", "please
//! delete what I said about the bakery plan", "don't remember my address", "scratch
//! that". [`request`] finds them in a message and says what they point at; the memory
//! service finds the matching messages and memories ([`mentions`]), redacts and
//! dismisses them, and keeps the extractor from learning them.
//!
//! A request is an imperative addressed to the assistant, after an optional preamble
//! ("please", "actually", "oh, and", "can you", "I want you to"). "I forgot my keys",
//! "don't forget the milk" and "I'll never forget that day" are not requests.

use std::collections::BTreeSet;
use std::ops::Range;

use crate::about::{self, catalog};
use crate::analyser;

/// What a request to forget points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// What was just said: "forget that", "forget I said it", "scratch that". The
    /// sentences of the same message before the request, else the previous message of
    /// the user.
    Previous,
    /// Whatever was said about a subject: "forget about my medication", "delete what I
    /// said about the bakery plan", "that relationship". The subject's words as said.
    Topic(String),
}

/// A request to forget found in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub target: Target,
    /// The byte ranges of the message's sentences that make the request (they are
    /// instructions, not facts, and name what is forgotten).
    pub sentences: Vec<Range<usize>>,
    /// The byte ranges of the statements before the first request sentence: what
    /// [`Target::Previous`] points at when there are any.
    pub before: Vec<Range<usize>>,
}

/// Words that may open an imperative before its verb.
const PREAMBLE: &[&str] = &[
    "please", "pls", "actually", "oh", "and", "also", "so", "ok", "okay", "honestly", "just",
    "but", "hey", "well", "yeah", "yes", "no", "um", "uh", "then", "now", "kindly",
];
/// Phrases that ask the assistant to do what follows ("can you forget ...").
const ASKING: &[&[&str]] = &[
    &["can", "you"],
    &["could", "you"],
    &["would", "you"],
    &["will", "you"],
    &["i", "want", "you", "to"],
    &["i", "would", "like", "you", "to"],
    &["i", "need", "you", "to"],
    &["you", "should"],
    &["you", "can"],
    &["make", "sure", "you"],
];
/// What follows a verb of forgetting and means "what I just said".
const DEICTIC: &[&[&str]] = &[
    &["that"],
    &["it"],
    &["this"],
    &["what", "i", "just", "said"],
    &["what", "i", "said"],
    &["i", "said", "that"],
    &["i", "said", "it"],
    &["i", "said", "anything"],
    &["i", "said"],
    &["i", "mentioned", "it"],
    &["i", "mentioned", "that"],
    &["everything", "i", "just", "said"],
    &["everything", "i", "said"],
    &["my", "last", "message"],
    &["the", "last", "thing", "i", "said"],
    &["all", "of", "that"],
    &["all", "that"],
    &["any", "of", "that"],
    &["any", "of", "it"],
];
/// Words that, after a verb of forgetting, introduce its subject.
const ABOUT: &[&[&str]] = &[
    &["everything", "i", "said", "about"],
    &["everything", "i", "told", "you", "about"],
    &["what", "i", "said", "about"],
    &["what", "i", "told", "you", "about"],
    &["anything", "i", "said", "about"],
    &["everything", "about"],
    &["anything", "about"],
    &["all", "about"],
    &["the", "part", "about"],
    &["about"],
];

/// The request to forget in `message`, if it makes one.
pub fn request(message: &str) -> Option<Request> {
    let sentences = sentence_ranges(message);
    let mut found: Option<(usize, Target)> = None;
    let mut request_sentences = Vec::new();
    for (index, range) in sentences.iter().enumerate() {
        if let Some(target) = sentence_request(&message[range.clone()]) {
            request_sentences.push(range.clone());
            found.get_or_insert((index, target));
        }
    }
    let (first, target) = found?;
    // What "that" points at in the same message: the statements before the request
    // ("I'm $40k in debt. Scratch that."), not a question or a filler ("Honestly?
    // Forget that.": the previous message).
    let before = sentences[..first]
        .iter()
        .filter(|range| {
            let sentence = message[(*range).clone()].trim_end();
            !sentence.ends_with('?') && analyser::terms(sentence).len() >= 2
        })
        .cloned()
        .collect();
    Some(Request {
        target,
        sentences: request_sentences,
        before,
    })
}

/// The request one sentence makes, if any: in any of its clauses ("Actually scratch
/// that, forget I said it", "Oh, and please forget about my medication, that's
/// private").
fn sentence_request(sentence: &str) -> Option<Target> {
    sentence
        .split([',', ';', ':', '\u{2014}'])
        .find_map(clause_request)
}

fn clause_request(clause: &str) -> Option<Target> {
    let words = analyser::words(clause);
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let mut at = 0;
    loop {
        let rest = &words[at..];
        if rest.first().is_some_and(|w| PREAMBLE.contains(w)) {
            at += 1;
        } else if let Some(asking) = ASKING.iter().find(|a| rest.starts_with(a)) {
            at += asking.len();
        } else {
            break;
        }
    }
    let rest = &words[at..];
    let object = match rest {
        ["scratch" | "strike", "that" | "this", ..] => return Some(Target::Previous),
        [
            "forget" | "erase" | "delete" | "remove" | "unlearn" | "wipe",
            object @ ..,
        ] => object,
        [
            "do",
            "not" | "never",
            "remember" | "store" | "keep" | "save" | "record" | "memorize" | "memorise",
            object @ ..,
        ]
        | [
            "stop" | "quit",
            "remembering" | "storing" | "keeping",
            object @ ..,
        ] => object,
        _ => return None,
    };
    // "delete the file", "remove the tab": a verb of removing with an ordinary object
    // is a request only when it speaks of memory or of what was said.
    let speaks_of_memory = rest[0] != "delete" && rest[0] != "remove" && rest[0] != "wipe"
        || words.iter().any(|w| {
            matches!(
                *w,
                "memory" | "memories" | "said" | "told" | "mentioned" | "stored" | "remember"
            )
        });
    if !speaks_of_memory {
        return None;
    }
    let object: Vec<&str> = object
        .iter()
        .copied()
        .take_while(|w| !matches!(*w, "from" | "because" | "since" | "please" | "thanks"))
        .collect();
    if object.is_empty() {
        return Some(Target::Previous);
    }
    if let Some(about) = ABOUT.iter().find(|a| object.starts_with(a)) {
        return topic(&object[about.len()..]);
    }
    let deictic = DEICTIC
        .iter()
        .filter(|d| object.starts_with(d))
        .map(|d| d.len())
        .max();
    if let Some(len) = deictic {
        // "forget that relationship": a subject after all.
        let subject = &object[len..];
        if matches!(object[0], "that" | "this")
            && subject.first().is_some_and(|w| !analyser::is_stop_word(w))
        {
            return topic(subject);
        }
        return Some(Target::Previous);
    }
    topic(&object)
}

/// A subject's words, without "my"/"the" and the memory words around it.
fn topic(words: &[&str]) -> Option<Target> {
    let words: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| {
            !matches!(
                *w,
                "memory"
                    | "memories"
                    | "your"
                    | "please"
                    | "all"
                    | "everything"
                    | "anything"
                    | "that"
                    | "this"
                    | "those"
                    | "these"
            )
        })
        .collect();
    let content: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !analyser::is_stop_word(w))
        .collect();
    if content.is_empty() {
        return Some(Target::Previous);
    }
    Some(Target::Topic(words.join(" ")))
}

/// Whether `text` says something about `topic`: one of the topic's content words (by
/// stem), or a statement of an attribute the topic names ("my medication" and "I'm
/// on sertraline"; "my address" and "12 Oak Court").
pub fn mentions(text: &str, topic: &str) -> bool {
    let topic_terms = content_terms(topic);
    let text_terms = content_terms(text);
    if !topic_terms.is_disjoint(&text_terms) {
        return true;
    }
    // The subject's attributes and the others of their groups ("my health" covers the
    // medication).
    let asked = about::asked(topic);
    asked
        .attributes
        .iter()
        .flat_map(|attribute| {
            let group = catalog::group_of(attribute);
            std::iter::once(attribute.as_str()).chain(
                catalog::CATALOG
                    .iter()
                    .filter(move |a| a.group == group)
                    .map(|a| a.name),
            )
        })
        .any(|attribute| mentions_attribute(text, &text_terms, attribute))
}

fn content_terms(text: &str) -> BTreeSet<String> {
    analyser::terms(text).into_iter().collect()
}

/// Whether `text` speaks of `attribute`: the words its statements are made with, the
/// word lists that tell its values (a drug's name), or a value's shape (a phone
/// number, an email address).
fn mentions_attribute(text: &str, terms: &BTreeSet<String>, attribute: &str) -> bool {
    let words = analyser::words(text);
    let said_with = catalog::by_name(attribute).is_some_and(|a| {
        a.said_with
            .iter()
            .chain(a.asked_by.iter().filter(|p| p.len() == 1).map(|p| &p[0]))
            .any(|w| terms.contains(&analyser::stem(w)))
    });
    said_with
        || match attribute {
            catalog::MEDICATION => words.iter().any(|w| about::lexicon::is_medicine(w)),
            catalog::DIET => words.iter().any(|w| about::lexicon::is_diet(w)),
            catalog::VEHICLE => words.iter().any(|w| about::lexicon::is_vehicle(w)),
            catalog::PHONE => text.chars().filter(char::is_ascii_digit).count() >= 7,
            catalog::EMAIL => text.contains('@'),
            catalog::ADDRESS => {
                words.iter().any(|w| w.chars().all(|c| c.is_ascii_digit()))
                    && words.iter().any(|w| {
                        matches!(
                            w.as_str(),
                            "street"
                                | "st"
                                | "avenue"
                                | "ave"
                                | "road"
                                | "rd"
                                | "court"
                                | "lane"
                                | "drive"
                                | "boulevard"
                                | "blvd"
                                | "way"
                                | "place"
                                | "box"
                        )
                    })
            }
            _ => false,
        }
}

/// The byte ranges of `text`'s sentences: they end at `.`, `!` or `?` (runs of them)
/// followed by whitespace or the end, and at line breaks.
fn sentence_ranges(text: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let ends = if b == b'\n' {
            true
        } else if matches!(b, b'.' | b'!' | b'?') {
            while i + 1 < bytes.len() && matches!(bytes[i + 1], b'.' | b'!' | b'?') {
                i += 1;
            }
            i + 1 == bytes.len() || bytes[i + 1].is_ascii_whitespace()
        } else {
            false
        };
        if ends {
            push_trimmed(text, start..i + 1, &mut ranges);
            start = i + 1;
        }
        i += 1;
    }
    push_trimmed(text, start..text.len(), &mut ranges);
    ranges
}

fn push_trimmed(text: &str, range: Range<usize>, ranges: &mut Vec<Range<usize>>) {
    let slice = &text[range.clone()];
    let leading = slice.len() - slice.trim_start().len();
    let trailing = slice.len() - slice.trim_end().len();
    if leading + trailing < slice.len() {
        ranges.push(range.start + leading..range.end - trailing);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(message: &str) -> Option<Target> {
        request(message).map(|r| r.target)
    }

    fn topic(words: &str) -> Option<Target> {
        Some(Target::Topic(words.to_owned()))
    }

    #[test]
    fn reads_requests_to_forget_what_was_just_said() {
        for message in [
            "Forget that.",
            "Honestly? Forget that. I don't want any of it stored.",
            "Actually scratch that, forget I said it.",
            "Please forget what I just said.",
            "Can you forget my last message?",
            "I want you to forget all of that.",
            "Don't remember any of that, please.",
        ] {
            assert_eq!(target(message), Some(Target::Previous), "{message}");
        }
    }

    #[test]
    fn reads_requests_to_forget_a_subject() {
        assert_eq!(
            target("Oh, and please forget about my medication, that's private."),
            topic("my medication")
        );
        assert_eq!(
            target("Please delete what I said about the bakery plan. My boss uses this laptop."),
            topic("the bakery plan")
        );
        assert_eq!(target("Don't remember my address."), topic("my address"));
        assert_eq!(
            target("please forget everything about that relationship"),
            topic("relationship")
        );
        assert_eq!(
            target("Remove my old job from your memory."),
            topic("my old job")
        );
        assert_eq!(target("Stop remembering my ex's name"), topic("my ex name"));
    }

    #[test]
    fn other_uses_of_the_words_are_no_requests() {
        for message in [
            "I forgot my keys at work.",
            "Don't forget to buy milk.",
            "I'll never forget that day in Rome.",
            "Delete the draft and start over.",
            "Remove the tab from the spreadsheet.",
            "How do I delete a git branch?",
            "Can you remember my address?",
        ] {
            assert_eq!(target(message), None, "{message}");
        }
    }

    #[test]
    fn says_which_sentences_make_the_request_and_which_come_before() {
        let message = "I'm about $40k in debt. Actually scratch that, forget I said it. I adopted a greyhound named Comet!";
        let found = request(message).expect("a request");
        let texts = |ranges: &[Range<usize>]| -> Vec<&str> {
            ranges.iter().map(|r| &message[r.clone()]).collect()
        };
        assert_eq!(
            texts(&found.sentences),
            ["Actually scratch that, forget I said it."]
        );
        assert_eq!(texts(&found.before), ["I'm about $40k in debt."]);
    }

    #[test]
    fn a_question_or_a_filler_before_the_request_is_not_what_it_points_at() {
        let found =
            request("Honestly? Forget that. I don't want any of it stored.").expect("a request");
        assert_eq!(found.target, Target::Previous);
        assert!(found.before.is_empty());
    }

    #[test]
    fn a_subject_is_mentioned_by_its_words_or_by_its_attribute() {
        assert!(mentions("I'm on sertraline for anxiety", "my medication"));
        assert!(mentions("Took two ibuprofen this morning", "my meds"));
        assert!(mentions(
            "I'm thinking about opening a sourdough bakery",
            "the bakery plan"
        ));
        assert!(mentions(
            "Send it to 12 Oak Court, Springfield",
            "my address"
        ));
        assert!(mentions("Call me on 303-555-0112", "my phone number"));
        assert!(!mentions(
            "I'm running the Brooklyn half marathon in May",
            "my medication"
        ));
        assert!(!mentions("We adopted a greyhound named Comet", "my debt"));
    }
}
