//! weir's additions to PostgreSQL's grammar, turned into something
//! sqlparser reads: GreptimeDB's `TIME INDEX` in CREATE TABLE, and `ADMIN`.

use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use crate::err;
use crate::error::Result;

/// What the pre-parser took out of a statement.
#[derive(Debug, Default)]
pub struct Extracted {
    /// The column named by `TIME INDEX`.
    pub time_index: Option<String>,
}

fn is_word(t: &Token, w: &str) -> bool {
    matches!(t, Token::Word(x) if x.value.eq_ignore_ascii_case(w) && x.quote_style.is_none())
}

fn word_value(t: &Token) -> Option<String> {
    match t {
        Token::Word(w) => Some(if w.quote_style.is_some() { w.value.clone() } else { w.value.to_lowercase() }),
        _ => None,
    }
}

/// The CHECK marker `TIME INDEX` is rewritten to.
pub const TIME_INDEX_MARK: &str = "weir_time_index";

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Rewrite `TIME INDEX` clauses as marker CHECK constraints sqlparser
/// accepts, remembering the column.
pub fn strip_time_index(sql: &str) -> Result<(String, Extracted)> {
    if !sql.to_ascii_lowercase().contains("index") {
        return Ok((sql.to_string(), Extracted::default()));
    }
    let dialect = PostgreSqlDialect {};
    let mut tokens = Tokenizer::new(&dialect, sql).tokenize().map_err(|e| err!(Syntax, "{e}"))?;
    let mut ex = Extracted::default();
    let sig =
        |tokens: &Vec<Token>, from: usize| -> Option<usize> { (from..tokens.len()).find(|&i| !matches!(tokens[i], Token::Whitespace(_))) };
    let mut i = 0;
    while i < tokens.len() {
        if is_word(&tokens[i], "TIME") {
            if let Some(j) = sig(&tokens, i + 1) {
                if is_word(&tokens[j], "INDEX") {
                    let after = sig(&tokens, j + 1);
                    if let Some(k) = after.filter(|&k| tokens[k] == Token::LParen) {
                        // Table constraint: [,] TIME INDEX (col)
                        let c = sig(&tokens, k + 1).ok_or_else(|| err!(Syntax, "syntax error at end of input"))?;
                        let name = word_value(&tokens[c]).ok_or_else(|| err!(Syntax, "syntax error in TIME INDEX"))?;
                        let close = sig(&tokens, c + 1)
                            .filter(|&r| tokens[r] == Token::RParen)
                            .ok_or_else(|| err!(Syntax, "TIME INDEX takes one column"))?;
                        ex.time_index = Some(name.clone());
                        // Keep it for sqlparser as a named CHECK constraint.
                        for t in tokens.iter_mut().take(close + 1).skip(i) {
                            *t = Token::Whitespace(Whitespace::Space);
                        }
                        tokens[i] = Token::make_word(&format!("CONSTRAINT {TIME_INDEX_MARK} CHECK ({})", quote(&name)), None);
                        i = close + 1;
                        continue;
                    }
                    // Column form: col TYPE ... TIME INDEX
                    let mut depth = 0i32;
                    let mut p = i;
                    let mut col = None;
                    while p > 0 {
                        p -= 1;
                        match &tokens[p] {
                            Token::RParen => depth += 1,
                            Token::LParen if depth == 0 => break,
                            Token::LParen => depth -= 1,
                            Token::Comma if depth == 0 => break,
                            _ => {}
                        }
                    }
                    if let Some(c) = sig(&tokens, p + 1) {
                        col = word_value(&tokens[c]);
                    }
                    ex.time_index = Some(col.ok_or_else(|| err!(Syntax, "TIME INDEX needs a column"))?);
                    // A time index column is NOT NULL; the marker CHECK
                    // tells CREATE TABLE which column it is.
                    tokens[i] = Token::make_word(&format!("NOT NULL CHECK ({TIME_INDEX_MARK})"), None);
                    tokens[j] = Token::Whitespace(Whitespace::Space);
                    i = j + 1;
                    continue;
                }
            }
        }
        i += 1;
    }
    if ex.time_index.is_none() {
        return Ok((sql.to_string(), ex));
    }
    // Token's Display does not re-escape quotes inside string literals.
    let out: String = tokens
        .iter()
        .map(|t| match t {
            Token::SingleQuotedString(s) => format!("'{}'", s.replace('\'', "''")),
            other => other.to_string(),
        })
        .collect();
    Ok((out, ex))
}

/// `ADMIN func(args)` → the function call text, if this is one.
pub fn admin_call(sql: &str) -> Option<&str> {
    let t = sql.trim_start();
    if t.len() > 6 && t[..5].eq_ignore_ascii_case("admin") && t.as_bytes()[5].is_ascii_whitespace() {
        Some(t[6..].trim().trim_end_matches(';'))
    } else {
        None
    }
}

/// Split at the first `;` outside quotes: (first statement, the rest).
pub fn split_first_statement(sql: &str) -> (&str, &str) {
    let mut quote: Option<char> = None;
    for (i, c) in sql.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ';') => return (&sql[..i], &sql[i + 1..]),
            _ => {}
        }
    }
    (sql, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_then_more() {
        assert_eq!(split_first_statement("flush_table('a;b'); SELECT 1"), ("flush_table('a;b')", " SELECT 1"));
        assert_eq!(split_first_statement("flush_table('t')"), ("flush_table('t')", ""));
    }

    #[test]
    fn strips_both_forms() {
        let (s, e) = strip_time_index("CREATE TABLE cpu (host TEXT, ts TIMESTAMP TIME INDEX, v DOUBLE, PRIMARY KEY(host))").unwrap();
        assert_eq!(e.time_index.as_deref(), Some("ts"));
        assert!(s.contains("CHECK (weir_time_index)"), "{s}");
        let (s, e) = strip_time_index("CREATE TABLE cpu (host TEXT, ts TIMESTAMP, TIME INDEX (ts))").unwrap();
        assert_eq!(e.time_index.as_deref(), Some("ts"));
        assert!(s.contains("ts TIMESTAMP"), "{s}");
        assert!(s.contains("CONSTRAINT weir_time_index CHECK (\"ts\")"), "{s}");
    }
}
