//! What PostgreSQL needs to run the SQL the stores write once: SQLite's `?N`
//! placeholders read as `$N`, [`Value`]s sent as whatever type the server inferred
//! for each parameter, columns read back as [`Cell`]s, and prepared statements kept
//! per connection.

use std::collections::HashMap;
use std::error::Error;

use bytes::BytesMut;
use postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use postgres::{GenericClient, Statement};

use super::SqlError;
use super::value::{Cell, Value};

/// Statements kept per connection; past this the cache starts again (the stores use
/// a few dozen, so it only bounds SQL built from input).
const MAX_STATEMENTS: usize = 512;

/// `sql` with every `?N` (and bare `?`, numbered as SQLite numbers it) as `$N`, outside
/// string literals, quoted names and comments.
pub(super) fn placeholders_to_dollars(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.chars().peekable();
    let mut highest = 0u32;
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                out.push(c);
                // A doubled quote inside is the quote itself: the loop sees it close
                // and open again, which copies it unchanged.
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == c {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                out.push(c);
                for inner in chars.by_ref() {
                    out.push(inner);
                    if inner == '\n' {
                        break;
                    }
                }
            }
            '?' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                let number = match digits.parse::<u32>() {
                    Ok(n) => n,
                    Err(_) => highest + 1,
                };
                highest = highest.max(number);
                out.push('$');
                out.push_str(&number.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

/// Prepared statements of one connection, by the SQL as the store wrote it.
#[derive(Default)]
pub(super) struct Statements {
    prepared: HashMap<String, Statement>,
}

impl Statements {
    pub(super) fn get(
        &mut self,
        client: &mut impl GenericClient,
        sql: &str,
    ) -> Result<Statement, ::postgres::Error> {
        if let Some(statement) = self.prepared.get(sql) {
            return Ok(statement.clone());
        }
        let statement = client
            .prepare(&placeholders_to_dollars(sql))
            .inspect_err(|e| {
                // Engram's own SQL (never input) that the server cannot read: a bug, named
                // in the log with the statement.
                if e.as_db_error().is_some() {
                    tracing::error!("PostgreSQL cannot prepare a statement ({e}): {sql}");
                }
            })?;
        if self.prepared.len() >= MAX_STATEMENTS {
            self.prepared.clear();
        }
        self.prepared.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }
}

/// A parameter's type is the server's inference from the statement (a column's type,
/// `text` for `?1 || 'x'`): the value is written as that type when it converts
/// without loss, so the SQL need not cast.
impl ToSql for Value<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match *self {
            Value::Null => Ok(IsNull::Yes),
            Value::Integer(v) => match *ty {
                Type::INT8 => v.to_sql(ty, out),
                Type::INT4 => i32::try_from(v)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(v)?.to_sql(ty, out),
                Type::FLOAT8 => (v as f64).to_sql(ty, out),
                Type::BOOL => (v != 0).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => v.to_string().to_sql(ty, out),
                _ => Err(mismatch("an integer", ty)),
            },
            Value::Real(v) => match *ty {
                Type::FLOAT8 => v.to_sql(ty, out),
                Type::FLOAT4 => (v as f32).to_sql(ty, out),
                _ => Err(mismatch("a real number", ty)),
            },
            Value::Text(v) => match *ty {
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                    v.to_sql(ty, out)
                }
                Type::BYTEA => v.as_bytes().to_sql(ty, out),
                _ => Err(mismatch("text", ty)),
            },
            Value::Blob(v) => match *ty {
                Type::BYTEA => v.to_sql(ty, out),
                _ => Err(mismatch("bytes", ty)),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn mismatch(what: &str, ty: &Type) -> Box<dyn Error + Sync + Send> {
    format!("{what} cannot be sent as PostgreSQL type {ty}").into()
}

/// The values as the client sends them.
pub(super) fn params<'a>(args: &'a [Value<'_>]) -> Vec<&'a (dyn ToSql + Sync)> {
    args.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

/// Column `i` of a PostgreSQL row, by the type the server sent.
pub(super) fn cell(row: &postgres::Row, i: usize) -> Result<Cell<'_>, SqlError> {
    let ty = row
        .columns()
        .get(i)
        .ok_or(SqlError::NoColumn(i))?
        .type_()
        .clone();
    let got = |e: postgres::Error| SqlError::from(e);
    let cell = match ty {
        Type::INT8 => row
            .try_get::<_, Option<i64>>(i)
            .map_err(got)?
            .map(Cell::Integer),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .map_err(got)?
            .map(|v| Cell::Integer(i64::from(v))),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)
            .map_err(got)?
            .map(|v| Cell::Integer(i64::from(v))),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(i)
            .map_err(got)?
            .map(|v| Cell::Integer(i64::from(v))),
        Type::FLOAT8 => row
            .try_get::<_, Option<f64>>(i)
            .map_err(got)?
            .map(Cell::Real),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)
            .map_err(got)?
            .map(|v| Cell::Real(f64::from(v))),
        // SUM of a BIGINT column is NUMERIC on PostgreSQL.
        Type::NUMERIC => row
            .try_get::<_, Option<Numeric>>(i)
            .map_err(got)?
            .map(|n| n.0),
        Type::BYTEA => row
            .try_get::<_, Option<&[u8]>>(i)
            .map_err(got)?
            .map(Cell::Blob),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => row
            .try_get::<_, Option<&str>>(i)
            .map_err(got)?
            .map(Cell::Text),
        other => return Err(SqlError::UnsupportedType(other.to_string())),
    };
    Ok(cell.unwrap_or(Cell::Null))
}

/// A NUMERIC read as an integer when it has no fractional digits and fits, else as a
/// real number (PostgreSQL's binary form: digit count, weight, sign, scale, then
/// base-10000 digits, most significant first).
struct Numeric(Cell<'static>);

impl<'a> FromSql<'a> for Numeric {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        let word = |at: usize| -> Result<u16, Box<dyn Error + Sync + Send>> {
            raw.get(at..at + 2)
                .map(|b| u16::from_be_bytes([b[0], b[1]]))
                .ok_or_else(|| "a NUMERIC shorter than its header says".into())
        };
        let digits = word(0)? as usize;
        let weight = word(2)? as i16;
        let sign = word(4)?;
        let scale = word(6)?;
        if sign == 0xC000 {
            return Ok(Numeric(Cell::Real(f64::NAN)));
        }
        let negative = sign == 0x4000;
        let mut whole: Option<i64> = Some(0);
        let mut real = 0f64;
        for k in 0..digits {
            let digit = i64::from(word(8 + 2 * k)?);
            let power = i32::from(weight) - k as i32;
            real += digit as f64 * 10000f64.powi(power);
            whole = match (whole, u32::try_from(power)) {
                (Some(w), Ok(p)) => 10000i64
                    .checked_pow(p)
                    .and_then(|m| digit.checked_mul(m))
                    .and_then(|d| w.checked_add(d)),
                // A fractional digit that is not zero leaves no whole value.
                (Some(w), Err(_)) if digit == 0 => Some(w),
                _ => None,
            };
        }
        Ok(Numeric(match whole {
            Some(w) if scale == 0 => Cell::Integer(if negative { -w } else { w }),
            _ => Cell::Real(if negative { -real } else { real }),
        }))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

/// Whether the server cannot be reached or dropped the connection: a request fails
/// with 503 and may be retried, rather than with an internal error.
pub(super) fn is_unavailable(error: &postgres::Error) -> bool {
    if error.is_closed() {
        return true;
    }
    match error.code() {
        // Class 08 (connection exception), and the server shutting down or starting.
        Some(code) => {
            let code = code.code();
            code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
        }
        // No SQLSTATE: the client's own I/O or protocol failure.
        None => error.as_db_error().is_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_as_sqlite_numbers_them_outside_quotes() {
        assert_eq!(
            placeholders_to_dollars("SELECT a FROM t WHERE b = ?2 AND c = ?1"),
            "SELECT a FROM t WHERE b = $2 AND c = $1"
        );
        assert_eq!(
            placeholders_to_dollars("VALUES (?, ?, ?5, ?)"),
            "VALUES ($1, $2, $5, $6)"
        );
        assert_eq!(
            placeholders_to_dollars("SELECT '?1 it''s', \"q?\" -- what?\n, ?1"),
            "SELECT '?1 it''s', \"q?\" -- what?\n, $1"
        );
    }

    #[test]
    fn a_numeric_reads_as_an_integer_when_it_is_whole() {
        // 12345678 = digits 1234, 5678 at weight 1, scale 0.
        let raw = [0, 2, 0, 1, 0, 0, 0, 0, 0x04, 0xD2, 0x16, 0x2E];
        let n = Numeric::from_sql(&Type::NUMERIC, &raw).expect("numeric");
        assert!(matches!(n.0, Cell::Integer(12_345_678)));
        // -1.5 = digits 1, 5000 at weight 0, negative, scale 1.
        let raw = [0, 2, 0, 0, 0x40, 0, 0, 1, 0, 1, 0x13, 0x88];
        let n = Numeric::from_sql(&Type::NUMERIC, &raw).expect("numeric");
        assert!(matches!(n.0, Cell::Real(v) if v == -1.5));
        // 0: no digits.
        let n = Numeric::from_sql(&Type::NUMERIC, &[0, 0, 0, 0, 0, 0, 0, 0]).expect("zero");
        assert!(matches!(n.0, Cell::Integer(0)));
    }
}
