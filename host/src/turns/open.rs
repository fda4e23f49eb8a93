//! Opening a turn: the message is routed to a skill (explicit `/slug ...` first, then
//! the router over the active skills) unless a skill is forced, the memory block is
//! retrieved, the turn opens in the gate with the invoked skill's `allowed-tools` as
//! its grant, the message is recorded in its conversation, and the answer carries
//! everything the agent needs: the memory block, the catalog (the router's candidates
//! first), the invoked skill's body and files, and what each of its tools is granted.

use std::path::Path;

use engram_strategies::model::Role;
use serde::Serialize;
use utoipa::ToSchema;

use super::input::{Channel, ConversationId, Speaker, Text, User};
use super::{TurnError, TurnService};
use crate::gate::{NewTurn, ReasonCode, SkillGrant, Verdict, flow, policy};
use crate::memory::Tier;
use crate::memory::{Retrieval, Source};
use crate::routing::{Invocation, Reason, Routing};
use crate::skills::{CatalogEntry, InvokedSkill};

/// Skills listed in a turn's catalog at most (the router's candidates first).
pub const MAX_CATALOG: usize = 50;

/// The message a turn is opened for, its input checked by the front door
/// ([`super::input`]).
#[derive(Debug, Clone)]
pub struct Message {
    pub user: User,
    /// The user's message. `/slug rest` invokes `slug`.
    pub text: Text,
    /// When given, the message is recorded in this conversation of the Second Brain.
    pub conversation_id: Option<ConversationId>,
    /// Where the message came from (`telegram`, `cli`, `schedule`, ...).
    pub channel: Option<Channel>,
    /// The sender's name, when the channel knows it (a group chat has several people):
    /// recorded with the message and searched with its text.
    pub name: Option<Speaker>,
    /// Whether the memory block is retrieved for it: not in a group chat that has not
    /// been opened to personal memory, where the answer is read by others.
    pub recall: bool,
    /// Who opens the turn, as the audit log names callers (`agent`, `mcp`,
    /// `schedule`, `operator`, `dashboard`, `channel:telegram`, ...): a skill it
    /// forces is audited under this name.
    pub opened_by: String,
}

/// Which skill the turn invokes.
#[derive(Debug, Clone, Copy)]
pub enum Invoke<'a> {
    /// The one the message names (`/slug ...`) or the router picks, if any.
    Routed,
    /// This one, explicitly, whatever the router would say (scheduled runs, an MCP
    /// client's `skill`). A skill that is not installed or not active is an error. It
    /// grants only what the person granted it, and forcing it is audited (code
    /// `skill-forced`, caller [`Message::opened_by`]).
    Skill(&'a str),
}

/// `POST /api/turns` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnOpened {
    pub turn_id: String,
    pub user: String,
    #[serde(with = "crate::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: i64,
    /// The memories to put before the message, one per line (empty when nothing
    /// relevant is known, and always with the fact store).
    pub memory_block: String,
    pub memories: Vec<TurnMemory>,
    /// Active skills (slug and one-line summary), the router's candidates first, at
    /// most 50.
    pub catalog: Vec<CatalogItem>,
    /// Active skills in all.
    pub catalog_total: usize,
    /// The skill this message invokes, if any.
    pub invoked: Option<InvokedView>,
    /// The invoked skill's `allowed-tools`, each with what the gate answers for it in
    /// this turn now (empty without a skill).
    pub grants: Vec<GrantView>,
    /// The id of the recorded message, when a conversation was given and the Second
    /// Brain is in use.
    pub message_id: Option<String>,
}

/// One line of the memory block: a memory (`tier` conscious) or a snippet of the
/// transcript (`tier` transcript, `id` the message's).
#[derive(Debug, Serialize, ToSchema)]
pub struct TurnMemory {
    pub id: String,
    pub tier: Tier,
    pub line: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogItem {
    pub slug: String,
    pub summary: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InvokedView {
    pub slug: String,
    /// The skill's id (`category/slug` or `slug`).
    pub id: String,
    pub name: String,
    /// The SKILL.md instructions, as written.
    pub body: String,
    /// The skill's directory, relative to the skills directory.
    pub dir: String,
    /// Files under `scripts/`, relative to `dir` (read them with `read_skill_file`).
    pub scripts: Vec<String>,
    /// Files under `references/`, relative to `dir`.
    pub references: Vec<String>,
    /// `explicit` (`/slug`), `intent` or `score`.
    pub reason: String,
    /// The router's confidence (`null` for an explicit invocation).
    pub confidence: Option<f32>,
    /// The message without the `/slug` of an explicit invocation.
    pub message: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct GrantView {
    pub tool: String,
    pub decision: Verdict,
    pub code: ReasonCode,
}

impl TurnService {
    /// Routes `text` over `entries` (the active skills), by meaning with the installed
    /// encoder when there is one: the message is embedded once, here, and its vector
    /// returned for retrieval. An encoder that fails on it leaves the turn routed by
    /// its words.
    fn route(&self, entries: &[CatalogEntry], text: &str) -> (Routing, Option<Vec<f32>>) {
        let vectors = self.skill_vectors();
        let router = self.router.for_catalog(entries, vectors);
        let query = match vectors {
            Some(vectors) if !router.is_empty() => match vectors.encoder().embed(text) {
                Ok(query) => Some(query),
                Err(e) => {
                    tracing::warn!(
                        "routing by words alone: the message could not be embedded: {e}"
                    );
                    None
                }
            },
            _ => None,
        };
        (router.route_with(text, query.as_deref()), query)
    }

    /// Opens a turn for `message`, invoking the skill `invoke` says. Every refusal
    /// (another user's conversation, a skill that is missing, the gate full) comes
    /// before retrieval, which marks the memories it returns as used: a refused turn
    /// changes nothing stored.
    pub fn open(&self, message: Message, invoke: Invoke) -> Result<TurnOpened, TurnError> {
        let user = message.user.as_str();
        if let Some(conversation) = &message.conversation_id {
            self.check_conversation(user, conversation.as_str())?;
        }
        // A skills directory that cannot be read must not stop the conversation: the
        // message is then handled without skills.
        let entries: Vec<CatalogEntry> = match self.skills.catalog() {
            Ok((entries, _problems)) => entries.into_iter().filter(|e| e.active).collect(),
            Err(e) => {
                tracing::warn!("turn without skills: the catalog cannot be read: {e}");
                Vec::new()
            }
        };
        let text = message.text.as_str();
        // `embedded`: the encoder's vector of the message, when routing made one;
        // retrieval reads it rather than embed the message again.
        let (routing, embedded) = match invoke {
            Invoke::Skill(slug) => (
                Routing {
                    invoked: Some(Invocation {
                        slug: slug.to_string(),
                        reason: Reason::Explicit,
                        confidence: None,
                        message: text.to_string(),
                    }),
                    candidates: Vec::new(),
                },
                None,
            ),
            Invoke::Routed => self.route(&entries, text),
        };
        let invoked = match &routing.invoked {
            Some(invocation) => Some((invocation.clone(), self.skills.invoke(&invocation.slug)?)),
            None => None,
        };

        let grant = invoked
            .as_ref()
            .map(|(_, skill)| SkillGrant::from_invoked(skill));
        // Where the turn may send once it has read outside content: the hosts the
        // message names, and those in the text of a skill the person granted tools.
        let mut destinations = flow::hosts_in(text);
        if let Some((_, skill)) = invoked
            .as_ref()
            .filter(|(_, s)| !s.granted_tools.is_empty())
        {
            for host in flow::hosts_in(&skill.body) {
                if !destinations.contains(&host) {
                    destinations.push(host);
                }
            }
        }
        let turn = self.gate.open_turn(NewTurn {
            user: user.to_string(),
            conversation_id: message
                .conversation_id
                .as_ref()
                .map(|c| c.as_str().to_string()),
            channel: message.channel.as_ref().map(|c| c.as_str().to_string()),
            opened_by: message.opened_by.clone(),
            skill: grant.clone(),
            destinations,
        })?;
        if let Invoke::Skill(_) = invoke
            && let Err(e) = self.gate.record_forced(&turn, &message.opened_by)
        {
            // A forcing that cannot be audited is not done.
            let _ = self.gate.end_turn(&turn.id, user);
            return Err(e.into());
        }

        let (retrieval, message_id) = match self.keep(&message, embedded.as_deref()) {
            Ok(kept) => kept,
            Err(e) => {
                // The memory block or the message the turn is for failed: no turn either.
                let _ = self.gate.end_turn(&turn.id, user);
                return Err(e);
            }
        };

        Ok(TurnOpened {
            turn_id: turn.id,
            user: message.user.as_str().to_string(),
            expires_at: turn.expires_at,
            memory_block: retrieval.block,
            memories: retrieval
                .lines
                .into_iter()
                .map(|m| TurnMemory {
                    id: m.id().to_string(),
                    tier: match m.source {
                        Source::Memory { .. } => Tier::Conscious,
                        Source::Message(_) => Tier::Transcript,
                    },
                    line: m.line,
                })
                .collect(),
            catalog: catalog(&entries, &routing),
            catalog_total: entries.len(),
            invoked: invoked.map(|(invocation, skill)| self.invoked_view(invocation, skill)),
            grants: self.grants(grant.as_ref()),
            message_id,
        })
    }

    /// What a turn keeps once nothing can refuse it any more: the memory block
    /// (retrieved before the message is recorded, so that it does not find itself),
    /// and the recorded message's id.
    fn keep(
        &self,
        message: &Message,
        embedded: Option<&[f32]>,
    ) -> Result<(Retrieval, Option<String>), TurnError> {
        let (user, text) = (message.user.as_str(), message.text.as_str());
        let retrieval = if message.recall {
            self.retrieve(user, text, embedded)?
        } else {
            Retrieval::default()
        };
        let message_id = match &message.conversation_id {
            Some(conversation) => self.record(
                user,
                conversation.as_str(),
                Role::User,
                message.name.as_ref().map(Speaker::as_str),
                text,
            )?,
            None => None,
        };
        Ok((retrieval, message_id))
    }

    /// What the gate answers now for each of the skill's `allowed-tools` (a new turn
    /// has no approvals yet).
    fn grants(&self, grant: Option<&SkillGrant>) -> Vec<GrantView> {
        let Some(grant) = grant else {
            return Vec::new();
        };
        let policy = self.gate.policy();
        grant
            .allowed_tools
            .iter()
            .map(|tool| {
                let decision = policy::decide_entry(&policy, grant, tool);
                GrantView {
                    tool: tool.clone(),
                    decision: decision.verdict,
                    code: decision.code,
                }
            })
            .collect()
    }

    fn invoked_view(&self, invocation: Invocation, skill: InvokedSkill) -> InvokedView {
        let slug = skill.id.slug().to_string();
        let dir = skill
            .dir
            .strip_prefix(self.skills.root())
            .unwrap_or(Path::new(&slug))
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let under = |prefix: &str| {
            skill
                .resources
                .iter()
                .filter(|r| r.starts_with(prefix))
                .cloned()
                .collect::<Vec<_>>()
        };
        InvokedView {
            slug,
            id: skill.id.to_string(),
            name: skill.name.clone(),
            body: skill.body.clone(),
            scripts: under("scripts/"),
            references: under("references/"),
            dir,
            reason: match invocation.reason {
                Reason::Explicit => "explicit",
                Reason::Intent => "intent",
                Reason::Score => "score",
            }
            .to_string(),
            confidence: invocation.confidence,
            message: invocation.message,
        }
    }
}

/// The router's candidates first, then the rest by slug, at most [`MAX_CATALOG`].
fn catalog(entries: &[CatalogEntry], routing: &Routing) -> Vec<CatalogItem> {
    let mut order: Vec<&CatalogEntry> = Vec::with_capacity(entries.len());
    for candidate in &routing.candidates {
        if let Some(entry) = entries.iter().find(|e| e.slug == candidate.slug) {
            order.push(entry);
        }
    }
    let mut rest: Vec<&CatalogEntry> = entries
        .iter()
        .filter(|e| !routing.candidates.iter().any(|c| c.slug == e.slug))
        .collect();
    rest.sort_by(|a, b| a.slug.cmp(&b.slug));
    order.extend(rest);
    order
        .into_iter()
        .take(MAX_CATALOG)
        .map(|e| CatalogItem {
            slug: e.slug.clone(),
            summary: e.summary.clone(),
        })
        .collect()
}
