//! A session's cache of parsed query strings: a client that sends the same
//! text again (a dashboard's refresh, a benchmark's repeated query, a
//! driver's statement without server-side preparation) skips sqlparser's
//! tokenizer and recursive descent. [`parse`](super::parse) depends on the
//! text alone, so an entry never goes stale; errors are not kept (their
//! message carries the position and is cheap to recompute).
//!
//! Bounds: `ENTRIES` strings of at most `TEXT_BYTES_MAX` bytes each (bulk
//! INSERTs are larger and rarely repeat); the least recently used entry
//! leaves first.

use std::collections::HashMap;
use std::sync::Arc;

use super::Statement;
use crate::error::WeirError;

/// Entries per session: 32, a guess that covers a dashboard's panels.
const ENTRIES: usize = 32;
/// Longer texts are parsed every time and not kept.
const TEXT_BYTES_MAX: usize = 4096;

#[derive(Default)]
pub struct ParseCache {
    /// Text → (statements, last use).
    map: HashMap<Arc<str>, (Arc<Vec<Statement>>, u64)>,
    tick: u64,
    /// The entries were parsed with `standard_conforming_strings` off (a change clears them).
    backslash_strings: bool,
}

impl ParseCache {
    /// The statements of `sql`, from the cache or parsed now (and kept), read with
    /// `standard_conforming_strings` set to `standard_strings`.
    pub fn parse(&mut self, sql: &str, standard_strings: bool) -> Result<Arc<Vec<Statement>>, WeirError> {
        if self.backslash_strings == standard_strings {
            self.map.clear();
            self.backslash_strings = !standard_strings;
        }
        if sql.len() > TEXT_BYTES_MAX {
            return super::parse_with(sql, standard_strings).map(Arc::new);
        }
        self.tick += 1;
        if let Some((stmts, used)) = self.map.get_mut(sql) {
            *used = self.tick;
            return Ok(stmts.clone());
        }
        let stmts = Arc::new(super::parse_with(sql, standard_strings)?);
        if self.map.len() >= ENTRIES {
            // A linear scan for the oldest: 32 entries, once per miss.
            if let Some(oldest) = self.map.iter().min_by_key(|(_, (_, used))| *used).map(|(k, _)| k.clone()) {
                self.map.remove(&oldest);
            }
        }
        self.map.insert(Arc::from(sql), (stmts.clone(), self.tick));
        Ok(stmts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_text_is_parsed_once_and_matches_the_parser() {
        let mut c = ParseCache::default();
        let sql = "SELECT a, b FROM t WHERE a > 1; SELECT 2";
        let first = c.parse(sql, true).unwrap();
        let second = c.parse(sql, true).unwrap();
        assert!(Arc::ptr_eq(&first, &second), "the second parse comes from the cache");
        assert_eq!(*first, super::super::parse(sql).unwrap());
    }

    #[test]
    fn errors_are_not_kept_and_long_texts_bypass_the_cache() {
        let mut c = ParseCache::default();
        assert!(c.parse("SELEC 1", true).is_err());
        assert!(c.map.is_empty());
        let long = format!("SELECT 1 AS {}", "x".repeat(TEXT_BYTES_MAX));
        let a = c.parse(&long, true).unwrap();
        let b = c.parse(&long, true).unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        assert!(c.map.is_empty());
    }

    #[test]
    fn the_least_recently_used_entry_leaves_first() {
        let mut c = ParseCache::default();
        let texts: Vec<String> = (0..=ENTRIES).map(|i| format!("SELECT {i}")).collect();
        let kept = c.parse(&texts[0], true).unwrap();
        for t in &texts[1..ENTRIES] {
            c.parse(t, true).unwrap();
        }
        // Touch the first: the second is now the oldest.
        assert!(Arc::ptr_eq(&kept, &c.parse(&texts[0], true).unwrap()));
        c.parse(&texts[ENTRIES], true).unwrap();
        assert_eq!(c.map.len(), ENTRIES);
        assert!(c.map.contains_key(texts[0].as_str()));
        assert!(!c.map.contains_key(texts[1].as_str()));
    }
}
