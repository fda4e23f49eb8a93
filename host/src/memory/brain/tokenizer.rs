//! FTS5's own tokenizer, `porter unicode61 remove_diacritics 2`, as `memories_fts`
//! declared it in `schema.rs` until version 3 dropped that table (and `messages_fts`
//! still does); called through SQLite's `fts5_api`. The in-memory ranking
//! (`text_index.rs`) reads text with it, so that it finds the same tokens FTS5 does, by
//! construction rather than by a second implementation of unicode61 and the Porter
//! stemmer; so does `engram_tokens`, the SQL function by which the schema's triggers
//! count each user's transcript tokens ([`register_token_count`]).

use std::ffi::{c_char, c_int, c_void};
use std::ptr;

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, ffi};

/// FTS5 truncates longer tokens to this many bytes, in documents and queries alike.
const MAX_TOKEN_BYTES: usize = 32_768;

#[derive(Debug, thiserror::Error)]
#[error("the FTS5 tokenizer: {0}")]
pub struct TokenizerError(String);

impl From<rusqlite::Error> for TokenizerError {
    fn from(e: rusqlite::Error) -> Self {
        TokenizerError(e.to_string())
    }
}

/// One tokenizer instance. It keeps a buffer of its own while it runs, so it is used by
/// one thread at a time (`&mut self`).
pub struct Tokenizer {
    instance: *mut ffi::Fts5Tokenizer,
    module: ffi::fts5_tokenizer,
    /// The in-memory connection whose FTS5 module the tokenizer belongs to: it must
    /// outlive `instance` (dropped after it, see `Drop`).
    _conn: Connection,
}

// SAFETY: the instance is used only through `&mut self` (one thread at a time), and the
// connection it belongs to moves with it; neither is shared with anything else.
unsafe impl Send for Tokenizer {}

impl Tokenizer {
    pub fn new() -> Result<Tokenizer, TokenizerError> {
        let conn = Connection::open_in_memory()?;
        // SAFETY: the calls follow fts5.h: `SELECT fts5(?1)` with a pointer bound as
        // "fts5_api_ptr" writes the connection's fts5_api into it; xFindTokenizer fills
        // in the module, whose xCreate makes an instance from the same arguments a
        // `tokenize = '...'` option passes.
        unsafe {
            let api = fts5_api(&conn)?;
            let find = (*api)
                .xFindTokenizer
                .ok_or_else(|| TokenizerError("no xFindTokenizer".into()))?;
            let mut user_data: *mut c_void = ptr::null_mut();
            let mut module = ffi::fts5_tokenizer {
                xCreate: None,
                xDelete: None,
                xTokenize: None,
            };
            let rc = find(api, c"porter".as_ptr(), &mut user_data, &mut module);
            if rc != ffi::SQLITE_OK {
                return Err(TokenizerError(format!("no porter tokenizer ({rc})")));
            }
            let create = module
                .xCreate
                .ok_or_else(|| TokenizerError("no xCreate".into()))?;
            let mut args = [
                c"unicode61".as_ptr(),
                c"remove_diacritics".as_ptr(),
                c"2".as_ptr(),
            ];
            let mut instance = ptr::null_mut();
            let rc = create(user_data, args.as_mut_ptr(), 3, &mut instance);
            if rc != ffi::SQLITE_OK || instance.is_null() {
                return Err(TokenizerError(format!("cannot create it ({rc})")));
            }
            Ok(Tokenizer {
                instance,
                module,
                _conn: conn,
            })
        }
    }

    /// Calls `each` with every token of `text`, in order, as FTS5 indexes them (a
    /// document) or reads them (`query`: the words of a quoted query term).
    pub fn tokens(
        &mut self,
        text: &str,
        query: bool,
        each: &mut dyn FnMut(&[u8]),
    ) -> Result<(), TokenizerError> {
        self.tokens_of(text.as_bytes(), query, each)
    }

    /// How many tokens FTS5 indexes for `text`: the size it records for a column
    /// holding it.
    pub fn count(&mut self, text: &[u8]) -> Result<usize, TokenizerError> {
        let mut count = 0;
        self.tokens_of(text, false, &mut |_| count += 1)?;
        Ok(count)
    }

    /// [`Tokenizer::tokens`] of bytes as SQLite hands them over (FTS5 reads a value's
    /// bytes, whatever they are).
    fn tokens_of(
        &mut self,
        text: &[u8],
        query: bool,
        each: &mut dyn FnMut(&[u8]),
    ) -> Result<(), TokenizerError> {
        let length = c_int::try_from(text.len())
            .map_err(|_| TokenizerError(format!("{} bytes is too long", text.len())))?;
        let tokenize = self
            .module
            .xTokenize
            .ok_or_else(|| TokenizerError("no xTokenize".into()))?;
        let flags = if query {
            ffi::FTS5_TOKENIZE_QUERY
        } else {
            ffi::FTS5_TOKENIZE_DOCUMENT
        };
        let mut sink: &mut dyn FnMut(&[u8]) = each;
        // SAFETY: `text` outlives the call; the context points at `sink`, which the
        // callback reads back as the same type, only during the call.
        let rc = unsafe {
            tokenize(
                self.instance,
                (&mut sink as *mut &mut dyn FnMut(&[u8])).cast(),
                flags,
                text.as_ptr().cast(),
                length,
                Some(on_token),
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(TokenizerError(format!("tokenizing failed ({rc})")));
        }
        Ok(())
    }
}

impl Drop for Tokenizer {
    fn drop(&mut self) {
        if let Some(delete) = self.module.xDelete {
            // SAFETY: the instance came from this module's xCreate and is deleted once.
            unsafe { delete(self.instance) };
        }
    }
}

unsafe extern "C" fn on_token(
    context: *mut c_void,
    flags: c_int,
    token: *const c_char,
    length: c_int,
    _start: c_int,
    _end: c_int,
) -> c_int {
    // A colocated token is a synonym at the same place; the porter and unicode61
    // tokenizers never emit one, and FTS5 would not count it in a column's size.
    if flags & ffi::FTS5_TOKEN_COLOCATED != 0 {
        return ffi::SQLITE_OK;
    }
    let length = usize::try_from(length).unwrap_or(0).min(MAX_TOKEN_BYTES);
    // SAFETY: FTS5 passes `length` readable bytes at `token`; the context is the
    // `&mut dyn FnMut` that `tokens` passed in, alive for the whole call.
    unsafe {
        let bytes = if length == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(token.cast::<u8>(), length)
        };
        let sink = &mut *context.cast::<&mut dyn FnMut(&[u8])>();
        sink(bytes);
    }
    ffi::SQLITE_OK
}

/// Registers `engram_tokens(text)` on `conn`: how many tokens FTS5 indexes for `text`
/// (0 for NULL), which the schema's triggers add to and take from each user's
/// transcript total (`transcript_users.tokens`, `schema.rs`).
pub fn register_token_count(conn: &Connection) -> rusqlite::Result<()> {
    let tokenizer =
        Tokenizer::new().map_err(|e| rusqlite::Error::UserFunctionError(Box::new(e)))?;
    let tokenizer = std::sync::Mutex::new(tokenizer);
    conn.create_scalar_function(
        "engram_tokens",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        move |ctx| {
            let text = match ctx.get_raw(0) {
                ValueRef::Null => return Ok(0_i64),
                ValueRef::Text(bytes) | ValueRef::Blob(bytes) => bytes,
                // The transcript's columns have TEXT affinity: SQLite stores a number
                // given to them as its text.
                other => {
                    return Err(rusqlite::Error::InvalidFunctionParameterType(
                        0,
                        other.data_type(),
                    ));
                }
            };
            // A tokenizer keeps no state between calls that a panic could tear.
            let mut tokenizer = tokenizer.lock().unwrap_or_else(|p| p.into_inner());
            let count = tokenizer
                .count(text)
                .map_err(|e| rusqlite::Error::UserFunctionError(Box::new(e)))?;
            Ok(count as i64)
        },
    )
}

/// The connection's `fts5_api` (the way fts5.h documents to get it).
pub(super) unsafe fn fts5_api(conn: &Connection) -> Result<*mut ffi::fts5_api, TokenizerError> {
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
    // SAFETY: the statement is prepared on the live connection and finalized here; the
    // bound pointer is written during the step, while `api` lives.
    unsafe {
        let db = conn.handle();
        let rc = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &mut stmt,
            ptr::null_mut(),
        );
        if rc != ffi::SQLITE_OK {
            return Err(TokenizerError(format!("no fts5() ({rc})")));
        }
        ffi::sqlite3_bind_pointer(
            stmt,
            1,
            (&mut api as *mut *mut ffi::fts5_api).cast(),
            c"fts5_api_ptr".as_ptr(),
            None,
        );
        ffi::sqlite3_step(stmt);
        ffi::sqlite3_finalize(stmt);
    }
    if api.is_null() {
        return Err(TokenizerError("fts5() gave no API".into()));
    }
    Ok(api)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(t: &mut Tokenizer, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        t.tokens(text, false, &mut |b| {
            out.push(String::from_utf8_lossy(b).into_owned())
        })
        .expect("tokens");
        out
    }

    /// The same tokens FTS5 stores for the same text (read back with fts5vocab).
    #[test]
    fn reads_text_as_memories_fts_does() {
        let text = "Running late: Café naïve ÆON, cafe\u{301} नमस्ते 42nd x";
        let mut t = Tokenizer::new().expect("tokenizer");
        let conn = Connection::open_in_memory().expect("db");
        conn.execute_batch(
            "CREATE VIRTUAL TABLE f USING fts5(a, tokenize = 'porter unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE v USING fts5vocab(f, 'instance');",
        )
        .expect("schema");
        conn.execute("INSERT INTO f (a) VALUES (?1)", [text])
            .expect("insert");
        let mut stmt = conn
            .prepare("SELECT term FROM v ORDER BY offset")
            .expect("vocab");
        let stored: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .expect("rows")
            .collect::<rusqlite::Result<_>>()
            .expect("rows");
        assert_eq!(tokens(&mut t, text), stored);
        assert_eq!(tokens(&mut t, "Running"), ["run"]);
    }
}
