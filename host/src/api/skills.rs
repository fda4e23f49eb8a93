//! `/api/skills...`: the installed skills (list, detail, activate, deactivate, delete)
//! and the discovery scan behind the dashboard's refresh button.
//!
//! A skill is addressed by its slug, its identity: `/api/skills/clean-code` is the
//! registry skill `development/clean-code` as well as a flat `clean-code/`, since no
//! two installed skills share a slug. Anything that is not a slug (`..`, an encoded
//! `/`, uppercase, non-ASCII, control characters) is refused with 422 `invalid-id`
//! before the library is touched. The action paths `scan` (and `install`,
//! `install-from-registry`) take precedence over a skill with that slug for GET and
//! DELETE; such a skill is still listed, activated and deactivated by its slug.
//!
//! Handlers do not publish events: the library announces every committed change
//! (`skill.*`), whoever asked for it.

use std::path::Path as FsPath;
use std::sync::Arc;

use axum::Extension;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::StatusCode;
use axum::http::request::Parts;

use super::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::blocking;
use super::error::{ApiError, Problem};
use super::extract::{ApiJson, ApiQuery};
use crate::app::App;
use crate::credentials::{PersonAct, Principal};
use crate::skills::RegistryClient;
use crate::skills::registry::direct;
use crate::skills::{
    InstallOutcome, InstallStatus, InstalledSkill, ScanProblem, Slug, SourceKind, ToolConsent,
    Warning,
};

/// `GET /api/skills`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillList {
    /// Every installed skill, by slug.
    pub items: Vec<SkillItem>,
    /// Always `null`: the list is one page.
    pub next_cursor: Option<String>,
    pub counts: SkillCounts,
    /// Valid skill directories not indexed yet (`slug` or `category/slug`): the next
    /// scan (`POST /api/skills/scan`) adds them as `manual`.
    pub unindexed: Vec<String>,
    /// Directories in the skills folder that are not valid skills, with the rule each
    /// breaks; they are never indexed.
    pub problems: Vec<SkillProblem>,
    /// `_template` when the template directory is there. It is a SKILL.md to copy, not
    /// a skill: never listed in `items`, never routed to.
    pub template: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SkillCounts {
    pub installed: usize,
    pub active: usize,
    pub inactive: usize,
    /// Installed skills whose SKILL.md is gone or no longer validates.
    pub broken: usize,
}

/// An installed skill. The catalog fields (`description`, `summary`, `categories`,
/// `tags`, `intents`, `allowed_tools`) come from its SKILL.md and are empty when
/// `error` says it cannot be read.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillItem {
    /// The identity, and the `{name}` of `/api/skills/{name}`.
    pub slug: String,
    /// `slug` (flat layout) or `category/slug` (registry layout and registry id).
    pub id: String,
    /// Display name (the frontmatter's `name`).
    pub name: String,
    pub description: Option<String>,
    /// The description on one line, at most 160 characters: what the agent's catalog
    /// shows until the skill is invoked.
    pub summary: Option<String>,
    pub version: Option<String>,
    pub category: Option<String>,
    pub categories: Vec<String>,
    pub tags: Vec<String>,
    pub intents: Vec<String>,
    /// The only tools the skill may call when invoked.
    pub allowed_tools: Vec<String>,
    /// Those the person granted it (allowed without asking while it is invoked), for
    /// its SKILL.md as it is now; empty until they confirm them, and again after the
    /// file changes. The others ask.
    pub granted_tools: Vec<String>,
    /// sha256 of the whole SKILL.md: what `POST /api/skills/{name}/confirm-tools`
    /// names to grant the tools of this very file.
    pub file_sha256: Option<String>,
    /// Inactive skills stay installed but are left out of routing.
    pub active: bool,
    /// Left alone by `engram skills update`.
    pub pinned: bool,
    pub source: SkillSource,
    /// The directory, relative to the skills directory.
    pub path: String,
    /// sha256 of the SKILL.md body.
    pub sha256: String,
    #[schema(format = DateTime)]
    pub installed_at: String,
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// Accepted with a remark (`display-name`, `version-not-semver`, ...).
    pub warnings: Vec<Diagnostic>,
    /// Why the skill cannot be used (`skill-md-missing`, or the rule its SKILL.md
    /// breaks); `null` when it can.
    pub error: Option<Diagnostic>,
}

/// Where an installed skill came from.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillSource {
    pub kind: SkillSourceKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
}

/// `seed` (a built-in), `registry`, `url`, `file`, `manual` (found by a scan) or
/// `chat` (SKILL.md text pasted into a chat).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SkillSourceKind {
    Seed,
    Registry,
    Url,
    File,
    Manual,
    Chat,
}

/// A stable code and a human message.
#[derive(Debug, Serialize, ToSchema)]
pub struct Diagnostic {
    pub code: String,
    pub message: String,
}

/// A directory that could not be used as a skill.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillProblem {
    /// Relative to the skills directory.
    pub path: String,
    /// The rule it breaks (`frontmatter-missing`, `name-format`, `slug-taken`, ...).
    pub code: String,
    pub message: String,
}

/// `GET /api/skills/{name}`: the listing's fields and the skill's files.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillDetail {
    #[serde(flatten)]
    pub skill: SkillItem,
    /// Files under `scripts/`, relative to the skill's directory.
    pub scripts: Vec<String>,
    /// Files under `references/`, relative to the skill's directory.
    pub references: Vec<String>,
    /// The Markdown instructions, exactly as in the file: only with `?body=true`.
    pub body: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DetailQuery {
    /// Include the Markdown body (default false).
    pub body: Option<bool>,
}

/// `DELETE /api/skills/{name}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SkillRemoved {
    pub slug: String,
    pub id: String,
    /// Always `removed`.
    pub status: String,
}

/// `POST /api/skills/scan`: what the discovery scan changed and found.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScanResult {
    /// Slugs newly indexed as `manual` (and active).
    pub added: Vec<String>,
    /// Slugs whose entry was refreshed from a SKILL.md changed on disk.
    pub refreshed: Vec<String>,
    /// Entries dropped because their directory is gone.
    pub dropped: Vec<DroppedSkill>,
    /// Directories that are not valid skills, with the rule each breaks.
    pub problems: Vec<SkillProblem>,
    /// Leftovers of interrupted installs and removals, and what was done with each.
    pub recovered: Vec<String>,
    /// Skill directories whose name was not a slug, renamed to the slug made from it.
    pub renamed: Vec<RenamedDir>,
    /// Why the index was rebuilt, when it was unreadable.
    pub index_reset: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RenamedDir {
    /// The directory as it was, relative to the skills directory (`My Skill`).
    pub from: String,
    /// Its path now (`my-skill`).
    pub to: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DroppedSkill {
    pub slug: String,
    pub path: String,
}

/// What an install did, in the shape the install routes answer with (see
/// [`InstallOutcome`]).
#[derive(Debug, Serialize, ToSchema)]
pub struct InstallResult {
    pub status: InstallStatusName,
    pub slug: String,
    /// `slug` or `category/slug`; also the directory relative to the skills directory.
    pub id: String,
    pub name: String,
    pub version: Option<String>,
    pub sha256: String,
    pub warnings: Vec<Diagnostic>,
    /// The previous location, when a forced install moved the skill.
    pub replaced: Option<String>,
    /// The tools the skill may use whenever it is invoked (its `allowed-tools`).
    pub allowed_tools: Vec<String>,
    /// Those the person has granted it (allowed without asking): empty unless
    /// `confirm_tools`, or the update left the SKILL.md as it was.
    pub granted_tools: Vec<String>,
}

/// `installed`, `updated` (version or body changed), `reinstalled` (same, forced) or
/// `already-installed` (same, nothing written).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum InstallStatusName {
    Installed,
    Updated,
    Reinstalled,
    AlreadyInstalled,
}

impl From<InstallOutcome> for InstallResult {
    fn from(outcome: InstallOutcome) -> InstallResult {
        InstallResult {
            status: match outcome.status {
                InstallStatus::Installed => InstallStatusName::Installed,
                InstallStatus::Updated => InstallStatusName::Updated,
                InstallStatus::Reinstalled => InstallStatusName::Reinstalled,
                InstallStatus::AlreadyInstalled => InstallStatusName::AlreadyInstalled,
            },
            slug: outcome.slug,
            id: outcome.id,
            name: outcome.name,
            version: outcome.version,
            sha256: outcome.sha256,
            warnings: outcome.warnings.iter().map(diagnostic).collect(),
            replaced: outcome.replaced,
            allowed_tools: outcome.allowed_tools,
            granted_tools: outcome.granted_tools,
        }
    }
}

/// The `{name}` path parameter, checked to be a slug: 422 `invalid-id` otherwise
/// (also for undecodable percent-encoding), before any handler runs.
pub struct SkillName(pub String);

impl<S: Send + Sync> FromRequestParts<S> for SkillName {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(name) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|rejection| invalid_name(&rejection.body_text()))?;
        match Slug::parse(&name) {
            Ok(slug) => Ok(SkillName(slug.to_string())),
            Err(e) => {
                let shown: String = name.chars().take(80).collect();
                Err(invalid_name(&format!(
                    "{shown:?} is not a skill name ({e}); address a skill by its slug, e.g. `clean-code` for `development/clean-code`"
                )))
            }
        }
    }
}

fn invalid_name(detail: &str) -> ApiError {
    ApiError {
        field: Some("name".into()),
        ..ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "invalid-id",
            detail,
        )
    }
}

#[utoipa::path(get, path = "/api/skills", tag = "skills",
    summary = "Installed skills",
    description = "Every installed skill with its active state, version, category, source, warnings and error; the valid skill directories a scan would add; the directories that are not valid skills; and whether the template is there.",
    responses(
        (status = 200, body = SkillList),
        (status = 409, description = "`index-corrupt`: POST /api/skills/scan rebuilds the index", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list_skills(State(app): State<Arc<App>>) -> Result<Json<SkillList>, ApiError> {
    blocking(move || {
        let library = &app.skills;
        let installed = library.installed()?;
        let disk = library.disk_check()?;
        let root = library.root();
        let items: Vec<SkillItem> = installed.into_iter().map(|s| item(s, root)).collect();
        let active = items.iter().filter(|s| s.active).count();
        Ok(Json(SkillList {
            counts: SkillCounts {
                installed: items.len(),
                active,
                inactive: items.len() - active,
                broken: items.iter().filter(|s| s.error.is_some()).count(),
            },
            items,
            next_cursor: None,
            unindexed: disk.unindexed,
            problems: disk.problems.iter().map(|p| problem(p, root)).collect(),
            template: disk
                .template
                .then(|| crate::skills::library::TEMPLATE_DIR.to_string()),
        }))
    })
    .await
}

#[utoipa::path(get, path = "/api/skills/{name}", tag = "skills",
    summary = "One installed skill",
    description = "The listing's fields, the files under scripts/ and references/, and the Markdown body only with `body=true`.",
    params(("name" = String, Path, description = "The skill's slug", min_length = 1, max_length = 64, pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$"), DetailQuery),
    responses(
        (status = 200, body = SkillDetail),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`invalid-id`: the name is not a slug", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn get_skill(
    State(app): State<Arc<App>>,
    SkillName(slug): SkillName,
    ApiQuery(query): ApiQuery<DetailQuery>,
) -> Result<Json<SkillDetail>, ApiError> {
    let with_body = query.body.unwrap_or(false);
    blocking(move || {
        let detail = app.skills.installed_skill(&slug, with_body)?;
        let (scripts, references) = detail
            .resources
            .into_iter()
            .partition(|path| path.starts_with("scripts/"));
        Ok(Json(SkillDetail {
            skill: item(detail.skill, app.skills.root()),
            scripts,
            references,
            body: detail.body,
        }))
    })
    .await
}

#[utoipa::path(post, path = "/api/skills/{name}/activate", tag = "skills",
    summary = "Activate a skill",
    description = "The skill takes part in routing again. Announced as `skill.activated` (when it was inactive).",
    params(("name" = String, Path, description = "The skill's slug", min_length = 1, max_length = 64, pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$")),
    responses(
        (status = 200, body = SkillItem),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn activate_skill(
    State(app): State<Arc<App>>,
    SkillName(slug): SkillName,
) -> Result<Json<SkillItem>, ApiError> {
    set_active(app, slug, true).await
}

#[utoipa::path(post, path = "/api/skills/{name}/deactivate", tag = "skills",
    summary = "Deactivate a skill",
    description = "The skill stays installed and on disk but is left out of routing. Announced as `skill.deactivated` (when it was active).",
    params(("name" = String, Path, description = "The skill's slug", min_length = 1, max_length = 64, pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$")),
    responses(
        (status = 200, body = SkillItem),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn deactivate_skill(
    State(app): State<Arc<App>>,
    SkillName(slug): SkillName,
) -> Result<Json<SkillItem>, ApiError> {
    set_active(app, slug, false).await
}

async fn set_active(
    app: Arc<App>,
    slug: String,
    active: bool,
) -> Result<Json<SkillItem>, ApiError> {
    blocking(move || {
        if active {
            app.skills.activate(&slug)?;
        } else {
            app.skills.deactivate(&slug)?;
        }
        let detail = app.skills.installed_skill(&slug, false)?;
        Ok(Json(item(detail.skill, app.skills.root())))
    })
    .await
}

/// Body of `POST /api/skills/{name}/confirm-tools`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmTools {
    /// The `file_sha256` of the SKILL.md the person read (the listing shows it): the
    /// tools are granted for that file only.
    #[schema(min_length = 64, max_length = 64, pattern = r"^[0-9a-f]{64}$")]
    pub file_sha256: String,
}

#[utoipa::path(post, path = "/api/skills/{name}/confirm-tools", tag = "skills",
    summary = "Grant a skill its allowed-tools",
    description = "The person grants the skill the tools its SKILL.md asks for (`allowed-tools`), for the file they read, named by its `file_sha256`: while the skill is invoked those tools are allowed without asking (code `skill-grant`). Until then, and again after the SKILL.md changes (an update, an edit), they ask (code `skill-unconfirmed`). Only the person: a dashboard session or the operator token; the agent's token is 403 `person-required`. A SKILL.md that is no longer the one named is 409 `skill-changed` and grants nothing.",
    params(("name" = String, Path, description = "The skill's slug", min_length = 1, max_length = 64, pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$")),
    request_body = ConfirmTools,
    responses(
        (status = 200, body = SkillItem),
        (status = 403, description = "`person-required`: the agent's token cannot grant tools", body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`skill-changed`: the SKILL.md is not the one named", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn confirm_tools(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Principal>,
    SkillName(slug): SkillName,
    ApiJson(body): ApiJson<ConfirmTools>,
) -> Result<Json<SkillItem>, ApiError> {
    principal.require(PersonAct::ConfirmTools)?;
    blocking(move || {
        app.skills.confirm_tools(&slug, &body.file_sha256)?;
        let detail = app.skills.installed_skill(&slug, false)?;
        Ok(Json(item(detail.skill, app.skills.root())))
    })
    .await
}

#[utoipa::path(delete, path = "/api/skills/{name}", tag = "skills",
    summary = "Remove a skill",
    description = "Deletes the skill's directory and its index entry. Announced as `skill.removed`.",
    params(("name" = String, Path, description = "The skill's slug", min_length = 1, max_length = 64, pattern = r"^[a-z0-9]+(-[a-z0-9]+)*$")),
    responses(
        (status = 200, body = SkillRemoved),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn remove_skill(
    State(app): State<Arc<App>>,
    SkillName(slug): SkillName,
) -> Result<Json<SkillRemoved>, ApiError> {
    blocking(move || {
        let entry = app.skills.remove(&slug)?;
        Ok(Json(SkillRemoved {
            slug,
            id: entry.id,
            status: "removed".into(),
        }))
    })
    .await
}

#[utoipa::path(post, path = "/api/skills/scan", tag = "skills",
    summary = "Discovery scan",
    description = "Reconciles the index with the skills directory: directories placed there by hand are added as `manual` (active), entries whose directory is gone are dropped, changed SKILL.md files are refreshed, leftovers of interrupted operations are settled, an unreadable index is rebuilt. Additions are announced as `skill.installed`, drops as `skill.removed`.",
    responses((status = 200, body = ScanResult)))]
pub async fn scan_skills(State(app): State<Arc<App>>) -> Result<Json<ScanResult>, ApiError> {
    blocking(move || {
        let report = app.skills.scan()?;
        let root = app.skills.root();
        Ok(Json(ScanResult {
            added: report.added,
            refreshed: report.refreshed,
            dropped: report
                .dropped
                .into_iter()
                .map(|d| DroppedSkill {
                    slug: d.slug,
                    path: d.path,
                })
                .collect(),
            problems: report.problems.iter().map(|p| problem(p, root)).collect(),
            recovered: report.recovered,
            renamed: report
                .renamed
                .into_iter()
                .map(|r| RenamedDir {
                    from: r.from,
                    to: r.to,
                })
                .collect(),
            index_reset: report.index_reset.map(|r| relative(&r, root)),
        }))
    })
    .await
}

/// Body of `POST /api/skills/install`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallFromUrl {
    /// http(s) address of a raw SKILL.md (at most 1 MiB, fetched within 10 s).
    #[schema(min_length = 8, max_length = 2048, pattern = r"^https?://[^\s/?#]+")]
    pub url: String,
    /// Reinstall when the same version is installed already.
    #[serde(default)]
    pub force: bool,
    /// The person grants the tools the skill asks for (its `allowed-tools`); needs a
    /// dashboard session or the operator token.
    #[serde(default)]
    pub confirm_tools: bool,
}

/// Body of `POST /api/skills/install-from-registry`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstallFromRegistry {
    /// `category/slug` (or a slug that only one category has); each part a slug.
    #[schema(
        min_length = 1,
        max_length = 129,
        pattern = r"^(?=[a-z0-9-]{1,64}(/[a-z0-9-]{1,64})?$)([a-z0-9]+(-[a-z0-9]+)*/)?[a-z0-9]+(-[a-z0-9]+)*$"
    )]
    pub id: String,
    /// Reinstall when the same version is installed already.
    #[serde(default)]
    pub force: bool,
    /// The person grants the tools the skill asks for (its `allowed-tools`); needs a
    /// dashboard session or the operator token.
    #[serde(default)]
    pub confirm_tools: bool,
}

/// What an install from the registry did, and where the skill's registry page is.
#[derive(Debug, Serialize, ToSchema)]
pub struct RegistryInstallResult {
    #[serde(flatten)]
    pub result: InstallResult,
    /// `{registry}/skills/<id>`.
    pub page_url: String,
    pub registry: String,
}

/// `already-installed` is a 409 problem (nothing was written; `force` reinstalls);
/// every other status is the answer.
fn installed(outcome: InstallOutcome) -> Result<InstallResult, ApiError> {
    if outcome.status == InstallStatus::AlreadyInstalled {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "already-installed",
            format!(
                "`{}` {} is installed already; nothing was written (send \"force\": true to reinstall)",
                outcome.id,
                outcome.version.as_deref().unwrap_or("(no version)")
            ),
        ));
    }
    Ok(outcome.into())
}

#[utoipa::path(post, path = "/api/skills/install", tag = "skills",
    summary = "Install a skill from the URL of a raw SKILL.md",
    description = "Fetches (http or https only, 1 MiB, 10 s, every redirect re-checked, private and link-local addresses refused unless network.allowPrivate), validates the frontmatter and installs; the body is never executed. Nothing is written on any failure.",
    request_body = InstallFromUrl,
    responses(
        (status = 200, description = "installed, updated or reinstalled", body = InstallResult, links(
            ("GetSkill" = (operation_id = "get_skill", parameters(("name" = "$response.body#/slug")))),
            ("ActivateSkill" = (operation_id = "activate_skill", parameters(("name" = "$response.body#/slug")))),
            ("DeactivateSkill" = (operation_id = "deactivate_skill", parameters(("name" = "$response.body#/slug")))),
            ("RemoveSkill" = (operation_id = "remove_skill", parameters(("name" = "$response.body#/slug"))))
        )),
        (status = 403, description = "`person-required`: `confirm_tools` with the agent's token", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "already-installed, or `tools-unconfirmed`: the skill asks for tools and `confirm_tools` was not given", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "the URL is refused or the SKILL.md is invalid (the rule is named)", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "the URL could not be fetched", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn install_from_url(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Principal>,
    ApiJson(body): ApiJson<InstallFromUrl>,
) -> Result<Json<InstallResult>, ApiError> {
    let consent = tool_consent(&principal, body.confirm_tools)?;
    let allow_private = app.config.current().network.allow_private.unwrap_or(false);
    let outcome = direct::install_from_url(
        &app.skills,
        &body.url,
        None,
        body.force,
        allow_private,
        consent,
    )
    .await?;
    Ok(Json(installed(outcome)?))
}

#[utoipa::path(post, path = "/api/skills/install-from-registry", tag = "skills",
    summary = "Install a skill from the registry",
    description = "Downloads the skill from the configured registry, checks the SHA-256 of its body against the registry feed, its name, allowed-tools and every other file against what the registry vouches for (a mismatch aborts with nothing written: `sha-mismatch`, `integrity-mismatch`), validates and installs it. A skill that asks for tools needs `confirm_tools` from the person.",
    request_body = InstallFromRegistry,
    responses(
        (status = 200, description = "installed, updated or reinstalled", body = RegistryInstallResult, links(
            ("GetSkill" = (operation_id = "get_skill", parameters(("name" = "$response.body#/slug")))),
            ("ActivateSkill" = (operation_id = "activate_skill", parameters(("name" = "$response.body#/slug")))),
            ("DeactivateSkill" = (operation_id = "deactivate_skill", parameters(("name" = "$response.body#/slug")))),
            ("RemoveSkill" = (operation_id = "remove_skill", parameters(("name" = "$response.body#/slug"))))
        )),
        (status = 404, description = "no such skill in the registry", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`person-required`: `confirm_tools` with the agent's token", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "already-installed, or `tools-unconfirmed`: the skill asks for tools and `confirm_tools` was not given", body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "the registry is unreachable or served something unusable (sha-mismatch, integrity-mismatch, archive refused)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn install_from_registry(
    State(app): State<Arc<App>>,
    Extension(principal): Extension<Principal>,
    ApiJson(body): ApiJson<InstallFromRegistry>,
) -> Result<Json<RegistryInstallResult>, ApiError> {
    // The id is checked before anything is read or fetched.
    crate::skills::SkillId::parse(&body.id).map_err(|e| ApiError {
        field: Some("id".into()),
        ..ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid-id",
            e.to_string(),
        )
    })?;
    let consent = tool_consent(&principal, body.confirm_tools)?;
    let client = RegistryClient::from_config(&app.data, &app.config.current(), None)?;
    let done = client
        .install(&app.skills, &body.id, body.force, consent)
        .await?;
    Ok(Json(RegistryInstallResult {
        result: installed(done.outcome)?,
        page_url: done.page_url,
        registry: done.registry,
    }))
}

/// `confirm_tools` as a consent: only the person may give it (403 `person-required`
/// for the agent's token).
fn tool_consent(principal: &Principal, confirm_tools: bool) -> Result<ToolConsent, ApiError> {
    if confirm_tools {
        principal.require(PersonAct::ConfirmTools)?;
    }
    Ok(ToolConsent::given(confirm_tools))
}

/// The listing shape of an installed skill.
fn item(skill: InstalledSkill, root: &FsPath) -> SkillItem {
    let InstalledSkill {
        slug,
        entry,
        catalog,
        warnings,
        error,
        file_sha256,
        granted_tools,
    } = skill;
    let catalog = catalog.map(|c| {
        (
            c.description,
            c.summary,
            c.categories,
            c.tags,
            c.intents,
            c.allowed_tools,
        )
    });
    let (description, summary, categories, tags, intents, allowed_tools) = match catalog {
        Some((d, s, c, t, i, a)) => (Some(d), Some(s), c, t, i, a),
        None => Default::default(),
    };
    SkillItem {
        slug,
        id: entry.id,
        name: entry.name,
        description,
        summary,
        version: entry.version,
        category: entry.category,
        categories,
        tags,
        intents,
        allowed_tools,
        granted_tools,
        file_sha256,
        active: entry.active,
        pinned: entry.pinned,
        source: SkillSource {
            kind: match entry.source.kind {
                SourceKind::Seed => SkillSourceKind::Seed,
                SourceKind::Registry => SkillSourceKind::Registry,
                SourceKind::Url => SkillSourceKind::Url,
                SourceKind::File => SkillSourceKind::File,
                SourceKind::Manual => SkillSourceKind::Manual,
                SourceKind::Chat => SkillSourceKind::Chat,
            },
            url: entry.source.url,
            registry: entry.source.registry,
        },
        path: entry.path,
        sha256: entry.sha256,
        installed_at: entry.installed_at,
        updated_at: entry.updated_at,
        warnings: warnings.iter().map(diagnostic).collect(),
        error: error.map(|p| Diagnostic {
            code: p.code.to_string(),
            message: relative(&p.message, root),
        }),
    }
}

fn diagnostic(warning: &Warning) -> Diagnostic {
    Diagnostic {
        code: warning.code().to_string(),
        message: warning.message(),
    }
}

fn problem(p: &ScanProblem, root: &FsPath) -> SkillProblem {
    SkillProblem {
        path: p.path.clone(),
        code: p.code.to_string(),
        message: relative(&p.message, root),
    }
}

/// `message` with the skills directory's absolute path left out: answers name files
/// relative to it.
fn relative(message: &str, root: &FsPath) -> String {
    let root = root.display().to_string();
    message
        .replace(&format!("{root}/"), "")
        .replace(&root, "the skills directory")
}
