//! bm25 as FTS5 computes it (`fts5Bm25Function` in SQLite's fts5_aux.c: k1 = 1.2,
//! b = 0.75, a phrase's IDF `ln((N - n + 0.5) / (n + 0.5))`, at least 1e-6, its
//! frequency the weighted count of its instances in the row), with N, the average row
//! size and each phrase's n given by the caller instead of read over the whole table:
//! the statistics of the searching user's rows alone, so that one user's ranking does
//! not depend on anyone else's data. The same arithmetic in the same order as FTS5's,
//! so that the scores are those FTS5 gives over a table holding only that user's rows.
//!
//! Both tiers score with [`idf`] and [`term`]: the memory index (`text_index.rs`) from
//! its postings, the transcript (`transcript.rs`) from what `engram_hits`, an FTS5
//! auxiliary function registered on every connection that reads the transcript
//! ([`register`]), reads of each matching row: its size and each phrase's instances,
//! what FTS5's own bm25 reads.

use std::ffi::c_int;
use std::ptr;

use rusqlite::{Connection, ffi};

use super::tokenizer::fts5_api;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The most phrases `engram_hits` counts: more than a search's words (at most 32).
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

/// The transcript's ranking, whichever index found the matches: each match `(key,
/// size, its instances of each query word)` scored with the words' `idfs`, the best
/// `limit` (1 to 500) as `(bm25, key)` with FTS5's sign (lower is better), ties by key
/// (the order the messages were recorded).
pub fn rank<'a>(
    matches: impl Iterator<Item = (i64, usize, &'a [u32])>,
    idfs: &[f64],
    avgdl: f64,
    limit: usize,
) -> Vec<(f64, i64)> {
    let mut ranked: Vec<(f64, i64)> = matches
        .map(|(key, size, instances)| {
            let mut score = 0.0;
            for (idf, &freq) in idfs.iter().zip(instances) {
                score += term(*idf, f64::from(freq), size, avgdl);
            }
            (-score, key)
        })
        .collect();
    let order = |a: &(f64, i64), b: &(f64, i64)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    let limit = limit.clamp(1, 500);
    if ranked.len() > limit {
        ranked.select_nth_unstable_by(limit, order);
        ranked.truncate(limit);
    }
    ranked.sort_unstable_by(order);
    ranked
}

/// Registers `engram_hits(fts_table)` on `conn`: for the row a MATCH query is at, its
/// size in tokens (every column) and the instances of each phrase of the query (in
/// every column: for a table whose columns all weigh 1.0, a phrase's bm25 frequency),
/// as a blob of little-endian u32s, the size first, then one per phrase in the query's
/// order.
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
            c"engram_hits".as_ptr(),
            ptr::null_mut(),
            Some(engram_hits),
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

/// What `engram_hits` returns, read back: a matching row's size and each phrase's
/// instances in it.
pub struct Hits<'a>(&'a [u8]);

impl<'a> Hits<'a> {
    /// `blob` as `engram_hits` made it for a query of `phrases` phrases.
    pub fn read(blob: &'a [u8], phrases: usize) -> Option<Hits<'a>> {
        (blob.len() == 4 * (phrases + 1)).then_some(Hits(blob))
    }

    fn at(&self, i: usize) -> u32 {
        u32::from_le_bytes(self.0[4 * i..4 * i + 4].try_into().expect("4 bytes"))
    }

    /// The row's tokens, every column.
    pub fn size(&self) -> usize {
        self.at(0) as usize
    }

    /// Instances of each phrase, in the query's order.
    pub fn instances(&self) -> impl Iterator<Item = u32> + '_ {
        (1..self.0.len() / 4).map(|i| self.at(i))
    }
}

unsafe extern "C" fn engram_hits(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    _values: c_int,
    _value: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 passes its extension API and the row's context, valid for this
    // call; the result is set on this call's context (SQLite copies the blob).
    unsafe {
        match read_row(&*api, fts) {
            Ok(blob) => {
                ffi::sqlite3_result_blob(
                    ctx,
                    blob.as_ptr().cast(),
                    blob.len() as c_int,
                    ffi::SQLITE_TRANSIENT(),
                );
            }
            Err(rc) => ffi::sqlite3_result_error_code(ctx, rc),
        }
    }
}

/// The row's size and each phrase's instances, as `engram_hits` returns them.
///
/// # Safety
/// As FTS5 calls an auxiliary function: `api` and `fts` of the current row.
unsafe fn read_row(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
) -> Result<Vec<u8>, c_int> {
    let (Some(phrase_count), Some(inst_count), Some(inst), Some(column_size)) =
        (api.xPhraseCount, api.xInstCount, api.xInst, api.xColumnSize)
    else {
        return Err(ffi::SQLITE_MISUSE);
    };
    let check = |rc: c_int| {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(rc)
        }
    };
    // SAFETY: the row's context, as FTS5 passed it; the out-parameters are live locals.
    unsafe {
        let phrases = usize::try_from(phrase_count(fts)).unwrap_or(0);
        if phrases > MAX_PHRASES {
            return Err(ffi::SQLITE_TOOBIG);
        }
        // The blob itself, counted in place: one allocation per row.
        let mut blob = vec![0_u8; 4 * (phrases + 1)];
        let mut set = |i: usize, value: u32| {
            blob[4 * i..4 * i + 4].copy_from_slice(&value.to_le_bytes());
        };
        let mut size: c_int = 0;
        check(column_size(fts, -1, &mut size))?;
        set(0, u32::try_from(size).unwrap_or(0));
        let mut counts = [0_u32; MAX_PHRASES];
        let mut instances: c_int = 0;
        check(inst_count(fts, &mut instances))?;
        for i in 0..instances {
            let (mut phrase, mut column, mut offset) = (0, 0, 0);
            check(inst(fts, i, &mut phrase, &mut column, &mut offset))?;
            if let Some(count) = usize::try_from(phrase).ok().and_then(|p| counts.get_mut(p)) {
                *count += 1;
            }
        }
        for (p, &count) in counts.iter().take(phrases).enumerate() {
            set(p + 1, count);
        }
        Ok(blob)
    }
}
