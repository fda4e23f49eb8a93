//! `engram memory export|import [--format ...]`: memory in and out, through the running
//! daemon. The other tools' exports are read here, whole, before anything is sent
//! (`memory::import`'s readers: a malformed file is refused naming the entry or line,
//! and nothing is written); then they go to `POST /api/brain/import/batch` in batches
//! small enough for a request, each key imported once.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Method;

use super::client::{ClientError, DaemonClient};
use crate::memory::import::markdown::Note;
use crate::memory::import::{self, Batch, ImportReport};

/// How long one import batch (which learns from its conversations) or an export may
/// take.
pub const TRANSFER_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Conversations per batch: each is learned from in the request, which a model
/// extractor makes slow.
const CONVERSATIONS_PER_BATCH: usize = 20;
/// Memories per batch.
const MEMORIES_PER_BATCH: usize = 1_000;
/// Largest note read.
const MAX_NOTE_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFormat {
    /// Engram's own JSONL export (lossless)
    Engram,
    /// ChatGPT's data export: its conversations.json, or the unzipped folder
    Chatgpt,
    /// Claude's data export: its conversations.json, or the unzipped folder
    Claude,
    /// mem0's memories: the JSON of get_all()
    Mem0,
    /// A folder of Markdown notes (basic-memory, Obsidian)
    Markdown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// JSON lines of every record, ids and times included (import restores it)
    Engram,
    /// A folder of Markdown notes, one per memory type, each memory an observation
    Markdown,
}

/// What `import` prints with `--json`.
#[derive(Debug, serde::Serialize)]
pub struct ImportOutcome {
    pub format: &'static str,
    #[serde(flatten)]
    pub report: ImportReport,
    /// Engram JSONL: the records imported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records: Option<usize>,
}

/// Reads `path` in `format` and imports it for `user` (`query` carries the user).
pub fn import(
    client: &DaemonClient,
    query: &[(&'static str, String)],
    format: ImportFormat,
    path: &Path,
) -> anyhow::Result<ImportOutcome> {
    let batch = match format {
        ImportFormat::Engram => {
            let bytes = read(path)?;
            let answer = client.send_bytes(
                Method::POST,
                "/api/brain/import",
                query,
                crate::api::memory::JSONL,
                bytes,
            )?;
            let imported: serde_json::Value = client.decode("/api/brain/import", &answer)?;
            return Ok(ImportOutcome {
                format: "engram",
                report: ImportReport::default(),
                records: imported["imported"].as_u64().map(|n| n as usize),
            });
        }
        ImportFormat::Chatgpt => import::chatgpt::parse(&read(&conversations_json(path))?),
        ImportFormat::Claude => import::claude::parse(&read(&conversations_json(path))?),
        ImportFormat::Mem0 => import::mem0::parse(&read(path)?),
        ImportFormat::Markdown => import::markdown::parse(&read_notes(path)?),
    };
    // Checked whole here as the daemon checks each part: nothing is sent unless all
    // of it would be taken.
    let refused = |e: import::ImportError| anyhow::anyhow!("{e}; nothing was imported");
    let batch = batch.map_err(refused)?;
    import::validate(&batch, crate::memory::DEFAULT_USER, 0).map_err(refused)?;
    let mut report = ImportReport::default();
    for part in split(batch) {
        let answer: ImportReport = client.post("/api/brain/import/batch", query, Some(&part))?;
        report.add(&answer);
    }
    Ok(ImportOutcome {
        format: match format {
            ImportFormat::Engram => "engram",
            ImportFormat::Chatgpt => "chatgpt",
            ImportFormat::Claude => "claude",
            ImportFormat::Mem0 => "mem0",
            ImportFormat::Markdown => "markdown",
        },
        report,
        records: None,
    })
}

pub fn render_import(outcome: &ImportOutcome) -> String {
    if let Some(records) = outcome.records {
        return format!("imported {records} records (engram JSONL)\n");
    }
    let r = &outcome.report;
    let mut text = format!("imported from {}:", outcome.format);
    if r.conversations > 0 || matches!(outcome.format, "chatgpt" | "claude") {
        text.push_str(&format!(
            " {} conversations ({} messages), {} memories learned from them;",
            r.conversations, r.messages, r.learned
        ));
    }
    if r.memories > 0 || r.reinforced > 0 || matches!(outcome.format, "mem0" | "markdown") {
        text.push_str(&format!(
            " {} memories added, {} already known (reinforced);",
            r.memories, r.reinforced
        ));
    }
    text.push_str(&format!(" {} imported before (skipped)", r.skipped));
    if !r.refused.is_empty() {
        text.push_str(&format!("; {} refused", r.refused.len()));
    }
    text.push('\n');
    for refused in &r.refused {
        text.push_str(&format!(
            "  refused {}: {}\n",
            crate::term_text::clean(&refused.key),
            refused.reason
        ));
    }
    text
}

/// A data export's folder holds `conversations.json`; a file is taken as it is.
fn conversations_json(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("conversations.json")
    } else {
        path.to_path_buf()
    }
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    if path == Path::new("-") {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut bytes)?;
        return Ok(bytes);
    }
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
    {
        anyhow::bail!(
            "{} is a zip archive: unzip it and give its folder (or its conversations.json)",
            path.display()
        );
    }
    std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))
}

/// Every `.md` file under `root` (hidden folders such as `.obsidian` and `.git` left
/// out), with its path relative to `root`.
fn read_notes(root: &Path) -> anyhow::Result<Vec<Note>> {
    if !root.is_dir() {
        anyhow::bail!("{} is not a folder of Markdown notes", root.display());
    }
    let mut notes = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with('.') {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                dirs.push(path);
                continue;
            }
            if !kind.is_file() || !name.to_ascii_lowercase().ends_with(".md") {
                continue;
            }
            let relative = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            if entry.metadata()?.len() > MAX_NOTE_BYTES {
                anyhow::bail!("{relative}: over {MAX_NOTE_BYTES} bytes; nothing was imported");
            }
            let bytes = std::fs::read(&path)?;
            let text = String::from_utf8(bytes).map_err(|e| {
                anyhow::anyhow!(
                    "{relative}: not UTF-8 (byte {}); nothing was imported",
                    e.utf8_error().valid_up_to()
                )
            })?;
            notes.push(Note {
                path: relative,
                text,
            });
        }
    }
    notes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(notes)
}

/// The batch in parts a request can carry.
fn split(batch: Batch) -> Vec<Batch> {
    let source = batch.source;
    let mut parts = Vec::new();
    for chunk in batch.conversations.chunks(CONVERSATIONS_PER_BATCH) {
        let mut part = Batch::new(source);
        part.conversations = chunk.to_vec();
        parts.push(part);
    }
    for chunk in batch.memories.chunks(MEMORIES_PER_BATCH) {
        let mut part = Batch::new(source);
        part.memories = chunk.to_vec();
        parts.push(part);
    }
    parts
}

/// What `export` prints with `--json`.
#[derive(Debug, serde::Serialize)]
pub struct ExportOutcome {
    pub format: &'static str,
    pub path: Option<PathBuf>,
    /// JSONL lines, or memories written as observations.
    pub count: usize,
}

/// Exports `user`'s memory in `format` to `output` (a file, `-` or none for stdout
/// with `engram`; a folder with `markdown`).
pub fn export(
    client: &DaemonClient,
    query: &[(&'static str, String)],
    format: ExportFormat,
    output: Option<&Path>,
) -> anyhow::Result<ExportOutcome> {
    match format {
        ExportFormat::Engram => {
            let bytes = client.send::<()>(Method::GET, "/api/brain/export", query, None)?;
            let count = bytes.iter().filter(|b| **b == b'\n').count();
            match output.filter(|p| *p != Path::new("-")) {
                Some(path) => {
                    write_private(path, &bytes)?;
                    Ok(ExportOutcome {
                        format: "engram",
                        path: Some(path.to_path_buf()),
                        count,
                    })
                }
                None => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(&bytes)?;
                    out.flush()?;
                    Ok(ExportOutcome {
                        format: "engram",
                        path: None,
                        count,
                    })
                }
            }
        }
        ExportFormat::Markdown => {
            let dir = output.ok_or_else(|| {
                anyhow::anyhow!("--format markdown writes a folder: give it with --output DIR")
            })?;
            let memories = all_memories(client, query)?;
            let count = memories.len();
            write_notes(dir, &memories)?;
            Ok(ExportOutcome {
                format: "markdown",
                path: Some(dir.to_path_buf()),
                count,
            })
        }
    }
}

/// Every live memory of the user, page by page.
fn all_memories(
    client: &DaemonClient,
    query: &[(&'static str, String)],
) -> Result<Vec<super::answers::Memory>, ClientError> {
    let mut memories = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut params = query.to_vec();
        params.push(("limit", "500".to_string()));
        if let Some(cursor) = &cursor {
            params.push(("cursor", cursor.clone()));
        }
        let page: super::answers::MemoryPage = client.get("/api/brain/memory", &params)?;
        memories.extend(page.items);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(memories),
        }
    }
}

/// One note per memory type, each memory a basic-memory observation
/// (`- [type] summary`), which `import --format markdown` reads back.
fn write_notes(dir: &Path, memories: &[super::answers::Memory]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let mut by_type: std::collections::BTreeMap<&str, Vec<&super::answers::Memory>> =
        Default::default();
    for memory in memories {
        by_type
            .entry(memory.memory_type.as_str())
            .or_default()
            .push(memory);
    }
    for (memory_type, items) in by_type {
        let mut text = format!(
            "---\ntitle: {memory_type}\ntype: engram-export\n---\n\n# {memory_type}\n\n## Observations\n"
        );
        for memory in items {
            let summary = memory.summary.replace(['\n', '\r'], " ");
            text.push_str(&format!("- [{memory_type}] {summary}\n"));
        }
        write_private(&dir.join(format!("{memory_type}.md")), text.as_bytes())?;
    }
    Ok(())
}

/// Writes a file only its owner reads: it holds what Engram knows of the person.
pub fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(())
}
