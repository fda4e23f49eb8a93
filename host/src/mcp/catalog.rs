//! What the MCP server offers besides tools: each active skill as a prompt (name = its
//! slug, description = its one-line summary, getting it returns its body) and as a
//! resource `skill://<slug>`, and the user's profile and active summaries as
//! `memory://profile`. Everything is read when asked for, so a list is never staler
//! than the skills directory; `notifications/*/list_changed` tell clients to ask again
//! (see `changes.rs`).

use rmcp::ErrorData;
use rmcp::model::{
    GetPromptResult, Prompt, PromptMessage, ReadResourceResult, Resource, ResourceContents, Role,
};
use serde_json::json;

use super::failure::Failure;
use crate::app::App;
use crate::skills::{CatalogEntry, InvokedSkill};

pub const PROFILE_URI: &str = "memory://profile";
const SKILL_SCHEME: &str = "skill://";
const MARKDOWN: &str = "text/markdown";

/// The active skills, by slug.
fn active_skills(app: &App) -> Result<Vec<CatalogEntry>, ErrorData> {
    let (entries, _problems) = app.skills.catalog().map_err(|e| error(e.into()))?;
    let mut active: Vec<CatalogEntry> = entries.into_iter().filter(|e| e.active).collect();
    active.sort_by(|a, b| a.slug.cmp(&b.slug));
    Ok(active)
}

/// The active skill `slug`, body read.
fn invoke(app: &App, slug: &str) -> Result<InvokedSkill, ErrorData> {
    app.skills.invoke(slug).map_err(|e| {
        let failure = Failure::from(e);
        match failure.code {
            // An unknown or inactive skill is not on offer: MCP's "no such resource".
            "not-found" | "inactive" => ErrorData::resource_not_found(
                format!("{}: {}", failure.code, failure.detail),
                Some(json!({ "code": failure.code })),
            ),
            _ => error(failure),
        }
    })
}

pub fn prompts(app: &App) -> Result<Vec<Prompt>, ErrorData> {
    Ok(active_skills(app)?
        .into_iter()
        .map(|skill| Prompt::new(skill.slug, Some(skill.summary), None))
        .collect())
}

pub fn prompt(app: &App, name: &str) -> Result<GetPromptResult, ErrorData> {
    let skill = invoke(app, name)?;
    let (entries, _) = app.skills.catalog().map_err(|e| error(e.into()))?;
    let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, skill.body)]);
    result.description = entries
        .into_iter()
        .find(|e| e.slug == name)
        .map(|e| e.summary);
    Ok(result)
}

pub fn resources(app: &App) -> Result<Vec<Resource>, ErrorData> {
    let mut resources = vec![
        Resource::new(PROFILE_URI, "profile")
            .with_title("What Engram knows about the user")
            .with_description(
                "The user's profile summary and what they are busy with now, as the Second Brain last consolidated them.",
            )
            .with_mime_type(MARKDOWN),
    ];
    resources.extend(active_skills(app)?.into_iter().map(|skill| {
        Resource::new(format!("{SKILL_SCHEME}{}", skill.slug), skill.slug)
            .with_title(skill.name)
            .with_description(skill.summary)
            .with_mime_type(MARKDOWN)
    }));
    Ok(resources)
}

pub fn read(app: &App, user: &str, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let text = if uri == PROFILE_URI {
        profile(app, user)?
    } else if let Some(slug) = uri.strip_prefix(SKILL_SCHEME) {
        invoke(app, slug)?.body
    } else {
        return Err(ErrorData::resource_not_found(
            format!("no resource `{uri}`; resources/list names them"),
            Some(json!({ "code": "not-found" })),
        ));
    };
    Ok(ReadResourceResult::new(vec![
        ResourceContents::text(text, uri).with_mime_type(MARKDOWN),
    ]))
}

/// The user's summaries as Markdown; a line saying there are none yet when
/// consolidation has not written them.
fn profile(app: &App, user: &str) -> Result<String, ErrorData> {
    let brain = app.memory.brain().map_err(|e| error(e.into()))?;
    let summaries = brain
        .summaries(user)
        .map_err(|e| error(crate::memory::MemoryError::from(e).into()))?;
    let section = |title: &str, text: Option<String>| {
        let text = text
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| "Nothing yet: the Second Brain has not consolidated it.".into());
        format!("## {title}\n\n{text}\n")
    };
    Ok(format!(
        "{}\n{}",
        section("Profile", summaries.profile_summary),
        section("Now", summaries.active_summary)
    ))
}

/// A failure outside a tool call: a JSON-RPC error carrying the problem code.
pub fn error(failure: Failure) -> ErrorData {
    let data = json!({ "code": failure.code, "detail": failure.detail });
    if failure.code == "internal" {
        ErrorData::internal_error(failure.detail, Some(data))
    } else {
        ErrorData::invalid_params(format!("{}: {}", failure.code, failure.detail), Some(data))
    }
}
