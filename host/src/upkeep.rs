//! What a process serving a data directory runs beside its requests (`engram serve`,
//! `engram mcp --embedded`): the Second Brain's maintenance and the scheduler, each a
//! loop on a timer whose passes run off the async workers, the vector worker woken by
//! the Second Brain's commits, and the checkpoints of a clean stop.

use std::sync::Arc;

use crate::app::App;

/// Starts what a process serving the data directory runs beside its requests: the
/// Second Brain's maintenance and the scheduler (`engram serve`, `engram mcp
/// --embedded`). Abort the tasks when serving ends.
pub fn spawn_loops(app: &Arc<App>) -> Vec<tokio::task::JoinHandle<()>> {
    vec![
        tokio::spawn(maintain(app.clone())),
        tokio::spawn(run_schedules(app.clone())),
        tokio::spawn(embed(app.clone())),
    ]
}

/// Checkpoints every database's WAL, for a clean stop.
pub fn checkpoint(app: &App) {
    if let Ok(brain) = app.memory.brain()
        && let Err(e) = brain.store().checkpoint()
    {
        tracing::warn!("WAL checkpoint at shutdown failed: {e}");
    }
    if let Err(e) = app.gate.audit().checkpoint() {
        tracing::warn!("audit log checkpoint at shutdown failed: {e}");
    }
    if let Err(e) = app.schedules.checkpoint() {
        tracing::warn!("schedules checkpoint at shutdown failed: {e}");
    }
}

/// How often the Second Brain's maintenance runs (ending idle conversations is due
/// within this much of its 10 minutes; consolidation keeps its own schedule).
const MAINTENANCE_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs the Second Brain's maintenance on a timer, off the async workers.
async fn maintain(app: Arc<App>) {
    if app.memory.brain().is_err() {
        return;
    }
    let warm = app.clone();
    let built = crate::background::run(move || warm.memory.brain().map(|b| b.warm())).await;
    if let Ok(Ok(Err(e))) = built {
        tracing::error!("building the Second Brain's memory index: {e}");
    }
    let mut ticker = tokio::time::interval(MAINTENANCE_EVERY);
    loop {
        ticker.tick().await;
        let app = app.clone();
        let pass = crate::background::run(move || {
            let config = app.config.current();
            if let Ok(kinds) = config.memory.redact_kinds() {
                app.memory.set_redaction(kinds);
            }
            app.memory.maintain(&app.strategies, &config.memory)
        })
        .await;
        match pass {
            Ok(Some(report)) if report != Default::default() => {
                tracing::info!(?report, "Second Brain maintenance")
            }
            Ok(_) => {}
            Err(e) => tracing::error!("Second Brain maintenance panicked: {e}"),
        }
    }
}

/// With an installed sentence encoder, gives it to the Second Brain (retrieval reads
/// meaning with it from then on) and embeds what has no vector of it: everything at
/// the first start with a model (or with a new one), then what each commit wrote,
/// pass after pass off the async workers while passes find more. Nothing without a
/// model.
async fn embed(app: Arc<App>) {
    if app.memory.brain().is_err() {
        return;
    }
    let loading = app.clone();
    let given = crate::background::run(move || {
        let encoder = loading.encoder.encoder()?;
        loading.memory.brain().ok()?.set_encoder(encoder);
        Some(())
    })
    .await;
    if !matches!(given, Ok(Some(()))) {
        return;
    }
    loop {
        let started = tokio::time::Instant::now();
        let worker = app.clone();
        let pass =
            crate::background::run(move || worker.memory.brain().map(|b| b.embed_pending())).await;
        let more = match pass {
            Ok(Ok(Ok(pass))) => {
                if pass.memories + pass.messages > 0 {
                    tracing::debug!(?pass, "Second Brain vectors written");
                }
                pass.more
            }
            Ok(Ok(Err(e))) => {
                tracing::warn!(
                    "embedding the Second Brain's texts: {e} (tried again after the next write)"
                );
                false
            }
            Ok(Err(_)) => return,
            Err(e) => {
                tracing::error!("embedding the Second Brain's texts panicked: {e}");
                false
            }
        };
        if !more {
            match app.memory.brain() {
                Ok(brain) => brain.written().await,
                Err(_) => return,
            }
            // A pass looks through every row for one without a vector: a burst of
            // writes is embedded together, at most one pass per gap, and meanwhile
            // retrieval reads their meaning from the static table.
            tokio::time::sleep_until(started + EMBED_GAP).await;
        }
    }
}

/// The least time between two passes of the vector worker that find nothing more.
const EMBED_GAP: std::time::Duration = std::time::Duration::from_secs(10);

/// How often the scheduler looks for due schedules (a run is at most this late).
const SCHEDULES_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// Fires due schedules on a timer, off the async workers: each run opens a turn
/// through the turn service, with the schedule's skill forced.
async fn run_schedules(app: Arc<App>) {
    let mut ticker = tokio::time::interval(SCHEDULES_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let app = app.clone();
        let pass = crate::background::run(move || {
            use crate::schedule::runner::{open_run, run_due};
            run_due(&app.schedules, &app.events, |schedule| {
                open_run(&app.turns, schedule)
            })
        })
        .await;
        match pass {
            Ok(Ok(pass)) if pass != Default::default() => {
                tracing::info!(fired = pass.fired, failed = pass.failed, "scheduled runs")
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::error!("the scheduler cannot read the schedules: {e}"),
            Err(e) => tracing::error!("the scheduler panicked: {e}"),
        }
    }
}
