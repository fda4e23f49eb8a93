//! A plugin's stderr, of which the host keeps the last few KiB: a guest that traps
//! usually said why just before (a Rust `panic!` writes its message there), and that
//! text is what makes the error in the log and in the status readable. Writes are
//! never refused, so a chatty plugin is not turned into a failing one.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// How much of the end of stderr is kept.
pub const STDERR_TAIL_BYTES: usize = 4 * 1024;

#[derive(Debug, Clone, Default)]
pub struct StderrTail {
    buffer: Arc<Mutex<VecDeque<u8>>>,
}

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut buffer = self.buffer.lock().unwrap_or_else(|p| p.into_inner());
        let keep = &bytes[bytes.len().saturating_sub(STDERR_TAIL_BYTES)..];
        let len = buffer.len();
        let overflow = (len + keep.len()).saturating_sub(STDERR_TAIL_BYTES);
        buffer.drain(..overflow.min(len));
        buffer.extend(keep);
    }

    /// What the guest wrote last, as one line: Rust's "note: run with
    /// `RUST_BACKTRACE=1`" hint and the thread name of its panic message (both
    /// meaningless for a plugin) left out.
    pub fn summary(&self) -> Option<String> {
        let buffer = self.buffer.lock().unwrap_or_else(|p| p.into_inner());
        let (front, back) = buffer.as_slices();
        let text = String::from_utf8_lossy(&[front, back].concat()).into_owned();
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("note: run with `RUST_BACKTRACE"))
            .map(
                |l| match (l.starts_with("thread '"), l.find(" panicked at ")) {
                    (true, Some(at)) => &l[at + 1..],
                    _ => l,
                },
            )
            .collect();
        (!lines.is_empty()).then(|| lines.join(" "))
    }
}

impl IsTerminal for StderrTail {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for StderrTail {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for StderrTail {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for StderrTail {
    async fn ready(&mut self) {}
}

impl AsyncWrite for StderrTail {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_end_and_reads_as_one_line() {
        let tail = StderrTail::default();
        assert_eq!(tail.summary(), None);
        tail.push(&vec![b'x'; 10_000]);
        tail.push(b"\nthread '<unnamed>' panicked at src/lib.rs:3:5:\nthe model refused\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n");
        let summary = tail.summary().expect("text");
        assert!(
            summary.ends_with("xxx panicked at src/lib.rs:3:5: the model refused"),
            "{summary}"
        );
        assert!(summary.len() <= STDERR_TAIL_BYTES);
    }
}
