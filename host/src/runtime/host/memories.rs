//! `engram:plugin/memories`: read-only queries, always for the user the call was made
//! for. The Second Brain implements [`MemorySource`]; the runtime only forwards.

use engram_strategies::model::{Memory, MemoryType, Scope};

use super::CallState;
use crate::runtime::bindings::memories::{Host, MemoryFilter};
use crate::runtime::bindings::types;
use crate::runtime::convert;

/// Hard caps on what one query may return to a plugin.
const MAX_SEARCH_RESULTS: u32 = 50;
const MAX_LIST_RESULTS: u32 = 500;

/// A `list` query, already capped.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryQuery {
    pub memory_type: Option<MemoryType>,
    pub scope: Option<Scope>,
    pub limit: u32,
}

/// Where plugins read memories from. Implementations must never return another user's
/// memories, nor superseded or dismissed ones.
pub trait MemorySource: Send + Sync {
    fn search(&self, user_id: &str, text: &str, limit: u32) -> Vec<Memory>;
    fn get(&self, user_id: &str, id: &str) -> Option<Memory>;
    fn list(&self, user_id: &str, query: &MemoryQuery) -> Vec<Memory>;
}

/// The source used when no memory store is attached (for example `engram plugins
/// inspect` outside the daemon): it holds nothing.
pub struct NoMemories;

impl MemorySource for NoMemories {
    fn search(&self, _user_id: &str, _text: &str, _limit: u32) -> Vec<Memory> {
        Vec::new()
    }
    fn get(&self, _user_id: &str, _id: &str) -> Option<Memory> {
        None
    }
    fn list(&self, _user_id: &str, _query: &MemoryQuery) -> Vec<Memory> {
        Vec::new()
    }
}

impl Host for CallState {
    fn search(&mut self, text: String, limit: u32) -> Vec<types::Memory> {
        let limit = limit.min(MAX_SEARCH_RESULTS);
        let found = self.services.memories.search(&self.user_id, &text, limit);
        found
            .iter()
            .take(limit as usize)
            .map(convert::memory_to_wit)
            .collect()
    }

    fn get(&mut self, id: String) -> Option<types::Memory> {
        self.services
            .memories
            .get(&self.user_id, &id)
            .map(|m| convert::memory_to_wit(&m))
    }

    fn list_memories(&mut self, filter: MemoryFilter) -> Vec<types::Memory> {
        let query = MemoryQuery {
            memory_type: filter.memory_type.map(convert::memory_type_from_wit),
            scope: filter.scope.map(convert::scope_from_wit),
            limit: filter.limit.min(MAX_LIST_RESULTS),
        };
        let found = self.services.memories.list(&self.user_id, &query);
        found
            .iter()
            .take(query.limit as usize)
            .map(convert::memory_to_wit)
            .collect()
    }
}
