//! Serving HTTP/1.1 on a listener with bounds on what a client can hold (the daemon's
//! API and dashboard, and `engram registry serve`). A client on the same machine that
//! opens connections and never finishes its requests must not take the daemon down:
//!
//! - **header-read timeout** ([`Limits::header_read_timeout`]): from when the daemon
//!   waits for a request (a new connection, or the next request on a kept-alive one)
//!   until its head has arrived; past it, the connection is closed.
//! - **idle timeout** ([`Limits::idle_timeout`]): a request body whose next bytes do
//!   not come, or a response the client stops reading, for this long ends the
//!   connection.
//! - **body deadline** ([`Limits::body_timeout`]): a request body must arrive whole
//!   within this time of its head, however steadily it trickles in (one byte just
//!   inside the idle timeout each time would otherwise hold the connection for ever);
//!   past it the body fails, the request is answered with that error and the
//!   connection closes.
//! - **connection cap** ([`Limits::max_connections`]): when that many are open, a new
//!   connection closes the one that has waited longest for a request head (a slow or
//!   idle client), else the oldest one whose request has not authenticated (a
//!   stranger's `POST /login` trickling its body in, say), and is refused only when
//!   every open connection is running an authenticated request. Either is logged, at
//!   most every few seconds. So someone without a token can never fill the table:
//!   each of their connections makes room for the next arrival, `/healthz` included.
//! - **file limit**: [`raise_file_limit`] lifts the soft limit on open files to the
//!   hard one at start, so that the cap, not the kernel, decides (with the old soft
//!   limit of 1024, a few hundred slow sockets left nothing for SQLite).
//!
//! A connection is "busy" from the moment its request head is read until the
//! response body is dropped, and "trusted" while that request has shown a valid
//! credential: the authentication middleware says so through the [`Trust`] handle
//! each request carries. A busy, trusted connection is never closed to make room, so
//! a long request or an event stream is never cut for another client.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};
use tower_http::timeout::RequestBodyTimeoutLayer;

pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a graceful shutdown waits for open requests before it stops waiting.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// The cap's log line is written at most this often, however many clients press on.
const CAP_LOG_EVERY: Duration = Duration::from_secs(5);
/// Pause after an accept error (out of file descriptors, say) before accepting again,
/// so that the loop does not spin while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// The bounds on client connections (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
        }
    }
}

/// A request's handle on its connection: the authentication middleware calls
/// [`Trust::grant`] once the request has shown a valid credential, which keeps the
/// connection from being closed to make room until the response has gone out.
#[derive(Clone)]
pub struct Trust(Arc<AtomicBool>);

impl Trust {
    pub fn grant(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Why a request body failed: it had not arrived whole by its deadline.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {} s of its head", .0.as_secs())]
pub struct BodyTimedOut(Duration);

/// Raises the soft limit on open files to the hard limit; returns `(before, after)`,
/// or `None` where there is no such limit or it cannot be read.
pub fn raise_file_limit() -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit only read and write the struct given.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return None;
        }
        let before = limit.rlim_cur;
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                limit = raised;
            }
        }
        // rlim_t is u64 on 64-bit Linux, narrower on some other unix targets.
        #[allow(clippy::unnecessary_cast)]
        Some((before as u64, limit.rlim_cur as u64))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// File descriptors kept for everything but client connections: the databases and
/// their WAL files, plugins, outbound requests, the log.
const RESERVED_FILES: u64 = 256;

/// Readies the process for `limits` at start: raises the soft file limit to the hard
/// one, and lowers the cap if even that leaves too few descriptors for it (logged).
pub fn prepare(limits: Limits) -> Limits {
    let Some((before, after)) = raise_file_limit() else {
        return limits;
    };
    if after > before {
        tracing::info!("raised the open-file limit from {before} to {after}");
    }
    let room = usize::try_from(after.saturating_sub(RESERVED_FILES).max(16)).unwrap_or(usize::MAX);
    if limits.max_connections > room {
        tracing::warn!(
            "server.maxConnections is {}, but the open-file limit ({after}) leaves room for {room}; using {room}",
            limits.max_connections
        );
        return Limits {
            max_connections: room,
            ..limits
        };
    }
    limits
}

/// Serves `router` on `listener` within `limits` until `shutdown` completes; then
/// stops accepting, lets kept-alive connections close and waits (a bounded time) for
/// the requests in flight.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let router = router.layer(RequestBodyTimeoutLayer::new(limits.idle_timeout));
    let table = Arc::new(Table::new(limits.max_connections));
    let (stopping, stop) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                table.log_rarely(|| tracing::warn!("accept failed: {e}"));
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        // Responses go out in several writes (head, then body chunks, SSE events): with
        // Nagle's algorithm each later write waits for the client's delayed ACK, about
        // 40 ms a response on Linux.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
        let Some(conn) = table.admit() else {
            drop(stream);
            continue;
        };
        let router = router.clone();
        let table = table.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            serve_connection(stream, conn.clone(), router, limits, stop).await;
            table.remove(conn.id);
        });
    }
    let _ = stopping.send(true);
    let deadline = Instant::now() + SHUTDOWN_GRACE;
    while table.open() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    conn: Arc<Conn>,
    router: Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let io = TokioIo::new(Watched::new(stream, limits.idle_timeout));
    let app = TowerToHyperService::new(router);
    let tracked = conn.clone();
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let busy = Busy::start(tracked.clone());
        let mut request = request.map(|body| Deadline::new(body, limits.body_timeout));
        request
            .extensions_mut()
            .insert(Trust(tracked.trusted.clone()));
        let call = hyper::service::Service::call(&app, request);
        async move {
            let response: Response = call.await?;
            Ok::<_, Infallible>(response.map(|body| Body::new(Tracked { body, _busy: busy })))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true);
    let connection = builder.serve_connection(io, service);
    let mut connection = std::pin::pin!(connection);
    let mut stopping = *stop.borrow();
    if stopping {
        connection.as_mut().graceful_shutdown();
    }
    loop {
        tokio::select! {
            _ = connection.as_mut() => break,
            () = conn.close.notified() => break,
            changed = stop.changed(), if !stopping => {
                stopping = true;
                if changed.is_ok() {
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// One open connection, as the accept loop sees it.
struct Conn {
    id: u64,
    /// Requests whose response has not been dropped yet.
    busy: AtomicUsize,
    /// When it last became idle (accepted, or a response ended), in [`ticks`].
    idle_since: AtomicU64,
    /// When its current request's head was read, in [`ticks`].
    busy_since: AtomicU64,
    /// Whether its current request has authenticated (see [`Trust`]).
    trusted: Arc<AtomicBool>,
    /// Told to close (to make room for another).
    close: Notify,
}

/// The open connections and the cap on them.
struct Table {
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    cap: usize,
    next_id: AtomicU64,
    /// When the last rate-limited line was logged, in [`ticks`] plus one (0: never).
    logged: AtomicU64,
}

/// Milliseconds on a monotonic clock that starts with the first call: orders
/// connections by when they became idle, and spaces log lines.
fn ticks() -> u64 {
    static EPOCH: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);
    u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl Table {
    fn new(cap: usize) -> Table {
        Table {
            conns: Mutex::new(HashMap::new()),
            cap: cap.max(1),
            next_id: AtomicU64::new(0),
            logged: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        // The map holds no invariant a panicking holder could break.
        self.conns.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn open(&self) -> usize {
        self.lock().len()
    }

    /// A slot for a new connection: under the cap, or by closing the connection
    /// that has waited longest for a request, else the oldest running a request that
    /// has not authenticated; `None` when every one runs an authenticated request.
    fn admit(&self) -> Option<Arc<Conn>> {
        let mut conns = self.lock();
        if conns.len() >= self.cap {
            let busy = |c: &Arc<Conn>| c.busy.load(Ordering::Acquire) > 0;
            let victim = conns
                .values()
                .filter(|c| !busy(c))
                .min_by_key(|c| c.idle_since.load(Ordering::Acquire))
                .or_else(|| {
                    conns
                        .values()
                        .filter(|c| busy(c) && !c.trusted.load(Ordering::Acquire))
                        .min_by_key(|c| c.busy_since.load(Ordering::Acquire))
                })
                .cloned();
            let open = conns.len();
            match victim {
                Some(victim) => {
                    // Out of the table at once, so that the next arrival picks another.
                    conns.remove(&victim.id);
                    victim.close.notify_one();
                    self.log_rarely(|| {
                        tracing::warn!(
                            open,
                            "the connection cap (server.maxConnections = {}) is reached: closing the connection that has waited longest for a request (or, with none idle, the oldest that has not authenticated)",
                            self.cap
                        )
                    });
                }
                None => {
                    self.log_rarely(|| {
                        tracing::warn!(
                            open,
                            "the connection cap (server.maxConnections = {}) is reached and every connection is running an authenticated request: refusing a new connection",
                            self.cap
                        )
                    });
                    return None;
                }
            }
        }
        let conn = Arc::new(Conn {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            busy: AtomicUsize::new(0),
            idle_since: AtomicU64::new(ticks()),
            busy_since: AtomicU64::new(0),
            trusted: Arc::new(AtomicBool::new(false)),
            close: Notify::new(),
        });
        conns.insert(conn.id, conn.clone());
        Some(conn)
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// Runs `log` unless a line was logged within [`CAP_LOG_EVERY`].
    fn log_rarely(&self, log: impl FnOnce()) {
        let now = ticks() + 1;
        let last = self.logged.load(Ordering::Acquire);
        let every = u64::try_from(CAP_LOG_EVERY.as_millis()).unwrap_or(u64::MAX);
        if (last == 0 || now.saturating_sub(last) >= every)
            && self
                .logged
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            log();
        }
    }
}

/// Marks its connection busy for as long as it lives: from the request's head to the
/// end of its response's body.
struct Busy {
    conn: Arc<Conn>,
}

impl Busy {
    fn start(conn: Arc<Conn>) -> Busy {
        conn.trusted.store(false, Ordering::Release);
        conn.busy_since.store(ticks(), Ordering::Release);
        conn.busy.fetch_add(1, Ordering::AcqRel);
        Busy { conn }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.conn.idle_since.store(ticks(), Ordering::Release);
        self.conn.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its connection marked busy until it is dropped.
struct Tracked {
    body: Body,
    _busy: Busy,
}

impl hyper::body::Body for Tracked {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A request body that fails once [`Limits::body_timeout`] has passed since its
/// head was read, whatever it has delivered by then.
struct Deadline {
    body: Incoming,
    limit: Duration,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl Deadline {
    fn new(body: Incoming, limit: Duration) -> Deadline {
        Deadline {
            body,
            limit,
            timer: Box::pin(tokio::time::sleep(limit)),
        }
    }
}

impl hyper::body::Body for Deadline {
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        if self.body.is_end_stream() {
            return Poll::Ready(None);
        }
        if self.timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(BodyTimedOut(self.limit).into())));
        }
        Pin::new(&mut self.body)
            .poll_frame(cx)
            .map_err(axum::BoxError::from)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A socket whose writes fail once they have made no progress for the idle timeout:
/// a client that stops reading its response is dropped rather than held forever.
struct Watched {
    stream: tokio::net::TcpStream,
    idle: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Watched {
    fn new(stream: tokio::net::TcpStream, idle: Duration) -> Watched {
        Watched {
            stream,
            idle,
            stalled: None,
        }
    }

    /// `ready` after a write attempt: progress clears the stall, none starts (or
    /// checks) its clock.
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        ready: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        match ready {
            Poll::Ready(result) => {
                self.stalled = None;
                Poll::Ready(result)
            }
            Poll::Pending => {
                let idle = self.idle;
                let timer = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the client stopped reading",
                    ))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let ready = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.watch(cx, ready)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let ready = Pin::new(&mut self.stream).poll_flush(cx);
        self.watch(cx, ready)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let ready = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.watch(cx, ready)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_longest_idle_connection_makes_room_and_a_busy_one_never_does() {
        let table = Table::new(2);
        let first = table.admit().expect("first");
        std::thread::sleep(Duration::from_millis(5));
        let second = table.admit().expect("second");
        // Both idle: the one idle longest (the first) is told to close.
        let third = table.admit().expect("third");
        assert_eq!(table.open(), 2);
        assert!(
            futures_ready(first.close.notified()),
            "the first connection was told to close"
        );
        assert!(!futures_ready(second.close.notified()));
        // Both left are running an authenticated request: a new connection is refused.
        let busy = [Busy::start(second.clone()), Busy::start(third.clone())];
        Trust(second.trusted.clone()).grant();
        Trust(third.trusted.clone()).grant();
        assert!(table.admit().is_none());
        assert_eq!(table.open(), 2);
        // A request ends: that connection may make room again.
        drop(busy);
        assert!(table.admit().is_some());
        assert_eq!(table.open(), 2);
    }

    #[test]
    fn at_the_cap_a_request_that_has_not_authenticated_makes_room_and_an_authenticated_one_never_does()
     {
        let table = Table::new(2);
        let stranger = table.admit().expect("stranger");
        let agent = table.admit().expect("agent");
        let _stranger_busy = Busy::start(stranger.clone());
        let _agent_busy = Busy::start(agent.clone());
        Trust(agent.trusted.clone()).grant();
        // Nobody idle: the request without a credential is closed, not the agent's.
        let newcomer = table.admit().expect("room");
        assert!(futures_ready(stranger.close.notified()));
        assert!(!futures_ready(agent.close.notified()));
        // The newcomer authenticates too: now nothing can make room.
        let _newcomer_busy = Busy::start(newcomer.clone());
        Trust(newcomer.trusted.clone()).grant();
        assert!(table.admit().is_none());
    }

    /// Whether `future` is ready at its first poll.
    fn futures_ready(future: impl Future<Output = ()>) -> bool {
        let mut future = std::pin::pin!(future);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        future.as_mut().poll(&mut cx).is_ready()
    }
}
