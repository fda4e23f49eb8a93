//! `engram:plugin/log`: guest diagnostics go into tracing, tagged with the plugin.

use super::CallState;
use crate::runtime::bindings::log::{Host, Level};

/// Longer messages are cut so that a chatty plugin cannot flood the log.
const MAX_MESSAGE_BYTES: usize = 4096;

impl Host for CallState {
    fn log(&mut self, level: Level, message: String) {
        let message = truncate(&message, MAX_MESSAGE_BYTES);
        let plugin = self.plugin.name.as_str();
        let hash = self.plugin.short_hash.as_str();
        match level {
            Level::Trace => tracing::trace!(target: "engram::plugin", plugin, hash, "{message}"),
            Level::Debug => tracing::debug!(target: "engram::plugin", plugin, hash, "{message}"),
            Level::Info => tracing::info!(target: "engram::plugin", plugin, hash, "{message}"),
            Level::Warn => tracing::warn!(target: "engram::plugin", plugin, hash, "{message}"),
            Level::Error => tracing::error!(target: "engram::plugin", plugin, hash, "{message}"),
        }
    }
}

fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
