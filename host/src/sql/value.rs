//! The values a statement takes and the columns a row gives, the same on both
//! backends. SQLite's five storage classes are the vocabulary: a boolean is an
//! integer (0 or 1) on both, as the schemas store it.

use super::SqlError;

/// One parameter of a statement: `&[user.into(), 3.into(), None::<&str>.into()]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Null,
    Integer(i64),
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(v: &'a str) -> Self {
        Value::Text(v)
    }
}

impl<'a> From<&'a String> for Value<'a> {
    fn from(v: &'a String) -> Self {
        Value::Text(v)
    }
}

impl<'a> From<&'a [u8]> for Value<'a> {
    fn from(v: &'a [u8]) -> Self {
        Value::Blob(v)
    }
}

impl<'a> From<&'a Vec<u8>> for Value<'a> {
    fn from(v: &'a Vec<u8>) -> Self {
        Value::Blob(v)
    }
}

impl From<i64> for Value<'_> {
    fn from(v: i64) -> Self {
        Value::Integer(v)
    }
}

impl From<i32> for Value<'_> {
    fn from(v: i32) -> Self {
        Value::Integer(i64::from(v))
    }
}

impl From<u32> for Value<'_> {
    fn from(v: u32) -> Self {
        Value::Integer(i64::from(v))
    }
}

impl From<bool> for Value<'_> {
    fn from(v: bool) -> Self {
        Value::Integer(i64::from(v))
    }
}

impl From<f64> for Value<'_> {
    fn from(v: f64) -> Self {
        Value::Real(v)
    }
}

impl From<f32> for Value<'_> {
    fn from(v: f32) -> Self {
        Value::Real(f64::from(v))
    }
}

impl<'a, T: Into<Value<'a>>> From<Option<T>> for Value<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// One column of a row as either backend gave it, borrowed from the row.
#[derive(Debug, Clone, Copy)]
pub enum Cell<'r> {
    Null,
    Integer(i64),
    Real(f64),
    Text(&'r str),
    Blob(&'r [u8]),
}

impl Cell<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Cell::Null => "null",
            Cell::Integer(_) => "integer",
            Cell::Real(_) => "real",
            Cell::Text(_) => "text",
            Cell::Blob(_) => "blob",
        }
    }
}

/// A Rust type a column converts to (`row.get::<i64>(0)?`).
pub trait FromColumn: Sized {
    /// What the type is called in an error.
    const WANTED: &'static str;
    /// `None` when the cell does not convert.
    fn from_cell(cell: Cell<'_>) -> Option<Self>;
    /// A column that is NULL: an error but for `Option`.
    fn from_null() -> Option<Self> {
        None
    }
}

pub(super) fn convert<T: FromColumn>(column: usize, cell: Cell<'_>) -> Result<T, SqlError> {
    let converted = match cell {
        Cell::Null => T::from_null(),
        cell => T::from_cell(cell),
    };
    converted.ok_or_else(|| SqlError::Type {
        column,
        wanted: T::WANTED,
        found: cell.kind(),
    })
}

impl FromColumn for i64 {
    const WANTED: &'static str = "an integer";
    fn from_cell(cell: Cell<'_>) -> Option<Self> {
        match cell {
            Cell::Integer(v) => Some(v),
            _ => None,
        }
    }
}

/// The integer types narrower than i64 convert when the value fits.
macro_rules! narrow_integer {
    ($($t:ty),*) => {$(
        impl FromColumn for $t {
            const WANTED: &'static str = concat!("an integer that fits ", stringify!($t));
            fn from_cell(cell: Cell<'_>) -> Option<Self> {
                i64::from_cell(cell).and_then(|v| <$t>::try_from(v).ok())
            }
        }
    )*};
}
narrow_integer!(i32, u32, u16, u8, usize, u64);

impl FromColumn for bool {
    const WANTED: &'static str = "a boolean (an integer)";
    fn from_cell(cell: Cell<'_>) -> Option<Self> {
        i64::from_cell(cell).map(|v| v != 0)
    }
}

impl FromColumn for f64 {
    const WANTED: &'static str = "a number";
    fn from_cell(cell: Cell<'_>) -> Option<Self> {
        match cell {
            Cell::Real(v) => Some(v),
            // SQLite stores a REAL column's whole values as integers when it can.
            Cell::Integer(v) => Some(v as f64),
            _ => None,
        }
    }
}

impl FromColumn for f32 {
    const WANTED: &'static str = "a number";
    fn from_cell(cell: Cell<'_>) -> Option<Self> {
        f64::from_cell(cell).map(|v| v as f32)
    }
}

impl FromColumn for String {
    const WANTED: &'static str = "text";
    fn from_cell(cell: Cell<'_>) -> Option<Self> {
        match cell {
            Cell::Text(v) => Some(v.to_string()),
            _ => None,
        }
    }
}

impl FromColumn for Vec<u8> {
    const WANTED: &'static str = "bytes";
    fn from_cell(cell: Cell<'_>) -> Option<Self> {
        match cell {
            Cell::Blob(v) => Some(v.to_vec()),
            Cell::Text(v) => Some(v.as_bytes().to_vec()),
            _ => None,
        }
    }
}

impl<T: FromColumn> FromColumn for Option<T> {
    const WANTED: &'static str = T::WANTED;
    fn from_cell(cell: Cell<'_>) -> Option<Self> {
        T::from_cell(cell).map(Some)
    }
    fn from_null() -> Option<Self> {
        Some(None)
    }
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::ValueRef;
        Ok(rusqlite::types::ToSqlOutput::Borrowed(match *self {
            Value::Null => ValueRef::Null,
            Value::Integer(v) => ValueRef::Integer(v),
            Value::Real(v) => ValueRef::Real(v),
            Value::Text(v) => ValueRef::Text(v.as_bytes()),
            Value::Blob(v) => ValueRef::Blob(v),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_converts_only_to_what_it_holds() {
        assert_eq!(convert::<i64>(0, Cell::Integer(7)).expect("int"), 7);
        assert_eq!(convert::<f64>(0, Cell::Integer(2)).expect("real"), 2.0);
        assert!(convert::<bool>(0, Cell::Integer(1)).expect("bool"));
        assert_eq!(
            convert::<Option<String>>(0, Cell::Null).expect("null"),
            None
        );
        let error = convert::<i64>(3, Cell::Text("7")).expect_err("text is no integer");
        assert_eq!(
            error.to_string(),
            "column 3 holds text where an integer was expected"
        );
        assert!(
            convert::<String>(0, Cell::Null).is_err(),
            "NULL needs an Option"
        );
        assert!(
            convert::<u8>(0, Cell::Integer(300)).is_err(),
            "out of range"
        );
    }
}
