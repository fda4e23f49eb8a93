//! The layering in ARCHITECTURE.md, checked against the code: every `crate::` path in
//! `host/src` is an import from one top-level module to another, and none may run up a
//! layer or close a circle. A new top-level module must be given its layer here and a
//! line in the codemap.
//!
//! One level down the same holds: the modules of a folder (`memory/brain/store.rs`,
//! `memory/brain/writer.rs`, ...) form no circle either, and the Second Brain
//! (`memory/brain/`) is named by `memory/` alone: everyone else goes through its facade.
//!
//! It reads the source as text (paths in code, comments left out), which is what the
//! layering is about: who names whom.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module's layer, highest first. A module may import modules of its
/// own layer or below, never above; within a layer the imports form no circle.
const LAYERS: &[(&str, &[&str])] = &[
    ("front doors: commands", &["cli", "server"]),
    (
        "front doors: surfaces",
        &["api", "mcp", "dashboard", "channels"],
    ),
    ("assembly", &["app", "upkeep"]),
    ("services: turns and runs", &["agent", "turns", "schedule"]),
    ("services: the turn's parts", &["tools", "gate", "routing"]),
    ("services: memory", &["memory"]),
    ("services: stores and runtime", &["skills", "runtime"]),
    (
        "foundations",
        &[
            "net",
            "sqlite",
            "pg",
            "sql",
            "storage",
            "lock",
            "credentials",
            "described",
            "connections",
            "background",
            "backup",
            "logging",
            "events",
            "config",
            "paths",
            "time",
            "ids",
            "installs",
            "strict_json",
            "html",
            "term_text",
            "embed",
        ],
    ),
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level module a file belongs to (`brain/store.rs` -> `brain`), or None for
/// the crate roots.
fn top_module(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read host/src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Code without its comments: line comments and doc comments are dropped, so a
/// module that only mentions another in prose does not import it.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter_map(|(i, line)| {
        let code = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        (!code.trim().is_empty()).then_some((i + 1, code))
    })
}

/// The top-level modules a line of code names through `crate::`, including each one
/// of a `use crate::{a, b::c}` group opened on that line (groups that span lines are
/// followed by `imports_of`).
fn named_modules(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        names.extend(leading_ident(rest));
    }
    names
}

fn leading_ident(text: &str) -> Option<String> {
    let ident: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!ident.is_empty()).then_some(ident)
}

/// Every (line, module) a file imports or names through `crate::`.
fn imports_of(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    // Inside a `use crate::{ ... }` group: the brace depth, names taken at depth 1.
    let mut group_depth = 0usize;
    for (number, code) in code_lines(text) {
        let mut rest = code;
        if group_depth == 0 {
            match code.find("crate::{") {
                Some(at) => {
                    found.extend(named_modules(&code[..at]).into_iter().map(|m| (number, m)));
                    rest = &code[at + "crate::".len()..];
                }
                None => {
                    found.extend(named_modules(code).into_iter().map(|m| (number, m)));
                    continue;
                }
            }
        }
        let mut at_item_start = group_depth == 1;
        for (i, c) in rest.char_indices() {
            match c {
                '{' => {
                    group_depth += 1;
                    at_item_start = group_depth == 1;
                }
                '}' => {
                    group_depth = group_depth.saturating_sub(1);
                    if group_depth == 0 {
                        break;
                    }
                }
                ',' if group_depth == 1 => at_item_start = true,
                c if c.is_whitespace() => {}
                _ if at_item_start => {
                    at_item_start = false;
                    if let Some(name) = leading_ident(&rest[i..])
                        && name != "self"
                    {
                        found.push((number, name));
                    }
                }
                _ => {}
            }
        }
    }
    found
}

struct Edge {
    from: String,
    to: String,
    /// Where it was seen first: `brain/store.rs:12`.
    at: String,
}

fn edges() -> Vec<Edge> {
    let root = src_dir();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    let mut seen = BTreeSet::new();
    let mut edges = Vec::new();
    for path in files {
        let relative = path.strip_prefix(&root).expect("under src").to_path_buf();
        let Some(from) = top_module(&relative) else {
            continue;
        };
        let text = std::fs::read_to_string(&path).expect("read source");
        for (line, to) in imports_of(&text) {
            if to != from && seen.insert((from.clone(), to.clone())) {
                edges.push(Edge {
                    from: from.clone(),
                    to,
                    at: format!("{}:{line}", relative.display()),
                });
            }
        }
    }
    edges
}

fn layer_of() -> BTreeMap<&'static str, usize> {
    let mut layer = BTreeMap::new();
    for (rank, (_, modules)) in LAYERS.iter().enumerate() {
        for module in *modules {
            layer.insert(*module, rank);
        }
    }
    layer
}

fn top_level_modules() -> BTreeSet<String> {
    std::fs::read_dir(src_dir())
        .expect("read host/src")
        .filter_map(|e| top_module(Path::new(&e.expect("entry").file_name())))
        .collect()
}

#[test]
fn every_top_level_module_has_a_layer_and_a_line_in_the_codemap() {
    let layer = layer_of();
    let codemap =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md"))
            .expect("read ARCHITECTURE.md");
    let mut problems = Vec::new();
    for module in top_level_modules() {
        if !layer.contains_key(module.as_str()) {
            problems.push(format!(
                "`{module}` has no layer: add it to LAYERS in host/tests/architecture.rs"
            ));
        }
        if !codemap.contains(&format!("{module}/")) && !codemap.contains(&format!("{module}.rs")) {
            problems.push(format!("`{module}` is not in ARCHITECTURE.md's codemap"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_import_runs_up_a_layer() {
    let layer = layer_of();
    let upward: Vec<String> = edges()
        .into_iter()
        .filter_map(|e| {
            let (from, to) = (layer.get(e.from.as_str())?, layer.get(e.to.as_str())?);
            (to < from).then(|| {
                format!(
                    "{} ({}) imports {} ({}) at {}",
                    e.from, LAYERS[*from].0, e.to, LAYERS[*to].0, e.at
                )
            })
        })
        .collect();
    assert!(
        upward.is_empty(),
        "imports up a layer:\n{}",
        upward.join("\n")
    );
}

#[test]
fn top_level_modules_import_each_other_without_a_circle() {
    let edges = edges();
    let mut graph: BTreeMap<&str, Vec<&Edge>> = BTreeMap::new();
    for edge in &edges {
        graph.entry(edge.from.as_str()).or_default().push(edge);
    }
    // Depth-first search; a grey node met again closes a circle.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Grey,
        Black,
    }
    fn visit<'a>(
        node: &'a str,
        graph: &BTreeMap<&'a str, Vec<&'a Edge>>,
        marks: &mut BTreeMap<&'a str, Mark>,
        path: &mut Vec<&'a Edge>,
    ) -> Option<Vec<&'a Edge>> {
        marks.insert(node, Mark::Grey);
        for edge in graph.get(node).into_iter().flatten() {
            path.push(edge);
            match marks.get(edge.to.as_str()) {
                Some(Mark::Grey) => {
                    let start = path.iter().position(|e| e.from == edge.to).unwrap_or(0);
                    return Some(path[start..].to_vec());
                }
                Some(Mark::Black) => {}
                None => {
                    if let Some(circle) = visit(edge.to.as_str(), graph, marks, path) {
                        return Some(circle);
                    }
                }
            }
            path.pop();
        }
        marks.insert(node, Mark::Black);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if marks.contains_key(node) {
            continue;
        }
        if let Some(circle) = visit(node, &graph, &mut marks, &mut Vec::new()) {
            let steps: Vec<String> = circle
                .iter()
                .map(|e| format!("{} -> {} ({})", e.from, e.to, e.at))
                .collect();
            panic!("import circle:\n{}", steps.join("\n"));
        }
    }
}

#[test]
fn the_reader_sees_grouped_and_plain_imports_but_not_prose() {
    let text = "//! see crate::turns\nuse crate::{\n    brain::Brain,\n    gate::{self, Gate},\n};\nlet x = crate::net::get(); // crate::html\n";
    let names: Vec<String> = imports_of(text).into_iter().map(|(_, m)| m).collect();
    assert_eq!(names, ["brain", "gate", "net"]);
}

/// Work leaves the async workers one way: `background.rs` (which lowers its threads'
/// priority); a bare `spawn_blocking` elsewhere would run at the workers' priority.
#[test]
fn only_background_rs_spawns_blocking_work() {
    let root = src_dir();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut found = Vec::new();
    for path in files {
        let relative = path.strip_prefix(&root).expect("under src");
        if relative == Path::new("background.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read a source file");
        for (number, code) in code_lines(&text) {
            if code.contains("spawn_blocking") {
                found.push(format!("{}:{number}", relative.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "spawn_blocking outside background.rs: {found:?}"
    );
}

/// A file's module path: `memory/brain/store.rs` -> `memory::brain::store`, a folder's
/// `mod.rs` -> the folder's.
fn module_path(relative: &Path) -> Vec<String> {
    let mut path: Vec<String> = relative
        .components()
        .filter_map(|c| c.as_os_str().to_str().map(str::to_string))
        .collect();
    if let Some(last) = path.pop() {
        let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
        if !matches!(stem.as_str(), "mod" | "lib" | "main") {
            path.push(stem);
        }
    }
    path
}

/// A test module (`tests.rs`, `*_tests.rs`): it may name everything it tests.
fn is_test_file(relative: &Path) -> bool {
    relative
        .file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|s| s == "tests" || s.ends_with("_tests"))
}

/// The code of a file without comments and without its `#[cfg(test)] mod ... { }`
/// blocks (a test module names what it tests), one entry per line.
fn production_code(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<(usize, &str)> = code_lines(text).collect();
    let mut kept = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (number, code) = lines[i];
        let test_block = code.trim_end() == "#[cfg(test)]"
            && lines.get(i + 1).is_some_and(|(_, next)| {
                next.starts_with("mod ") && next.trim_end().ends_with('{')
            });
        if test_block {
            i += 2;
            while i < lines.len() && lines[i].1.trim_end() != "}" {
                i += 1;
            }
        } else {
            kept.push((number, code.to_string()));
        }
        i += 1;
    }
    kept
}

/// The paths of a `use` tree (or a plain path) starting at `at`, each as its segments:
/// `a::{b, c::d}` -> `a::b`, `a::c::d`. A glob or `self` ends a path where it stands.
fn path_tree(text: &[char], mut at: usize) -> Vec<Vec<String>> {
    while at < text.len() && text[at].is_whitespace() {
        at += 1;
    }
    if text.get(at) == Some(&'{') {
        let mut paths = Vec::new();
        let mut depth = 0usize;
        let mut item_start = at + 1;
        for i in at..text.len() {
            match text[i] {
                '{' => depth += 1,
                '}' | ',' if depth == 1 => {
                    paths.extend(path_tree(text, item_start));
                    item_start = i + 1;
                    if text[i] == '}' {
                        break;
                    }
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        return paths;
    }
    let ident: String = text[at..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
        .collect();
    if ident.is_empty() || ident == "self" {
        return vec![Vec::new()];
    }
    let after = at + ident.chars().count();
    if text.get(after) == Some(&':') && text.get(after + 1) == Some(&':') {
        path_tree(text, after + 2)
            .into_iter()
            .map(|mut rest| {
                rest.insert(0, ident.clone());
                rest
            })
            .collect()
    } else {
        vec![vec![ident]]
    }
}

/// Every path a file's production code names through `crate::`, `super::` or `self::`,
/// made absolute (`super::store::q` in `memory/brain/text_index.rs` ->
/// `memory::brain::store::q`), with its line.
fn absolute_paths(module: &[String], text: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    for (number, code) in production_code(text) {
        let chars: Vec<char> = code.chars().collect();
        for start in 0..chars.len() {
            if start > 0
                && (chars[start - 1].is_ascii_alphanumeric()
                    || chars[start - 1] == '_'
                    || chars[start - 1] == ':')
            {
                continue;
            }
            let rest: String = chars[start..].iter().take(7).collect();
            let (base, skip): (Vec<String>, usize) = if rest.starts_with("crate::") {
                (Vec::new(), 7)
            } else if rest.starts_with("super::") {
                (module[..module.len().saturating_sub(1)].to_vec(), 7)
            } else if rest.starts_with("self::") {
                (module.to_vec(), 6)
            } else {
                continue;
            };
            for tail in path_tree(&chars, start + skip) {
                let mut path = base.clone();
                for segment in tail {
                    if segment == "super" {
                        path.pop();
                    } else {
                        path.push(segment);
                    }
                }
                found.push((number, path));
            }
        }
    }
    found
}

/// Every production source file: its path under `host/src` and its module path.
fn source_modules() -> Vec<(PathBuf, Vec<String>)> {
    let root = src_dir();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| path.strip_prefix(&root).expect("under src").to_path_buf())
        .filter(|relative| !is_test_file(relative))
        .map(|relative| {
            let module = module_path(&relative);
            (relative, module)
        })
        .collect()
}

#[test]
fn only_memory_names_the_second_brain() {
    let root = src_dir();
    let mut found = Vec::new();
    for (relative, module) in source_modules() {
        if module.first().is_some_and(|m| m == "memory") {
            continue;
        }
        let text = std::fs::read_to_string(root.join(&relative)).expect("read source");
        for (line, path) in absolute_paths(&module, &text) {
            if path.len() >= 2 && path[0] == "memory" && path[1] == "brain" {
                found.push(format!("{}:{line}", relative.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the Second Brain named outside memory/ (go through memory::Memory and what memory/ exports): {found:?}"
    );
}

#[test]
fn modules_of_a_folder_import_each_other_without_a_circle() {
    let root = src_dir();
    let modules = source_modules();
    let known: BTreeSet<Vec<String>> = modules.iter().map(|(_, m)| m.clone()).collect();
    // folder -> child -> the children it names, with where.
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeMap<String, String>>> =
        BTreeMap::new();
    for (relative, module) in &modules {
        let text = std::fs::read_to_string(root.join(relative)).expect("read source");
        for (line, path) in absolute_paths(module, &text) {
            let common = module.iter().zip(&path).take_while(|(a, b)| a == b).count();
            if common == 0 || common >= module.len() || common >= path.len() {
                continue;
            }
            let (folder, to) = (module[..common].to_vec(), path[..=common].to_vec());
            if !known.contains(&to) {
                continue;
            }
            graphs
                .entry(folder)
                .or_default()
                .entry(module[common].clone())
                .or_default()
                .entry(to[common].clone())
                .or_insert_with(|| format!("{}:{line}", relative.display()));
        }
    }
    let mut details = Vec::new();
    for (folder, graph) in &graphs {
        for component in strongly_connected(graph) {
            let folder = folder.join("/");
            let steps: Vec<String> = component
                .iter()
                .flat_map(|from| {
                    graph[from]
                        .iter()
                        .filter(|(to, _)| component.contains(*to))
                        .map(move |(to, at)| format!("  {from} -> {to} ({at})"))
                })
                .collect();
            details.push(format!("{folder}/: {component:?}\n{}", steps.join("\n")));
        }
    }
    assert!(
        details.is_empty(),
        "circles between the modules of a folder:\n{}",
        details.join("\n")
    );
}

/// The groups of two or more modules that reach each other (Tarjan's algorithm).
fn strongly_connected(graph: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeMap<String, String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(node: &'a str, s: &mut State<'a>) {
        let next = s.index.len();
        s.index.insert(node, next);
        s.low.insert(node, next);
        s.stack.push(node);
        s.on_stack.insert(node);
        let graph = s.graph;
        for to in graph.get(node).into_iter().flat_map(|edges| edges.keys()) {
            let to = to.as_str();
            if !s.index.contains_key(to) {
                visit(to, s);
                let low = s.low[node].min(s.low[to]);
                s.low.insert(node, low);
            } else if s.on_stack.contains(to) {
                let low = s.low[node].min(s.index[to]);
                s.low.insert(node, low);
            }
        }
        if s.low[node] == s.index[node] {
            let mut component = BTreeSet::new();
            while let Some(member) = s.stack.pop() {
                s.on_stack.remove(member);
                component.insert(member.to_string());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                s.found.push(component);
            }
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(node, &mut state);
        }
    }
    state.found
}

#[test]
fn the_path_reader_resolves_super_and_groups() {
    let module: Vec<String> = ["memory", "brain", "store"].map(String::from).to_vec();
    let text = "use super::{text_index::TextIndex, writer};\nuse crate::memory::{self, record::X};\n#[cfg(test)]\nmod tests {\n    use super::super::forget;\n}\n";
    let paths: Vec<String> = absolute_paths(&module, text)
        .into_iter()
        .map(|(_, p)| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "memory::brain::text_index::TextIndex",
            "memory::brain::writer",
            "memory",
            "memory::record::X"
        ]
    );
}
