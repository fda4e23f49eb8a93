//! Shared fixtures for the host's integration tests and benchmarks: a realistic
//! conversation and memory set, the guest packages built by build.rs, and a runtime
//! whose compile cache lives in the target directory (shared across test runs).
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engram::runtime::{
    DenyAllGate, HostServices, KvStore, NoMemories, Runtime, RuntimeOptions, builtin,
};
use engram_strategies::model::{
    Conversation, Evidence, Memory, MemoryType, Message, PersonRef, Role, Scope, Snapshot,
};

pub mod http;
pub mod openai;
pub mod rng;

pub const NOW: i64 = 1_790_000_000_000;
const DAY: i64 = 86_400_000;

/// The repository's test data, `tests/fixtures` (what is there and its licences: its
/// README), so that a clone tests itself.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

pub fn guest_package(name: &str) -> PathBuf {
    Path::new(builtin::GUEST_PACKAGES_DIR).join(name)
}

/// Copies a guest package into `dir`, replacing its manifest.
pub fn package_with_manifest(from: &str, dir: &Path, manifest: &str) {
    std::fs::create_dir_all(dir).expect("mkdir");
    std::fs::copy(
        guest_package(from).join("plugin.wasm"),
        dir.join("plugin.wasm"),
    )
    .expect("copy wasm");
    std::fs::write(dir.join("plugin.toml"), manifest).expect("write manifest");
}

/// The compile cache the tests share, in the target directory.
pub fn test_cache_dir() -> PathBuf {
    option_env!("CARGO_TARGET_TMPDIR")
        .map(|t| PathBuf::from(t).join("component-cache"))
        .unwrap_or_else(|| std::env::temp_dir().join("engram-test-component-cache"))
}

pub fn services() -> HostServices {
    HostServices::new(
        Arc::new(NoMemories),
        Arc::new(DenyAllGate),
        KvStore::in_memory().expect("in-memory kv"),
    )
}

pub fn runtime_with_cache(cache_dir: Option<PathBuf>) -> Runtime {
    Runtime::new(
        RuntimeOptions {
            cache_dir,
            ..RuntimeOptions::default()
        },
        services(),
    )
    .expect("runtime")
}

/// A runtime whose compile cache persists in the target dir, so tests compile each
/// component once per build rather than once per test.
pub fn runtime() -> Runtime {
    runtime_with_cache(Some(test_cache_dir()))
}

/// A runtime over `services`, with the shared compile cache.
pub fn runtime_with_services(services: HostServices) -> Runtime {
    Runtime::new(
        RuntimeOptions {
            cache_dir: Some(test_cache_dir()),
            ..RuntimeOptions::default()
        },
        services,
    )
    .expect("runtime")
}

fn message(turn: usize, role: Role, content: &str) -> Message {
    Message {
        turn_id: format!("t{turn}"),
        role,
        content: content.to_string(),
        timestamp: NOW - 60_000 + turn as i64 * 1_000,
    }
}

/// A conversation of the kind the extractor sees after a chat: facts mixed with small
/// talk, questions and assistant replies.
pub fn conversation() -> Conversation {
    let lines = [
        (Role::User, "Hi there!"),
        (Role::Assistant, "Hello! How can I help you today?"),
        (
            Role::User,
            "My name is Dana and I work as a data engineer at a logistics company.",
        ),
        (
            Role::Assistant,
            "Nice to meet you, Dana. I love data engineering too.",
        ),
        (
            Role::User,
            "I don't like coffee anymore, I switched to green tea last month.",
        ),
        (
            Role::User,
            "My sister Anna is visiting next week, and I'm building a home weather station with her.",
        ),
        (Role::User, "Can you suggest a good sensor for humidity?"),
        (Role::Assistant, "The BME280 is a popular choice."),
        (
            Role::User,
            "I decided to use the BME280. I usually go running every morning before work.",
        ),
        (Role::User, "Thanks!"),
    ];
    Conversation {
        id: "conv-1".into(),
        user_id: "default".into(),
        messages: lines
            .iter()
            .enumerate()
            .map(|(i, (role, text))| message(i, *role, text))
            .collect(),
    }
}

pub fn memory(
    id: &str,
    memory_type: MemoryType,
    summary: &str,
    confidence: f32,
    age_days: i64,
) -> Memory {
    Memory {
        id: id.to_string(),
        memory_type,
        summary: summary.to_string(),
        detail: None,
        scope: match memory_type {
            MemoryType::Goal | MemoryType::Project | MemoryType::Decision | MemoryType::Episode => {
                Scope::Active
            }
            _ => Scope::Durable,
        },
        confidence,
        importance: 0.6,
        durability: 0.7,
        evidence: Evidence::Direct,
        negated: false,
        reinforcements: 0,
        persons: if memory_type == MemoryType::Relationship {
            vec![PersonRef {
                name: "Anna".into(),
                relation: Some("sister".into()),
            }]
        } else {
            Vec::new()
        },
        created_at: NOW - age_days * DAY,
        updated_at: NOW - age_days * DAY,
        last_seen_at: NOW - age_days * DAY,
    }
}

/// A snapshot with enough structure for profile, active state and reflections.
pub fn snapshot() -> Snapshot {
    let memories = vec![
        memory(
            "mem_01",
            MemoryType::Identity,
            "User's name is Dana",
            0.95,
            40,
        ),
        memory(
            "mem_02",
            MemoryType::Identity,
            "User works as a data engineer",
            0.9,
            40,
        ),
        memory(
            "mem_03",
            MemoryType::Preference,
            "User likes green tea",
            0.9,
            20,
        ),
        memory(
            "mem_04",
            MemoryType::Relationship,
            "User's sister is Anna",
            0.9,
            15,
        ),
        memory(
            "mem_05",
            MemoryType::Habit,
            "User goes running every morning",
            0.85,
            12,
        ),
        memory(
            "mem_06",
            MemoryType::Habit,
            "User reads the news every morning",
            0.8,
            10,
        ),
        memory(
            "mem_07",
            MemoryType::Habit,
            "User meditates every morning",
            0.8,
            8,
        ),
        memory(
            "mem_08",
            MemoryType::Goal,
            "User wants to run a marathon",
            0.85,
            6,
        ),
        memory(
            "mem_09",
            MemoryType::Project,
            "User is building a home weather station",
            0.9,
            3,
        ),
        memory(
            "mem_10",
            MemoryType::Decision,
            "User decided to use the BME280 sensor",
            0.9,
            1,
        ),
        memory(
            "mem_11",
            MemoryType::Constraint,
            "User is allergic to peanuts",
            0.95,
            30,
        ),
    ];
    Snapshot {
        user_id: "default".into(),
        memories,
    }
}
