//! Chat channels: the front doors where a person talks to Engram. The commands a
//! person types (`/skills`, `/memory`) are handled here independently of the transport
//! that carries them; the transports (the terminal's `engram chat`, the Telegram bot)
//! present them and send everything else to the agent loop (`crate::agent`).

pub mod memory_command;
pub mod skills_command;
pub mod terminal;
