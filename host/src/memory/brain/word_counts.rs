//! Which query words are common in each user's transcript, remembered between
//! searches.
//!
//! Search leaves out the words common in an index (`retrieve::selective_words`), and
//! in the transcript (FTS5) finding out costs a bounded count of each word's matches
//! among the user's messages. (Memories are indexed in memory, `text_index.rs`, where
//! a count is a lookup.) A word is common or not for one user, counted over that
//! user's messages alone, so answers are remembered per user and word. A word's share
//! of a user's messages moves slowly, so an answer is reused while the user's messages
//! have grown by less than one in [`REGROWTH`] since it was counted, and for at most
//! [`MAX_AGE`] (edits and deletions change counts without growing the index). A stale
//! answer only changes which words the first, cheaper query uses; the results are still
//! ranked over the user's messages alone.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a count stays usable.
const MAX_AGE: Duration = Duration::from_secs(10);
/// A count is redone once the index has grown by 1 in this many rows.
const REGROWTH: i64 = 100;
/// Words remembered at most, all users together (query words and users come from
/// outside: the map must stay bounded); when full, it starts over.
const MAX_WORDS: usize = 4096;

#[derive(Default)]
pub struct WordCounts {
    /// By user, by word.
    known: Mutex<HashMap<String, HashMap<String, Counted>>>,
}

struct Counted {
    common: bool,
    /// The matches at which it was counted as common (retrieval's tuning sets it).
    common_at: usize,
    /// The user's messages when the word was counted.
    size: i64,
    at: Instant,
}

impl WordCounts {
    /// Whether `word` (lowercased) is common among `user`'s messages, of which there
    /// are now `size`, a word being common at `common_at` matches: remembered, or
    /// `count()`ed and remembered.
    pub fn is_common<E>(
        &self,
        user: &str,
        word: &str,
        size: i64,
        common_at: usize,
        count: impl FnOnce() -> Result<bool, E>,
    ) -> Result<bool, E> {
        if let Some(known) = self.known().get(user).and_then(|words| words.get(word))
            && known.common_at == common_at
            && known.at.elapsed() < MAX_AGE
            && size >= known.size
            && size - known.size <= known.size / REGROWTH
        {
            return Ok(known.common);
        }
        // Counted without the lock held: concurrent searches may count the same word
        // twice, which costs less than making them wait for each other.
        let common = count()?;
        let mut known = self.known();
        if known.values().map(HashMap::len).sum::<usize>() >= MAX_WORDS {
            known.clear();
        }
        known.entry(user.to_string()).or_default().insert(
            word.to_string(),
            Counted {
                common,
                common_at,
                size,
                at: Instant::now(),
            },
        );
        Ok(common)
    }

    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<String, Counted>>> {
        // Entries are replaced whole: a panic cannot leave one torn.
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(common: bool, calls: &mut usize) -> Result<bool, ()> {
        *calls += 1;
        Ok(common)
    }

    #[test]
    fn reuses_a_count_until_the_index_grows() {
        let counts = WordCounts::default();
        let mut calls = 0;
        assert_eq!(
            counts.is_common("u", "tea", 1000, 200, || count(true, &mut calls)),
            Ok(true)
        );
        // Same size, and a little larger: remembered.
        assert_eq!(
            counts.is_common("u", "tea", 1000, 200, || count(false, &mut calls)),
            Ok(true)
        );
        assert_eq!(
            counts.is_common("u", "tea", 1010, 200, || count(false, &mut calls)),
            Ok(true)
        );
        assert_eq!(calls, 1);
        // Grown past 1 in REGROWTH, or shrunk (a cleared store): counted again.
        assert_eq!(
            counts.is_common("u", "tea", 1011, 200, || count(false, &mut calls)),
            Ok(false)
        );
        assert_eq!(
            counts.is_common("u", "tea", 10, 200, || count(true, &mut calls)),
            Ok(true)
        );
        assert_eq!(calls, 3);
    }

    #[test]
    fn does_not_remember_failures() {
        let counts = WordCounts::default();
        let mut calls = 0;
        let failed: Result<bool, &str> = counts.is_common("u", "cake", 500, 200, || Err("disk"));
        assert_eq!(failed, Err("disk"));
        assert_eq!(
            counts.is_common("u", "cake", 500, 200, || count(true, &mut calls)),
            Ok(true)
        );
        assert_eq!(
            counts.is_common("u", "cake", 500, 200, || count(false, &mut calls)),
            Ok(true)
        );
        assert_eq!(calls, 1);
    }

    /// A word common for one user is counted again for another.
    #[test]
    fn remembers_each_users_answer_apart() {
        let counts = WordCounts::default();
        let mut calls = 0;
        assert_eq!(
            counts.is_common("crowd", "tea", 5000, 200, || count(true, &mut calls)),
            Ok(true)
        );
        assert_eq!(
            counts.is_common("me", "tea", 5000, 200, || count(false, &mut calls)),
            Ok(false)
        );
        assert_eq!(
            counts.is_common("crowd", "tea", 5000, 200, || count(false, &mut calls)),
            Ok(true)
        );
        assert_eq!(calls, 2);
    }
}
