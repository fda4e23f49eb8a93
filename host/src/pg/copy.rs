//! Moving an install's SQLite stores into a PostgreSQL database (`engram db copy`):
//! every row of every table, in one transaction as [`SYSTEM_ROLE`], then each table's
//! count and primary keys compared between the two before it commits. A copy that
//! fails, or finds a difference, leaves the server as it was.
//!
//! The tables, their columns and the order to fill them in (a referenced table before
//! the tables that reference it) are read from the server's catalog; SQLite's
//! full-text index tables have no counterpart there and are not copied, nor are the
//! server's tables commented `derived: ...`, which the host fills from the copied rows
//! (the transcript's postings, `memory/brain/transcript/terms.rs`).

use std::collections::BTreeSet;

use postgres::Transaction;
use postgres::types::ToSql;
use rusqlite::types::ValueRef;
use sha2::{Digest, Sha256};

use super::{PgError, PgSchema, SYSTEM_ROLE, Server, sql};

/// One table copied.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TableCopied {
    pub table: String,
    pub rows: u64,
}

/// A row's values as the server takes them.
type Params = Vec<Box<dyn ToSql + Sync>>;

/// The kinds of column the stores use (`bigint`, `double precision`, `text`, `bytea`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Integer,
    Real,
    Text,
    Bytes,
}

struct Column {
    name: String,
    kind: Kind,
    identity: bool,
}

struct Table {
    name: String,
    columns: Vec<Column>,
    primary_key: Vec<String>,
    /// Where each primary key column stands in `columns`.
    key_columns: Vec<usize>,
    /// Columns referencing the table itself: filled once every row is in.
    self_references: Vec<String>,
}

impl Server {
    /// Copies each `(schema, SQLite connection)` store into the server's (created,
    /// empty) stores, in one transaction; returns the tables copied per store.
    pub fn copy_from_sqlite(
        &mut self,
        stores: &[(&PgSchema, &rusqlite::Connection)],
    ) -> Result<Vec<Vec<TableCopied>>, PgError> {
        let mut tx = self
            .client
            .transaction()
            .map_err(sql("cannot begin the copy"))?;
        tx.batch_execute(&format!("SET LOCAL ROLE {SYSTEM_ROLE}"))
            .map_err(sql(format!("cannot act as {SYSTEM_ROLE}")))?;
        let mut tables = Vec::new();
        for (schema, _) in stores {
            let store = tables_in_order(&mut tx, schema.namespace)?;
            for table in &store {
                refuse_rows(&mut tx, schema.namespace, table)?;
            }
            tables.push(store);
        }
        let mut copied = Vec::new();
        for ((schema, source), tables) in stores.iter().zip(&tables) {
            let mut store = Vec::new();
            for table in tables {
                let mut keys = copy_table(&mut tx, schema.namespace, table, source)?;
                verify(&mut tx, schema.namespace, table, &mut keys)?;
                store.push(TableCopied {
                    table: table.name.clone(),
                    rows: keys.len() as u64,
                });
            }
            copied.push(store);
        }
        tx.commit().map_err(sql("cannot commit the copy"))?;
        Ok(copied)
    }
}

fn failed(what: String) -> PgError {
    PgError::Copy(what)
}

/// The namespace's tables, each after the tables it references.
fn tables_in_order(tx: &mut Transaction, namespace: &str) -> Result<Vec<Table>, PgError> {
    let what = || format!("cannot read the tables of {namespace}");
    let names: Vec<String> = tx
        .query(
            "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = $1 AND c.relkind = 'r'
               AND coalesce(obj_description(c.oid, 'pg_class'), '') NOT LIKE 'derived:%'
             ORDER BY c.relname",
            &[&namespace],
        )
        .map_err(sql(what()))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let references: Vec<(String, String)> = tx
        .query(
            "SELECT c.relname::text, r.relname::text FROM pg_constraint k
             JOIN pg_class c ON c.oid = k.conrelid
             JOIN pg_class r ON r.oid = k.confrelid
             JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE k.contype = 'f' AND n.nspname = $1",
            &[&namespace],
        )
        .map_err(sql(what()))?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut order: Vec<String> = Vec::new();
    let mut left: BTreeSet<String> = names.iter().cloned().collect();
    while !left.is_empty() {
        let ready: Vec<String> = left
            .iter()
            .filter(|t| {
                references
                    .iter()
                    .all(|(from, to)| from != *t || to == *t || !left.contains(to))
            })
            .cloned()
            .collect();
        if ready.is_empty() {
            return Err(failed(format!(
                "{namespace}: the tables {left:?} reference each other in a cycle"
            )));
        }
        for table in ready {
            left.remove(&table);
            order.push(table);
        }
    }
    order
        .into_iter()
        .map(|name| describe_table(tx, namespace, name, &references))
        .collect()
}

fn describe_table(
    tx: &mut Transaction,
    namespace: &str,
    name: String,
    references: &[(String, String)],
) -> Result<Table, PgError> {
    let what = || format!("cannot read the columns of {namespace}.{name}");
    let mut columns = Vec::new();
    for row in tx
        .query(
            // A column the server derives (one standing in for SQLite's rowid) is
            // filled by the server, not copied.
            "SELECT column_name::text, data_type::text, is_identity::text
             FROM information_schema.columns
             WHERE table_schema = $1 AND table_name = $2
               AND coalesce(col_description(format('%I.%I', table_schema, table_name)::regclass,
                                            ordinal_position::int), '') NOT LIKE 'derived:%'
             ORDER BY ordinal_position",
            &[&namespace, &name],
        )
        .map_err(sql(what()))?
    {
        let (column, data_type, identity): (String, String, String) =
            (row.get(0), row.get(1), row.get(2));
        let kind = match data_type.as_str() {
            "bigint" => Kind::Integer,
            "double precision" => Kind::Real,
            "text" => Kind::Text,
            "bytea" => Kind::Bytes,
            other => {
                return Err(failed(format!(
                    "{namespace}.{name}.{column}: a column of type {other}, which no store uses"
                )));
            }
        };
        columns.push(Column {
            name: column,
            kind,
            identity: identity == "YES",
        });
    }
    let qualified = format!("{namespace}.{name}");
    let primary_key: Vec<String> = tx
        .query(
            "SELECT a.attname::text FROM pg_index i
             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
             WHERE i.indrelid = $1::text::regclass AND i.indisprimary
             ORDER BY array_position(i.indkey, a.attnum)",
            &[&qualified],
        )
        .map_err(sql(what()))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let key_columns = primary_key
        .iter()
        .map(|k| {
            columns.iter().position(|c| c.name == *k).ok_or_else(|| {
                failed(format!(
                    "{qualified}: key column {k} is not among its columns"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if primary_key.is_empty() {
        return Err(failed(format!("{qualified} has no primary key to compare")));
    }
    let self_references = if references.iter().any(|(f, t)| *f == name && *t == name) {
        tx.query(
            "SELECT a.attname::text FROM pg_constraint k
             JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = ANY(k.conkey)
             WHERE k.contype = 'f' AND k.conrelid = $1::text::regclass
               AND k.confrelid = k.conrelid",
            &[&qualified],
        )
        .map_err(sql(what()))?
        .iter()
        .map(|r| r.get(0))
        .collect()
    } else {
        Vec::new()
    };
    Ok(Table {
        name,
        columns,
        primary_key,
        key_columns,
        self_references,
    })
}

/// A SQLite value as the column's kind, for the server.
fn value(
    kind: Kind,
    value: ValueRef,
    at: impl Fn() -> String,
) -> Result<Box<dyn ToSql + Sync>, PgError> {
    let mismatch = |found: &str| failed(format!("{}: a {found} in a {kind:?} column", at()));
    Ok(match (kind, value) {
        (Kind::Integer, ValueRef::Null) => Box::new(None::<i64>),
        (Kind::Real, ValueRef::Null) => Box::new(None::<f64>),
        (Kind::Text, ValueRef::Null) => Box::new(None::<String>),
        (Kind::Bytes, ValueRef::Null) => Box::new(None::<Vec<u8>>),
        (Kind::Integer, ValueRef::Integer(i)) => Box::new(i),
        (Kind::Real, ValueRef::Real(f)) => Box::new(f),
        (Kind::Real, ValueRef::Integer(i)) => Box::new(i as f64),
        (Kind::Text, ValueRef::Text(t)) => Box::new(
            std::str::from_utf8(t)
                .map_err(|_| failed(format!("{}: text that is not UTF-8", at())))?
                .to_string(),
        ),
        (Kind::Bytes, ValueRef::Blob(b)) => Box::new(b.to_vec()),
        (_, ValueRef::Integer(_)) => return Err(mismatch("integer")),
        (_, ValueRef::Real(_)) => return Err(mismatch("real")),
        (_, ValueRef::Text(_)) => return Err(mismatch("text")),
        (_, ValueRef::Blob(_)) => return Err(mismatch("blob")),
    })
}

fn copy_table(
    tx: &mut Transaction,
    namespace: &str,
    table: &Table,
    source: &rusqlite::Connection,
) -> Result<Vec<String>, PgError> {
    let qualified = format!("{namespace}.{}", table.name);
    let names: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
    let placeholders: Vec<String> = (1..=names.len()).map(|i| format!("${i}")).collect();
    let insert = tx
        .prepare(&format!(
            // A row a trigger already made from an earlier table (the turns a memory
            // came from) is the source's own row: kept once, and compared below.
            "INSERT INTO {qualified} ({}) VALUES ({}) ON CONFLICT DO NOTHING",
            names.join(", "),
            placeholders.join(", ")
        ))
        .map_err(sql(format!("cannot write {qualified}")))?;
    let read_error =
        |e: rusqlite::Error| failed(format!("cannot read {} from SQLite: {e}", table.name));
    let mut select = source
        .prepare(&format!("SELECT {} FROM {}", names.join(", "), table.name))
        .map_err(read_error)?;
    let mut rows = select.query([]).map_err(read_error)?;
    let mut count = 0u64;
    // Each source row's key, for the comparison after the copy.
    let mut keys: Vec<String> = Vec::new();
    // (primary key, self-referencing values) of the rows to link once all are in.
    let mut later: Vec<(Params, Params)> = Vec::new();
    while let Some(row) = rows.next().map_err(read_error)? {
        let mut params: Params = Vec::with_capacity(names.len());
        let mut deferred = Vec::new();
        for (index, column) in table.columns.iter().enumerate() {
            let raw = row.get_ref(index).map_err(read_error)?;
            let at = || format!("{qualified}.{} (row {})", column.name, count + 1);
            if table.self_references.contains(&column.name) && raw != ValueRef::Null {
                deferred.push(value(column.kind, raw, at)?);
                params.push(value(column.kind, ValueRef::Null, at)?);
            } else {
                params.push(value(column.kind, raw, at)?);
            }
        }
        let key: Vec<ValueRef> = table
            .key_columns
            .iter()
            .map(|&i| row.get_ref(i).map_err(read_error))
            .collect::<Result<_, _>>()?;
        keys.push(key_text(key.iter().map(key_part)));
        if !deferred.is_empty() {
            let key = table
                .key_columns
                .iter()
                .zip(key)
                .map(|(&i, raw)| value(table.columns[i].kind, raw, || qualified.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            later.push((key, deferred));
        }
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        tx.execute(&insert, &refs).map_err(sql(format!(
            "cannot write row {} of {qualified}",
            count + 1
        )))?;
        count += 1;
    }
    if !table.self_references.is_empty() && !later.is_empty() {
        let sets: Vec<String> = table
            .self_references
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c} = ${}", i + 1))
            .collect();
        let keys: Vec<String> = table
            .primary_key
            .iter()
            .enumerate()
            .map(|(i, k)| format!("{k} = ${}", table.self_references.len() + i + 1))
            .collect();
        let update = tx
            .prepare(&format!(
                "UPDATE {qualified} SET {} WHERE {}",
                sets.join(", "),
                keys.join(" AND ")
            ))
            .map_err(sql(format!("cannot write {qualified}")))?;
        for (key, deferred) in &later {
            let refs: Vec<&(dyn ToSql + Sync)> =
                deferred.iter().chain(key).map(|p| p.as_ref()).collect();
            tx.execute(&update, &refs)
                .map_err(sql(format!("cannot link the rows of {qualified}")))?;
        }
    }
    // The next row a store numbers itself comes after the copied ones.
    for column in table.columns.iter().filter(|c| c.identity) {
        tx.execute(
            &format!(
                "SELECT setval(pg_get_serial_sequence('{qualified}', '{0}'),
                               coalesce(max({0}), 0) + 1, false) FROM {qualified}",
                column.name
            ),
            &[],
        )
        .map_err(sql(format!(
            "cannot move {qualified}'s numbering past the copy"
        )))?;
    }
    Ok(keys)
}

/// Copy moves an install into empty stores: it never merges two.
fn refuse_rows(tx: &mut Transaction, namespace: &str, table: &Table) -> Result<(), PgError> {
    let qualified = format!("{namespace}.{}", table.name);
    let holds: bool = tx
        .query_one(&format!("SELECT EXISTS (SELECT 1 FROM {qualified})"), &[])
        .map_err(sql(format!("cannot read {qualified}")))?
        .get(0);
    if holds {
        return Err(failed(format!(
            "{qualified} already holds rows: copy moves an install into an empty database"
        )));
    }
    Ok(())
}

/// One row's primary key as text, the same from either side: its values, each
/// followed by a unit separator.
fn key_text(parts: impl IntoIterator<Item = String>) -> String {
    parts.into_iter().fold(String::new(), |mut key, part| {
        key.push_str(&part);
        key.push('\u{1f}');
        key
    })
}

/// A SQLite key value as [`key_text`] writes it.
fn key_part(value: &ValueRef) -> String {
    match value {
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        other => format!("{other:?}"),
    }
}

/// The server's table holds exactly the source's rows: the same count and the same
/// primary keys (`on_sqlite`, read while copying; compared as a digest of the sorted
/// keys).
fn verify(
    tx: &mut Transaction,
    namespace: &str,
    table: &Table,
    on_sqlite: &mut [String],
) -> Result<(), PgError> {
    let qualified = format!("{namespace}.{}", table.name);
    let mut on_server: Vec<String> = Vec::new();
    for row in tx
        .query(
            &format!("SELECT {} FROM {qualified}", table.primary_key.join(", ")),
            &[],
        )
        .map_err(sql(format!("cannot read {qualified} back")))?
    {
        on_server.push(key_text(table.key_columns.iter().enumerate().map(
            |(i, &column)| match table.columns[column].kind {
                Kind::Integer => row.get::<_, i64>(i).to_string(),
                _ => row.get::<_, String>(i),
            },
        )));
    }
    if on_sqlite.len() != on_server.len() || digest(on_sqlite) != digest(&mut on_server) {
        return Err(failed(format!(
            "{qualified}: {} rows in SQLite, {} on the server, or other keys; nothing was copied",
            on_sqlite.len(),
            on_server.len()
        )));
    }
    Ok(())
}

fn digest(keys: &mut [String]) -> [u8; 32] {
    keys.sort_unstable();
    let mut hash = Sha256::new();
    for key in keys.iter() {
        hash.update(key.as_bytes());
        hash.update([0x1e]);
    }
    hash.finalize().into()
}
