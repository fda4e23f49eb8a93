//! The registry feed (`GET {registry}/api/feed.json`, `mercury-skills-registry@1`):
//! every skill's id, name, title, description, category, tags, version and the sha256
//! of its SKILL.md body. Read as hostile input: entries whose id is not a
//! `category/slug` or whose sha is not a sha256 are dropped (and reported), and
//! hidden characters are removed from every text field before anyone shows it.
//!
//! Search ([`Feed::search`]) ranks by which field matched, in this order: the exact
//! id, then the name, then tags and category, then the description. Query and fields
//! are lowercased and split into words on anything that is not a letter or digit;
//! stop words (`a`, `the`, `for`...) are dropped. For each skill four numbers are
//! counted:
//!
//! 1. `id`: 1 when the whole query is the skill's id (`category/slug`) or slug;
//! 2. `name`: 10 when the query's words are exactly the words of the slug, name or
//!    title, plus 1 for each query word that is a word of them (or, for words of at
//!    least 3 characters, the start of one);
//! 3. `tags`: 1 for each query word that is a word of a tag, the category slug or
//!    the category name (or the start of one, as above);
//! 4. `description`: 1 for each query word found in the description likewise.
//!
//! Skills are ordered by these numbers compared in that order (a name match beats any
//! number of tag matches), then by feed order (ties are stable). A skill matching
//! nothing is left out. The `score` reported is `id*1e6 + name*1e4 + tags*1e2 +
//! description` (each part at most 99).

use engram_strategies::analyser;
use serde::{Deserialize, Serialize};

use crate::skills::format::id::SkillId;
use crate::skills::format::text::strip_hidden;

/// The protocol this client speaks.
pub const SCHEMA: &str = "mercury-skills-registry@1";
/// Feeds larger than this are refused.
pub const MAX_FEED_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "camelCase"))]
pub struct Feed {
    #[serde(default)]
    pub schema: Option<String>,
    #[serde(default)]
    pub generated_at: Option<String>,
    #[serde(default)]
    pub categories: Vec<FeedCategory>,
    #[serde(default)]
    pub skills: Vec<FeedSkill>,
    /// Each skill's words, for search: built by [`Feed::parse`] (or the first search).
    #[serde(skip)]
    words: std::sync::OnceLock<Vec<SkillWords>>,
}

/// A skill's searchable words, lowercased (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq)]
struct SkillWords {
    id: String,
    slug: String,
    /// Words of the slug, name and title together.
    name: Vec<String>,
    /// The slug's, the name's and the title's words, each on its own.
    phrases: Vec<Vec<String>>,
    /// Words of the tags, the category slug and the category name.
    tags: Vec<String>,
    description: Vec<String>,
}

impl SkillWords {
    fn of(skill: &FeedSkill) -> SkillWords {
        let phrases: Vec<Vec<String>> = [skill.slug(), skill.name.as_str(), skill.display_name()]
            .iter()
            .map(|f| words(f))
            .filter(|w| !w.is_empty())
            .collect();
        let mut tags: Vec<String> = skill.tags.iter().flat_map(|t| words(t)).collect();
        tags.extend(words(skill.category_slug()));
        if let Some(category) = &skill.category {
            tags.extend(words(category));
        }
        SkillWords {
            id: skill.id.to_lowercase(),
            slug: skill.slug().to_lowercase(),
            name: phrases.concat(),
            phrases,
            tags,
            description: words(&skill.description),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeedCategory {
    pub slug: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub count: usize,
}

/// One registry skill as the feed describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all(deserialize = "camelCase"))]
pub struct FeedSkill {
    /// `category/slug`.
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: String,
    /// The category's display name.
    #[serde(default)]
    pub category: Option<String>,
    #[serde(default)]
    pub category_slug: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub author: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
    /// sha256 of the SKILL.md body (after the frontmatter), lowercase hex.
    pub sha: String,
    /// Bytes of the SKILL.md.
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub updated_at: Option<String>,
}

impl FeedSkill {
    /// The id, checked when the feed was read.
    pub fn skill_id(&self) -> SkillId {
        SkillId::parse(&self.id).expect("feed ids are checked on parse")
    }

    pub fn slug(&self) -> &str {
        self.id.rsplit('/').next().unwrap_or(&self.id)
    }

    pub fn category_slug(&self) -> &str {
        self.id.split('/').next().unwrap_or_default()
    }

    /// The title, else the name.
    pub fn display_name(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

/// A search hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit<'a> {
    pub skill: &'a FeedSkill,
    pub score: u64,
}

/// How an id given on a command line matched the feed.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup<'a> {
    Found(&'a FeedSkill),
    NotFound,
    /// A bare slug that more than one category has.
    Ambiguous(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FeedError {
    #[error("the registry feed is not valid JSON: {0}")]
    Json(String),
    #[error("the registry speaks {found:?}, not {SCHEMA}")]
    Schema { found: String },
    #[error("the registry feed is larger than {MAX_FEED_BYTES} bytes")]
    TooLarge,
}

impl Feed {
    /// Reads a feed; entries that cannot be used are dropped and described in the
    /// second value.
    pub fn parse(bytes: &[u8]) -> Result<(Feed, Vec<String>), FeedError> {
        if bytes.len() > MAX_FEED_BYTES {
            return Err(FeedError::TooLarge);
        }
        let mut feed: Feed =
            serde_json::from_slice(bytes).map_err(|e| FeedError::Json(e.to_string()))?;
        if let Some(schema) = &feed.schema
            && schema != SCHEMA
        {
            return Err(FeedError::Schema {
                found: clean(schema),
            });
        }
        let mut problems = Vec::new();
        let mut seen = std::collections::HashSet::new();
        feed.skills.retain_mut(|skill| {
            let why = match SkillId::parse(&skill.id) {
                Ok(SkillId::Registry { .. }) => None,
                Ok(SkillId::Flat(_)) => Some("not of the form category/slug".to_string()),
                Err(e) => Some(e.to_string()),
            }
            .or_else(|| {
                let hex = skill.sha.len() == 64
                    && skill
                        .sha
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
                (!hex).then(|| "its sha is not a lowercase sha256".to_string())
            })
            .or_else(|| (!seen.insert(skill.id.clone())).then(|| "listed twice".to_string()));
            if let Some(why) = why {
                problems.push(format!("dropped feed entry {:?}: {why}", clean(&skill.id)));
                return false;
            }
            skill.clean();
            true
        });
        for category in &mut feed.categories {
            category.slug = clean(&category.slug);
            category.name = clean(&category.name);
        }
        feed.categories
            .retain(|c| crate::skills::format::id::Slug::parse(&c.slug).is_ok());
        // Counts from the entries actually listed; categories the feed forgot added.
        for category in &mut feed.categories {
            category.count = feed
                .skills
                .iter()
                .filter(|s| s.category_slug() == category.slug)
                .count();
        }
        for skill in &feed.skills {
            let slug = skill.category_slug();
            if !feed.categories.iter().any(|c| c.slug == slug) {
                feed.categories.push(FeedCategory {
                    slug: slug.to_string(),
                    name: skill.category.clone().unwrap_or_else(|| slug.to_string()),
                    count: feed
                        .skills
                        .iter()
                        .filter(|s| s.category_slug() == slug)
                        .count(),
                });
            }
        }
        feed.words_index();
        Ok((feed, problems))
    }

    /// The search words of every skill, built once.
    fn words_index(&self) -> std::borrow::Cow<'_, [SkillWords]> {
        let built = self
            .words
            .get_or_init(|| self.skills.iter().map(SkillWords::of).collect());
        if built.len() == self.skills.len() {
            std::borrow::Cow::Borrowed(built)
        } else {
            // The skills were changed after the index was built.
            std::borrow::Cow::Owned(self.skills.iter().map(SkillWords::of).collect())
        }
    }

    /// Finds `id`: `category/slug` exactly, or a bare slug when one category has it.
    pub fn lookup(&self, id: &SkillId) -> Lookup<'_> {
        match id {
            SkillId::Registry { .. } => {
                let id = id.to_string();
                match self.skills.iter().find(|s| s.id == id) {
                    Some(skill) => Lookup::Found(skill),
                    None => Lookup::NotFound,
                }
            }
            SkillId::Flat(slug) => {
                let found: Vec<&FeedSkill> = self
                    .skills
                    .iter()
                    .filter(|s| s.slug() == slug.as_str())
                    .collect();
                match found.as_slice() {
                    [] => Lookup::NotFound,
                    [one] => Lookup::Found(one),
                    many => Lookup::Ambiguous(many.iter().map(|s| s.id.clone()).collect()),
                }
            }
        }
    }

    /// The skills of a category, in feed order.
    pub fn in_category<'a>(&'a self, category: &'a str) -> impl Iterator<Item = &'a FeedSkill> {
        self.skills
            .iter()
            .filter(move |s| s.category_slug() == category)
    }

    /// Every matching skill, best first (see the module documentation).
    pub fn search(&self, query: &str) -> Vec<Hit<'_>> {
        let whole = query.trim().to_lowercase();
        let terms = query_terms(query);
        if terms.is_empty() && whole.is_empty() {
            return Vec::new();
        }
        let query_words = words(&whole);
        let index = self.words_index();
        let mut hits: Vec<([u64; 4], usize, &FeedSkill)> = self
            .skills
            .iter()
            .zip(index.iter())
            .enumerate()
            .filter_map(|(order, (skill, w))| {
                let key = rank(w, &whole, &query_words, &terms);
                (key != [0; 4]).then_some((key, order, skill))
            })
            .collect();
        hits.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        hits.into_iter()
            .map(|(key, _, skill)| Hit {
                skill,
                score: key.iter().fold(0, |acc, part| acc * 100 + (*part).min(99)),
            })
            .collect()
    }
}

impl FeedSkill {
    fn clean(&mut self) {
        self.name = clean(&self.name);
        self.title = self.title.as_deref().map(clean);
        self.description = clean(&self.description);
        self.category = self.category.as_deref().map(clean);
        self.category_slug = Some(self.category_slug().to_string());
        self.tags = self.tags.iter().map(|t| clean(t)).collect();
        self.author = self.author.as_deref().map(clean);
        self.version = self.version.as_deref().map(clean);
        self.updated_at = self.updated_at.as_deref().map(clean);
    }
}

/// Text with control and invisible characters removed.
fn clean(text: &str) -> String {
    strip_hidden(text, false).0
}

/// Lowercased words (see [`analyser::words`]).
fn words(text: &str) -> Vec<String> {
    analyser::words(text)
}

/// The query's distinct words, stop words and request phrasing left out (unless nothing
/// else is left).
fn query_terms(query: &str) -> Vec<String> {
    let all = words(query);
    let mut terms: Vec<String> = all
        .iter()
        .filter(|w| !analyser::is_stop_word(w) && !analyser::is_request_phrasing(w))
        .cloned()
        .collect();
    if terms.is_empty() {
        terms = all;
    }
    terms.dedup();
    let mut seen = std::collections::HashSet::new();
    terms.retain(|t| seen.insert(t.clone()));
    terms
}

/// Whether `term` is one of `words`, or (3+ characters) the start of one.
fn matches(term: &str, words: &[String]) -> bool {
    words
        .iter()
        .any(|w| w == term || (term.chars().count() >= 3 && w.starts_with(term)))
}

fn rank(w: &SkillWords, whole: &str, query_words: &[String], terms: &[String]) -> [u64; 4] {
    let id = u64::from(whole == w.id || whole == w.slug);
    let exact = !query_words.is_empty() && w.phrases.iter().any(|p| p == query_words);
    let count = |field: &[String]| terms.iter().filter(|t| matches(t, field)).count() as u64;
    let name = 10 * u64::from(exact) + count(&w.name);
    [id, name, count(&w.tags), count(&w.description)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(id: &str, name: &str, tags: &[&str], description: &str) -> serde_json::Value {
        serde_json::json!({
            "id": id, "name": name, "title": name, "description": description,
            "category": "Dev", "categorySlug": id.split('/').next().unwrap(),
            "tags": tags, "sha": "a".repeat(64),
        })
    }

    fn feed(skills: Vec<serde_json::Value>) -> Feed {
        let json = serde_json::json!({"schema": SCHEMA, "skills": skills});
        Feed::parse(json.to_string().as_bytes()).unwrap().0
    }

    #[test]
    fn skills_feed_drops_entries_it_cannot_use() {
        let json = serde_json::json!({
            "schema": SCHEMA,
            "categories": [{"slug": "dev", "name": "Dev", "count": 99}, {"slug": "../x", "name": "x"}],
            "skills": [
                skill("dev/good", "good", &[], "fine\u{200b} text"),
                skill("../etc", "x", &[], ""),
                skill("flat", "x", &[], ""),
                skill("dev/a\u{202e}b", "x", &[], ""),
                {"id": "dev/badsha", "sha": "XYZ"},
                skill("dev/good", "again", &[], ""),
                skill("ops/other", "other", &[], ""),
            ]
        });
        let (feed, problems) = Feed::parse(json.to_string().as_bytes()).unwrap();
        let ids: Vec<&str> = feed.skills.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["dev/good", "ops/other"]);
        assert_eq!(problems.len(), 5, "{problems:?}");
        assert_eq!(feed.skills[0].description, "fine text");
        let cats: Vec<(&str, usize)> = feed
            .categories
            .iter()
            .map(|c| (c.slug.as_str(), c.count))
            .collect();
        assert_eq!(cats, [("dev", 1), ("ops", 1)]);

        let other = serde_json::json!({"schema": "something@2", "skills": []});
        assert!(matches!(
            Feed::parse(other.to_string().as_bytes()),
            Err(FeedError::Schema { .. })
        ));
        assert!(matches!(Feed::parse(b"{"), Err(FeedError::Json(_))));
    }

    #[test]
    fn skills_feed_lookup_by_id_or_unique_slug() {
        let feed = feed(vec![
            skill("dev/a", "a", &[], ""),
            skill("ops/a", "a", &[], ""),
            skill("ops/b", "b", &[], ""),
        ]);
        let id = |s: &str| SkillId::parse(s).unwrap();
        assert!(matches!(feed.lookup(&id("ops/a")), Lookup::Found(s) if s.id == "ops/a"));
        assert!(matches!(feed.lookup(&id("b")), Lookup::Found(s) if s.id == "ops/b"));
        assert!(matches!(feed.lookup(&id("a")), Lookup::Ambiguous(v) if v.len() == 2));
        assert_eq!(feed.lookup(&id("dev/b")), Lookup::NotFound);
    }

    #[test]
    fn skills_search_ranks_id_then_name_then_tags_then_description() {
        let feed = feed(vec![
            skill("dev/notes", "notes", &[], "mentions testing in passing"),
            skill("dev/tagged", "tagged", &["testing"], "nothing"),
            skill("qa/testing", "testing", &[], "nothing"),
            skill("dev/unit-testing", "unit-testing", &[], "nothing"),
            skill("dev/other", "other", &[], "unrelated"),
            skill("dev/notes2", "notes2", &[], "also testing"),
        ]);
        let ids = |q: &str| -> Vec<String> {
            feed.search(q).iter().map(|h| h.skill.id.clone()).collect()
        };
        // Exact slug first; then the other name match; then tags; then descriptions
        // in feed order.
        assert_eq!(
            ids("testing"),
            [
                "qa/testing",
                "dev/unit-testing",
                "dev/tagged",
                "dev/notes",
                "dev/notes2"
            ]
        );
        assert_eq!(ids("qa/testing")[0], "qa/testing");
        assert_eq!(ids("unit testing")[0], "dev/unit-testing");
        assert_eq!(ids("test")[..2], ["qa/testing", "dev/unit-testing"]);
        assert!(ids("zzz").is_empty());
        assert!(ids("   ").is_empty());
        let hits = feed.search("testing");
        assert!(hits[0].score > hits[1].score && hits[1].score > hits[2].score);
    }
}
