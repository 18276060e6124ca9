//! PostgreSQL's `CREATE [OR REPLACE] [TEMP] RECURSIVE VIEW name (cols) AS query`, which
//! sqlparser 0.64 lacks. PostgreSQL's grammar itself turns it into an ordinary view
//! (`makeRecursiveViewSelect`):
//!
//! ```text
//! CREATE VIEW name AS WITH RECURSIVE name (cols) AS (query) SELECT cols FROM name
//! ```
//!
//! and so does this rewrite of the token stream, before sqlparser parses it. A form it does
//! not know (no column list) is left for sqlparser to refuse.
//!
//! Imports only sqlparser.

use super::is_word;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

/// The token stream with each recursive view definition written as an ordinary one.
pub fn rewrite_tokens(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| is_word(&t.token, "recursive")) || !tokens.iter().any(|t| is_word(&t.token, "view")) {
        return tokens;
    }
    let sig: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let tok = |s: usize| -> &Token { sig.get(s).map(|&i| &tokens[i].token).unwrap_or(&Token::EOF) };
    // Each rewrite: (RECURSIVE's position, the name's last part, the column tokens, AS's
    // position, the statement's end), all significant positions.
    let mut found: Vec<(usize, usize, Vec<Token>, usize, usize)> = Vec::new();
    let mut statement_start = true;
    for s in 0..sig.len() {
        let start = statement_start;
        statement_start = *tok(s) == Token::SemiColon;
        if !(start && is_word(tok(s), "create")) {
            continue;
        }
        let mut at = s + 1;
        if is_word(tok(at), "or") && is_word(tok(at + 1), "replace") {
            at += 2;
        }
        if is_word(tok(at), "temp") || is_word(tok(at), "temporary") {
            at += 1;
        }
        if !(is_word(tok(at), "recursive") && is_word(tok(at + 1), "view")) {
            continue;
        }
        let recursive = at;
        // The name: word (. word)*.
        let mut n = at + 2;
        if !matches!(tok(n), Token::Word(_)) {
            continue;
        }
        while *tok(n + 1) == Token::Period && matches!(tok(n + 2), Token::Word(_)) {
            n += 2;
        }
        if *tok(n + 1) != Token::LParen {
            continue;
        }
        // The column list: names separated by commas.
        let mut cols = Vec::new();
        let mut c = n + 2;
        let mut ok = false;
        loop {
            if !matches!(tok(c), Token::Word(_)) {
                break;
            }
            cols.push(tok(c).clone());
            match tok(c + 1) {
                Token::Comma => {
                    cols.push(Token::Comma);
                    c += 2;
                }
                Token::RParen => {
                    ok = true;
                    break;
                }
                _ => break,
            }
        }
        if !ok || !is_word(tok(c + 2), "as") {
            continue;
        }
        let as_at = c + 2;
        let mut end = as_at + 1;
        let mut depth = 0usize;
        while !matches!(tok(end), Token::EOF) && !(depth == 0 && *tok(end) == Token::SemiColon) {
            match tok(end) {
                Token::LParen => depth += 1,
                Token::RParen => depth = depth.saturating_sub(1),
                _ => {}
            }
            end += 1;
        }
        found.push((recursive, n, cols, as_at, end));
    }
    if found.is_empty() {
        return tokens;
    }
    let space = Token::Whitespace(Whitespace::Space);
    let mut out = Vec::with_capacity(tokens.len() + 16);
    let mut f = 0;
    let mut i = 0;
    while i < tokens.len() {
        let Some((recursive, name, cols, as_at, end)) = found.get(f) else {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        };
        let span = tokens[i].span;
        let mut push = |t: Token| {
            out.push(TokenWithSpan::new(t, span));
            out.push(TokenWithSpan::new(space.clone(), span));
        };
        if i == sig[*recursive] {
            // RECURSIVE goes; VIEW and the name stay.
            i += 1;
            continue;
        }
        if i == sig[*as_at] {
            // `AS WITH RECURSIVE name (cols) AS (` and the query.
            for t in [
                Token::make_keyword("AS"),
                Token::make_keyword("WITH"),
                Token::make_keyword("RECURSIVE"),
                tok(*name).clone(),
                Token::LParen,
            ] {
                push(t);
            }
            cols.iter().cloned().for_each(&mut push);
            for t in [Token::RParen, Token::make_keyword("AS"), Token::LParen] {
                push(t);
            }
            i += 1;
            // The column list before AS is dropped (the SELECT names the columns).
            continue;
        }
        if i > sig[*name] && i < sig[*as_at] {
            i += 1;
            continue;
        }
        if sig.get(*end).is_some_and(|&e| i == e) {
            push(Token::RParen);
            push(Token::make_keyword("SELECT"));
            cols.iter().cloned().for_each(&mut push);
            push(Token::make_keyword("FROM"));
            push(tok(*name).clone());
            f += 1;
            continue;
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    // A statement that ends with the input: close it after the last token.
    if let Some((_, name, cols, _, end)) = found.get(f) {
        if sig.get(*end).is_none() {
            let span = tokens.last().map(|t| t.span).unwrap_or_else(sqlparser::tokenizer::Span::empty);
            let mut push = |t: Token| {
                out.push(TokenWithSpan::new(t, span));
                out.push(TokenWithSpan::new(space.clone(), span));
            };
            push(Token::RParen);
            push(Token::make_keyword("SELECT"));
            cols.iter().cloned().for_each(&mut push);
            push(Token::make_keyword("FROM"));
            push(tok(*name).clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    fn printed(sql: &str) -> String {
        crate::parser::parse(sql).unwrap().iter().map(|s| s.to_string()).collect::<Vec<_>>().join("; ")
    }

    #[test]
    fn recursive_views_become_with_recursive() {
        let s = printed("CREATE RECURSIVE VIEW nums (n) AS VALUES (1) UNION ALL SELECT n+1 FROM nums WHERE n < 5");
        assert_eq!(
            s,
            "CREATE VIEW nums AS WITH RECURSIVE nums (n) AS (VALUES (1) UNION ALL SELECT n + 1 FROM nums WHERE n < 5) SELECT n FROM nums"
        );
        let s = printed("create or replace temp recursive view s.v (a, b) as select 1, 2; select 1");
        assert!(
            s.starts_with("CREATE OR REPLACE TEMPORARY VIEW s.v AS WITH RECURSIVE v (a, b) AS (SELECT 1, 2) SELECT a, b FROM v; SELECT 1"),
            "{s}"
        );
        assert!(crate::parser::parse("create recursive view v as select 1").is_err());
    }
}
