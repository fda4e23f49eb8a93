//! Chat channels: the commands a person types in a chat (`/skills`, ...), independent
//! of the transport that carries them.

pub mod skills_command;
