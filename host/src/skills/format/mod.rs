//! The SKILL.md format: reading one file into a validated skill, with no file system
//! and no network. A pipeline of small steps, each in its own module: `split` finds
//! the frontmatter in the raw bytes (or none: the lenient load), `yaml` reads it into
//! a bounded tree (`repair` is the one fallback for invalid YAML), `fields` picks the
//! fields out of it (top level or `metadata.*`), `paragraph` finds the description of
//! a file that has none, `parse` runs those, and `validate` applies the rules and
//! decides the skill's identity (`id`: slugs, which are also paths) from its
//! [`Origin`]. `text` finds hidden characters. The body is carried as an opaque
//! string and never interpreted.

pub mod error;
pub mod fields;
pub mod id;
pub mod paragraph;
pub mod parse;
mod repair;
pub mod split;
pub(crate) mod text;
pub mod validate;
mod yaml;

pub use error::{SkillError, Warning};
pub use id::{IdError, SkillId, Slug, SlugError};
pub use parse::Leniency;
pub use validate::Origin;
