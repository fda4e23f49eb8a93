//! The invocation rule, calibrated by repeated stratified cross-validation (issue 17):
//! which best candidates a message invokes, chosen on some folds of the data and
//! reported on the fold left out, so that the figures say how the rule generalises
//! rather than how well it fits.
//!
//! Every query of `queries-dev.csv` (a positive: it needs its tool) and every negative
//! of `awareness-dev.jsonl` (it needs none) is routed once with no minimum; the best
//! candidate's confidence, its margin over the second one's, and its coverage of the
//! message are kept. A rule invokes when all three reach its minimums. On the training
//! folds the rule with the most invoked-correct queries (the invoked skill is the
//! right one) among those with at most [`BUDGET`] false triggers is chosen (ties: the
//! simpler rule, the lower false triggers); it is then applied to the held-out fold.
//! [`FOLDS`]-fold, [`REPEATS`] times with different shuffles: the spread across the
//! held-out folds is reported, with the pooled false-trigger rate's Wilson interval.
//! The rule family with one threshold only is run the same way beside it: whether the
//! margin and coverage signals earn their place.
//!
//! With the encoder (section f) the negatives are two sets, MetaTool's awareness
//! negatives and the everyday messages of `tests/fixtures/routing/needs-no-skill.jsonl`
//! over the same tools, each dealt into the folds and each held to the budget on the
//! training folds: 116 training negatives alone leave the rule's edge to a handful of
//! messages, and what it chose there went over the budget held out.

use engram::routing::{Router, RouterConfig, Routing};

use super::Data;
use super::common::Rng;

pub const FOLDS: usize = 5;
pub const REPEATS: usize = 4;
/// The share of training negatives a rule may invoke a skill for.
pub const BUDGET: f64 = 0.08;

/// What the rule sees of one routed message.
#[derive(Clone, Copy)]
pub struct Observed {
    confidence: f32,
    /// The best candidate's confidence minus the second's (its own when alone).
    margin: f32,
    coverage: f32,
    /// The best candidate's cosine with the message, and its lead over the second's.
    similarity: f32,
    similarity_margin: f32,
    /// The best candidate is the message's tool.
    right: bool,
}

/// No minimum margin. Candidates are ranked by score, not confidence, so the second
/// one's confidence may be the higher and the margin negative: a minimum of 0 is a
/// rule of its own.
pub const NO_MARGIN: f32 = f32::NEG_INFINITY;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    pub min_confidence: f32,
    pub min_margin: f32,
    pub min_coverage: f32,
    /// The best candidate's cosine with the message (0: any).
    pub min_similarity: f32,
    /// Its cosine's lead over the second candidate's ([`NO_MARGIN`]: any; the second's
    /// may be the higher, as for the confidence's margin).
    pub min_similarity_margin: f32,
}

impl Rule {
    fn invokes(&self, o: &Observed) -> bool {
        o.confidence >= self.min_confidence
            && o.margin >= self.min_margin
            && o.coverage >= self.min_coverage
            && o.similarity >= self.min_similarity
            && o.similarity_margin >= self.min_similarity_margin
    }

    /// The rule as the tables print it; the cosine's minimums only when it has them.
    pub fn describe(&self) -> String {
        let at_least = |min: f32| {
            if min == NO_MARGIN {
                "any".to_string()
            } else {
                format!(">= {min:.2}")
            }
        };
        let mut text = format!(
            "confidence >= {:.2}, margin {}, coverage >= {:.2}",
            self.min_confidence,
            at_least(self.min_margin),
            self.min_coverage
        );
        if self.min_similarity > 0.0 || self.min_similarity_margin != NO_MARGIN {
            text.push_str(&format!(
                ", cosine >= {:.2}, its lead {}",
                self.min_similarity,
                at_least(self.min_similarity_margin)
            ));
        }
        text
    }

    fn simple(&self) -> bool {
        self.min_margin == NO_MARGIN
            && self.min_coverage == 0.0
            && self.min_similarity == 0.0
            && self.min_similarity_margin == NO_MARGIN
    }
}

/// The static router's confidence reaches about 7 on the strictest rules; the encoder's,
/// whose meaning part weighs more than twice as much, about 12.
pub const STATIC_MAX_CONFIDENCE: f32 = 7.0;
pub const ENCODED_MAX_CONFIDENCE: f32 = 12.0;

/// Rules to choose from, simplest first for each threshold: minimums from 3 to
/// `max_confidence` in steps of 0.05.
pub fn grid(threshold_only: bool, max_confidence: f32) -> Vec<Rule> {
    let margins: &[f32] = if threshold_only {
        &[NO_MARGIN]
    } else {
        &[NO_MARGIN, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0]
    };
    let coverages: &[f32] = if threshold_only {
        &[0.0]
    } else {
        &[0.0, 0.05, 0.1, 0.15, 0.2]
    };
    let mut rules = Vec::new();
    for step in 60..=(max_confidence * 20.0).round() as u32 {
        for &min_margin in margins {
            for &min_coverage in coverages {
                rules.push(Rule {
                    min_confidence: step as f32 / 20.0,
                    min_margin,
                    min_coverage,
                    min_similarity: 0.0,
                    min_similarity_margin: NO_MARGIN,
                });
            }
        }
    }
    rules
}

/// With an encoder: a minimum confidence and coverage, and minimums on the best
/// candidate's cosine and on its lead over the second's.
pub fn grid_encoded() -> Vec<Rule> {
    let mut rules = Vec::new();
    for step in 0..=60 {
        for min_coverage in [0.0, 0.05, 0.1, 0.2] {
            for min_similarity in [0.0, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6] {
                for min_similarity_margin in [NO_MARGIN, 0.0, 0.02, 0.05, 0.1] {
                    rules.push(Rule {
                        min_confidence: step as f32 / 5.0,
                        min_margin: NO_MARGIN,
                        min_coverage,
                        min_similarity,
                        min_similarity_margin,
                    });
                }
            }
        }
    }
    rules
}

/// The messages routed once by the static router: (positives, negatives).
pub fn observe(data: &Data) -> (Vec<Observed>, Vec<Observed>) {
    let router = Router::with_config(
        super::skills(&data.tools),
        RouterConfig {
            min_confidence: 0.0,
            top_k: 2,
            ..RouterConfig::default()
        },
    );
    observe_with(data, |query| router.route(query))
}

/// The messages routed once by `route` (at least two candidates, no minimum):
/// (positives, negatives).
pub fn observe_with(
    data: &Data,
    route: impl Fn(&str) -> Routing,
) -> (Vec<Observed>, Vec<Observed>) {
    let see = |query: &str, tool: Option<&str>| seen(&route(query), tool);
    let positives = data
        .queries
        .iter()
        .map(|(q, tool)| see(q, Some(tool)))
        .collect();
    let negatives = data
        .awareness
        .iter()
        .filter(|(_, positive, _)| !positive)
        .map(|(q, _, _)| see(q, None))
        .collect();
    (positives, negatives)
}

/// The most negative sets a rule is held to.
pub const NEGATIVE_SETS: usize = 2;

/// Messages that need no skill, routed by `route` as [`observe_with`] does.
pub fn observe_negatives<'a>(
    messages: impl IntoIterator<Item = &'a str>,
    route: impl Fn(&str) -> Routing,
) -> Vec<Observed> {
    messages
        .into_iter()
        .map(|message| seen(&route(message), None))
        .collect()
}

/// What the rule sees of one routing; `tool` is the message's, if it needs one.
fn seen(routing: &Routing, tool: Option<&str>) -> Observed {
    let c = &routing.candidates;
    match c.first() {
        None => Observed {
            confidence: 0.0,
            margin: 0.0,
            coverage: 0.0,
            similarity: 0.0,
            similarity_margin: 0.0,
            right: false,
        },
        Some(best) => Observed {
            confidence: best.confidence,
            margin: best.confidence - c.get(1).map_or(0.0, |s| s.confidence),
            coverage: best.coverage,
            similarity: best.similarity,
            similarity_margin: best.similarity - c.get(1).map_or(0.0, |s| s.similarity),
            right: Some(best.slug.as_str()) == tool,
        },
    }
}

/// Per rule: (false triggers per negative set, invoked-correct) counts over one fold.
#[derive(Clone, Copy, Default)]
struct Counts {
    fired_negatives: [usize; NEGATIVE_SETS],
    negatives: [usize; NEGATIVE_SETS],
    invoked_right: usize,
    positives: usize,
}

impl Counts {
    fn false_triggers(&self, set: usize) -> f64 {
        self.fired_negatives[set] as f64 / self.negatives[set].max(1) as f64
    }
    fn within_budget(&self) -> bool {
        (0..NEGATIVE_SETS).all(|set| self.false_triggers(set) <= BUDGET)
    }
    fn fired(&self) -> usize {
        self.fired_negatives.iter().sum()
    }
    fn invoked_correct(&self) -> f64 {
        self.invoked_right as f64 / self.positives.max(1) as f64
    }
    fn minus(&self, o: &Counts) -> Counts {
        Counts {
            fired_negatives: std::array::from_fn(|i| {
                self.fired_negatives[i] - o.fired_negatives[i]
            }),
            negatives: std::array::from_fn(|i| self.negatives[i] - o.negatives[i]),
            invoked_right: self.invoked_right - o.invoked_right,
            positives: self.positives - o.positives,
        }
    }
    fn add(&mut self, o: &Counts) {
        for i in 0..NEGATIVE_SETS {
            self.fired_negatives[i] += o.fired_negatives[i];
            self.negatives[i] += o.negatives[i];
        }
        self.invoked_right += o.invoked_right;
        self.positives += o.positives;
    }
}

/// The rule chosen on `counts` (one per rule of `rules`).
fn choose(rules: &[Rule], counts: &[Counts]) -> usize {
    let mut best: Option<usize> = None;
    for (i, c) in counts.iter().enumerate() {
        if !c.within_budget() {
            continue;
        }
        let better = match best {
            None => true,
            Some(b) => {
                let (cb, rb) = (&counts[b], &rules[b]);
                (
                    c.invoked_right,
                    std::cmp::Reverse(c.fired()),
                    rules[i].simple(),
                ) > (cb.invoked_right, std::cmp::Reverse(cb.fired()), rb.simple())
            }
        };
        if better {
            best = Some(i);
        }
    }
    // No rule within the budget: the strictest.
    best.unwrap_or(rules.len() - 1)
}

/// What the cross-validation found.
pub struct Report {
    /// Held-out false triggers per negative set, and invoked-correct, one per fold and
    /// repeat.
    pub false_triggers: [Vec<f64>; NEGATIVE_SETS],
    pub invoked_correct: Vec<f64>,
    /// Per negative set, pooled over every held-out fold of every repeat.
    pub pooled: [(usize, usize); NEGATIVE_SETS],
    /// The rule chosen on all the data, and its figures there.
    pub chosen: Rule,
    pub chosen_false_triggers: [f64; NEGATIVE_SETS],
    pub chosen_invoked_correct: f64,
}

/// `negatives`: one set or two, each held to [`BUDGET`] (an empty set constrains
/// nothing).
pub fn cross_validate(
    positives: &[Observed],
    negatives: [&[Observed]; NEGATIVE_SETS],
    rules: &[Rule],
) -> Report {
    let mut rng = Rng(0x0017_F01D);
    let mut report = Report {
        false_triggers: Default::default(),
        invoked_correct: Vec::new(),
        pooled: [(0, 0); NEGATIVE_SETS],
        chosen: rules[0],
        chosen_false_triggers: [0.0; NEGATIVE_SETS],
        chosen_invoked_correct: 0.0,
    };
    for _ in 0..REPEATS {
        // Stratified: positives and each negative set are dealt into the folds
        // separately.
        let pos_fold = deal(positives.len(), &mut rng);
        let neg_folds = negatives.map(|set| deal(set.len(), &mut rng));
        let mut per_fold = vec![vec![Counts::default(); rules.len()]; FOLDS];
        for (r, rule) in rules.iter().enumerate() {
            for (o, f) in positives.iter().zip(&pos_fold) {
                let c = &mut per_fold[*f][r];
                c.positives += 1;
                c.invoked_right += usize::from(o.right && rule.invokes(o));
            }
            for (set, (observed, folds)) in negatives.iter().zip(&neg_folds).enumerate() {
                for (o, f) in observed.iter().zip(folds) {
                    let c = &mut per_fold[*f][r];
                    c.negatives[set] += 1;
                    c.fired_negatives[set] += usize::from(rule.invokes(o));
                }
            }
        }
        let total: Vec<Counts> = (0..rules.len())
            .map(|r| {
                let mut t = Counts::default();
                for fold in &per_fold {
                    t.add(&fold[r]);
                }
                t
            })
            .collect();
        for fold in &per_fold {
            let training: Vec<Counts> = total.iter().zip(fold).map(|(t, f)| t.minus(f)).collect();
            let held_out = fold[choose(rules, &training)];
            for set in 0..NEGATIVE_SETS {
                report.false_triggers[set].push(held_out.false_triggers(set));
                report.pooled[set].0 += held_out.fired_negatives[set];
                report.pooled[set].1 += held_out.negatives[set];
            }
            report.invoked_correct.push(held_out.invoked_correct());
        }
    }
    let all: Vec<Counts> = rules
        .iter()
        .map(|rule| {
            let mut c = Counts::default();
            for o in positives {
                c.positives += 1;
                c.invoked_right += usize::from(o.right && rule.invokes(o));
            }
            for (set, observed) in negatives.iter().enumerate() {
                for o in *observed {
                    c.negatives[set] += 1;
                    c.fired_negatives[set] += usize::from(rule.invokes(o));
                }
            }
            c
        })
        .collect();
    let chosen = choose(rules, &all);
    report.chosen = rules[chosen];
    report.chosen_false_triggers = std::array::from_fn(|set| all[chosen].false_triggers(set));
    report.chosen_invoked_correct = all[chosen].invoked_correct();
    report
}

/// A fold for each of `n` items: a shuffled, even deal.
pub fn deal(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut fold = vec![0; n];
    for (k, i) in order.into_iter().enumerate() {
        fold[i] = k % FOLDS;
    }
    fold
}

/// Mean, standard deviation, min and max.
pub fn spread(xs: &[f64]) -> (f64, f64, f64, f64) {
    let n = xs.len().max(1) as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, var.sqrt(), min, max)
}

/// The 95% Wilson score interval of `k` out of `n`.
pub fn wilson(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (n, p, z) = (n as f64, k as f64 / n as f64, 1.96);
    let centre = p + z * z / (2.0 * n);
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    let d = 1.0 + z * z / n;
    ((centre - half) / d, (centre + half) / d)
}
