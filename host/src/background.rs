//! Work off the async workers, at a lower CPU priority than they have.
//!
//! The async workers parse requests and answer the cheap ones (a read by id, a health
//! check) in place; everything that blocks or grows with the data goes here:
//! - [`run`]: the blocking pool, for service calls (SQLite writes, files, plugins);
//! - [`heavy`] (and [`heavy_blocking`] for callers that are not async): the search
//!   lanes, for reads whose cost grows with the data (full-text search). One lane per
//!   two cores: waiting searches queue here, first come first served, instead of
//!   sharing the cores with everything else. The memory service sends its searches
//!   here itself (`memory::Memory::search_hits`), whichever front door asked.
//!
//! Both run at [`NICE`] (Linux): when the cores are busy, the workers go first, so a
//! GET by id does not queue behind searches and commits. Under the mixed REST load on
//! 2 cores (`--bench api_load`, runs alternating in the same minutes, before the last
//! CPU cuts), a GET by id took 0.65 to 0.84 ms at p50 with everything at nice 0 and
//! 0.47 to 0.64 ms with the lanes and the pool at nice 5, at about the same
//! throughput; nice 10 cost throughput for no better GET. Only the threads doing this
//! work are lowered; the process's own priority is left alone.

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{LazyLock, Mutex};

/// How much lower than the workers (the scheduler's nice value added to the thread).
pub const NICE: i32 = 5;

#[derive(Debug, thiserror::Error)]
pub enum BackgroundError {
    #[error("background work panicked: {0}")]
    Panicked(String),
    #[error("background work was cancelled")]
    Cancelled,
}

/// Runs `f` on the blocking pool, at background priority.
pub async fn run<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, BackgroundError> {
    tokio::task::spawn_blocking(move || {
        lower_this_thread();
        f()
    })
    .await
    .map_err(|e| {
        if e.is_panic() {
            BackgroundError::Panicked(panic_text(&e.into_panic()))
        } else {
            BackgroundError::Cancelled
        }
    })
}

type Job = Box<dyn FnOnce() + Send>;

/// The search lanes' queue; the lane threads start with the first job.
static LANES: LazyLock<Sender<Job>> = LazyLock::new(|| {
    let (send, receive) = std::sync::mpsc::channel::<Job>();
    let receive: &'static Mutex<Receiver<Job>> = Box::leak(Box::new(Mutex::new(receive)));
    for n in 0..lanes() {
        let spawned = std::thread::Builder::new()
            .name(format!("engram-search-{n}"))
            .spawn(move || {
                lower_this_thread();
                ON_LANE.set(true);
                loop {
                    // Holding the lock only to take a job: the lanes run jobs at once.
                    let job = receive.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                }
            });
        if let Err(e) = spawned {
            // The queue still works while one lane runs; with none, `heavy` reports it.
            tracing::error!("starting search lane {n}: {e}");
        }
    }
    send
});

/// How many searches run at once: one per two cores. More at once only share the
/// cores: each takes longer, and so do the point reads and the writes that need them.
pub fn lanes() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores / 2).max(1)
}

/// Runs `f` on a search lane, at background priority, once the searches queued
/// before it have started. A caller that stops waiting does not stop `f`.
pub async fn heavy<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, BackgroundError> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    queue(f, move |outcome| {
        // The caller may have hung up; the work is done either way.
        let _ = answer.send(outcome);
    })?;
    match answered.await {
        Ok(outcome) => outcome.map_err(BackgroundError::Panicked),
        Err(_) => Err(BackgroundError::Cancelled),
    }
}

/// As [`heavy`], for a caller that is not async (the blocking pool, a plugin's call,
/// a chat command): the search queues with the others and this thread waits for it.
/// On a search lane already, `f` runs in place: a lane never waits for another.
pub fn heavy_blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, BackgroundError> {
    if ON_LANE.get() {
        return Ok(f());
    }
    let (answer, answered) = std::sync::mpsc::sync_channel(1);
    queue(f, move |outcome| {
        let _ = answer.send(outcome);
    })?;
    match answered.recv() {
        Ok(outcome) => outcome.map_err(BackgroundError::Panicked),
        Err(_) => Err(BackgroundError::Cancelled),
    }
}

/// Queues `f` for the lanes; `answer` gets its value, or its panic's text.
fn queue<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
    answer: impl FnOnce(Result<T, String>) + Send + 'static,
) -> Result<(), BackgroundError> {
    let job: Job = Box::new(move || {
        answer(catch_unwind(AssertUnwindSafe(f)).map_err(|p| panic_text(&p)));
    });
    LANES.send(job).map_err(|_| BackgroundError::Cancelled)
}

thread_local! {
    static LOWERED: Cell<bool> = const { Cell::new(false) };
    /// Set on the search lanes' own threads.
    static ON_LANE: Cell<bool> = const { Cell::new(false) };
}

/// Lowers the calling thread's priority by [`NICE`], once per thread.
fn lower_this_thread() {
    if LOWERED.get() {
        return;
    }
    LOWERED.set(true);
    #[cfg(target_os = "linux")]
    {
        // On Linux a thread id names one thread to setpriority (elsewhere it would be
        // the whole process, so nothing is done there).
        // SAFETY: plain system calls on the calling thread's own id.
        unsafe {
            let tid = libc::gettid() as libc::id_t;
            *libc::__errno_location() = 0;
            let now = libc::getpriority(libc::PRIO_PROCESS, tid);
            if *libc::__errno_location() == 0 {
                let _ = libc::setpriority(libc::PRIO_PROCESS, tid, (now + NICE).min(19));
            }
        }
    }
}

fn panic_text(panic: &Box<dyn Any + Send>) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[cfg(target_os = "linux")]
    fn own_nice() -> i32 {
        // SAFETY: as above.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn blocking_work_and_searches_run_below_the_workers() {
        let worker = own_nice();
        let expected = (worker + NICE).min(19);
        assert_eq!(run(own_nice).await.expect("run"), expected);
        assert_eq!(heavy(own_nice).await.expect("heavy"), expected);
        assert_eq!(own_nice(), worker, "the async side keeps its priority");
    }

    #[tokio::test]
    async fn a_panic_fails_its_own_search_and_the_lanes_go_on() {
        let failed = heavy(|| -> u32 { panic!("a broken search") }).await;
        match failed {
            Err(BackgroundError::Panicked(text)) => assert_eq!(text, "a broken search"),
            other => panic!("expected the panic, got {other:?}"),
        }
        assert_eq!(heavy(|| 7).await.expect("the next search"), 7);
        match run(|| -> u32 { panic!("a broken call") }).await {
            Err(BackgroundError::Panicked(text)) => assert_eq!(text, "a broken call"),
            other => panic!("expected the panic, got {other:?}"),
        }
    }

    fn thread_name() -> String {
        std::thread::current()
            .name()
            .unwrap_or_default()
            .to_string()
    }

    #[test]
    fn a_caller_that_is_not_async_waits_on_a_lane_and_a_lane_never_waits_for_another() {
        let lane = heavy_blocking(thread_name).expect("search");
        assert!(lane.starts_with("engram-search-"), "{lane}");
        // A search that searches again runs it in place: were it queued, one lane
        // would wait for itself.
        let (outer, inner) = heavy_blocking(|| {
            let inner = heavy_blocking(thread_name).expect("inner search");
            (thread_name(), inner)
        })
        .expect("outer search");
        assert_eq!(outer, inner);
        match heavy_blocking(|| -> u32 { panic!("a broken search") }) {
            Err(BackgroundError::Panicked(text)) => assert_eq!(text, "a broken search"),
            other => panic!("expected the panic, got {other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn no_more_searches_run_at_once_than_there_are_lanes() {
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let searches = (0..4 * lanes() + 4).map(|_| {
            let (running, most) = (running.clone(), most.clone());
            tokio::spawn(heavy(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
                running.fetch_sub(1, Ordering::SeqCst);
            }))
        });
        for search in searches.collect::<Vec<_>>() {
            search.await.expect("task").expect("search");
        }
        let most = most.load(Ordering::SeqCst);
        assert!(
            most >= 1 && most <= lanes(),
            "{most} at once, {} lanes",
            lanes()
        );
    }
}
