//! The PostgreSQL harness itself (`engram_e2e::pg`): a database per test, usable and
//! kept apart from the others, on a server that listens on loopback only. Without
//! PostgreSQL these print SKIPPED and pass; under CI they fail.

use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

use engram_e2e::pg::{self, PgDatabase};
use postgres::error::SqlState;
use postgres::{Client, NoTls};

fn connect(db: &PgDatabase) -> Client {
    Client::connect(&db.conninfo(), NoTls)
        .unwrap_or_else(|e| panic!("connect to {}: {e}", db.url()))
}

#[test]
fn a_database_is_usable() {
    let Some(db) = pg::database("a_database_is_usable") else {
        return;
    };
    let mut client = connect(&db);
    client
        .batch_execute("CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT NOT NULL)")
        .expect("create a table");
    let inserted = client
        .execute(
            "INSERT INTO notes (id, body) VALUES ($1, $2), ($3, $4)",
            &[&1_i64, &"first", &2_i64, &"second"],
        )
        .expect("insert");
    assert_eq!(inserted, 2);
    let rows = client
        .query("SELECT id, body FROM notes ORDER BY id", &[])
        .expect("select");
    let read: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(read, [(1, "first".to_string()), (2, "second".to_string())]);
    let current: String = client
        .query_one("SELECT current_database()", &[])
        .expect("current_database")
        .get(0);
    assert_eq!(current, db.name);
}

#[test]
fn two_tests_get_databases_that_do_not_see_each_other() {
    let (Some(first), Some(second)) = (
        pg::database("two_tests_get_databases_that_do_not_see_each_other"),
        pg::database("two_tests_get_databases_that_do_not_see_each_other"),
    ) else {
        return;
    };
    assert_ne!(first.name, second.name);
    let mut a = connect(&first);
    let mut b = connect(&second);
    a.batch_execute("CREATE TABLE only_in_a (x INT); INSERT INTO only_in_a VALUES (7)")
        .expect("create in a");
    let seen_from_b: i64 = b
        .query_one(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'only_in_a'",
            &[],
        )
        .expect("catalog of b")
        .get(0);
    assert_eq!(
        seen_from_b, 0,
        "{} sees a table of {}",
        second.name, first.name
    );
    let error = b
        .batch_execute("SELECT * FROM only_in_a")
        .expect_err("the table is not in b");
    assert_eq!(
        error.code(),
        Some(&SqlState::UNDEFINED_TABLE),
        "unexpected error: {error:?}"
    );
    // The same name in both holds each database's own rows.
    b.batch_execute("CREATE TABLE only_in_a (x INT); INSERT INTO only_in_a VALUES (8)")
        .expect("create in b");
    let in_a: i32 = a
        .query_one("SELECT x FROM only_in_a", &[])
        .expect("a")
        .get(0);
    assert_eq!(in_a, 7);
}

#[test]
fn the_server_listens_on_loopback_only() {
    let Some(db) = pg::database("the_server_listens_on_loopback_only") else {
        return;
    };
    let mut client = connect(&db);
    let listen: String = client
        .query_one("SHOW listen_addresses", &[])
        .expect("listen_addresses")
        .get(0);
    assert_eq!(listen, "127.0.0.1");
    let server: String = client
        .query_one("SELECT host(inet_server_addr())", &[])
        .expect("inet_server_addr")
        .get(0);
    assert_eq!(server, "127.0.0.1");
    // Through any other address of this machine, nothing answers on that port.
    for addr in machine_addresses() {
        let target = SocketAddr::new(addr, db.port);
        assert!(
            TcpStream::connect_timeout(&target, Duration::from_secs(2)).is_err(),
            "the test cluster answers on {target}"
        );
    }
}

/// This machine's addresses other than loopback (`hostname -I`), where it has any.
fn machine_addresses() -> Vec<IpAddr> {
    let Ok(out) = std::process::Command::new("hostname").arg("-I").output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|word| word.parse::<IpAddr>().ok())
        .filter(|addr| !addr.is_loopback())
        .collect()
}
