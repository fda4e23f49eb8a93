//! False triggers on everyday messages (issue 29): the messages of
//! `tests/fixtures/routing/needs-no-skill.jsonl` (small talk, questions about what the
//! person told the assistant, planning, general knowledge, advice, rewording, feelings:
//! written for this project, none needs a skill) routed over two catalogs, the 199
//! MetaTool tools as section a builds them and the skills of the registry mirror
//! (`tests/fixtures/registry-mirror`, read as discovery reads a skill directory). Any
//! invocation is a false trigger. Reported overall, on the even rows (for calibrating)
//! and the odd rows (held out), per kind, with the skills invoked most and the
//! messages invoked with the highest confidence; then the messages that invoke a skill
//! over both catalogs, whatever skills are installed. The awareness negatives of
//! MetaTool stay in section b.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use engram::routing::{RoutableSkill, Router, Routing};
use engram::skills::format::paragraph::body_start;
use engram::skills::load_skill_dir;
use serde::Deserialize;

use super::common::{Table, skill_dirs};
use super::routing_rule::wilson;
use super::{Data, percent, skills};

/// The skills and messages listed per catalog.
const LISTED: usize = 10;
/// Messages are cut to this many characters in the table.
const SHOWN_CHARS: usize = 48;

#[derive(Deserialize)]
pub struct Message {
    pub text: String,
    kind: String,
}

/// A message that invoked a skill.
struct Fired<'a> {
    text: &'a str,
    slug: String,
    confidence: f32,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

/// The everyday messages and the registry mirror's skills, or `None` (with a line on
/// stderr saying why the section is skipped).
pub fn material() -> Option<(Vec<Message>, Vec<RoutableSkill>)> {
    let path = fixtures().join("routing/needs-no-skill.jsonl");
    let messages = match load(&path) {
        Ok(messages) => messages,
        Err(e) => {
            eprintln!("everyday messages skipped: {}: {e}", path.display());
            return None;
        }
    };
    match registry_skills(&fixtures().join("registry-mirror/categories")) {
        Ok(registry) => Some((messages, registry)),
        Err(e) => {
            eprintln!("everyday messages skipped: {e}");
            None
        }
    }
}

/// The section with the static table's router.
pub fn report(data: &Data, table: &mut Table) {
    let Some((messages, registry)) = material() else {
        return;
    };
    let metatool = Router::new(skills(&data.tools));
    let registry_router = Router::new(registry.clone());
    both_catalogs(
        "e",
        [
            (data.tools.len(), &|m: &str| metatool.route(m)),
            (registry.len(), &|m: &str| registry_router.route(m)),
        ],
        &messages,
        table,
    );
}

/// Both catalogs' rows (MetaTool's, then the registry's: how many skills each has
/// and how it routes a message), then the messages that fire over both.
pub fn both_catalogs(
    section: &str,
    catalogs: [(usize, &Route); 2],
    messages: &[Message],
    table: &mut Table,
) {
    let mut fired = Vec::new();
    for ((size, route), name) in catalogs
        .into_iter()
        .zip(["MetaTool tools", "registry-mirror skills"])
    {
        let catalog = format!("the {size} {name}");
        eprintln!("{section}. everyday messages over {catalog}...");
        fired.push(catalog_rows(section, &catalog, route, messages, table));
    }
    if let [metatool, registry] = fired.as_slice() {
        in_both(section, metatool, registry, messages.len(), table);
    }
}

fn load(path: &Path) -> Result<Vec<Message>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    text.lines()
        .enumerate()
        .map(|(i, line)| serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

/// Every SKILL.md of the mirror, loaded as discovery loads a skill directory, routed
/// by its frontmatter as the daemon routes an installed skill.
fn registry_skills(root: &Path) -> Result<Vec<RoutableSkill>, String> {
    let dirs = skill_dirs(root);
    if dirs.is_empty() {
        return Err(format!("no SKILL.md under {}", root.display()));
    }
    dirs.iter()
        .map(|dir| {
            load_skill_dir(dir)
                .map(|s| RoutableSkill {
                    body_start: body_start(&s.body),
                    ..RoutableSkill::from_frontmatter(s.slug.as_str(), &s.frontmatter, true)
                })
                .map_err(|e| format!("{}: {e}", dir.display()))
        })
        .collect()
}

/// How a catalog routes a message.
pub type Route<'a> = dyn Fn(&str) -> Routing + 'a;

/// Invoked out of routed, as `[k, n]`.
type Count = [usize; 2];

/// The catalog's rows; the messages that invoked a skill, highest confidence first.
fn catalog_rows<'a>(
    section: &str,
    catalog: &str,
    route: &Route,
    messages: &'a [Message],
    table: &mut Table,
) -> Vec<Fired<'a>> {
    let mut all: Count = [0; 2];
    // [even rows, odd rows]
    let mut halves: [Count; 2] = [[0; 2]; 2];
    let mut by_kind: BTreeMap<&str, Count> = BTreeMap::new();
    let mut by_skill: BTreeMap<String, usize> = BTreeMap::new();
    let mut fired = Vec::new();
    for (row, message) in messages.iter().enumerate() {
        let invoked = route(&message.text).invoked;
        let k = usize::from(invoked.is_some());
        for count in [
            &mut all,
            &mut halves[row % 2],
            by_kind.entry(&message.kind).or_default(),
        ] {
            count[0] += k;
            count[1] += 1;
        }
        if let Some(invocation) = invoked {
            *by_skill.entry(invocation.slug.clone()).or_default() += 1;
            fired.push(Fired {
                text: &message.text,
                confidence: invocation.confidence.unwrap_or(f32::INFINITY),
                slug: invocation.slug,
            });
        }
    }

    table.section(&format!(
        "{section}. Everyday messages needing no skill (tests/fixtures/routing/needs-no-skill.jsonl) \
         over {catalog}"
    ));
    for (label, count) in [
        ("false triggers, all", all),
        ("false triggers, calibration half (even rows)", halves[0]),
        ("false triggers, held-out half (odd rows)", halves[1]),
    ] {
        let (low, high) = wilson(count[0], count[1]);
        table.row(
            &format!("{label} ({} messages)", count[1]),
            &share(count),
            &format!("95% CI {}-{}", percent(low), percent(high)),
            "",
        );
    }
    table.row(
        "false triggers per kind",
        "",
        "",
        &by_kind
            .iter()
            .map(|(kind, count)| format!("{kind} {}/{}", count[0], count[1]))
            .collect::<Vec<_>>()
            .join(", "),
    );
    let mut skills: Vec<(String, usize)> = by_skill.into_iter().collect();
    skills.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    table.row(
        "skills invoked most (messages)",
        "",
        "",
        &skills
            .iter()
            .take(LISTED)
            .map(|(slug, n)| format!("{slug} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    fired.sort_by(|a, b| {
        b.confidence
            .total_cmp(&a.confidence)
            .then(a.text.cmp(b.text))
    });
    for f in fired.iter().take(LISTED) {
        table.row(
            &format!("\"{}\"", cut(f.text)),
            &f.slug,
            &format!("confidence {:.2}", f.confidence),
            "",
        );
    }
    fired
}

/// The messages that invoke a skill over both catalogs, the surest (highest lower
/// confidence of the two) first.
fn in_both(section: &str, metatool: &[Fired], registry: &[Fired], total: usize, table: &mut Table) {
    let registry: HashMap<&str, &Fired> = registry.iter().map(|f| (f.text, f)).collect();
    let mut both: Vec<(&Fired, &Fired)> = metatool
        .iter()
        .filter_map(|m| registry.get(m.text).map(|r| (m, *r)))
        .collect();
    both.sort_by(|a, b| {
        let lower = |(m, r): &(&Fired, &Fired)| m.confidence.min(r.confidence);
        lower(b).total_cmp(&lower(a)).then(a.0.text.cmp(b.0.text))
    });
    table.section(&format!(
        "{section}. Everyday messages invoking a skill over both catalogs: {} of {total}",
        both.len()
    ));
    for (m, r) in both.iter().take(LISTED) {
        table.row(
            &format!("\"{}\"", cut(m.text)),
            &format!("{} / {}", m.slug, r.slug),
            &format!("confidence {:.2} / {:.2}", m.confidence, r.confidence),
            "MetaTool / registry mirror",
        );
    }
}

fn share(count: Count) -> String {
    format!(
        "{} ({}/{})",
        percent(count[0] as f64 / count[1].max(1) as f64),
        count[0],
        count[1]
    )
}

fn cut(text: &str) -> String {
    if text.chars().count() <= SHOWN_CHARS {
        return text.to_string();
    }
    let mut out: String = text.chars().take(SHOWN_CHARS - 1).collect();
    out.push('…');
    out
}
