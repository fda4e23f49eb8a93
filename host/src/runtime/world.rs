//! The WIT worlds a component can implement: what a plugin is for.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The WIT world a plugin implements (`wit/worlds.wit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum World {
    Extractor,
    Resolver,
    Consolidator,
    SkillTool,
}

impl World {
    pub const ALL: [World; 4] = [
        World::Extractor,
        World::Resolver,
        World::Consolidator,
        World::SkillTool,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            World::Extractor => "extractor",
            World::Resolver => "resolver",
            World::Consolidator => "consolidator",
            World::SkillTool => "skill-tool",
        }
    }
}

impl fmt::Display for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
