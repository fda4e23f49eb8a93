//! Splitting a message into sentences, a sentence into word tokens, and tokens into
//! clauses.

use super::grammar::is_past;
use crate::analyser::expand_contraction;

/// One sentence of a message.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Sentence {
    pub text: String,
    /// The sentence ended with a question mark.
    pub is_question: bool,
}

/// Words after which a full stop does not end a sentence ("Dr. Patel", "e.g. tea").
const ABBREVIATIONS: &[&str] = &[
    "dr", "mr", "mrs", "ms", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "eg", "ie",
    "approx", "mt",
];

/// Splits `text` at '.', '!', '?' (followed by whitespace or the end), at runs of
/// them ("?!", "..."), and at line breaks. A full stop after an abbreviation or a
/// single-letter initial does not split.
pub(super) fn split_sentences(text: &str) -> Vec<Sentence> {
    let chars: Vec<char> = text.chars().collect();
    let mut sentences = Vec::new();
    let mut current = String::new();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if c == '\n' || c == '\r' {
            push_sentence(&mut sentences, &mut current, false);
            index += 1;
            continue;
        }
        if matches!(c, '.' | '!' | '?') {
            let mut end = index;
            let mut is_question = false;
            while end < chars.len() && matches!(chars[end], '.' | '!' | '?' | '"' | '\'' | ')') {
                is_question |= chars[end] == '?';
                end += 1;
            }
            let at_boundary = end == chars.len() || chars[end].is_whitespace();
            let abbreviation = c == '.' && end == index + 1 && ends_with_abbreviation(&current);
            if at_boundary && !abbreviation {
                push_sentence(&mut sentences, &mut current, is_question);
                index = end;
                continue;
            }
        }
        current.push(c);
        index += 1;
    }
    push_sentence(&mut sentences, &mut current, false);
    sentences
}

fn ends_with_abbreviation(text: &str) -> bool {
    let last_word = text.rsplit(char::is_whitespace).next().unwrap_or_default();
    let lower = last_word.to_lowercase();
    // "J. K. Rowling"; but "... and so did I." ends a sentence.
    let is_initial = last_word.chars().count() == 1
        && last_word.chars().all(char::is_uppercase)
        && last_word != "I";
    is_initial || ABBREVIATIONS.contains(&lower.as_str())
}

fn push_sentence(sentences: &mut Vec<Sentence>, current: &mut String, is_question: bool) {
    let text = current.trim();
    if !text.is_empty() {
        sentences.push(Sentence {
            text: text.to_owned(),
            is_question,
        });
    }
    current.clear();
}

/// One word of a sentence.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token {
    /// The word as written, without surrounding punctuation ("Anna's", "I").
    pub text: String,
    /// Lower-cased, contraction expanded, possessive dropped ("anna", "i").
    pub lower: String,
    /// A comma or colon followed the word: a pause inside the clause.
    pub comma_after: bool,
    /// A semicolon or dash followed the word: the clause ends here.
    pub break_after: bool,
}

impl Token {
    /// A word the context supplies ("I" for an elided subject).
    pub fn word(text: &str) -> Token {
        Token {
            text: text.to_owned(),
            lower: text.to_lowercase(),
            comma_after: false,
            break_after: false,
        }
    }

    pub fn is_capitalised(&self) -> bool {
        self.text.chars().next().is_some_and(char::is_uppercase)
    }
}

/// Splits a sentence into tokens, expanding contractions into separate tokens ("I'm"
/// becomes "I" and "am", "don't" becomes "do" and "not").
pub(super) fn tokenize(sentence: &str) -> Vec<Token> {
    let mut tokens: Vec<Token> = Vec::new();
    for piece in sentence.split_whitespace() {
        let piece = piece.replace(['\u{2018}', '\u{2019}', '`'], "'");
        let trailing: String = piece
            .chars()
            .rev()
            .take_while(|c| !c.is_alphanumeric())
            .collect();
        let comma_after = trailing.contains([',', ':']);
        let break_after = trailing.contains([';', '\u{2014}', '\u{2013}']) || piece == "-";
        let mut trimmed = piece
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_owned();
        if ABBREVIATIONS.contains(&trimmed.to_lowercase().as_str()) && trailing.ends_with('.') {
            // "Dr." and "St." keep their full stop.
            trimmed.push('.');
        }
        if trimmed.is_empty() {
            // A lone dash or semicolon between words ends the clause before it.
            if break_after && let Some(last) = tokens.last_mut() {
                last.break_after = true;
            }
            continue;
        }
        let lower = trimmed.trim_end_matches('.').to_lowercase();
        let parts = expand_contraction(&lower);
        let last_part = parts.len() - 1;
        for (index, part) in parts.iter().enumerate() {
            let text = if parts.len() == 1 {
                // Keep the written form unless the contraction changed the word
                // ("can't" -> "cannot"); a possessive keeps its "'s".
                let unchanged = *part == lower.replace('\'', "")
                    || lower.strip_suffix("'s").is_some_and(|stem| stem == part);
                if unchanged {
                    trimmed.clone()
                } else {
                    part.clone()
                }
            } else if index == 0 && lower.starts_with(part.as_str()) {
                trimmed.chars().take(part.chars().count()).collect()
            } else {
                part.clone()
            };
            tokens.push(Token {
                text,
                lower: part.clone(),
                comma_after: comma_after && index == last_part,
                break_after: break_after && index == last_part,
            });
        }
    }
    tokens
}

/// Present-tense verbs whose second use after "and" starts a clause of the same
/// subject ("I live in Denver and work at Stripe").
const COORDINATED_VERBS: &[&str] = &[
    "work", "live", "drive", "take", "speak", "study", "play", "teach", "run", "ride", "own",
];

/// Whether `tokens` open with a capitalised name and a verb ("Dana is gluten-free",
/// "Mia plays basketball").
fn named_acts(tokens: &[Token]) -> bool {
    let names = tokens
        .iter()
        .take(3)
        .take_while(|t| t.is_capitalised() && t.lower != "i")
        .count();
    names > 0
        && tokens.get(names).is_some_and(|t| {
            matches!(
                t.lower.as_str(),
                "is" | "are" | "was" | "were" | "has" | "does" | "will"
            ) || (t.lower.len() > 3 && (t.lower.ends_with('s') || t.lower.ends_with("ed")))
        })
}

/// Whether `tokens` ("my wife Priya drives a Mini", "my brother's is August 3") open
/// with a person of the user's and a verb of theirs: a clause of its own, not the
/// object of the one before ("I love my wife and my kids").
fn person_acts(tokens: &[Token]) -> bool {
    let words: Vec<&str> = tokens.iter().map(|t| t.lower.as_str()).collect();
    let Some((_, len)) = crate::about::lexicon::relation_at(&words[1.min(words.len())..]) else {
        return false;
    };
    let mut at = 1 + len;
    // Their name, if given.
    while tokens.get(at).is_some_and(|t| t.is_capitalised()) && at < 1 + len + 3 {
        at += 1;
    }
    words.get(at).is_some_and(|verb| {
        matches!(
            *verb,
            "is" | "are" | "was" | "were" | "has" | "had" | "does" | "did" | "will"
        ) || (verb.len() > 3 && (verb.ends_with('s') || verb.ends_with("ed")))
    })
}

/// Splits a sentence's tokens into clauses: at semicolons and dashes, and before a
/// conjunction that starts a new first-person statement ("I like coffee and I hate
/// tea", "I like tea, but my sister Anna hates it"). A short person mention before
/// "and I" is a joint subject, not a clause ("My sister Anna and I went hiking").
pub(super) fn split_clauses(tokens: Vec<Token>) -> Vec<Vec<Token>> {
    let mut clauses = Vec::new();
    let mut current: Vec<Token> = Vec::new();
    let tokens: Vec<Token> = tokens;
    let mut index = 0;
    while index < tokens.len() {
        let token = tokens[index].clone();
        index += 1;
        let lower_at = |i: usize| tokens.get(i).map(|t| t.lower.as_str());
        let next_lower = lower_at(index);
        let is_conjunction = matches!(
            token.lower.as_str(),
            "and" | "but" | "so" | "because" | "while" | "whereas"
        );
        let has_statement = current.iter().any(|t| t.lower == "i") || current.len() > 3;
        let pause_before = current.last().is_some_and(|t| t.comma_after);
        let starts_i_clause = next_lower == Some("i") && has_statement;
        let starts_my_clause = matches!(next_lower, Some("my" | "our"))
            && has_statement
            && (pause_before || token.lower == "but" || person_acts(&tokens[index..]));
        // "..., so he's away", "..., and deadlines are brutal": a subject of its own
        // with its own verb.
        let starts_other_clause = pause_before
            && has_statement
            && (matches!(next_lower, Some("he" | "she" | "they" | "we" | "it"))
                || matches!(lower_at(index + 1), Some("is" | "are" | "was" | "were")));
        // "Raj is vegetarian and Dana is gluten-free": a named person and their verb.
        let starts_named_clause = current.len() >= 2 && named_acts(&tokens[index..]);
        if is_conjunction
            && (starts_i_clause || starts_my_clause || starts_other_clause || starts_named_clause)
        {
            clauses.push(std::mem::take(&mut current));
            continue;
        }
        // "I quit Deloitte and joined Stripe": a second verb of the same subject, said
        // again for its own clause.
        let second_verb = token.lower == "and"
            && current.first().is_some_and(|t| t.lower == "i")
            && next_lower.is_some_and(|w| is_past(w) || COORDINATED_VERBS.contains(&w));
        if second_verb {
            clauses.push(std::mem::take(&mut current));
            current.push(Token::word("I"));
            continue;
        }
        // A comma splice or a colon: "I'm allergic to bee stings, I carry an
        // EpiPen", "Saturdays are chaos: our son plays hockey".
        let splice = pause_before
            && current.len() > 2
            && (matches!(token.lower.as_str(), "i" | "my" | "our")
                || (token.lower == "it"
                    && (token.text.ends_with("'s") || next_lower == Some("is"))));
        if splice {
            clauses.push(std::mem::take(&mut current));
        }
        let ends_clause = token.break_after;
        current.push(token);
        if ends_clause {
            clauses.push(std::mem::take(&mut current));
        }
    }
    clauses.push(current);
    clauses.retain(|clause| !clause.is_empty());
    clauses
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sentences: &[Sentence]) -> Vec<&str> {
        sentences.iter().map(|s| s.text.as_str()).collect()
    }

    #[test]
    fn splits_sentences_and_marks_questions() {
        let sentences =
            split_sentences("Hi there! I love tea. Do you?\nAlso I run... a lot. So do I.");
        assert_eq!(
            texts(&sentences),
            [
                "Hi there",
                "I love tea",
                "Do you",
                "Also I run",
                "a lot",
                "So do I"
            ]
        );
        let questions: Vec<bool> = sentences.iter().map(|s| s.is_question).collect();
        assert_eq!(questions, [false, false, true, false, false, false]);
    }

    #[test]
    fn abbreviations_initials_and_decimals_do_not_split() {
        let sentences =
            split_sentences("My doctor is Dr. Patel. I read J. K. Rowling. I ran 3.5 km.");
        assert_eq!(
            texts(&sentences),
            [
                "My doctor is Dr. Patel",
                "I read J. K. Rowling",
                "I ran 3.5 km"
            ]
        );
    }

    #[test]
    fn tokens_expand_contractions_and_keep_case() {
        let tokens = tokenize("I'm sure Anna's cat can't, really;");
        let lower: Vec<&str> = tokens.iter().map(|t| t.lower.as_str()).collect();
        let text: Vec<&str> = tokens.iter().map(|t| t.text.as_str()).collect();
        assert_eq!(
            lower,
            ["i", "am", "sure", "anna", "cat", "cannot", "really"]
        );
        assert_eq!(
            text,
            ["I", "am", "sure", "Anna's", "cat", "cannot", "really"]
        );
        assert!(tokens[5].comma_after);
        assert!(tokens[6].break_after);
    }

    #[test]
    fn clauses_split_before_new_first_person_statements_only() {
        let clause_texts = |s: &str| -> Vec<String> {
            split_clauses(tokenize(s))
                .iter()
                .map(|c| {
                    c.iter()
                        .map(|t| t.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect()
        };
        assert_eq!(
            clause_texts("I like coffee and I hate tea"),
            ["I like coffee", "I hate tea"]
        );
        assert_eq!(
            clause_texts("I like tea, but my sister Anna hates it"),
            ["I like tea", "my sister Anna hates it"]
        );
        assert_eq!(
            clause_texts("My sister Anna and I went hiking"),
            ["My sister Anna and I went hiking"]
        );
        assert_eq!(
            clause_texts("I like coffee and tea"),
            ["I like coffee and tea"]
        );
        assert_eq!(clause_texts("I run; I swim"), ["I run", "I swim"]);
    }
}
