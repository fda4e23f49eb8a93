//! The skills registry client, protocol `mercury-skills-registry@1`:
//!
//! - `GET {registry}/api/feed.json`: every skill with the sha256 of its SKILL.md body
//!   ([`Feed`]); cached in `{data_dir}/cache/registry/<hash of the URL>/` and used
//!   for [`RegistryClient::ttl`] (`skills.cacheTtlMinutes`, default 60) before it is
//!   fetched again. When the registry cannot be reached, any cached feed is used,
//!   however old, and [`FeedOrigin::notice`] says so for the caller to print.
//! - `GET {registry}/api/skills/<category>/<slug>`: the detail, with the body.
//! - `GET {registry}/api/skills/<category>/<slug>/install`: a tar.gz of
//!   `<id>/SKILL.md` and `<id>/manifest.json` (read by `archive.rs` as hostile input).
//!
//! Installing takes the tarball's SKILL.md and checks the sha256 of its body against
//! the feed before anything else: a mismatch is an error ([`RegistryError::ShaMismatch`])
//! and nothing is written. (When the feed came from the cache, it is fetched once more
//! first: the registry may simply have published a new version since.)
//!
//! The protocol vouches for the body only, so the rest of the tarball is checked
//! against what the registry says elsewhere ([`RegistryClient::verify_whole`]): the
//! frontmatter's `name` must be the feed's, its `allowed-tools` exactly the detail
//! document's `allowedTools` (absent: none), and every file besides SKILL.md must be
//! listed in the detail's `files` with its sha256 (`manifest.json`, which only
//! describes the tarball, is never installed). Anything else is
//! [`RegistryError::Integrity`] (`integrity-mismatch`) and nothing is written: a
//! tampered tarball that keeps the body cannot add tools or scripts.
//!
//! The SKILL.md is then validated like every other and installed through
//! [`Library::install`] with source `registry` and the registry's URL; a skill that asks
//! for tools installs only with the person's confirmation ([`ToolConsent`]).
//!
//! Which registry: `--registry` > `ENGRAM_SKILLS_REGISTRY` > `skills.registry` in
//! config.yaml > [`DEFAULT_REGISTRY`] ([`RegistryUrl::resolve`]). Requests go through
//! `net.rs`; the configured registry's own host may be private (a team's registry on
//! its network), anything a redirect leads to is checked like a URL install.
//!
//! Everything here is async (reqwest); library calls, which are blocking file-system
//! work, run on the blocking pool ([`blocking`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::archive::{self, MAX_TARBALL_BYTES};
use super::error::{RegistryError, blocking};
use super::feed::{Feed, FeedSkill, Lookup, MAX_FEED_BYTES};
use crate::net::{self, NetPolicy};
use crate::skills::format::id::SkillId;
use crate::skills::format::split::split;
use crate::skills::library::Library;
use crate::skills::library::durable::{read_bounded, replace_file};
use crate::skills::library::error::LibraryError;
use crate::skills::library::index::{Source, SourceKind};
use crate::skills::library::install::{InstallOutcome, ToolConsent};
use crate::skills::library::package::SkillPackage;

/// The public community registry.
pub const DEFAULT_REGISTRY: &str = "https://skills.mercuryagent.sh";
/// Overrides `skills.registry` in config.yaml; `--registry` overrides both.
pub const REGISTRY_ENV: &str = "ENGRAM_SKILLS_REGISTRY";
/// How long a fetched feed is used before it is fetched again.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(60 * 60);
/// The deadline of one registry request (feed, detail or tarball).
pub const REGISTRY_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_DETAIL_BYTES: usize = 4 * 1024 * 1024;
const CACHE_FEED: &str = "feed.json";
const CACHE_META: &str = "meta.json";

/// Where the registry URL in force came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RegistrySource {
    Flag,
    Env,
    Config,
    Default,
}

/// A registry base URL: http(s), no query or fragment, no trailing slash.
#[derive(Debug, Clone, PartialEq)]
pub struct RegistryUrl {
    base: String,
    origin: String,
    source: RegistrySource,
}

impl RegistryUrl {
    pub fn parse(url: &str, source: RegistrySource) -> Result<RegistryUrl, RegistryError> {
        let bad = |reason: String| RegistryError::BadRegistry {
            url: url.to_string(),
            reason,
        };
        let parsed = net::parse_http_url(url).map_err(|e| bad(e.to_string()))?;
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(bad("a registry URL has no query or fragment".into()));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(bad("credentials in the URL are not supported".into()));
        }
        let origin = net::origin_of(&parsed).ok_or_else(|| bad("no host".into()))?;
        Ok(RegistryUrl {
            base: parsed.as_str().trim_end_matches('/').to_string(),
            origin,
            source,
        })
    }

    /// `--registry` > `ENGRAM_SKILLS_REGISTRY` > `skills.registry` > the default; empty
    /// values count as unset.
    pub fn resolve(
        flag: Option<&str>,
        env: Option<&str>,
        config: Option<&str>,
    ) -> Result<RegistryUrl, RegistryError> {
        let given = |v: Option<&str>| {
            v.map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        if let Some(url) = given(flag) {
            return RegistryUrl::parse(&url, RegistrySource::Flag);
        }
        if let Some(url) = given(env) {
            return RegistryUrl::parse(&url, RegistrySource::Env);
        }
        if let Some(url) = given(config) {
            return RegistryUrl::parse(&url, RegistrySource::Config);
        }
        RegistryUrl::parse(DEFAULT_REGISTRY, RegistrySource::Default)
    }

    pub fn as_str(&self) -> &str {
        &self.base
    }

    pub fn source(&self) -> RegistrySource {
        self.source
    }

    /// The skill's public page: `{registry}/skills/<id>`.
    pub fn skill_page_url(&self, id: &str) -> String {
        format!("{}/skills/{id}", self.base)
    }

    pub fn feed_url(&self) -> String {
        format!("{}/api/feed.json", self.base)
    }

    pub fn detail_url(&self, id: &SkillId) -> String {
        format!("{}/api/skills/{id}", self.base)
    }

    pub fn install_url(&self, id: &SkillId) -> String {
        format!("{}/api/skills/{id}/install", self.base)
    }
}

/// The registry page every skill listing links to: `{registry}/skills/<id>`.
pub fn skill_page_url(registry: &RegistryUrl, id: &str) -> String {
    registry.skill_page_url(id)
}

/// How the feed in hand was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeedFrom {
    /// Fetched just now.
    Network,
    /// The cached copy, younger than the TTL.
    Cache,
    /// The cached copy, used because the registry could not be reached.
    StaleCache,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FeedOrigin {
    pub from: FeedFrom,
    /// When the feed was fetched from the registry (RFC 3339).
    pub fetched_at: String,
    pub age_seconds: u64,
    /// Older than the TTL.
    pub stale: bool,
    /// What the user should be told (a stale feed in use), if anything.
    pub notice: Option<String>,
}

/// A feed and how it was obtained.
#[derive(Debug, Clone)]
pub struct LoadedFeed {
    pub feed: Feed,
    /// Entries the client dropped (see `feed.rs`).
    pub problems: Vec<String>,
    pub origin: FeedOrigin,
}

impl LoadedFeed {
    /// The feed entry for a command-line id (`category/slug`, or a slug that only one
    /// category has).
    pub fn find(&self, id: &str, registry: &RegistryUrl) -> Result<&FeedSkill, RegistryError> {
        let parsed = SkillId::parse(id)?;
        match self.feed.lookup(&parsed) {
            Lookup::Found(skill) => Ok(skill),
            Lookup::NotFound => Err(RegistryError::NotInRegistry {
                id: parsed.to_string(),
                registry: registry.as_str().to_string(),
            }),
            Lookup::Ambiguous(candidates) => Err(RegistryError::Ambiguous {
                slug: parsed.to_string(),
                candidates,
            }),
        }
    }
}

/// What the cache directory holds besides the feed.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CacheMeta {
    registry: String,
    fetched_at: String,
}

/// The registry's detail answer, verified against the feed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Detail {
    pub id: String,
    /// The SKILL.md body (after the frontmatter), as served.
    pub body: String,
    pub sha256: String,
    pub stats: Option<serde_json::Value>,
    /// The tools the registry vouches the skill asks for.
    pub allowed_tools: Vec<String>,
    /// The files besides SKILL.md the registry vouches for.
    pub files: Vec<VouchedFile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawDetail {
    id: String,
    body: String,
    #[serde(default)]
    stats: Option<serde_json::Value>,
    /// The tools the registry vouches the skill asks for (absent: none).
    #[serde(default)]
    allowed_tools: Vec<String>,
    /// The files besides SKILL.md the registry vouches for, with their sha256.
    #[serde(default)]
    files: Vec<VouchedFile>,
}

/// A file of a skill's package as the registry's detail lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VouchedFile {
    /// Relative to the skill's directory (`scripts/x.wasm`).
    pub path: String,
    /// Lowercase hex.
    pub sha256: String,
}

/// A registry skill downloaded and verified, ready to install.
#[derive(Debug, Clone)]
pub struct Downloaded {
    pub skill: FeedSkill,
    pub package: SkillPackage,
    /// The SKILL.md exactly as downloaded.
    pub skill_md: Vec<u8>,
    /// Tarball entries that are not installed.
    pub ignored: Vec<String>,
}

/// What installing one registry skill did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegistryInstall {
    #[serde(flatten)]
    pub outcome: InstallOutcome,
    pub registry: String,
    pub page_url: String,
}

/// The client for one registry.
#[derive(Debug, Clone)]
pub struct RegistryClient {
    pub(super) registry: RegistryUrl,
    cache_dir: PathBuf,
    ttl: Duration,
    pub(super) allow_private: bool,
}

impl RegistryClient {
    /// `cache_root` is `{data_dir}/cache/registry`; each registry gets its own
    /// subdirectory. `allow_private` is `network.allowPrivate` (for redirects away
    /// from the registry, and URL installs during `update`).
    pub fn new(
        registry: RegistryUrl,
        cache_root: &Path,
        ttl: Duration,
        allow_private: bool,
    ) -> RegistryClient {
        let key = hex::encode(&Sha256::digest(registry.as_str().as_bytes())[..8]);
        RegistryClient {
            cache_dir: cache_root.join(key),
            registry,
            ttl,
            allow_private,
        }
    }

    /// The client the configuration asks for: registry URL by `--registry` (`flag`) >
    /// `ENGRAM_SKILLS_REGISTRY` > `skills.registry` > the default, cache under
    /// `{data_dir}/cache/registry`, TTL `skills.cacheTtlMinutes`, and
    /// `network.allowPrivate`. The CLI and the daemon both build theirs here.
    pub fn from_config(
        data: &crate::paths::DataDir,
        config: &crate::config::Config,
        flag: Option<&str>,
    ) -> Result<RegistryClient, RegistryError> {
        let registry = RegistryUrl::resolve(
            flag,
            std::env::var(REGISTRY_ENV).ok().as_deref(),
            config.skills.registry.as_deref(),
        )?;
        let ttl = config
            .skills
            .cache_ttl_minutes
            .map_or(DEFAULT_CACHE_TTL, |m| {
                Duration::from_secs(u64::from(m) * 60)
            });
        Ok(RegistryClient::new(
            registry,
            &data.cache_dir().join("registry"),
            ttl,
            config.network.allow_private.unwrap_or(false),
        ))
    }

    pub fn registry(&self) -> &RegistryUrl {
        &self.registry
    }

    /// `{registry}/skills/<id>`.
    pub fn skill_page_url(&self, id: &str) -> String {
        self.registry.skill_page_url(id)
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    fn policy(&self, max_bytes: usize) -> NetPolicy {
        NetPolicy {
            allow_private: self.allow_private,
            timeout: REGISTRY_TIMEOUT,
            max_bytes,
            trusted_origin: Some(self.registry.origin.clone()),
        }
    }

    /// The cached feed and its age, without any request.
    pub fn cached(&self) -> Option<(LoadedFeed, CacheFile)> {
        let meta_path = self.cache_dir.join(CACHE_META);
        let feed_path = self.cache_dir.join(CACHE_FEED);
        let meta: CacheMeta =
            serde_json::from_slice(&read_bounded(&meta_path, 64 * 1024).ok()?.ok()?).ok()?;
        if meta.registry != self.registry.as_str() {
            return None;
        }
        let bytes = read_bounded(&feed_path, MAX_FEED_BYTES).ok()?.ok()?;
        let (feed, problems) = Feed::parse(&bytes).ok()?;
        let age_seconds = age_of(&meta.fetched_at)?;
        let stale = age_seconds >= self.ttl.as_secs();
        let origin = FeedOrigin {
            from: FeedFrom::Cache,
            fetched_at: meta.fetched_at,
            age_seconds,
            stale,
            notice: None,
        };
        let file = CacheFile {
            path: feed_path,
            bytes: bytes.len(),
        };
        Some((
            LoadedFeed {
                feed,
                problems,
                origin,
            },
            file,
        ))
    }

    /// Fetches and reads the feed without the cache (reachability checks): the number
    /// of skills it lists.
    pub async fn ping(&self) -> Result<usize, RegistryError> {
        let fetched = net::get(&self.registry.feed_url(), &self.policy(MAX_FEED_BYTES)).await?;
        let (feed, _) = Feed::parse(&fetched.bytes).map_err(|source| RegistryError::Feed {
            registry: self.registry.as_str().to_string(),
            source,
        })?;
        Ok(feed.skills.len())
    }

    /// The feed: the cached one while it is younger than the TTL, else fetched (and
    /// cached); the cached one, with a notice, when the registry cannot be reached.
    pub async fn feed(&self) -> Result<LoadedFeed, RegistryError> {
        if let Some((loaded, _)) = self.cached()
            && !loaded.origin.stale
        {
            return Ok(loaded);
        }
        self.refresh().await
    }

    /// The feed fetched now (and cached); the cached one, with a notice, when the
    /// registry cannot be reached.
    pub async fn refresh(&self) -> Result<LoadedFeed, RegistryError> {
        let fetched = net::get(&self.registry.feed_url(), &self.policy(MAX_FEED_BYTES)).await;
        let bytes = match fetched {
            Ok(fetched) => fetched.bytes,
            Err(error) if error.is_unreachable() => {
                return match self.cached() {
                    Some((mut loaded, _)) => {
                        loaded.origin.from = FeedFrom::StaleCache;
                        loaded.origin.notice = Some(format!(
                            "the registry {} cannot be reached ({}); using the feed cached {} ago",
                            self.registry.as_str(),
                            error,
                            human_age(loaded.origin.age_seconds)
                        ));
                        Ok(loaded)
                    }
                    None => Err(RegistryError::Offline {
                        registry: self.registry.as_str().to_string(),
                        source: error,
                    }),
                };
            }
            Err(error) => return Err(error.into()),
        };
        let (feed, problems) = Feed::parse(&bytes).map_err(|source| RegistryError::Feed {
            registry: self.registry.as_str().to_string(),
            source,
        })?;
        let fetched_at = crate::skills::library::index::now();
        // A cache that cannot be written only costs a refetch next time.
        if let Err(e) = self.write_cache(&bytes, &fetched_at) {
            tracing::warn!(dir = %self.cache_dir.display(), "registry feed not cached: {e}");
        }
        Ok(LoadedFeed {
            feed,
            problems,
            origin: FeedOrigin {
                from: FeedFrom::Network,
                fetched_at,
                age_seconds: 0,
                stale: false,
                notice: None,
            },
        })
    }

    fn write_cache(&self, bytes: &[u8], fetched_at: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.cache_dir)?;
        replace_file(&self.cache_dir.join(CACHE_FEED), bytes)?;
        let meta = CacheMeta {
            registry: self.registry.as_str().to_string(),
            fetched_at: fetched_at.to_string(),
        };
        let json = serde_json::to_vec_pretty(&meta).map_err(std::io::Error::other)?;
        replace_file(&self.cache_dir.join(CACHE_META), &json)
    }

    /// The detail of `skill`, its body checked against the feed's sha256.
    pub async fn detail(&self, skill: &FeedSkill) -> Result<Detail, RegistryError> {
        let id = skill.skill_id();
        let fetched = net::get(
            &self.registry.detail_url(&id),
            &self.policy(MAX_DETAIL_BYTES),
        )
        .await?;
        let raw: RawDetail =
            serde_json::from_slice(&fetched.bytes).map_err(|e| RegistryError::Detail {
                id: skill.id.clone(),
                reason: e.to_string(),
            })?;
        if raw.id != skill.id {
            return Err(RegistryError::Detail {
                id: skill.id.clone(),
                reason: format!("it describes {:?}", raw.id),
            });
        }
        let actual = hex::encode(Sha256::digest(raw.body.as_bytes()));
        if actual != skill.sha {
            return Err(self.mismatch(skill, actual));
        }
        Ok(Detail {
            id: raw.id,
            body: raw.body,
            sha256: actual,
            stats: raw.stats,
            allowed_tools: raw.allowed_tools,
            files: raw.files,
        })
    }

    /// Refuses a package whose parts outside the body are not what the registry
    /// vouches for (see the module documentation).
    fn verify_whole(
        &self,
        skill: &FeedSkill,
        detail: &Detail,
        package: &SkillPackage,
    ) -> Result<(), RegistryError> {
        let refuse = |reason: String| RegistryError::Integrity {
            id: skill.id.clone(),
            registry: self.registry.as_str().to_string(),
            reason,
        };
        let frontmatter = &package.skill().frontmatter;
        if frontmatter.name != skill.name {
            return Err(refuse(format!(
                "the SKILL.md is named {:?}, the feed lists {:?}",
                frontmatter.name, skill.name
            )));
        }
        let sorted = |tools: &[String]| {
            let mut tools = tools.to_vec();
            tools.sort();
            tools.dedup();
            tools
        };
        let (asked, vouched) = (
            sorted(&frontmatter.allowed_tools),
            sorted(&detail.allowed_tools),
        );
        if asked != vouched {
            return Err(refuse(format!(
                "the SKILL.md asks for the tools [{}], the registry vouches for [{}]",
                asked.join(", "),
                vouched.join(", ")
            )));
        }
        for (path, bytes) in package.files() {
            let path = path.to_string();
            let actual = hex::encode(Sha256::digest(bytes));
            match detail.files.iter().find(|f| f.path == path) {
                None => {
                    return Err(refuse(format!(
                        "the archive holds {path}, which the registry does not list"
                    )));
                }
                Some(listed) if !listed.sha256.eq_ignore_ascii_case(&actual) => {
                    return Err(refuse(format!(
                        "{path} hashes to {actual}, the registry lists {}",
                        listed.sha256
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    fn mismatch(&self, skill: &FeedSkill, actual: String) -> RegistryError {
        RegistryError::ShaMismatch {
            id: skill.id.clone(),
            registry: self.registry.as_str().to_string(),
            expected: skill.sha.clone(),
            actual,
        }
    }

    /// Downloads `skill`'s tarball, checks its SKILL.md against the feed's sha256,
    /// validates it and checks the rest against the detail ([`Self::verify_whole`]).
    /// Nothing is written. On a mismatch with a feed that came from the cache, the
    /// feed is fetched again (into `loaded`) and checked once more.
    pub async fn download(
        &self,
        loaded: &mut LoadedFeed,
        id: &str,
    ) -> Result<Downloaded, RegistryError> {
        let mut skill = loaded.find(id, &self.registry)?.clone();
        let skill_id = skill.skill_id();
        let fetched = net::get(
            &self.registry.install_url(&skill_id),
            &self.policy(MAX_TARBALL_BYTES),
        )
        .await?;
        let unpacked = archive::unpack(&fetched.bytes, &skill_id).map_err(|source| {
            RegistryError::Archive {
                id: skill.id.clone(),
                source,
            }
        })?;
        let body = split(&unpacked.skill_md).map_err(LibraryError::from)?.body;
        let actual = hex::encode(Sha256::digest(body));
        if actual != skill.sha {
            if loaded.origin.from == FeedFrom::Network {
                return Err(self.mismatch(&skill, actual));
            }
            *loaded = self.refresh().await?;
            skill = loaded.find(id, &self.registry)?.clone();
            if actual != skill.sha {
                return Err(self.mismatch(&skill, actual));
            }
        }
        let package =
            SkillPackage::from_registry(skill_id, unpacked.skill_md.clone(), unpacked.files)?;
        let detail = self.detail(&skill).await?;
        self.verify_whole(&skill, &detail, &package)?;
        Ok(Downloaded {
            skill,
            package,
            skill_md: unpacked.skill_md,
            ignored: unpacked.ignored,
        })
    }

    /// Downloads, verifies and installs `id` with the feed in `loaded` (see
    /// [`RegistryClient::download`]); `consent` says whether the person has accepted
    /// the tools it asks for.
    pub async fn install_with(
        &self,
        loaded: &mut LoadedFeed,
        library: &Library,
        id: &str,
        force: bool,
        consent: ToolConsent,
    ) -> Result<RegistryInstall, RegistryError> {
        let downloaded = self.download(loaded, id).await?;
        let skill_id = downloaded.skill.skill_id();
        let source = Source {
            kind: SourceKind::Registry,
            url: Some(self.registry.install_url(&skill_id)),
            registry: Some(self.registry.as_str().to_string()),
        };
        let library = library.clone();
        let package = downloaded.package;
        let outcome = blocking(move || library.install(&package, source, force, consent)).await?;
        Ok(RegistryInstall {
            page_url: self.registry.skill_page_url(&downloaded.skill.id),
            registry: self.registry.as_str().to_string(),
            outcome,
        })
    }

    /// Installs `id` from the registry (the feed from [`RegistryClient::feed`]).
    pub async fn install(
        &self,
        library: &Library,
        id: &str,
        force: bool,
        consent: ToolConsent,
    ) -> Result<RegistryInstall, RegistryError> {
        let mut loaded = self.feed().await?;
        self.install_with(&mut loaded, library, id, force, consent)
            .await
    }
}

/// The cached feed file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheFile {
    pub path: PathBuf,
    pub bytes: usize,
}

/// Seconds since an RFC 3339 time (0 if it is in the future).
fn age_of(rfc3339: &str) -> Option<u64> {
    let then: jiff::Timestamp = rfc3339.parse().ok()?;
    let seconds = jiff::Timestamp::now().as_second() - then.as_second();
    Some(seconds.max(0) as u64)
}

/// `42s`, `5m`, `3h`, `2d`.
pub fn human_age(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_registry_url_precedence_and_shape() {
        let r = RegistryUrl::resolve(
            Some("http://flag.example/"),
            Some("http://env.example"),
            Some("http://cfg.example"),
        )
        .unwrap();
        assert_eq!(
            (r.as_str(), r.source()),
            ("http://flag.example", RegistrySource::Flag)
        );
        let r = RegistryUrl::resolve(None, Some("http://env.example"), Some("http://cfg.example"))
            .unwrap();
        assert_eq!(r.source(), RegistrySource::Env);
        let r = RegistryUrl::resolve(Some(" "), Some(""), Some("http://cfg.example/reg/")).unwrap();
        assert_eq!(
            (r.as_str(), r.source()),
            ("http://cfg.example/reg", RegistrySource::Config)
        );
        assert_eq!(
            r.skill_page_url("dev/a"),
            "http://cfg.example/reg/skills/dev/a"
        );
        let id = SkillId::parse("dev/a").unwrap();
        assert_eq!(
            r.install_url(&id),
            "http://cfg.example/reg/api/skills/dev/a/install"
        );
        let r = RegistryUrl::resolve(None, None, None).unwrap();
        assert_eq!(
            (r.as_str(), r.source()),
            (DEFAULT_REGISTRY, RegistrySource::Default)
        );
        for bad in ["ftp://x", "http://x/?q=1", "http://u:p@x/", "nope"] {
            let e = RegistryUrl::resolve(Some(bad), None, None).unwrap_err();
            assert_eq!(e.code(), "bad-registry-url", "{bad}");
        }
    }

    #[test]
    fn skills_registry_ages_read_like_people_write_them() {
        assert_eq!(human_age(5), "5s");
        assert_eq!(human_age(125), "2m");
        assert_eq!(human_age(7300), "2h");
        assert_eq!(human_age(200_000), "2d");
        assert_eq!(age_of("2999-01-01T00:00:00Z"), Some(0));
        assert!(age_of("2000-01-01T00:00:00Z").unwrap() > 86_400);
        assert_eq!(age_of("garbage"), None);
    }
}
