//! The messaging-bot channel's `/skills` command, independent of any transport: the
//! command text and the caller's [`Role`] (`super::roles`) in, a [`BotReply`] (plain
//! text plus structured items) out. A transport (Telegram, Slack, ...) only maps its
//! user to a role with [`Role::of`] and renders the reply.
//!
//! | Command | Who |
//! |---|---|
//! | `/skills` (or `/skills list`) | installed skills and counts: every approved user |
//! | `/skills search <query>` | the top 5 registry matches: every approved user |
//! | `/skills view <id>` | title, version, description: every approved user |
//! | `/skills install <id>` | admins only |
//! | `/skills remove <id>` | admins only |
//!
//! Users that are neither admins nor approved get a refusal and nothing else. Every
//! registry skill in a reply carries its page, `{registry_url}/skills/<id>`; installed
//! skills that did not come from a registry (built-ins, manual, URL or file installs)
//! have no page, and their `url` is `None`.
//!
//! The registry-backed subcommands go through [`RegistryView`], the narrow view of the
//! registry client this handler needs; `registry_view.rs` implements it over the real
//! client.
//! Library calls are short file operations; they run on the blocking pool.

use std::future::Future;

use serde::Serialize;

use super::roles::Role;

use crate::skills::format::id::SkillId;
use crate::skills::format::text::is_hidden;
use crate::skills::library::Library;
use crate::skills::library::catalog::summarize;
use crate::skills::library::error::LibraryError;
use crate::skills::library::index::{IndexEntry, SourceKind};
use crate::skills::library::install::{InstallOutcome, InstallStatus};

/// Registry matches `/skills search` shows.
pub const SEARCH_RESULTS: usize = 5;
/// Longest search query accepted, in characters.
const MAX_QUERY_CHARS: usize = 200;

/// One registry skill as the bot shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegistrySkill {
    /// `category/slug`.
    pub id: String,
    pub title: String,
    pub version: Option<String>,
    pub description: String,
}

/// A registry operation that failed, with the client's stable code and message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegistryFailure {
    /// `not-in-registry` for an unknown id; the client's other codes otherwise.
    pub code: String,
    pub message: String,
}

/// What the `/skills` handler needs of the registry client. The daemon's adapter maps
/// each method onto the real client (feed search, feed lookup, install into the
/// library) and its errors onto [`RegistryFailure`] (`code()`, `to_string()`).
pub trait RegistryView: Sync {
    /// `{registry_url}`, the base of every skill page `{registry_url}/skills/<id>`.
    fn registry_url(&self) -> String;

    /// Best matches first; at most `limit`.
    fn search(
        &self,
        query: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<RegistrySkill>, RegistryFailure>> + Send;

    /// `id` is `category/slug`, or a slug only one category has.
    fn view(&self, id: &str)
    -> impl Future<Output = Result<RegistrySkill, RegistryFailure>> + Send;

    /// Downloads, verifies and installs `id` into `library` (no force: the same
    /// version again is `already-installed`). Only a channel's admin installs, and
    /// the admin is the person: the tools the skill asks for count as confirmed, and
    /// the reply names them.
    fn install(
        &self,
        library: &Library,
        id: &str,
    ) -> impl Future<Output = Result<InstallOutcome, RegistryFailure>> + Send;
}

/// How the command went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplyStatus {
    Ok,
    /// Not a command the handler knows, or a missing or extra argument: the text is the
    /// usage the caller may use.
    Usage,
    /// The caller's role does not allow it.
    Denied,
    NotFound,
    /// The registry or the library failed; the text says why.
    Failed,
}

/// The answer, for any transport: `text` is complete on its own (plain text, one item
/// per line); `items` carry the same skills as data for transports that render
/// buttons, cards or links.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BotReply {
    pub status: ReplyStatus,
    pub text: String,
    pub items: Vec<ReplyItem>,
}

/// A skill in a reply.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplyItem {
    /// `slug`, or `category/slug` for registry skills.
    pub id: String,
    pub title: String,
    pub version: Option<String>,
    /// One line, at most 160 characters.
    pub description: Option<String>,
    /// For installed skills: whether routing uses it.
    pub active: Option<bool>,
    /// What an install or removal did (`installed`, `updated`, `reinstalled`,
    /// `already-installed`, `removed`).
    pub status: Option<String>,
    /// `{registry_url}/skills/<id>` for registry skills.
    pub url: Option<String>,
}

/// Answers one `/skills ...` command from a caller with `role`.
pub async fn handle_skills_command<R: RegistryView>(
    text: &str,
    role: Role,
    library: &Library,
    registry: &R,
) -> BotReply {
    if role == Role::Unknown {
        return reply(
            ReplyStatus::Denied,
            "You are not on this bot's list of approved users; ask its admin to add you.".into(),
        );
    }
    let mut words = text.split_whitespace();
    let is_skills = words.next().is_some_and(|command| {
        let name = command.split('@').next().unwrap_or_default();
        name.eq_ignore_ascii_case("/skills")
    });
    if !is_skills {
        return usage(role);
    }
    let sub = words.next().map(str::to_ascii_lowercase);
    let args: Vec<&str> = words.collect();
    match (sub.as_deref(), args.as_slice()) {
        (None | Some("list"), []) => list(library, registry).await,
        (Some("search"), [_, ..]) => search(&args.join(" "), registry).await,
        (Some("view"), [id]) => view(id, library, registry).await,
        (Some("install" | "remove"), [_]) if role != Role::Admin => reply(
            ReplyStatus::Denied,
            "Only admins can install or remove skills.".into(),
        ),
        (Some("install"), [id]) => install(id, library, registry).await,
        (Some("remove"), [id]) => remove(id, library, registry).await,
        _ => usage(role),
    }
}

fn reply(status: ReplyStatus, text: String) -> BotReply {
    BotReply {
        status,
        text,
        items: Vec::new(),
    }
}

fn usage(role: Role) -> BotReply {
    let mut text = String::from(
        "Usage:\n/skills - the skills on this host\n/skills search <query> - find skills in the registry\n/skills view <id> - a registry skill's details",
    );
    if role == Role::Admin {
        text.push_str("\n/skills install <id> - install from the registry\n/skills remove <id> - remove an installed skill");
    }
    reply(ReplyStatus::Usage, text)
}

/// Runs library work on the blocking pool.
async fn library_call<T: Send + 'static>(
    library: &Library,
    work: impl FnOnce(&Library) -> Result<T, LibraryError> + Send + 'static,
) -> Result<T, LibraryError> {
    let library = library.clone();
    let root = library.root().to_path_buf();
    crate::background::run(move || work(&library))
        .await
        .unwrap_or_else(|e| {
            Err(LibraryError::Io {
                path: root,
                source: std::io::Error::other(e.to_string()),
            })
        })
}

fn failed(what: &str, error: &dyn std::fmt::Display) -> BotReply {
    tracing::warn!("/skills {what}: {error}");
    reply(ReplyStatus::Failed, format!("Could not {what}: {error}"))
}

/// Registry or frontmatter text made fit for a chat line: hidden characters removed,
/// whitespace collapsed, at most 160 characters.
fn one_line(text: &str) -> String {
    let visible: String = text
        .chars()
        .filter(|c| !is_hidden(*c) || c.is_whitespace())
        .collect();
    summarize(&visible)
}

/// The registry page of an installed skill, when it came from a registry.
fn installed_url<R: RegistryView>(entry: &IndexEntry, registry: &R) -> Option<String> {
    if entry.source.kind != SourceKind::Registry {
        return None;
    }
    let base = entry
        .source
        .registry
        .clone()
        .unwrap_or_else(|| registry.registry_url());
    Some(page_url(&base, &entry.id))
}

fn page_url(base: &str, id: &str) -> String {
    format!("{}/skills/{id}", base.trim_end_matches('/'))
}

fn registry_item<R: RegistryView>(skill: &RegistrySkill, registry: &R) -> ReplyItem {
    ReplyItem {
        id: skill.id.clone(),
        title: one_line(&skill.title),
        version: skill.version.as_deref().map(one_line),
        description: Some(one_line(&skill.description)),
        active: None,
        status: None,
        url: Some(page_url(&registry.registry_url(), &skill.id)),
    }
}

fn version_suffix(version: &Option<String>) -> String {
    version
        .as_deref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default()
}

async fn list<R: RegistryView>(library: &Library, registry: &R) -> BotReply {
    let installed = match library_call(library, |l| l.installed()).await {
        Ok(installed) => installed,
        Err(e) => return failed("list the skills", &e),
    };
    let active = installed.iter().filter(|s| s.entry.active).count();
    let mut text = format!(
        "{} skill{} installed ({active} active, {} inactive)",
        installed.len(),
        if installed.len() == 1 { "" } else { "s" },
        installed.len() - active
    );
    let mut items = Vec::new();
    for skill in installed {
        let entry = &skill.entry;
        let item = ReplyItem {
            id: entry.id.clone(),
            title: one_line(&entry.name),
            version: entry.version.as_deref().map(one_line),
            description: skill.catalog.as_ref().map(|c| one_line(&c.summary)),
            active: Some(entry.active),
            status: None,
            url: installed_url(entry, registry),
        };
        text.push_str(&format!(
            "\n- {}{}{}",
            item.id,
            version_suffix(&item.version),
            if entry.active { "" } else { " (inactive)" }
        ));
        if let Some(description) = &item.description {
            text.push_str(&format!(": {description}"));
        }
        if let Some(url) = &item.url {
            text.push_str(&format!(" {url}"));
        }
        items.push(item);
    }
    BotReply {
        status: ReplyStatus::Ok,
        text,
        items,
    }
}

async fn search<R: RegistryView>(query: &str, registry: &R) -> BotReply {
    if query.chars().count() > MAX_QUERY_CHARS {
        return reply(
            ReplyStatus::Usage,
            format!("The search text is longer than {MAX_QUERY_CHARS} characters."),
        );
    }
    let mut found = match registry.search(query, SEARCH_RESULTS).await {
        Ok(found) => found,
        Err(e) => return failed("search the registry", &e.message),
    };
    found.truncate(SEARCH_RESULTS);
    let shown = one_line(query);
    if found.is_empty() {
        return reply(
            ReplyStatus::Ok,
            format!("No registry skill matches \"{shown}\"."),
        );
    }
    let mut text = format!("Top {} registry matches for \"{shown}\":", found.len());
    let items: Vec<ReplyItem> = found.iter().map(|s| registry_item(s, registry)).collect();
    for (n, item) in items.iter().enumerate() {
        text.push_str(&format!(
            "\n{}. {} ({}){}: {}\n   {}",
            n + 1,
            item.title,
            item.id,
            version_suffix(&item.version),
            item.description.as_deref().unwrap_or_default(),
            item.url.as_deref().unwrap_or_default()
        ));
    }
    BotReply {
        status: ReplyStatus::Ok,
        text,
        items,
    }
}

async fn view<R: RegistryView>(id: &str, library: &Library, registry: &R) -> BotReply {
    let skill = match registry.view(id).await {
        Ok(skill) => skill,
        Err(e) if e.code == "not-in-registry" => {
            return reply(ReplyStatus::NotFound, one_line(&e.message));
        }
        Err(e) => return failed("read the registry", &e.message),
    };
    let item = registry_item(&skill, registry);
    let slug = skill.id.rsplit('/').next().unwrap_or_default().to_string();
    let installed = library_call(library, move |l| l.entry(&slug)).await.ok();
    let mut text = format!(
        "{}{}\n{}\n{}",
        item.title,
        version_suffix(&item.version),
        item.description.as_deref().unwrap_or_default(),
        item.url.as_deref().unwrap_or_default()
    );
    if let Some(entry) = installed {
        text.push_str(&format!(
            "\nInstalled here as {}{}{}",
            entry.id,
            version_suffix(&entry.version),
            if entry.active { "" } else { " (inactive)" }
        ));
    }
    BotReply {
        status: ReplyStatus::Ok,
        text,
        items: vec![item],
    }
}

async fn install<R: RegistryView>(id: &str, library: &Library, registry: &R) -> BotReply {
    let outcome = match registry.install(library, id).await {
        Ok(outcome) => outcome,
        Err(e) if e.code == "not-in-registry" => {
            return reply(ReplyStatus::NotFound, one_line(&e.message));
        }
        Err(e) => return failed(&format!("install {}", one_line(id)), &e.message),
    };
    let status = match outcome.status {
        InstallStatus::Installed => "installed",
        InstallStatus::Updated => "updated",
        InstallStatus::Reinstalled => "reinstalled",
        InstallStatus::AlreadyInstalled => "already-installed",
    };
    let item = ReplyItem {
        url: Some(page_url(&registry.registry_url(), &outcome.id)),
        id: outcome.id,
        title: one_line(&outcome.name),
        version: outcome.version.as_deref().map(one_line),
        description: None,
        active: None,
        status: Some(status.to_string()),
    };
    let what = match outcome.status {
        InstallStatus::AlreadyInstalled => "is already installed (same version); nothing changed",
        InstallStatus::Updated => "was updated",
        InstallStatus::Reinstalled => "was reinstalled",
        InstallStatus::Installed => "was installed",
    };
    let tools = if outcome.allowed_tools.is_empty() {
        String::new()
    } else {
        format!(
            "\nIt may use these tools whenever it is invoked: {}",
            one_line(&outcome.allowed_tools.join(", "))
        )
    };
    let text = format!(
        "{}{} {what}.{tools}\n{}",
        item.id,
        version_suffix(&item.version),
        item.url.as_deref().unwrap_or_default()
    );
    BotReply {
        status: ReplyStatus::Ok,
        text,
        items: vec![item],
    }
}

async fn remove<R: RegistryView>(id: &str, library: &Library, registry: &R) -> BotReply {
    let shown = one_line(id);
    let Ok(skill_id) = SkillId::parse(id) else {
        return reply(
            ReplyStatus::NotFound,
            format!("\"{shown}\" is not a skill id (`slug` or `category/slug`)."),
        );
    };
    let wanted = id.to_string();
    let slug = skill_id.slug().to_string();
    let removed = library_call(library, move |l| {
        let entry = l.entry(&slug)?;
        // `category/slug` must name the installed one, not merely share its slug.
        if wanted.contains('/') && entry.id != wanted {
            return Err(LibraryError::NotFound(wanted));
        }
        l.remove(&slug)
    })
    .await;
    let entry = match removed {
        Ok(entry) => entry,
        Err(LibraryError::NotFound(_)) => {
            return reply(
                ReplyStatus::NotFound,
                format!("No installed skill \"{shown}\"."),
            );
        }
        Err(e) => return failed(&format!("remove {shown}"), &e),
    };
    let item = ReplyItem {
        url: installed_url(&entry, registry),
        id: entry.id,
        title: one_line(&entry.name),
        version: entry.version.as_deref().map(one_line),
        description: None,
        active: None,
        status: Some("removed".into()),
    };
    let mut text = format!("Removed {}{}.", item.id, version_suffix(&item.version));
    if let Some(url) = &item.url {
        text.push_str(&format!("\n{url}"));
    }
    BotReply {
        status: ReplyStatus::Ok,
        text,
        items: vec![item],
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::skills::library::install::ToolConsent;
    use crate::skills::{SkillPackage, Source, seed_builtins};

    /// A test double for the registry client. It stands in for the real client
    /// (`skills/registry.rs`), which is tested separately against a real local
    /// registry server; here it only lets the handler's own logic (roles, parsing,
    /// replies, URLs) be checked without a network. Its install goes into the real
    /// library, as the real client's does.
    struct FakeRegistry {
        skills: Vec<RegistrySkill>,
        installs: Mutex<Vec<String>>,
    }

    const REGISTRY: &str = "https://registry.example";

    impl FakeRegistry {
        fn new() -> FakeRegistry {
            let skill = |id: &str, title: &str, description: &str| RegistrySkill {
                id: id.into(),
                title: title.into(),
                version: Some("1.2.0".into()),
                description: description.into(),
            };
            FakeRegistry {
                skills: vec![
                    skill(
                        "development/clean-code",
                        "Clean Code",
                        "Write readable code.",
                    ),
                    skill(
                        "development/code-review",
                        "Code Review",
                        "Review code\nthoroughly.",
                    ),
                    skill(
                        "writing/copy-edit",
                        "Copy Edit",
                        "Edit code comments and prose.",
                    ),
                    skill("ops/code-deploy", "Code Deploy", "Ship code."),
                    skill("ops/code-audit", "Code Audit", "Audit code \u{202e}safely."),
                    skill("ops/code-golf", "Code Golf", "Short code."),
                    skill("ops/code-owners", "Code Owners", "Who owns code."),
                ],
                installs: Mutex::new(Vec::new()),
            }
        }

        fn find(&self, id: &str) -> Result<&RegistrySkill, RegistryFailure> {
            self.skills
                .iter()
                .find(|s| s.id == id || s.id.ends_with(&format!("/{id}")))
                .ok_or_else(|| RegistryFailure {
                    code: "not-in-registry".into(),
                    message: format!("no skill `{id}` in the registry {REGISTRY}"),
                })
        }
    }

    impl RegistryView for FakeRegistry {
        fn registry_url(&self) -> String {
            REGISTRY.to_string()
        }

        async fn search(
            &self,
            query: &str,
            limit: usize,
        ) -> Result<Vec<RegistrySkill>, RegistryFailure> {
            if query == "offline" {
                return Err(RegistryFailure {
                    code: "registry-unreachable".into(),
                    message: "the registry cannot be reached and no feed is cached".into(),
                });
            }
            // Deliberately more than asked for: the handler must cut to 5 itself.
            let _ = limit;
            Ok(self
                .skills
                .iter()
                .filter(|s| s.description.to_lowercase().contains(&query.to_lowercase()))
                .cloned()
                .collect())
        }

        async fn view(&self, id: &str) -> Result<RegistrySkill, RegistryFailure> {
            self.find(id).cloned()
        }

        async fn install(
            &self,
            library: &Library,
            id: &str,
        ) -> Result<InstallOutcome, RegistryFailure> {
            let skill = self.find(id)?.clone();
            self.installs.lock().unwrap().push(skill.id.clone());
            let md = format!(
                "---\nname: {}\ndescription: {}\nversion: 1.2.0\n---\nbody\n",
                skill.id.rsplit('/').next().unwrap(),
                skill.description.replace('\n', " ")
            );
            let package = SkillPackage::new(
                Some(SkillId::parse(&skill.id).unwrap()),
                md.into_bytes(),
                vec![],
            )
            .unwrap();
            let source = Source {
                kind: SourceKind::Registry,
                url: None,
                registry: Some(REGISTRY.into()),
            };
            library
                .install(&package, source, false, ToolConsent::Confirmed)
                .map_err(|e| RegistryFailure {
                    code: e.code().into(),
                    message: e.to_string(),
                })
        }
    }

    fn setup() -> (tempfile::TempDir, Library, FakeRegistry) {
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(dir.path().join("skills")).unwrap();
        seed_builtins(&library).unwrap();
        (dir, library, FakeRegistry::new())
    }

    #[tokio::test]
    async fn skills_bot_lists_installed_skills_with_counts() {
        let (_dir, library, registry) = setup();
        library.deactivate("screenshot").unwrap();
        for text in ["/skills", "/skills list", "  /Skills@EngramBot  "] {
            let r = handle_skills_command(text, Role::Approved, &library, &registry).await;
            assert_eq!(r.status, ReplyStatus::Ok, "{text}: {}", r.text);
            assert!(
                r.text
                    .starts_with("4 skills installed (3 active, 1 inactive)"),
                "{}",
                r.text
            );
            assert!(
                r.text.contains("- screenshot 1.0.0 (inactive): "),
                "{}",
                r.text
            );
            let ids: Vec<&str> = r.items.iter().map(|i| i.id.as_str()).collect();
            assert_eq!(
                ids,
                ["screenshot", "tweet-notifier", "web-search", "word-stats"]
            );
            assert_eq!(r.items[0].active, Some(false));
            // Built-ins have no registry page.
            assert!(r.items.iter().all(|i| i.url.is_none()));
        }
        // A registry skill carries its page.
        handle_skills_command(
            "/skills install clean-code",
            Role::Admin,
            &library,
            &registry,
        )
        .await;
        let r = handle_skills_command("/skills", Role::Approved, &library, &registry).await;
        let clean = r
            .items
            .iter()
            .find(|i| i.id == "development/clean-code")
            .unwrap();
        assert_eq!(
            clean.url.as_deref(),
            Some("https://registry.example/skills/development/clean-code")
        );
        assert!(
            r.text
                .contains("https://registry.example/skills/development/clean-code")
        );
    }

    #[tokio::test]
    async fn skills_bot_searches_and_views_the_registry() {
        let (_dir, library, registry) = setup();
        let r =
            handle_skills_command("/skills search code", Role::Approved, &library, &registry).await;
        assert_eq!(r.status, ReplyStatus::Ok);
        assert_eq!(r.items.len(), SEARCH_RESULTS, "top 5 only");
        assert!(
            r.text.starts_with("Top 5 registry matches for \"code\":"),
            "{}",
            r.text
        );
        for item in &r.items {
            let url = format!("{REGISTRY}/skills/{}", item.id);
            assert_eq!(item.url.as_deref(), Some(url.as_str()));
            assert!(r.text.contains(&url));
        }
        // Registry text reaches the chat on one line, without hidden characters.
        let review = &r.items[1];
        assert_eq!(
            review.description.as_deref(),
            Some("Review code thoroughly.")
        );
        let audit = r.items.iter().find(|i| i.id == "ops/code-audit").unwrap();
        assert_eq!(audit.description.as_deref(), Some("Audit code safely."));

        let r = handle_skills_command(
            "/skills search nothing like it",
            Role::Approved,
            &library,
            &registry,
        )
        .await;
        assert_eq!((r.status, r.items.len()), (ReplyStatus::Ok, 0));
        assert_eq!(r.text, "No registry skill matches \"nothing like it\".");
        let r = handle_skills_command(
            "/skills search offline",
            Role::Approved,
            &library,
            &registry,
        )
        .await;
        assert_eq!(r.status, ReplyStatus::Failed);
        assert!(r.text.contains("cannot be reached"), "{}", r.text);

        let r = handle_skills_command(
            "/skills view development/clean-code",
            Role::Approved,
            &library,
            &registry,
        )
        .await;
        assert_eq!(r.status, ReplyStatus::Ok);
        assert_eq!(
            r.text,
            "Clean Code 1.2.0\nWrite readable code.\nhttps://registry.example/skills/development/clean-code"
        );
        assert_eq!(r.items[0].version.as_deref(), Some("1.2.0"));
        let r =
            handle_skills_command("/skills view nope", Role::Approved, &library, &registry).await;
        assert_eq!(r.status, ReplyStatus::NotFound);
        assert!(r.text.contains("nope"));
    }

    #[tokio::test]
    async fn skills_bot_install_and_remove_are_for_admins_only() {
        let (_dir, library, registry) = setup();
        for text in ["/skills install clean-code", "/skills remove web-search"] {
            let r = handle_skills_command(text, Role::Approved, &library, &registry).await;
            assert_eq!(r.status, ReplyStatus::Denied, "{text}");
        }
        assert!(registry.installs.lock().unwrap().is_empty());
        assert!(library.entry("web-search").is_ok());

        let r = handle_skills_command(
            "/skills install clean-code",
            Role::Admin,
            &library,
            &registry,
        )
        .await;
        assert_eq!(r.status, ReplyStatus::Ok, "{}", r.text);
        assert_eq!(
            r.text,
            "development/clean-code 1.2.0 was installed.\nhttps://registry.example/skills/development/clean-code"
        );
        assert_eq!(r.items[0].status.as_deref(), Some("installed"));
        assert!(library.entry("clean-code").unwrap().active);
        let r = handle_skills_command(
            "/skills install clean-code",
            Role::Admin,
            &library,
            &registry,
        )
        .await;
        assert_eq!(r.items[0].status.as_deref(), Some("already-installed"));
        let r =
            handle_skills_command("/skills install nope", Role::Admin, &library, &registry).await;
        assert_eq!(r.status, ReplyStatus::NotFound);

        // View says it is installed now.
        let r = handle_skills_command(
            "/skills view clean-code",
            Role::Approved,
            &library,
            &registry,
        )
        .await;
        assert!(
            r.text
                .ends_with("Installed here as development/clean-code 1.2.0"),
            "{}",
            r.text
        );

        // Remove by slug or by full id; a wrong category does not match.
        let r = handle_skills_command(
            "/skills remove other/clean-code",
            Role::Admin,
            &library,
            &registry,
        )
        .await;
        assert_eq!(r.status, ReplyStatus::NotFound);
        assert!(library.entry("clean-code").is_ok());
        let r = handle_skills_command(
            "/skills remove development/clean-code",
            Role::Admin,
            &library,
            &registry,
        )
        .await;
        assert_eq!(r.status, ReplyStatus::Ok, "{}", r.text);
        assert_eq!(
            r.text,
            "Removed development/clean-code 1.2.0.\nhttps://registry.example/skills/development/clean-code"
        );
        assert!(library.entry("clean-code").is_err());
        let r = handle_skills_command(
            "/skills remove web-search",
            Role::Admin,
            &library,
            &registry,
        )
        .await;
        assert_eq!(r.text, "Removed web-search 1.0.0.");
        assert_eq!(r.items[0].url, None);
        for bad in ["../etc", "web-search/..", "Навык", "nope"] {
            let r = handle_skills_command(
                &format!("/skills remove {bad}"),
                Role::Admin,
                &library,
                &registry,
            )
            .await;
            assert_eq!(r.status, ReplyStatus::NotFound, "{bad}");
        }
        assert_eq!(library.list().unwrap().skills.len(), 3);
    }

    #[tokio::test]
    async fn skills_bot_refuses_strangers_and_explains_usage() {
        let (_dir, library, registry) = setup();
        for text in [
            "/skills",
            "/skills search code",
            "/skills install clean-code",
        ] {
            let r = handle_skills_command(text, Role::Unknown, &library, &registry).await;
            assert_eq!(r.status, ReplyStatus::Denied, "{text}");
            assert!(r.items.is_empty());
            assert!(!r.text.contains("web-search"));
        }
        assert!(registry.installs.lock().unwrap().is_empty());

        for text in [
            "/skills frobnicate",
            "/skills search",
            "/skills view",
            "/skills view a b",
            "/skills list extra",
            "/memory",
            "",
        ] {
            let r = handle_skills_command(text, Role::Approved, &library, &registry).await;
            assert_eq!(r.status, ReplyStatus::Usage, "{text:?}");
            assert!(r.text.contains("/skills search <query>"));
            assert!(
                !r.text.contains("install"),
                "admin commands shown: {}",
                r.text
            );
        }
        let r = handle_skills_command("/skills help", Role::Admin, &library, &registry).await;
        assert!(r.text.contains("/skills install <id>"));
        let long = format!("/skills search {}", "x".repeat(300));
        let r = handle_skills_command(&long, Role::Approved, &library, &registry).await;
        assert_eq!(r.status, ReplyStatus::Usage);
    }
}
