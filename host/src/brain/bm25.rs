//! bm25 as FTS5 computes it (`fts5Bm25Function` in SQLite's fts5_aux.c: k1 = 1.2,
//! b = 0.75, a phrase's IDF `ln((N - n + 0.5) / (n + 0.5))`, at least 1e-6, its
//! frequency the weighted count of its instances in the row), with N, the average row
//! size and each phrase's n given by the caller instead of read over the whole table:
//! the statistics of the searching user's rows alone, so that one user's ranking does
//! not depend on anyone else's data. The same arithmetic in the same order as FTS5's,
//! so that the scores are those FTS5 gives over a table holding only that user's rows.
//!
//! The memory index (`text_index.rs`) scores with [`idf`] and [`term`]; the
//! transcript's ranking query (`transcript.rs`) calls them through `engram_bm25`, an
//! FTS5 auxiliary function registered on every connection that reads the transcript
//! ([`register`]).

use std::ffi::c_int;
use std::ptr;

use rusqlite::{Connection, ffi};

use super::tokenizer::fts5_api;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The most phrases `engram_bm25` scores (a search has at most 32 words).
const MAX_PHRASES: usize = 64;

/// A phrase's IDF among `rows` rows of which `hits` hold it.
pub fn idf(rows: u64, hits: u64) -> f64 {
    let idf = ((rows as f64 - hits as f64 + 0.5) / (hits as f64 + 0.5)).ln();
    if idf <= 0.0 { 1e-6 } else { idf }
}

/// The average row size: `tokens` over `rows` rows.
pub fn average(tokens: u64, rows: u64) -> f64 {
    tokens as f64 / rows as f64
}

/// One phrase's term of a row's score, written as `fts5Bm25Function` writes it: `freq`
/// its weighted instances in the row, `size` the row's tokens.
pub fn term(idf: f64, freq: f64, size: usize, avgdl: f64) -> f64 {
    let d = size as f64;
    idf * ((freq * (K1 + 1.0)) / (freq + K1 * (1.0 - B + B * d / avgdl)))
}

/// Registers `engram_bm25(fts_table, avgdl, idfs)` on `conn`: FTS5's
/// `bm25(fts_table, 1.0, 1.0, ...)` (every column weighs 1.0) with the average row size
/// and the phrases' IDFs given (`idfs`: one little-endian f64 per phrase of the
/// query, in its order) instead of computed over the whole table. Negative, lower is
/// better, as bm25() is.
pub fn register(conn: &Connection) -> rusqlite::Result<()> {
    // SAFETY: the calls follow fts5.h: xCreateFunction registers a function that
    // FTS5 calls with its extension API for each row of a MATCH query; no user data.
    unsafe {
        let api = fts5_api(conn).map_err(|e| failure(e.to_string()))?;
        let create = (*api)
            .xCreateFunction
            .ok_or_else(|| failure("FTS5 without xCreateFunction".into()))?;
        let rc = create(
            api,
            c"engram_bm25".as_ptr(),
            ptr::null_mut(),
            Some(engram_bm25),
            None,
        );
        if rc != ffi::SQLITE_OK {
            return Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), None));
        }
    }
    Ok(())
}

fn failure(message: String) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_ERROR), Some(message))
}

/// What `engram_bm25` reads of its arguments and the row.
struct Row {
    avgdl: f64,
    /// Per phrase: its IDF and its instances in the row.
    phrases: [(f64, f64); MAX_PHRASES],
    count: usize,
    size: usize,
}

unsafe extern "C" fn engram_bm25(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    values: c_int,
    value: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 passes its extension API, the row's context and `values` arguments,
    // all valid for this call.
    let row = unsafe { read_row(&*api, fts, values, value) };
    // SAFETY: the result is set on this call's context.
    unsafe {
        match row {
            Ok(row) => {
                let mut score = 0.0;
                for &(idf, freq) in &row.phrases[..row.count] {
                    score += term(idf, freq, row.size, row.avgdl);
                }
                // FTS5 returns -1.0 * score: the same number.
                ffi::sqlite3_result_double(ctx, -score);
            }
            Err(Failure::Code(rc)) => ffi::sqlite3_result_error_code(ctx, rc),
            Err(Failure::Message(message)) => ffi::sqlite3_result_error(ctx, message.as_ptr(), -1),
        }
    }
}

/// Why a row has no score: SQLite's code, or what was wrong with the call.
enum Failure {
    Code(c_int),
    Message(&'static std::ffi::CStr),
}

/// The arguments and the row's instance counts and size.
///
/// # Safety
/// As FTS5 calls an auxiliary function: `api` and `fts` of the current row, `value`
/// holding `values` argument values.
unsafe fn read_row(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    values: c_int,
    value: *mut *mut ffi::sqlite3_value,
) -> Result<Row, Failure> {
    let missing = Failure::Message(c"engram_bm25: FTS5 lacks a function it needs");
    let (Some(phrase_count), Some(inst_count), Some(inst), Some(column_size)) =
        (api.xPhraseCount, api.xInstCount, api.xInst, api.xColumnSize)
    else {
        return Err(missing);
    };
    if values != 2 {
        return Err(Failure::Message(
            c"engram_bm25: takes the table, avgdl and idfs",
        ));
    }
    // SAFETY: `value` holds two arguments; a blob's bytes stay valid until the value
    // is read again, which nothing here does.
    let (avgdl, idfs) = unsafe {
        let avgdl = ffi::sqlite3_value_double(*value);
        let idfs = *value.add(1);
        let bytes = ffi::sqlite3_value_blob(idfs).cast::<u8>();
        let len = usize::try_from(ffi::sqlite3_value_bytes(idfs)).unwrap_or(0);
        let idfs = if bytes.is_null() || len == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(bytes, len)
        };
        (avgdl, idfs)
    };
    // SAFETY: the row's context, as FTS5 passed it.
    let count = usize::try_from(unsafe { phrase_count(fts) }).unwrap_or(0);
    if count > MAX_PHRASES || idfs.len() != count * 8 {
        return Err(Failure::Message(c"engram_bm25: one IDF per phrase"));
    }
    let mut row = Row {
        avgdl,
        phrases: [(0.0, 0.0); MAX_PHRASES],
        count,
        size: 0,
    };
    for (phrase, idf) in row.phrases.iter_mut().zip(idfs.chunks_exact(8)) {
        phrase.0 = f64::from_le_bytes(idf.try_into().expect("8 bytes"));
    }
    let mut instances: c_int = 0;
    // SAFETY: as above; the out-parameters are live locals.
    unsafe {
        let rc = inst_count(fts, &mut instances);
        if rc != ffi::SQLITE_OK {
            return Err(Failure::Code(rc));
        }
        for i in 0..instances {
            let (mut phrase, mut column, mut offset) = (0, 0, 0);
            let rc = inst(fts, i, &mut phrase, &mut column, &mut offset);
            if rc != ffi::SQLITE_OK {
                return Err(Failure::Code(rc));
            }
            // Every column weighs 1.0: FTS5 adds each instance's weight.
            if let Some(p) = usize::try_from(phrase).ok().filter(|&p| p < count) {
                row.phrases[p].1 += 1.0;
            }
        }
        let mut size: c_int = 0;
        let rc = column_size(fts, -1, &mut size);
        if rc != ffi::SQLITE_OK {
            return Err(Failure::Code(rc));
        }
        row.size = usize::try_from(size).unwrap_or(0);
    }
    Ok(row)
}
