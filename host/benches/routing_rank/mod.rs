//! The ranking's constants, chosen by cross-validation (issue 17): the semantic and
//! fuzzy weights, BM25's `k1`, the name field's weight and `b`, and the description's
//! `b`, chosen on some folds of `queries-dev.csv` for the best top-1 and reported on
//! the fold left out.
//!
//! Per training set, coordinate ascent from the router's defaults: each constant in
//! turn takes the value of its grid with the most top-1 hits on the training queries
//! (ties keep the current value), two passes. Each configuration routes every query
//! once and its hits are kept, so the folds share the work. Five folds, [`REPEATS`]
//! times with different shuffles; the same procedure on all the queries gives the
//! constants the router ships with.

use std::collections::HashMap;

use engram::routing::{Router, RouterConfig};

use super::common::Rng;
use super::routing_rule::{FOLDS, deal};
use super::{Bm25, Data, TOP_K, skills};

pub const REPEATS: usize = 2;
const PASSES: usize = 2;

/// One tunable constant: its name, its grid, and how it sets a configuration.
struct Knob {
    name: &'static str,
    values: &'static [f32],
    set: fn(&mut RouterConfig, f32),
    get: fn(&RouterConfig) -> f32,
}

const KNOBS: [Knob; 6] = [
    Knob {
        name: "semantic weight",
        values: &[3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0],
        set: |c, v| c.semantic_weight = v,
        get: |c| c.semantic_weight,
    },
    Knob {
        name: "fuzzy weight",
        values: &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
        set: |c, v| c.fuzzy_weight = v,
        get: |c| c.fuzzy_weight,
    },
    Knob {
        name: "k1",
        values: &[0.6, 0.9, 1.2, 1.5, 2.0],
        set: |c, v| c.k1 = v,
        get: |c| c.k1,
    },
    Knob {
        name: "name weight",
        values: &[0.75, 1.0, 1.25, 1.5, 2.0, 2.5],
        set: |c, v| c.field_weight[0] = v,
        get: |c| c.field_weight[0],
    },
    Knob {
        name: "name b",
        values: &[0.0, 0.3, 0.6, 0.9],
        set: |c, v| c.field_b[0] = v,
        get: |c| c.field_b[0],
    },
    Knob {
        name: "description b",
        values: &[0.0, 0.15, 0.3, 0.5, 0.75],
        set: |c, v| c.field_b[4] = v,
        get: |c| c.field_b[4],
    },
];

type Point = [usize; KNOBS.len()];

/// Top-1 hits per query for each configuration routed so far.
struct Hits<'a> {
    data: &'a Data,
    seen: HashMap<Point, Vec<bool>>,
}

impl Hits<'_> {
    fn config(point: &Point) -> RouterConfig {
        let mut c = RouterConfig {
            top_k: 1,
            ..RouterConfig::default()
        };
        for (k, i) in KNOBS.iter().zip(point) {
            (k.set)(&mut c, k.values[*i]);
        }
        c
    }

    fn of(&mut self, point: &Point) -> &[bool] {
        let data = self.data;
        self.seen.entry(*point).or_insert_with(|| {
            let router = Router::with_config(skills(&data.tools), Hits::config(point));
            data.queries
                .iter()
                .map(|(q, tool)| {
                    router
                        .route(q)
                        .candidates
                        .first()
                        .is_some_and(|c| c.slug == *tool)
                })
                .collect()
        })
    }

    /// Coordinate ascent over the queries `rows` marks.
    fn ascend(&mut self, rows: &[bool]) -> Point {
        let count = |hits: &[bool]| hits.iter().zip(rows).filter(|(h, r)| **h && **r).count();
        let mut point = defaults();
        let mut best = count(self.of(&point));
        for _ in 0..PASSES {
            for (k, knob) in KNOBS.iter().enumerate() {
                for i in 0..knob.values.len() {
                    let mut p = point;
                    p[k] = i;
                    let c = count(self.of(&p));
                    if c > best {
                        (best, point) = (c, p);
                    }
                }
            }
        }
        point
    }
}

/// The router's defaults on the grid (each default is one of its knob's values).
fn defaults() -> Point {
    let d = RouterConfig::default();
    std::array::from_fn(|k| {
        let knob = &KNOBS[k];
        knob.values
            .iter()
            .position(|v| *v == (knob.get)(&d))
            .unwrap_or_else(|| panic!("the default {} is on its grid", knob.name))
    })
}

pub struct Report {
    /// Held-out top-1 per fold and repeat: the chosen constants, the router's
    /// defaults, plain BM25.
    pub chosen: Vec<f64>,
    pub defaults: Vec<f64>,
    pub baseline: Vec<f64>,
    /// The constants chosen on all the queries, as "name value" pairs, and their top-1.
    pub on_all: Vec<(&'static str, f32)>,
    pub on_all_top1: f64,
    /// Whether the router's defaults are what the procedure chooses on all the queries.
    pub defaults_chosen: bool,
    pub configurations: usize,
}

pub fn cross_validate(data: &Data) -> Report {
    let mut hits = Hits {
        data,
        seen: HashMap::new(),
    };
    let bm25 = Bm25::new(&data.tools);
    let base: Vec<bool> = data
        .queries
        .iter()
        .map(|(q, tool)| bm25.top(q, TOP_K).first() == Some(&tool.as_str()))
        .collect();
    let share = |h: &[bool], rows: &[bool]| {
        let n = rows.iter().filter(|r| **r).count();
        h.iter().zip(rows).filter(|(h, r)| **h && **r).count() as f64 / n.max(1) as f64
    };
    let mut rng = Rng(0x0017_5A4E);
    let mut report = Report {
        chosen: Vec::new(),
        defaults: Vec::new(),
        baseline: Vec::new(),
        on_all: Vec::new(),
        on_all_top1: 0.0,
        defaults_chosen: false,
        configurations: 0,
    };
    let n = data.queries.len();
    for _ in 0..REPEATS {
        let fold = deal(n, &mut rng);
        for f in 0..FOLDS {
            let training: Vec<bool> = fold.iter().map(|x| *x != f).collect();
            let held_out: Vec<bool> = fold.iter().map(|x| *x == f).collect();
            let point = hits.ascend(&training);
            report.chosen.push(share(hits.of(&point), &held_out));
            report.defaults.push(share(hits.of(&defaults()), &held_out));
            report.baseline.push(share(&base, &held_out));
        }
    }
    let all = vec![true; n];
    let point = hits.ascend(&all);
    report.on_all = KNOBS
        .iter()
        .zip(point)
        .map(|(k, i)| (k.name, k.values[i]))
        .collect();
    report.on_all_top1 = share(hits.of(&point), &all);
    report.defaults_chosen = point == defaults();
    report.configurations = hits.seen.len();
    report
}
