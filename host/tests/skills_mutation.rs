//! A cheap, deterministic stand-in for the cargo-fuzz target (`host/fuzz`): a few
//! thousand inputs made by mutating the edge-case fixtures and registry skills (bit
//! flips, YAML-significant tokens, hidden Unicode, deletions, duplications, splices,
//! truncations) go through the parser and validator. None may panic; every outcome is
//! a skill or a rejection naming a rule, and the same input always gets the same one.

use std::path::Path;

use engram::skills::{Leniency, Origin, load_skill, parse_skill};

mod support;

use support::rng::Rng;

const ITERATIONS: usize = 4000;
/// Fixture bodies are cut to this, so the 2 MB fixture does not dominate the run.
const MAX_SEED_BYTES: usize = 8 * 1024;

/// Bytes that mean something to YAML, to the delimiter scan or to UTF-8.
const BYTES: &[u8] = b"\n\r-:'\"&*[{#!|> \t\x00\xff\xe2";

const TOKENS: &[&[u8]] = &[
    b"---\n",
    b"---\r\n",
    b"\r\n",
    b"\n",
    b": ",
    b"&a ",
    b"*a",
    b"[",
    b"]",
    b"{",
    b"}",
    b"'",
    b"\\'",
    b"\"",
    b"\n  - ",
    b"metadata:\n  ",
    b"allowed-tools: ",
    b"name: ",
    b"description: ",
    b"version: 1.0\n",
    b"!tag ",
    b"!!binary ",
    b"? ",
    b"<<: *a\n",
    b"|\n  ",
    b">-\n  ",
    b"..",
    b"/",
    b"\\",
    b"#",
    b"~",
    b"\xEF\xBB\xBF",
    b"\xE2\x80\x8B",
    b"\xE2\x80\xAE",
    b"\xF3\xA0\x81\x81",
    b"\xFF",
    b"\xC3",
    b"\x00",
    b"(",
    b")",
];

fn seeds() -> Vec<Vec<u8>> {
    let data = support::fixtures();
    let mut files = Vec::new();
    collect(&data.join("skills-edge-cases"), &mut files);
    let mut mirror = Vec::new();
    collect(&data.join("registry-mirror/categories"), &mut mirror);
    mirror.sort();
    files.extend(mirror.into_iter().step_by(7));
    files.sort();
    let seeds: Vec<Vec<u8>> = files
        .iter()
        .map(|f| {
            let mut bytes = std::fs::read(f).unwrap();
            bytes.truncate(MAX_SEED_BYTES);
            bytes
        })
        .collect();
    assert!(seeds.len() > 70, "only {} seed files", seeds.len());
    seeds
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, out);
        } else if path
            .file_name()
            .is_some_and(|n| n.eq_ignore_ascii_case("skill.md"))
        {
            out.push(path);
        }
    }
}

fn mutate(rng: &mut Rng, input: &mut Vec<u8>, seeds: &[Vec<u8>]) {
    let len = input.len();
    match rng.below(7) {
        0 if len > 0 => {
            let i = rng.below(len);
            input[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            input[i] = BYTES[rng.below(BYTES.len())];
        }
        2 => {
            let token = TOKENS[rng.below(TOKENS.len())];
            let at = rng.below(len + 1);
            input.splice(at..at, token.iter().copied());
        }
        3 if len > 0 => {
            let at = rng.below(len);
            let end = (at + 1 + rng.below(16)).min(len);
            input.drain(at..end);
        }
        4 if len > 0 => {
            let at = rng.below(len);
            let end = (at + 1 + rng.below(64)).min(len);
            let chunk = input[at..end].to_vec();
            let to = rng.below(len + 1);
            input.splice(to..to, chunk);
        }
        5 => {
            let other = &seeds[rng.below(seeds.len())];
            let cut = rng.below(len + 1);
            let from = rng.below(other.len() + 1);
            input.truncate(cut);
            input.extend_from_slice(&other[from..]);
        }
        _ => {
            let cut = rng.below(len + 1);
            input.truncate(cut);
        }
    }
}

fn outcome(bytes: &[u8], origin: Origin) -> Result<String, &'static str> {
    load_skill(bytes, origin)
        .map(|s| format!("{}:{}", s.slug, s.sha256))
        .map_err(|e| e.rule())
}

#[test]
fn skills_parser_survives_mutated_inputs() {
    let seeds = seeds();
    let mut rng = Rng(0x5EED_0F5C_1115);
    let mut accepted = 0;
    for _ in 0..ITERATIONS {
        let mut input = seeds[rng.below(seeds.len())].clone();
        for _ in 0..1 + rng.below(4) {
            mutate(&mut rng, &mut input, &seeds);
        }
        let _ = parse_skill(&input);
        let first = outcome(&input, Origin::dir("my-skill"));
        assert_eq!(
            first,
            outcome(&input, Origin::dir("my-skill")),
            "not deterministic"
        );
        if first.is_ok() {
            accepted += 1;
        }
        let _ = outcome(&input, Origin::default());
        // The registry's reading only refuses more: what it accepts, the lenient
        // reading accepts the same way.
        let strict = Origin {
            leniency: Leniency::FrontmatterRequired,
            ..Origin::dir("my-skill")
        };
        if let Ok(skill) = outcome(&input, strict) {
            assert_eq!(Ok(skill), first);
        }
    }
    // The mutations are meant to keep many inputs valid; if none were, the run
    // would only exercise the first checks.
    assert!(accepted > ITERATIONS / 20, "only {accepted} accepted");
}
