//! Plain Rust mirrors of the records in `wit/types.wit`. Timestamps are milliseconds
//! since the Unix epoch; scores are in 0.0..=1.0. With the `serde` feature (the host's
//! `engram plugins test` reads and prints them) they are JSON with snake_case names.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum MemoryType {
    Identity,
    Preference,
    Goal,
    Project,
    Habit,
    Decision,
    Constraint,
    Relationship,
    Episode,
    Reflection,
}

impl MemoryType {
    /// How much a fact of this type matters, as the default strategies score it. Who
    /// the user is and the rules they live by matter most; single episodes least.
    pub fn default_importance(self) -> f32 {
        match self {
            MemoryType::Identity | MemoryType::Constraint => 0.9,
            MemoryType::Relationship => 0.8,
            MemoryType::Goal => 0.75,
            MemoryType::Project | MemoryType::Decision => 0.7,
            MemoryType::Preference | MemoryType::Habit | MemoryType::Reflection => 0.6,
            MemoryType::Episode => 0.4,
        }
    }

    /// How long a fact of this type stays true, as the default strategies score it:
    /// identity and relationships last, decisions and episodes fade.
    pub fn default_durability(self) -> f32 {
        match self {
            MemoryType::Identity => 0.95,
            MemoryType::Constraint | MemoryType::Relationship | MemoryType::Reflection => 0.9,
            MemoryType::Preference | MemoryType::Habit => 0.8,
            MemoryType::Goal | MemoryType::Project => 0.6,
            MemoryType::Decision => 0.5,
            MemoryType::Episode => 0.3,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Scope {
    Durable,
    Active,
    Subconscious,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Evidence {
    Direct,
    Inferred,
    Manual,
    System,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Role {
    User,
    Assistant,
    System,
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Message {
    pub turn_id: String,
    pub role: Role,
    pub content: String,
    pub timestamp: i64,
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Conversation {
    pub id: String,
    pub user_id: String,
    pub messages: Vec<Message>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PersonRef {
    pub name: String,
    pub relation: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Memory {
    pub id: String,
    pub memory_type: MemoryType,
    pub summary: String,
    pub detail: Option<String>,
    pub scope: Scope,
    pub confidence: f32,
    pub importance: f32,
    pub durability: f32,
    pub evidence: Evidence,
    pub negated: bool,
    pub reinforcements: u32,
    pub persons: Vec<PersonRef>,
    pub created_at: i64,
    pub updated_at: i64,
    pub last_seen_at: i64,
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Candidate {
    pub memory_type: MemoryType,
    pub summary: String,
    pub detail: Option<String>,
    pub confidence: f32,
    pub importance: f32,
    pub durability: f32,
    pub evidence: Evidence,
    pub negated: bool,
    pub persons: Vec<PersonRef>,
    pub source_turns: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MemoryPatch {
    pub summary: Option<String>,
    pub detail: Option<String>,
    pub memory_type: Option<MemoryType>,
    pub confidence: Option<f32>,
    pub importance: Option<f32>,
    pub durability: Option<f32>,
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Resolution {
    Add,
    Reinforce(String),
    Update { id: String, patch: MemoryPatch },
    Supersede(String),
    SupersededBy(String),
    Reject(String),
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Snapshot {
    pub user_id: String,
    pub memories: Vec<Memory>,
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Reflection {
    pub summary: String,
    pub detail: Option<String>,
    pub confidence: f32,
    pub importance: f32,
    pub based_on: Vec<String>,
    pub merge_with: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Consolidation {
    pub profile_summary: String,
    pub active_summary: String,
    pub reflections: Vec<Reflection>,
}

/// The lowercase names the WIT, the database and the API use for each variant.
macro_rules! wire_names {
    ($ty:ident { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }

            /// The variant named `name`, if any (exact, lowercase).
            pub fn parse(name: &str) -> Option<$ty> {
                match name {
                    $($name => Some($ty::$variant),)+
                    _ => None,
                }
            }
        }

        impl core::fmt::Display for $ty {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_names!(MemoryType {
    Identity => "identity",
    Preference => "preference",
    Goal => "goal",
    Project => "project",
    Habit => "habit",
    Decision => "decision",
    Constraint => "constraint",
    Relationship => "relationship",
    Episode => "episode",
    Reflection => "reflection",
});
wire_names!(Scope { Durable => "durable", Active => "active", Subconscious => "subconscious" });
wire_names!(Evidence { Direct => "direct", Inferred => "inferred", Manual => "manual", System => "system" });
wire_names!(Role { User => "user", Assistant => "assistant", System => "system" });

impl MemoryType {
    /// Where a new memory of this type goes (each type's default scope, as
    /// `wit/types.wit` gives it).
    pub fn default_scope(self) -> Scope {
        match self {
            MemoryType::Goal | MemoryType::Project | MemoryType::Decision | MemoryType::Episode => {
                Scope::Active
            }
            _ => Scope::Durable,
        }
    }
}

impl Scope {
    /// Durable and active memories form the conscious tier that retrieval draws from.
    pub fn is_conscious(self) -> bool {
        self != Scope::Subconscious
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip() {
        for t in MemoryType::ALL {
            assert_eq!(MemoryType::parse(t.as_str()), Some(*t));
        }
        for s in Scope::ALL {
            assert_eq!(Scope::parse(&s.to_string()), Some(*s));
        }
        assert_eq!(Evidence::parse("Direct"), None);
        assert_eq!(MemoryType::Goal.default_scope(), Scope::Active);
        assert_eq!(MemoryType::Habit.default_scope(), Scope::Durable);
    }
}
