//! Default consolidation: the profile summary (who the user is), the active summary
//! (what the user is busy with) and reflections on patterns across memories.
//!
//! Reflections come from three patterns:
//!
//! - [`MIN_PATTERN_MEMORIES`] or more habits at the same time of day: "User tends to
//!   be active in the mornings";
//! - as many liked things in one domain: "User has a strong interest in music";
//! - [`MIN_SHARED_EPISODES`] or more episodes with the same person: "User often
//!   spends time with their sister Anna".
//!
//! Each reflection's detail starts with a `Pattern: <key>` line. A stored reflection
//! with the same key line, or restating the same fact, is the one a new reflection
//! merges into (`merge_with`), so that running consolidation again refreshes
//! reflections instead of duplicating them.
//!
//! The output depends only on the snapshot's content, not on its order: memories are
//! sorted by id first and every grouping is ordered.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Consolidation, Memory, MemoryType, Reflection, Scope, Snapshot};
use crate::text;

/// Size limit of each summary, in bytes (so also at most that many characters).
pub const MAX_SUMMARY_BYTES: usize = 2_000;

/// Facts less certain than this are not stated as who the user is or what they do.
pub const MIN_SUMMARY_CONFIDENCE: f32 = 0.3;

/// Habits at one time of day, or likes in one domain, that make a pattern.
pub const MIN_PATTERN_MEMORIES: usize = 3;

/// Episodes with one person that make a pattern.
pub const MIN_SHARED_EPISODES: usize = 2;

/// How many supporting summaries a reflection's detail lists.
const MAX_LISTED_MEMORIES: usize = 10;

/// Types the profile is built from, in the order they rank on equal importance.
const PROFILE_TYPES: &[MemoryType] = &[
    MemoryType::Identity,
    MemoryType::Constraint,
    MemoryType::Relationship,
    MemoryType::Preference,
    MemoryType::Habit,
];

/// Types the active summary is built from, in the order they rank on equal importance.
const ACTIVE_TYPES: &[MemoryType] = &[MemoryType::Project, MemoryType::Goal, MemoryType::Decision];

/// Builds the summaries and reflections for `snapshot`. The default strategy reads
/// only the snapshot; `now` is part of the contract for strategies that weigh
/// recency. The same snapshot, in any order, gives the same result.
pub fn consolidate(snapshot: &Snapshot, _now: i64) -> Consolidation {
    let mut memories: Vec<&Memory> = snapshot
        .memories
        .iter()
        .filter(|memory| memory.scope != Scope::Subconscious)
        .collect();
    memories.sort_by(|a, b| a.id.cmp(&b.id));
    let reflections = merge_into_stored(&memories, find_patterns(&memories));
    Consolidation {
        profile_summary: summary(&memories, PROFILE_TYPES, |a, b| {
            b.confidence.total_cmp(&a.confidence)
        }),
        active_summary: summary(&memories, ACTIVE_TYPES, |a, b| {
            b.last_seen_at.cmp(&a.last_seen_at)
        }),
        reflections,
    }
}

/// The memories of `types` as sentences, most important first (then by type rank,
/// then `tie_break`, then id), each fact once, within [`MAX_SUMMARY_BYTES`].
fn summary(
    memories: &[&Memory],
    types: &[MemoryType],
    tie_break: impl Fn(&Memory, &Memory) -> std::cmp::Ordering,
) -> String {
    let rank = |memory: &Memory| types.iter().position(|t| *t == memory.memory_type);
    let mut chosen: Vec<&Memory> = memories
        .iter()
        .copied()
        .filter(|memory| rank(memory).is_some() && memory.confidence >= MIN_SUMMARY_CONFIDENCE)
        .collect();
    chosen.sort_by(|a, b| {
        b.importance
            .total_cmp(&a.importance)
            .then(rank(a).cmp(&rank(b)))
            .then(tie_break(a, b))
            .then(a.id.cmp(&b.id))
    });
    let mut joined = String::new();
    let mut included: Vec<text::Fact> = Vec::new();
    for memory in chosen {
        let sentence = memory
            .summary
            .trim()
            .trim_end_matches(['.', '!', ';', ','])
            .trim();
        let separator = if joined.is_empty() { "" } else { " " };
        // A fact that does not fit is skipped; a shorter, less important one may.
        if sentence.is_empty()
            || joined.len() + separator.len() + sentence.len() + 1 > MAX_SUMMARY_BYTES
        {
            continue;
        }
        let fact = text::analyse(sentence, memory.negated);
        if included.iter().any(|other| other.same_fact(&fact)) {
            continue;
        }
        joined.push_str(separator);
        joined.push_str(sentence);
        joined.push('.');
        included.push(fact);
    }
    joined
}

/// A pattern found across memories, before merging with stored reflections.
struct Pattern<'a> {
    /// Names the pattern independently of its wording: "time-of-day:morning".
    key: String,
    summary: String,
    /// The memories the pattern was found in, in id order.
    evidence: Vec<&'a Memory>,
}

fn find_patterns<'a>(memories: &[&'a Memory]) -> Vec<Pattern<'a>> {
    let mut patterns = time_of_day_patterns(memories);
    patterns.extend(interest_patterns(memories));
    patterns.extend(companion_patterns(memories));
    patterns
}

/// Whether a memory states its fact positively (a habit given up or a dislike is not
/// evidence of a liking or a routine).
fn is_positive(memory: &Memory) -> bool {
    !text::analyse(&memory.summary, memory.negated).negative
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum DayPart {
    Morning,
    Evening,
    Night,
    Weekend,
}

impl DayPart {
    const ALL: [DayPart; 4] = [Self::Morning, Self::Evening, Self::Night, Self::Weekend];

    fn key(self) -> &'static str {
        match self {
            Self::Morning => "morning",
            Self::Evening => "evening",
            Self::Night => "night",
            Self::Weekend => "weekend",
        }
    }

    /// "User tends to be active <when>".
    fn when(self) -> &'static str {
        match self {
            Self::Morning => "in the mornings",
            Self::Evening => "in the evenings",
            Self::Night => "at night",
            Self::Weekend => "on weekends",
        }
    }

    /// Normalized word sequences that place a habit in this part of the day.
    fn terms(self) -> &'static [&'static [&'static str]] {
        match self {
            Self::Morning => &[
                &["morning"],
                &["mornings"],
                &["breakfast"],
                &["sunrise"],
                &["dawn"],
                &["before", "work"],
            ],
            Self::Evening => &[
                &["evening"],
                &["evenings"],
                &["dinner"],
                &["after", "work"],
                &["sunset"],
            ],
            Self::Night => &[
                &["night"],
                &["nights"],
                &["nightly"],
                &["bedtime"],
                &["midnight"],
                &["before", "bed"],
            ],
            Self::Weekend => &[
                &["weekend"],
                &["weekends"],
                &["saturday"],
                &["saturdays"],
                &["sunday"],
                &["sundays"],
            ],
        }
    }
}

fn time_of_day_patterns<'a>(memories: &[&'a Memory]) -> Vec<Pattern<'a>> {
    let mut habits_by_part: BTreeMap<DayPart, Vec<&Memory>> = BTreeMap::new();
    let habits = memories
        .iter()
        .filter(|m| m.memory_type == MemoryType::Habit && is_positive(m));
    for habit in habits {
        let words = crate::analyser::words(&habit.summary);
        for part in DayPart::ALL {
            let mentioned = part
                .terms()
                .iter()
                .any(|term| words.windows(term.len()).any(|window| window == *term));
            if mentioned {
                habits_by_part.entry(part).or_default().push(habit);
            }
        }
    }
    habits_by_part
        .into_iter()
        .filter(|(_, habits)| habits.len() >= MIN_PATTERN_MEMORIES)
        .map(|(part, habits)| Pattern {
            key: format!("time-of-day:{}", part.key()),
            summary: format!("User tends to be active {}", part.when()),
            evidence: habits,
        })
        .collect()
}

/// Domains of interest: key, the words "User has a strong interest in ...", and the
/// words that place a liked thing in the domain (compared by stem).
const DOMAINS: &[(&str, &str, &[&str])] = &[
    (
        "food",
        "food and drink",
        &[
            "food",
            "cooking",
            "cuisine",
            "coffee",
            "tea",
            "wine",
            "beer",
            "pizza",
            "sushi",
            "pasta",
            "chocolate",
            "restaurant",
            "baking",
            "spicy",
            "cheese",
            "dessert",
            "curry",
            "ramen",
            "taco",
            "burger",
            "fruit",
            "cocktail",
            "whisky",
            "meal",
            "recipe",
            "bread",
            "noodle",
            "barbecue",
            "vegetable",
        ],
    ),
    (
        "music",
        "music",
        &[
            "music",
            "jazz",
            "rock",
            "pop",
            "song",
            "band",
            "guitar",
            "piano",
            "concert",
            "album",
            "classical",
            "rap",
            "opera",
            "singing",
            "violin",
            "drum",
            "metal",
            "techno",
            "playlist",
            "vinyl",
            "blues",
            "folk",
        ],
    ),
    (
        "fitness",
        "sports and fitness",
        &[
            "sport",
            "gym",
            "running",
            "yoga",
            "football",
            "soccer",
            "basketball",
            "tennis",
            "cycling",
            "swimming",
            "climbing",
            "workout",
            "fitness",
            "marathon",
            "skiing",
            "surfing",
            "boxing",
            "golf",
            "pilates",
            "crossfit",
            "lifting",
        ],
    ),
    (
        "reading",
        "books and reading",
        &[
            "book",
            "novel",
            "reading",
            "fiction",
            "author",
            "poetry",
            "poem",
            "literature",
            "fantasy",
            "comic",
            "manga",
            "audiobook",
        ],
    ),
    (
        "film",
        "films and TV",
        &[
            "movie",
            "film",
            "series",
            "show",
            "tv",
            "anime",
            "documentary",
            "cinema",
            "sitcom",
            "horror",
            "thriller",
        ],
    ),
    (
        "travel",
        "travel",
        &[
            "travel",
            "traveling",
            "travelling",
            "trip",
            "beach",
            "vacation",
            "holiday",
            "abroad",
            "backpacking",
            "island",
            "road",
        ],
    ),
    (
        "technology",
        "technology",
        &[
            "programming",
            "code",
            "coding",
            "rust",
            "python",
            "linux",
            "computer",
            "gadget",
            "software",
            "tech",
            "technology",
            "ai",
            "robot",
            "electronics",
            "javascript",
            "keyboard",
        ],
    ),
    (
        "games",
        "games",
        &[
            "game",
            "gaming",
            "chess",
            "videogame",
            "puzzle",
            "boardgame",
            "poker",
            "nintendo",
            "playstation",
            "xbox",
        ],
    ),
    (
        "outdoors",
        "the outdoors",
        &[
            "hiking",
            "camping",
            "nature",
            "garden",
            "gardening",
            "mountain",
            "forest",
            "fishing",
            "kayaking",
            "birdwatching",
            "outdoors",
            "park",
        ],
    ),
    (
        "art",
        "art and design",
        &[
            "art",
            "painting",
            "drawing",
            "photography",
            "museum",
            "design",
            "sculpture",
            "sketching",
            "craft",
            "knitting",
            "pottery",
        ],
    ),
];

fn interest_patterns<'a>(memories: &[&'a Memory]) -> Vec<Pattern<'a>> {
    let domain_stems: Vec<BTreeSet<String>> = DOMAINS
        .iter()
        .map(|(_, _, words)| {
            words
                .iter()
                .map(|word| crate::analyser::stem(word))
                .collect()
        })
        .collect();
    let mut likes_by_domain: BTreeMap<usize, Vec<&Memory>> = BTreeMap::new();
    let likes = memories
        .iter()
        .filter(|m| m.memory_type == MemoryType::Preference && is_positive(m));
    for like in likes {
        let core = text::content_words(&like.summary);
        for (domain, stems) in domain_stems.iter().enumerate() {
            if !core.is_disjoint(stems) {
                likes_by_domain.entry(domain).or_default().push(like);
            }
        }
    }
    likes_by_domain
        .into_iter()
        .filter(|(_, likes)| likes.len() >= MIN_PATTERN_MEMORIES)
        .map(|(domain, likes)| {
            let (key, label, _) = DOMAINS[domain];
            Pattern {
                key: format!("interest:{key}"),
                summary: format!("User has a strong interest in {label}"),
                evidence: likes,
            }
        })
        .collect()
}

fn companion_patterns<'a>(memories: &[&'a Memory]) -> Vec<Pattern<'a>> {
    let mut episodes_by_person: BTreeMap<String, Vec<&Memory>> = BTreeMap::new();
    for episode in memories
        .iter()
        .filter(|m| m.memory_type == MemoryType::Episode)
    {
        let names: BTreeSet<String> = episode
            .persons
            .iter()
            .map(|person| person.name.trim().to_lowercase())
            .filter(|name| !name.is_empty())
            .collect();
        for name in names {
            episodes_by_person.entry(name).or_default().push(episode);
        }
    }
    episodes_by_person
        .into_iter()
        .filter(|(_, episodes)| episodes.len() >= MIN_SHARED_EPISODES)
        .map(|(name, episodes)| {
            let named =
                |person: &&crate::model::PersonRef| person.name.trim().to_lowercase() == name;
            // The name as first written, and the relation from any memory that states it.
            let display_name = episodes
                .iter()
                .flat_map(|m| &m.persons)
                .find(named)
                .map_or(name.clone(), |person| person.name.trim().to_owned());
            let relation = memories
                .iter()
                .flat_map(|m| &m.persons)
                .filter(named)
                .find_map(|person| person.relation.as_deref());
            let companion = match relation {
                Some(relation) => format!("their {relation} {display_name}"),
                None => display_name,
            };
            Pattern {
                key: format!("person:{name}"),
                summary: format!("User often spends time with {companion}"),
                evidence: episodes,
            }
        })
        .collect()
}

/// Confidence in a pattern grows with the memories it was found in: 0.6 for two,
/// 0.7 for three, at most 0.9.
fn pattern_confidence(memories: usize) -> f32 {
    // Computed in tenths so that three memories give exactly 0.7, not 0.70000005.
    (4 + memories.min(5)) as f32 / 10.0
}

/// Turns patterns into reflections, each merged into the stored reflection that
/// states the same pattern: first one carrying the same `Pattern:` key line, else one
/// stating the same fact. A stored reflection absorbs at most one new reflection.
fn merge_into_stored(memories: &[&Memory], patterns: Vec<Pattern>) -> Vec<Reflection> {
    let stored: Vec<&Memory> = memories
        .iter()
        .copied()
        .filter(|m| m.memory_type == MemoryType::Reflection)
        .collect();
    let mut claimed: BTreeSet<&str> = BTreeSet::new();
    patterns
        .into_iter()
        .map(|pattern| {
            let key_line = format!("Pattern: {}", pattern.key);
            let unclaimed = || stored.iter().filter(|m| !claimed.contains(m.id.as_str()));
            let same_key = unclaimed().find(|m| {
                m.detail
                    .as_deref()
                    .is_some_and(|detail| detail.lines().any(|line| line.trim() == key_line))
            });
            let merge_with = same_key
                .or_else(|| unclaimed().find(|m| text::same_fact(&m.summary, &pattern.summary)))
                .map(|m| m.id.as_str());
            if let Some(id) = merge_with {
                claimed.insert(id);
            }
            let listed: Vec<&str> = pattern
                .evidence
                .iter()
                .take(MAX_LISTED_MEMORIES)
                .map(|m| m.summary.trim())
                .collect();
            Reflection {
                detail: Some(format!("{key_line}\nSeen in: {}", listed.join("; "))),
                summary: pattern.summary,
                confidence: pattern_confidence(pattern.evidence.len()),
                importance: MemoryType::Reflection.default_importance(),
                based_on: pattern.evidence.iter().map(|m| m.id.clone()).collect(),
                merge_with: merge_with.map(str::to_owned),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::PersonRef;
    use crate::test_support::stored_memory;

    fn memory(id: &str, memory_type: MemoryType, summary: &str) -> Memory {
        stored_memory(id, memory_type, summary)
    }

    fn with_person(mut memory: Memory, name: &str, relation: Option<&str>) -> Memory {
        memory.persons.push(PersonRef {
            name: name.to_owned(),
            relation: relation.map(str::to_owned),
        });
        memory
    }

    fn snapshot(memories: Vec<Memory>) -> Snapshot {
        Snapshot {
            user_id: "default".to_owned(),
            memories,
        }
    }

    fn run(memories: Vec<Memory>) -> Consolidation {
        consolidate(&snapshot(memories), 5_000)
    }

    fn summaries(reflections: &[Reflection]) -> Vec<&str> {
        reflections.iter().map(|r| r.summary.as_str()).collect()
    }

    #[test]
    fn profile_holds_durable_facts_most_important_first() {
        use MemoryType::*;
        let mut weak = memory("m7", Preference, "User likes opera");
        weak.confidence = 0.2;
        let result = run(vec![
            memory("m1", Preference, "User likes coffee"),
            memory("m2", Identity, "User's name is Sam"),
            memory("m3", Goal, "User wants to learn Spanish"),
            memory("m4", Constraint, "User is allergic to peanuts."),
            memory("m5", Relationship, "User's sister is Anna"),
            memory("m6", Habit, "User runs every morning"),
            weak,
            memory("m8", Preference, "User loves coffee"),
            memory("m9", Episode, "User went to Paris last week"),
        ]);
        assert_eq!(
            result.profile_summary,
            "User's name is Sam. User is allergic to peanuts. User's sister is Anna. \
             User likes coffee. User runs every morning."
        );
    }

    #[test]
    fn active_summary_holds_goals_projects_and_decisions() {
        use MemoryType::*;
        let mut recent_goal = memory("m1", Goal, "User wants to learn Spanish");
        recent_goal.last_seen_at = 2_000;
        let result = run(vec![
            memory("m0", Goal, "User plans to visit Japan"),
            recent_goal,
            memory("m2", Project, "User is building a budgeting app"),
            memory("m3", Decision, "User decided to switch to Linux"),
            memory("m4", Preference, "User likes coffee"),
        ]);
        assert_eq!(
            result.active_summary,
            "User wants to learn Spanish. User plans to visit Japan. \
             User is building a budgeting app. User decided to switch to Linux."
        );
        assert!(!result.profile_summary.contains("Spanish"));
    }

    #[test]
    fn summaries_stay_within_the_limit() {
        let memories: Vec<Memory> = (0..300)
            .map(|index| {
                let mut fact = memory(
                    &format!("m{index:03}"),
                    MemoryType::Preference,
                    &format!("User likes the colour number {index} very much indeed"),
                );
                fact.importance = 1.0 - index as f32 / 1_000.0;
                fact
            })
            .collect();
        let result = run(memories);
        assert!(result.profile_summary.len() <= MAX_SUMMARY_BYTES);
        assert!(result.profile_summary.len() > MAX_SUMMARY_BYTES - 60);
        // The most important facts are the ones kept.
        assert!(
            result
                .profile_summary
                .starts_with("User likes the colour number 0 very")
        );
        assert!(!result.profile_summary.contains("number 299 "));
    }

    #[test]
    fn empty_snapshot_gives_empty_results() {
        let result = run(Vec::new());
        assert_eq!(result.profile_summary, "");
        assert_eq!(result.active_summary, "");
        assert!(result.reflections.is_empty());
    }

    #[test]
    fn habits_at_one_time_of_day_make_a_reflection() {
        use MemoryType::Habit;
        let result = run(vec![
            memory("m1", Habit, "User runs every morning"),
            memory("m2", Habit, "User meditates before work"),
            memory("m3", Habit, "User reads the news at breakfast"),
            memory("m4", Habit, "User no longer swims in the mornings"),
            memory("m5", Habit, "User cooks in the evening"),
        ]);
        assert_eq!(
            summaries(&result.reflections),
            ["User tends to be active in the mornings"]
        );
        let reflection = &result.reflections[0];
        assert_eq!(reflection.based_on, ["m1", "m2", "m3"]);
        assert_eq!(reflection.merge_with, None);
        assert_eq!(reflection.confidence, pattern_confidence(3));
        assert!(
            reflection
                .detail
                .as_deref()
                .is_some_and(|d| d.starts_with("Pattern: time-of-day:morning\n"))
        );
        // Two habits are not yet a pattern.
        let two = run(vec![
            memory("m1", Habit, "User runs every morning"),
            memory("m2", Habit, "User meditates before work"),
        ]);
        assert!(two.reflections.is_empty());
    }

    #[test]
    fn likes_in_one_domain_make_a_reflection() {
        use MemoryType::Preference;
        let result = run(vec![
            memory("m1", Preference, "User loves jazz"),
            memory("m2", Preference, "User likes playing the guitar"),
            memory("m3", Preference, "User enjoys classical concerts"),
            memory("m4", Preference, "User hates pizza"),
            memory("m5", Preference, "User likes sushi"),
            memory("m6", Preference, "User does not like coffee"),
        ]);
        assert_eq!(
            summaries(&result.reflections),
            ["User has a strong interest in music"]
        );
        assert_eq!(result.reflections[0].based_on, ["m1", "m2", "m3"]);
    }

    #[test]
    fn episodes_with_one_person_make_a_reflection() {
        use MemoryType::{Episode, Relationship};
        let result = run(vec![
            with_person(
                memory("m1", Episode, "User went hiking with Anna"),
                "Anna",
                None,
            ),
            with_person(
                memory("m2", Episode, "User had dinner with anna"),
                "anna",
                None,
            ),
            with_person(
                memory("m3", Relationship, "User's sister is Anna"),
                "Anna",
                Some("sister"),
            ),
            with_person(memory("m4", Episode, "User met Tom for lunch"), "Tom", None),
        ]);
        assert_eq!(
            summaries(&result.reflections),
            ["User often spends time with their sister Anna"]
        );
        assert_eq!(result.reflections[0].based_on, ["m1", "m2"]);
    }

    #[test]
    fn reflections_merge_into_the_stored_reflection_of_the_same_pattern() {
        use MemoryType::{Habit, Reflection as Reflected};
        let habits = || {
            vec![
                memory("m1", Habit, "User runs every morning"),
                memory("m2", Habit, "User meditates before work"),
                memory("m3", Habit, "User reads at breakfast"),
            ]
        };
        // By the key line, even when the stored summary was edited.
        let mut keyed = memory("r1", Reflected, "Mornings are when the user gets going");
        keyed.detail = Some("Pattern: time-of-day:morning\nSeen in: ...".to_owned());
        let unrelated = memory("r0", Reflected, "User has a strong interest in music");
        let mut memories = habits();
        memories.extend([unrelated, keyed]);
        let result = run(memories);
        assert_eq!(result.reflections.len(), 1);
        assert_eq!(result.reflections[0].merge_with.as_deref(), Some("r1"));
        // By the summary, for reflections without a key line.
        let mut memories = habits();
        memories.push(memory(
            "r2",
            Reflected,
            "User tends to be active in the mornings.",
        ));
        let result = run(memories);
        assert_eq!(result.reflections[0].merge_with.as_deref(), Some("r2"));
        // Running consolidation on its own output merges again instead of duplicating.
        let first = run(habits());
        let mut stored = memory("r3", Reflected, &first.reflections[0].summary);
        stored.detail = first.reflections[0].detail.clone();
        let mut memories = habits();
        memories.push(stored);
        let second = run(memories);
        assert_eq!(second.reflections.len(), 1);
        assert_eq!(second.reflections[0].merge_with.as_deref(), Some("r3"));
    }

    #[test]
    fn is_deterministic_whatever_the_snapshot_order() {
        use MemoryType::*;
        let memories = vec![
            memory("m1", Habit, "User runs every morning"),
            memory("m2", Habit, "User meditates before work"),
            memory("m3", Habit, "User reads at breakfast"),
            memory("m4", Preference, "User loves jazz"),
            memory("m5", Preference, "User likes rock music"),
            memory("m6", Preference, "User enjoys concerts"),
            memory("m7", Identity, "User's name is Sam"),
            memory("m8", Goal, "User wants to learn Spanish"),
            with_person(
                memory("m9", Episode, "User went hiking with Ben"),
                "Ben",
                None,
            ),
            with_person(memory("m10", Episode, "User cooked with Ben"), "Ben", None),
        ];
        let forward = run(memories.clone());
        let mut reversed = memories;
        reversed.reverse();
        assert_eq!(forward, run(reversed));
        assert_eq!(forward.reflections.len(), 3);
        assert_eq!(forward, run(forward_input()));

        fn forward_input() -> Vec<Memory> {
            use MemoryType::*;
            let mut memories = vec![
                memory("m7", Identity, "User's name is Sam"),
                memory("m8", Goal, "User wants to learn Spanish"),
                memory("m1", Habit, "User runs every morning"),
                memory("m3", Habit, "User reads at breakfast"),
                memory("m2", Habit, "User meditates before work"),
                memory("m6", Preference, "User enjoys concerts"),
                memory("m5", Preference, "User likes rock music"),
                memory("m4", Preference, "User loves jazz"),
            ];
            memories.push(with_person(
                memory("m10", Episode, "User cooked with Ben"),
                "Ben",
                None,
            ));
            memories.push(with_person(
                memory("m9", Episode, "User went hiking with Ben"),
                "Ben",
                None,
            ));
            memories
        }
    }
}
