//! The Second Brain's records as stored and exported: a memory with its content and
//! its lifecycle state, a person, and the link between them.
//! Timestamps are milliseconds internally and RFC 3339 UTC strings in JSON.

use engram_strategies::model::{Evidence, MemoryType, Scope};
use serde::{Deserialize, Serialize};

use crate::ids::new_id;
use crate::time::rfc3339;

/// The enums of `engram_strategies::model`, named on the wire as in the WIT.
pub trait WireName: Copy + Sized + 'static {
    const WHAT: &'static str;
    fn name(self) -> &'static str;
    fn from_name(name: &str) -> Option<Self>;
    fn all() -> &'static [Self];
}

macro_rules! wire_name {
    ($ty:ty, $what:literal) => {
        impl WireName for $ty {
            const WHAT: &'static str = $what;
            fn name(self) -> &'static str {
                self.as_str()
            }
            fn from_name(name: &str) -> Option<Self> {
                <$ty>::parse(name)
            }
            fn all() -> &'static [Self] {
                <$ty>::ALL
            }
        }
    };
}

wire_name!(MemoryType, "type");
wire_name!(Scope, "scope");
wire_name!(Evidence, "evidence");

/// An error message naming the field and the accepted values.
pub fn unknown_value<T: WireName>(value: &str) -> String {
    let accepted: Vec<&str> = T::all().iter().map(|v| v.name()).collect();
    format!(
        "unknown {} `{value}`; expected one of: {}",
        T::WHAT,
        accepted.join(", ")
    )
}

/// OpenAPI schemas of the wire enums, for `#[schema(schema_with = ...)]`: a string
/// restricted to the names `WireName` accepts, so the document and the parser agree.
pub mod schema {
    use super::WireName;
    use engram_strategies::model::{Evidence, MemoryType, Scope};
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    use utoipa::openapi::{Object, RefOr, Schema};

    fn names<T: WireName>(nullable: bool) -> Object {
        let names = T::all().iter().map(|v| v.name());
        let schema_type = if nullable {
            SchemaType::from_iter([Type::String, Type::Null])
        } else {
            SchemaType::Type(Type::String)
        };
        // A nullable enum lists null among its values, or null would match none.
        let names = names
            .map(serde_json::Value::from)
            .chain(nullable.then_some(serde_json::Value::Null));
        ObjectBuilder::new()
            .schema_type(schema_type)
            .enum_values(Some(names))
            .description(Some(format!("a {}", T::WHAT)))
            .build()
    }

    pub fn memory_type() -> impl Into<RefOr<Schema>> {
        names::<MemoryType>(false)
    }

    pub fn memory_type_or_null() -> impl Into<RefOr<Schema>> {
        names::<MemoryType>(true)
    }

    pub fn scope() -> impl Into<RefOr<Schema>> {
        names::<Scope>(false)
    }

    pub fn scope_or_null() -> impl Into<RefOr<Schema>> {
        names::<Scope>(true)
    }

    pub fn evidence() -> impl Into<RefOr<Schema>> {
        names::<Evidence>(false)
    }

    pub fn evidence_or_null() -> impl Into<RefOr<Schema>> {
        names::<Evidence>(true)
    }

    /// A subconscious memory's `prior_scope`: durable, active or null (the CHECK of
    /// the `memories` table).
    pub fn prior_scope_or_null() -> impl Into<RefOr<Schema>> {
        let mut object = names::<Scope>(true);
        object.enum_values = Some(vec![
            Scope::Durable.name().into(),
            Scope::Active.name().into(),
            serde_json::Value::Null,
        ]);
        object
    }

    /// A message's `role`: the names `Role::parse` accepts.
    pub fn role() -> impl Into<RefOr<Schema>> {
        ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .enum_values(Some(
                engram_strategies::model::Role::ALL
                    .iter()
                    .map(|r| r.as_str()),
            ))
            .description(Some("`user`, `assistant` or `system`."))
            .build()
    }
}

/// `#[serde(with = "wire")]` for the model enums.
pub mod wire {
    use super::WireName;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<T: WireName, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(value.name())
    }

    pub fn deserialize<'de, T: WireName, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        let name = String::deserialize(d)?;
        T::from_name(&name).ok_or_else(|| D::Error::custom(super::unknown_value::<T>(&name)))
    }
}

/// `#[serde(with = "wire_opt")]` for optional model enums.
pub mod wire_opt {
    use super::WireName;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<T: WireName, S: Serializer>(
        value: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => s.serialize_str(v.name()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: WireName, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(name) => T::from_name(&name)
                .map(Some)
                .ok_or_else(|| D::Error::custom(super::unknown_value::<T>(&name))),
            None => Ok(None),
        }
    }
}

/// A memory with everything the Second Brain knows about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryRecord {
    pub id: String,
    pub user_id: String,
    #[serde(rename = "type", with = "wire")]
    #[schema(schema_with = schema::memory_type)]
    pub memory_type: MemoryType,
    /// 1 to 1000 characters, not only whitespace.
    #[schema(
        min_length = 1,
        max_length = 1000,
        pattern = r"[^\x09-\x0D\x20\x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub summary: String,
    /// Up to 4000 characters.
    #[schema(max_length = 4000)]
    pub detail: Option<String>,
    #[serde(with = "wire")]
    #[schema(schema_with = schema::scope)]
    pub scope: Scope,
    /// The scope a subconscious memory returns to when recalled.
    #[serde(default, with = "wire_opt")]
    #[schema(schema_with = schema::prior_scope_or_null)]
    pub prior_scope: Option<Scope>,
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub confidence: f32,
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub importance: f32,
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub durability: f32,
    #[serde(with = "wire")]
    #[schema(schema_with = schema::evidence)]
    pub evidence: Evidence,
    pub negated: bool,
    /// Confirmed by the user (edit with `validated: true`).
    pub validated: bool,
    #[schema(minimum = 0, maximum = 4294967295_u64, format = Int64)]
    pub reinforcements: u32,
    /// Active but unreferenced for 21 days: ranked lower, badged in the UI.
    pub stale: bool,
    /// Soft dismissal by pruning: hidden everywhere, purged 30 days later.
    #[serde(default, with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub dismissed_at: Option<i64>,
    /// The memory that won a conflict against this one; a superseded memory is kept
    /// for history and never retrieved.
    pub superseded_by: Option<String>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: i64,
    /// Last time the fact was stated or reinforced.
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub last_seen_at: i64,
    /// Last time retrieval returned it.
    #[serde(default, with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_used_at: Option<i64>,
    pub source_conversation: Option<String>,
    pub source_turns: Vec<String>,
    /// When `confidence` was last set; inferred memories decay from this time.
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub confidence_at: i64,
    /// Whose fact it is: `null` for the user, else the person's name (or relation,
    /// "mother") in lower case. Read from the summary unless the writer named it.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\x00-\x20\x7F-\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub holder: Option<String>,
    /// The attribute the fact states (`phone`, `employer`, `favorite language`, ...):
    /// a new value of a single-valued attribute of the same holder supersedes this one.
    #[serde(default)]
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = r"^[^\x00-\x1F\x7F-\x9F]*[^\x00-\x20\x7F-\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\x00-\x1F\x7F-\x9F]*$"
    )]
    pub attribute: Option<String>,
}

impl MemoryRecord {
    /// A memory first stated `now`: live, in its type's default scope, with its type's
    /// default importance and durability and nothing else set. Callers override what
    /// differs with struct update syntax.
    pub fn fresh(
        user: &str,
        memory_type: MemoryType,
        summary: &str,
        evidence: Evidence,
        confidence: f32,
        now: i64,
    ) -> MemoryRecord {
        let summary = summary.trim();
        MemoryRecord {
            id: new_id("mem"),
            user_id: user.to_string(),
            memory_type,
            summary: summary.to_string(),
            detail: None,
            scope: memory_type.default_scope(),
            prior_scope: None,
            confidence,
            importance: memory_type.default_importance(),
            durability: memory_type.default_durability(),
            evidence,
            negated: engram_strategies::text::is_negated(summary),
            validated: false,
            reinforcements: 0,
            stale: false,
            dismissed_at: None,
            superseded_by: None,
            created_at: now,
            updated_at: now,
            last_seen_at: now,
            last_used_at: None,
            source_conversation: None,
            source_turns: Vec::new(),
            confidence_at: now,
            holder: None,
            attribute: None,
        }
        .with_about_read()
    }

    /// The holder and attribute read from the summary (`engram_strategies::about`).
    pub fn with_about_read(mut self) -> MemoryRecord {
        let about = engram_strategies::about::of_summary(&self.summary);
        self.holder = about.holder_key();
        self.attribute = about.attribute;
        self
    }

    /// Live memories are the ones retrieval, search and listings may show.
    pub fn is_live(&self) -> bool {
        self.dismissed_at.is_none() && self.superseded_by.is_none()
    }

    /// The memory as plugins see it.
    pub fn to_model(
        &self,
        persons: Vec<engram_strategies::model::PersonRef>,
    ) -> engram_strategies::model::Memory {
        engram_strategies::model::Memory {
            id: self.id.clone(),
            memory_type: self.memory_type,
            summary: self.summary.clone(),
            detail: self.detail.clone(),
            scope: self.scope,
            confidence: self.confidence,
            importance: self.importance,
            durability: self.durability,
            evidence: self.evidence,
            negated: self.negated,
            reinforcements: self.reinforcements,
            persons,
            created_at: self.created_at,
            updated_at: self.updated_at,
            last_seen_at: self.last_seen_at,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PersonRecord {
    pub id: String,
    pub user_id: String,
    pub name: String,
    pub aliases: Vec<String>,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: i64,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub last_seen: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PersonLink {
    pub memory_id: String,
    pub person_id: String,
    pub user_id: String,
    pub relation: Option<String>,
}

/// A conversation of the transcript tier (its messages are [`MessageRecord`]s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationRecord {
    /// Chosen by the agent, 1 to 128 characters.
    pub id: String,
    pub user_id: String,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub started_at: i64,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub last_message_at: i64,
    #[serde(default, with = "rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub ended_at: Option<i64>,
    /// The last message (by `seq`) that went through extraction.
    pub extracted_seq: i64,
}

/// One recorded message: the transcript tier's unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageRecord {
    /// `turn_...`: what memories name in `source_turns`.
    pub id: String,
    pub conversation_id: String,
    pub user_id: String,
    /// Position in its conversation, from 1.
    pub seq: i64,
    #[schema(schema_with = schema::role)]
    pub role: String,
    /// The speaker's name, when the channel gave one (a group chat has several people).
    pub name: Option<String>,
    /// Up to 64 KiB (UTF-8).
    pub content: String,
    #[serde(with = "rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub at: i64,
}

/// One line of an export: the records, tagged by kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ExportLine {
    Memory(MemoryRecord),
    Person(PersonRecord),
    PersonLink(PersonLink),
    Conversation(ConversationRecord),
    Message(MessageRecord),
}

/// Each record's schema with its `kind` added: written out because the derive would
/// combine a record (which refuses unknown fields) with the tag in an `allOf`, which no
/// line could satisfy.
impl utoipa::PartialSchema for ExportLine {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::RefOr;
        use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};
        fn tagged(kind: &str, record: RefOr<Schema>) -> RefOr<Schema> {
            let RefOr::T(Schema::Object(mut object)) = record else {
                return record;
            };
            object.properties.insert(
                "kind".to_string(),
                ObjectBuilder::new()
                    .schema_type(SchemaType::Type(Type::String))
                    .enum_values(Some([kind]))
                    .into(),
            );
            object.required.insert(0, "kind".to_string());
            RefOr::T(Schema::Object(object))
        }
        OneOfBuilder::new()
            .item(tagged("memory", MemoryRecord::schema()))
            .item(tagged("person", PersonRecord::schema()))
            .item(tagged("person_link", PersonLink::schema()))
            .item(tagged("conversation", ConversationRecord::schema()))
            .item(tagged("message", MessageRecord::schema()))
            .description(Some("One line of an export, tagged by `kind`."))
            .into()
    }
}

impl utoipa::ToSchema for ExportLine {}
