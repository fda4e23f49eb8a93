//! mem0's memories, as `Memory.get_all()` / `MemoryClient.get_all()` return them and
//! people save them: `{"results": [...]}` (or `{"memories": [...]}`, or the bare
//! array), each `{id, memory, categories?, metadata?, created_at?, ...}`. Each becomes
//! a typed memory: the type from mem0's category when it has one, else from its
//! words; a summary without a subject ("Likes green tea") is given the user.

use engram_strategies::model::MemoryType;
use serde_json::Value;

use super::{Batch, ImportError, ImportedMemory, Source, type_of, with_subject};
use crate::memory::NewMemory;

pub fn parse(bytes: &[u8]) -> Result<Batch, ImportError> {
    let root: Value = serde_json::from_slice(bytes).map_err(|e| {
        ImportError::new(
            format!("line {}", e.line()),
            format!("not JSON: {e} (expected mem0's get_all() output)"),
        )
    })?;
    let items = match &root {
        Value::Array(items) => items,
        Value::Object(object) => object
            .get("results")
            .or_else(|| object.get("memories"))
            .and_then(Value::as_array)
            .ok_or_else(|| {
                ImportError::new(
                    "the file",
                    "expected `results` (or `memories`): an array of mem0 memories",
                )
            })?,
        _ => {
            return Err(ImportError::new(
                "the file",
                "expected mem0's get_all() output: {\"results\": [...]}",
            ));
        }
    };
    let mut batch = Batch::new(Source::Mem0);
    for (i, item) in items.iter().enumerate() {
        let entry = format!("memory {}", i + 1);
        let id = item
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.trim().is_empty())
            .ok_or_else(|| ImportError::new(entry.clone(), "no `id`"))?;
        let text = item
            .get("memory")
            .and_then(Value::as_str)
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| ImportError::new(format!("{entry} ({id})"), "no `memory` text"))?;
        let categories: Vec<&str> = item
            .get("categories")
            .and_then(Value::as_array)
            .map(|c| c.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let summary = with_subject(text);
        let memory_type = categories
            .iter()
            .find_map(|c| type_of_category(c))
            .unwrap_or_else(|| type_of(&summary));
        let mut memory = NewMemory::new(memory_type, summary);
        memory.detail = Some(format!("Imported from mem0 (memory {id})"));
        batch.memories.push(ImportedMemory {
            key: id.to_string(),
            memory,
        });
    }
    Ok(batch)
}

/// mem0's built-in categories, as Engram types.
fn type_of_category(category: &str) -> Option<MemoryType> {
    Some(match category {
        "personal_details" | "professional_details" => MemoryType::Identity,
        "family" | "relationships" => MemoryType::Relationship,
        "user_preferences" | "food" | "music" | "fashion" | "entertainment" | "sports"
        | "technology" => MemoryType::Preference,
        "hobbies" => MemoryType::Habit,
        "health" => MemoryType::Constraint,
        "milestones" | "travel" => MemoryType::Episode,
        "goals" => MemoryType::Goal,
        "projects" => MemoryType::Project,
        _ => return None,
    })
}
