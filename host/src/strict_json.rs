//! What a JSON value that does not fit a type got wrong, with the failing field's
//! path: an unknown field (the input is not understood) or a bad value (it is, and a
//! field is wrong). The REST extractors and the host tools' arguments both read JSON
//! this way, and each turns the answer into its own error.

use serde::de::DeserializeOwned;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeError {
    /// A field the type does not have; its path.
    UnknownField(String),
    /// A missing field or a value of the wrong type or outside its enum.
    Invalid { field: String, message: String },
}

/// Reads `value` into `T` (which should deny unknown fields).
pub fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ShapeError> {
    serde_path_to_error::deserialize(value).map_err(classify)
}

/// The [`ShapeError`] of a failed deserialisation.
pub fn classify<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> ShapeError {
    let path = e.path().to_string();
    let message = e.inner().to_string();
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let name = rest.split('`').next().unwrap_or_default();
        return ShapeError::UnknownField(if path == "." || path.is_empty() {
            name.to_string()
        } else {
            path
        });
    }
    let field = if path == "." || path.is_empty() {
        // A missing field is reported on the whole object; name it from the message.
        message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
            .unwrap_or("body")
            .to_string()
    } else {
        path
    };
    ShapeError::Invalid { field, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Args {
        q: String,
        limit: Option<u32>,
    }

    #[test]
    fn names_the_field_at_fault() {
        let args: Args = from_value(serde_json::json!({"q": "x", "limit": 3})).expect("fits");
        assert_eq!((args.q.as_str(), args.limit), ("x", Some(3)));
        let err = |v: serde_json::Value| from_value::<Args>(v).expect_err("refused");
        assert_eq!(
            err(serde_json::json!({"q": "x", "nope": 1})),
            ShapeError::UnknownField("nope".into())
        );
        assert!(matches!(
            err(serde_json::json!({})),
            ShapeError::Invalid { field, .. } if field == "q"
        ));
        assert!(matches!(
            err(serde_json::json!({"q": "x", "limit": "ten"})),
            ShapeError::Invalid { field, message } if field == "limit" && message.contains("invalid type")
        ));
    }
}
