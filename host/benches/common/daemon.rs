//! A release daemon for the benches that measure it over HTTP (benches/api_load.rs,
//! benches/mcp.rs, benches/truth.rs): started on a free loopback port, stopped with
//! SIGTERM, killed on drop so that a panicking bench never leaves it running.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a daemon may take to print its address, answer /healthz, or stop.
pub const DAEMON_TIMEOUT: Duration = Duration::from_secs(60);

/// A release `engram serve` in its own process, killed if the bench panics before
/// [`Daemon::stop`].
pub struct Daemon {
    child: Child,
    pub pid: u32,
    pub addr: SocketAddr,
}

/// One start, measured from just before the spawn.
pub struct StartTiming {
    pub listening: Duration,
    pub first_200: Duration,
}

impl Daemon {
    /// Starts `engram serve` on a free loopback port and waits for its first 200 on
    /// /healthz.
    pub fn start(bin: &Path, data_dir: &Path, token: &str) -> (Daemon, StartTiming) {
        Daemon::start_with(bin, data_dir, token, &[])
    }

    /// As [`Daemon::start`], with more environment variables (`ENGRAM_DATABASE_URL`).
    pub fn start_with(
        bin: &Path,
        data_dir: &Path,
        token: &str,
        env: &[(&str, &str)],
    ) -> (Daemon, StartTiming) {
        let spawned = Instant::now();
        let mut child = Command::new(bin)
            .arg("--data-dir")
            .arg(data_dir)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("ENGRAM_TOKEN", token)
            .env("ENGRAM_LOG", "warn")
            .env_remove("SECOND_BRAIN_ENABLED")
            .env_remove("ENGRAM_DATABASE_URL")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {}: {e}", bin.display()));
        let pid = child.id();
        let stdout = child.stdout.take().expect("the daemon's stdout");
        let (line_tx, line_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let read = reader.read_line(&mut line).map(|_| line);
            let _ = line_tx.send(read);
            // Keep draining so that the daemon never blocks on a full pipe.
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        let mut daemon = Daemon {
            child,
            pid,
            // Replaced below; a Daemon exists from here on so that a panic kills it.
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let line = match line_rx.recv_timeout(DAEMON_TIMEOUT) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => panic!("cannot read the daemon's stdout: {e}"),
            Err(_) => panic!(
                "the daemon (pid {pid}) printed no `listening on` line within {DAEMON_TIMEOUT:?}"
            ),
        };
        let listening = spawned.elapsed();
        let Some(addr) = line.trim().strip_prefix("listening on http://") else {
            let status = daemon.child.try_wait().ok().flatten();
            panic!("unexpected first line from the daemon: {line:?} (exit status: {status:?})");
        };
        daemon.addr = addr
            .parse()
            .unwrap_or_else(|e| panic!("bad address in {line:?}: {e}"));
        loop {
            if matches!(health_status(daemon.addr), Ok(200)) {
                break;
            }
            if let Some(status) = daemon.child.try_wait().expect("poll the daemon") {
                panic!("the daemon exited before answering /healthz: {status}");
            }
            if spawned.elapsed() > DAEMON_TIMEOUT {
                panic!("the daemon did not answer /healthz with 200 within {DAEMON_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let first_200 = spawned.elapsed();
        (
            daemon,
            StartTiming {
                listening,
                first_200,
            },
        )
    }

    /// CPU seconds (user + system, every thread) the daemon has used so far.
    pub fn cpu(&self) -> f64 {
        cpu_seconds(&self.pid.to_string())
    }

    pub fn memory(&self) -> MemoryUse {
        let path = format!("/proc/{}/status", self.pid);
        let status =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
        let kib = |key: &str| -> u64 {
            status
                .lines()
                .find_map(|line| line.strip_prefix(key))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or_else(|| panic!("no {key} in {path}"))
        };
        MemoryUse {
            peak_kib: kib("VmHWM:"),
            rss_kib: kib("VmRSS:"),
        }
    }

    /// Sends SIGTERM and waits (bounded) for the exit.
    pub fn stop(mut self) -> ExitStatus {
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()
            .expect("run kill -TERM");
        assert!(sent.success(), "kill -TERM {} failed", self.pid);
        let deadline = Instant::now() + DAEMON_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the daemon") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon (pid {}) did not stop within {DAEMON_TIMEOUT:?} of SIGTERM",
                self.pid
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // Only when something panicked: a stopped daemon has been reaped already.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub struct MemoryUse {
    pub peak_kib: u64,
    pub rss_kib: u64,
}

/// CPU seconds (user + system, every thread) process `pid` (or `self`) has used.
pub fn cpu_seconds(pid: &str) -> f64 {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    // Fields after the parenthesised command name start at field 3 (state); utime and
    // stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> f64 {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("unexpected {path}: {stat:?}")) as f64
    };
    (ticks(11) + ticks(12)) / clock_ticks_per_second()
}

fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// The status of one `GET /healthz` on a new connection (the startup poll: plain
/// blocking I/O, nothing between the poll and the socket).
fn health_status(addr: SocketAddr) -> std::io::Result<u16> {
    let timeout = Duration::from_secs(1);
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_nodelay(true)?;
    write!(
        stream,
        "GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let text = String::from_utf8_lossy(&response);
    text.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status line in {text:?}")))
}
