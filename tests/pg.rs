//! A throwaway PostgreSQL cluster for the tests that need one (issue 32): started
//! lazily, once per test binary, from Debian's `postgresql` package
//! (`/usr/lib/postgresql/<newest>/bin`: `initdb`, `pg_ctl`, `psql`), its data
//! directory and unix socket in a temporary directory, listening on 127.0.0.1 only, on
//! a free port. Each test gets a database of its own, created from a template
//! (`CREATE DATABASE t_<n> TEMPLATE engram_template`), so tests run in parallel and
//! see nothing of each other's.
//!
//! The cluster is stopped (`pg_ctl stop -m immediate`) and its directory removed by a
//! watchdog process that waits for the test binary to end, however it ends: it reads a
//! pipe whose only writer is the test binary, and the kernel closes that pipe when the
//! binary exits or is killed. Nothing outlives a run, and a run shares nothing (port,
//! directory) with a run before it.
//!
//! Without PostgreSQL, [`database`] prints `SKIPPED: ...` and returns `None` (the test
//! returns and passes); under CI (`CI` set) it fails, saying what to install.
//!
//! The harness talks to the cluster with `psql` only; the tests' own client (the
//! `postgres` crate) is a dev-dependency of this crate and of nothing else.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// Where Debian installs each PostgreSQL version's server programs.
const DEBIAN_ROOT: &str = "/usr/lib/postgresql";
/// The database every test's database is copied from.
const TEMPLATE: &str = "engram_template";
/// The cluster's superuser (initdb's `-U`); trust authentication, loopback only.
pub const SUPERUSER: &str = "postgres";
/// The unprivileged account Debian's package creates, that runs the cluster when the
/// tests run as root (initdb and postgres refuse to run as root).
const SERVICE_ACCOUNT: &str = "postgres";

/// One test's database on the cluster.
#[derive(Debug, Clone)]
pub struct PgDatabase {
    pub name: String,
    pub port: u16,
}

impl PgDatabase {
    /// `host=127.0.0.1 port=... user=postgres dbname=...` (libpq's key-value form, as
    /// the `postgres` crate's `Client::connect` reads it).
    pub fn conninfo(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user={SUPERUSER} dbname={}",
            self.port, self.name
        )
    }

    /// `postgres://postgres@127.0.0.1:<port>/<name>`.
    pub fn url(&self) -> String {
        format!(
            "postgres://{SUPERUSER}@127.0.0.1:{}/{}",
            self.port, self.name
        )
    }
}

/// A login role of the test's own, not a superuser (a superuser bypasses row-level
/// security), that may create roles (the two `migrate` creates) and schemas in its own
/// new database.
pub struct Owner {
    pub db: PgDatabase,
    pub role: String,
}

impl Owner {
    /// `None` as [`database`] is.
    pub fn new(test: &str) -> Option<Owner> {
        let db = database(test)?;
        let role = format!("owner_{}", db.name);
        cluster()
            .ok()?
            .psql(&format!(
                "CREATE ROLE {role} LOGIN CREATEROLE; GRANT CREATE ON DATABASE {0} TO {role}",
                db.name
            ))
            .unwrap_or_else(|e| panic!("{test}: create the owner role: {e}"));
        Some(Owner { db, role })
    }

    /// `postgres://<role>@127.0.0.1:<port>/<database>`.
    pub fn url(&self) -> String {
        format!(
            "postgres://{}@127.0.0.1:{}/{}",
            self.role, self.db.port, self.db.name
        )
    }
}

/// A new database for the test `test`, empty but for what the template holds; `None`
/// (after printing `SKIPPED: <test>: ...`) where PostgreSQL is not installed, except
/// under CI, where that fails the test.
pub fn database(test: &str) -> Option<PgDatabase> {
    let cluster = match cluster() {
        Ok(cluster) => cluster,
        Err(Unavailable::NotInstalled(why)) => {
            let install =
                "install Debian's postgresql package (apt-get install postgresql; .ci/run does it)";
            assert!(
                std::env::var_os("CI").is_none(),
                "{test} needs PostgreSQL: {why}; {install}"
            );
            eprintln!("SKIPPED: {test}: PostgreSQL is not installed ({why}); {install}");
            return None;
        }
        Err(Unavailable::Failed(why)) => panic!("{test}: the test PostgreSQL cluster: {why}"),
    };
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = format!("t_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    cluster
        .psql(&format!("CREATE DATABASE {name} TEMPLATE {TEMPLATE}"))
        .unwrap_or_else(|e| panic!("{test}: create database {name}: {e}"));
    Some(PgDatabase {
        name,
        port: cluster.port,
    })
}

/// The database the daemons of the data directory `data` keep their databases in
/// when a test runs on PostgreSQL ([`crate::on_postgres`]): made at the first call
/// for it, the same at every later one (a daemon restarted on `data` finds its
/// rows). `None` as [`database`] is.
pub fn database_url_for(data: &Path) -> Option<String> {
    static MADE: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());
    let mut made = MADE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, url)) = made.iter().find(|(dir, _)| dir == data) {
        return Some(url.clone());
    }
    let owner = Owner::new(&data.display().to_string())?;
    let url = owner.url();
    made.push((data.to_path_buf(), url.clone()));
    Some(url)
}

/// Restarts the test binary's cluster (`pg_ctl restart -m fast`: every connection is
/// ended, as a server's restart ends them) and returns once it accepts connections
/// again. Every test of the binary shares the cluster: a test that calls this has a
/// binary of its own.
pub fn restart_cluster() -> Result<(), String> {
    let cluster = cluster().map_err(|e| format!("{e:?}"))?;
    let as_root = is_root()?;
    run(as_service(as_root, &cluster.bin.join("pg_ctl"))
        .arg("-D")
        .arg(cluster.dir.join("data"))
        .arg("-l")
        .arg(cluster.dir.join("server.log"))
        .args(["-w", "-t", "60", "-m", "fast", "restart"]))
}

/// The binary's one cluster, started at the first call; a failure is remembered.
fn cluster() -> Result<&'static Cluster, Unavailable> {
    static CLUSTER: OnceLock<Result<Cluster, Unavailable>> = OnceLock::new();
    CLUSTER
        .get_or_init(Cluster::start)
        .as_ref()
        .map_err(Clone::clone)
}

#[derive(Debug, Clone)]
enum Unavailable {
    NotInstalled(String),
    Failed(String),
}

struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    /// The write end of the watchdog's pipe, held until the process exits.
    _watchdog: Mutex<ChildStdin>,
}

impl Cluster {
    fn start() -> Result<Cluster, Unavailable> {
        let bin = newest_bin(Path::new(DEBIAN_ROOT)).ok_or_else(|| {
            Unavailable::NotInstalled(format!("no {DEBIAN_ROOT}/<version>/bin/initdb"))
        })?;
        let as_root = is_root().map_err(Unavailable::Failed)?;
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let dir = std::env::temp_dir().join(format!("engram-pg-{}-{stamp}", std::process::id()));
        std::fs::create_dir(&dir)
            .map_err(|e| Unavailable::Failed(format!("create {}: {e}", dir.display())))?;
        // Before anything can fail past this point: the watchdog removes the directory
        // whatever happens next.
        let watchdog = spawn_watchdog(&bin, &dir, as_root).map_err(Unavailable::Failed)?;
        let failed = |what: &str, e: String| Unavailable::Failed(format!("{what}: {e}"));
        if as_root {
            run(Command::new("chown").arg(SERVICE_ACCOUNT).arg(&dir))
                .map_err(|e| failed("chown the cluster's directory", e))?;
        }
        let data = dir.join("data");
        run(as_service(as_root, &bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-U", SUPERUSER, "--auth=trust", "-E", "UTF8", "--locale=C"])
            .arg("--no-sync"))
        .map_err(|e| failed("initdb", e))?;
        // A port another process takes between our probe and the server's bind makes
        // the start fail: try again on another.
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port().map_err(|e| failed("find a free port", e))?;
            let options = format!(
                "-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories='{}' \
                 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
                dir.display()
            );
            let started = run(as_service(as_root, &bin.join("pg_ctl"))
                .arg("-D")
                .arg(&data)
                .arg("-l")
                .arg(dir.join("server.log"))
                .args(["-w", "-t", "60", "-o", &options, "start"]));
            match started {
                Ok(()) => {
                    let cluster = Cluster {
                        bin,
                        dir,
                        port,
                        _watchdog: Mutex::new(watchdog),
                    };
                    cluster
                        .psql(&format!("CREATE DATABASE {TEMPLATE}"))
                        .map_err(|e| failed("create the template", e))?;
                    return Ok(cluster);
                }
                Err(e) => last = e,
            }
        }
        let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
        Err(failed("pg_ctl start", format!("{last}\n{log}")))
    }

    /// Runs one SQL command as the superuser over the unix socket.
    fn psql(&self, sql: &str) -> Result<(), String> {
        run(Command::new(self.bin.join("psql"))
            .arg("-h")
            .arg(&self.dir)
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                SUPERUSER,
                "-d",
                "postgres",
            ])
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql]))
    }
}

/// The `bin` directory of the newest version under `root` that has `initdb`.
fn newest_bin(root: &Path) -> Option<PathBuf> {
    std::fs::read_dir(root)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .max_by_key(|(version, _)| *version)
        .map(|(_, bin)| bin)
}

/// Root cannot run initdb or the server. As root they run as Debian's `postgres`
/// account through `runuser` (util-linux, on every Debian), in a directory chowned to
/// it; as anyone else they run as that user.
fn as_service(as_root: bool, program: &Path) -> Command {
    if as_root {
        let mut command = Command::new("runuser");
        command.args(["-u", SERVICE_ACCOUNT, "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn is_root() -> Result<bool, String> {
    let out = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| format!("id -u: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim() == "0")
}

/// A shell that waits for its stdin to close (this process ending, however), then stops
/// the cluster and removes `dir`. Its stdin's write end is returned, to be held.
fn spawn_watchdog(bin: &Path, dir: &Path, as_root: bool) -> Result<ChildStdin, String> {
    let pg_ctl = bin.join("pg_ctl");
    let stop = if as_root {
        format!("runuser -u {SERVICE_ACCOUNT} -- \"$1\"")
    } else {
        "\"$1\"".to_string()
    };
    let script = format!(
        "cat >/dev/null; {stop} -D \"$2/data\" -m immediate stop >/dev/null 2>&1; rm -rf \"$2\""
    );
    let mut child = Command::new("sh")
        .args(["-c", &script, "engram-pg-watchdog"])
        .arg(&pg_ctl)
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn the watchdog: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("the watchdog's stdin")?;
    // Proves the pipe is open; the watchdog reads until it closes.
    stdin
        .write_all(b"\n")
        .map_err(|e| format!("the watchdog's pipe: {e}"))?;
    Ok(stdin)
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

/// Runs `command` to its end; its stderr and stdout are the error when it fails.
fn run(command: &mut Command) -> Result<(), String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{command:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{command:?}: {}: {}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            String::from_utf8_lossy(&out.stdout).trim()
        ))
    }
}
