//! INSERT target columns with subscripts, `INSERT INTO t (f2[1], f4[1].if2[2]) …`:
//! PostgreSQL's grammar allows indirection (array subscripts and composite fields)
//! after each target column, sqlparser 0.64 only a dotted name. Each subscript
//! `[expr]` of an INSERT's column list becomes one more name part, the quoted
//! identifier `"[expr]"`, so the list parses as sqlparser's object names and
//! `Display` writes the marker back (a rule's action re-parses to the same
//! statement). `subscript_part` reads a part back; `sql/insert_targets.rs`
//! assigns through the path.
//!
//! Imports only sqlparser's tokens and AST.

use super::is_word;
use sqlparser::ast::Ident;
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// The subscript a target name part stands for: the text between the brackets
/// of a `"[expr]"` part, None for a field name.
pub fn subscript_part(part: &Ident) -> Option<&str> {
    if part.quote_style != Some('"') {
        return None;
    }
    part.value.strip_prefix('[')?.strip_suffix(']')
}

/// The tokens with every INSERT column list's subscripts turned into `."[expr]"`
/// name parts; streams without `[` come back as they were.
pub fn rewrite_tokens(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|t| t.token == Token::LBracket) || !tokens.iter().any(|t| is_word(&t.token, "insert")) {
        return tokens;
    }
    let sig: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let tok = |s: usize| -> &Token { sig.get(s).map(|&i| &tokens[i].token).unwrap_or(&Token::EOF) };
    // (first token, last token) of each `[ … ]` to rewrite, as token indexes.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut s = 0;
    while s < sig.len() {
        if !(is_word(tok(s), "insert") && is_word(tok(s + 1), "into")) {
            s += 1;
            continue;
        }
        // The table's name, then an optional alias.
        let mut k = s + 2;
        if !matches!(tok(k), Token::Word(_)) {
            s = k;
            continue;
        }
        k += 1;
        while *tok(k) == Token::Period && matches!(tok(k + 1), Token::Word(_)) {
            k += 2;
        }
        if is_word(tok(k), "as") {
            k += 2;
        } else if matches!(tok(k), Token::Word(w) if w.quote_style.is_some()
            || !["values", "select", "with", "default", "overriding", "table"].iter().any(|x| w.value.eq_ignore_ascii_case(x)))
        {
            k += 1;
        }
        // A column list, not a parenthesized query.
        if *tok(k) != Token::LParen
            || ["select", "with", "values", "table"].iter().any(|w| is_word(tok(k + 1), w))
            || *tok(k + 1) == Token::LParen
        {
            s = k;
            continue;
        }
        let Some(close) = matching_close(&tok, k, &Token::LParen, &Token::RParen) else { break };
        let mut depth = 0usize;
        let mut j = k + 1;
        while j < close {
            match tok(j) {
                Token::LParen => depth += 1,
                Token::RParen => depth = depth.saturating_sub(1),
                Token::LBracket if depth == 0 => {
                    let Some(e) = matching_close(&tok, j, &Token::LBracket, &Token::RBracket) else { break };
                    spans.push((sig[j], sig[e]));
                    j = e;
                }
                _ => {}
            }
            j += 1;
        }
        s = close + 1;
    }
    if spans.is_empty() {
        return tokens;
    }
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        match spans.iter().find(|(a, _)| *a == i) {
            Some(&(a, e)) => {
                let text: String = tokens[a..=e].iter().map(|t| t.token.to_string()).collect();
                let span = tokens[a].span;
                out.push(TokenWithSpan::new(Token::Period, span));
                out.push(TokenWithSpan::new(Token::make_word(&text, Some('"')), span));
                i = e + 1;
            }
            None => {
                out.push(tokens[i].clone());
                i += 1;
            }
        }
    }
    out
}

/// The significant token closing the `open` at `at` (nested pairs skipped);
/// None when the statement ends first.
fn matching_close<'a>(tok: &impl Fn(usize) -> &'a Token, at: usize, open: &Token, close: &Token) -> Option<usize> {
    let mut depth = 0usize;
    let mut k = at;
    loop {
        match tok(k) {
            t if t == open => depth += 1,
            t if t == close => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            Token::SemiColon | Token::EOF => return None,
            _ => {}
        }
        k += 1;
    }
}

#[cfg(test)]
mod tests {
    use crate::parser::{parse, Statement};

    fn columns(sql: &str) -> Vec<String> {
        match parse(sql).unwrap().remove(0) {
            Statement::Sql(sqlparser::ast::Statement::Insert(i)) => i.columns.iter().map(|c| c.to_string()).collect(),
            other => panic!("not an insert: {other:?}"),
        }
    }

    #[test]
    fn subscripts_become_name_parts() {
        assert_eq!(columns("insert into t (f2[1], f2[2]) values (1,2)"), ["f2.\"[1]\"", "f2.\"[2]\""]);
        assert_eq!(columns("insert into t (f4[1].if2[1 + 1]) select 'x'"), ["f4.\"[1]\".if2.\"[1 + 1]\""]);
        // Round trip: the marker parses back to the same names.
        assert_eq!(columns("INSERT INTO t (f4.\"[1]\".if2) VALUES ('x')"), ["f4.\"[1]\".if2"]);
        // Subscripts outside the column list are expressions as before.
        assert_eq!(columns("insert into t (a) select b[1] from u"), ["a"]);
        assert_eq!(columns("insert into t select b[1] from u"), Vec::<String>::new());
    }
}
